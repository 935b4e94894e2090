"""The REST surface: sessions from presets or full scenarios, typed errors that name the field,
server limits, the config schema, exports, Prometheus /metrics and the dashboard pages."""

import csv
import dataclasses
import io
import json
import time

import pytest

from app.frames import finite
from app.schemas import CompatModel, EngineModel, WorkloadModel
from scheduler_core.engine.config import EngineConfig, VllmCompat
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario
from scheduler_core.workload.workload import WorkloadConfig
from tests.app.clients import app_client, create, default_scenario, step_session

# Every field of a scenario given explicitly, none of them at its default.
FULL_SCENARIO = {
    "name": "full",
    "description": "every field set",
    "model": "qwen2.5-7b",
    "gpu": "l40s",
    "tensor_parallel_size": 2,
    "vllm_version": "0.10.2",  # one that still takes --swap-space and --preemption-mode swap
    "gpu_memory_utilization": 0.8,
    "kv_cache_dtype": "fp8",
    "swap_space": 0.5,
    "engine": {
        "block_size": 32, "num_gpu_blocks": 600, "max_num_seqs": 32, "max_num_batched_tokens": 1024,
        "max_model_len": 2048, "enable_chunked_prefill": True, "enable_prefix_caching": True,
        "long_prefill_token_threshold": 256, "policy": "vllm-v1", "scheduling_order": "priority",
        "preemption_mode": "swap", "num_cpu_blocks": 1170, "kv_allocator": "paged",
        "compat": {"full_prompt_admission": False, "long_prefill_cap_lifted_when_alone": False,
                   "unchunked_prompt_blocks_queue": False, "skipped_requests_keep_order": False,
                   "unhashed_blocks_reused_first": False, "priority_victim_leaves_step": False,
                   "priority_victim_unscheduled": False, "priority_victim_index_fixed": False,
                   "self_preempted_scan_continues": False, "usage_excludes_null_block": False,
                   "prompt_leaves_room_for_output": False,
                   "padded_spec_admission": False, "eagle_block_drop_opt_out": False, "lookahead_block_hashes": False,
                   "prefix_stats_exclude_preempted": False, "prefix_stats_per_admission": False},
        "async_scheduling": False,
        "speculative_config": {"method": "eagle", "num_speculative_tokens": 2, "acceptance_rate": [0.7, 0.6],
                               "acceptance_seed": 3},
    },
    "workload": {
        "num_requests": 50, "arrival": "gamma", "arrival_rate": 20.0, "arrival_cv": 2.0, "concurrency": 0, "initial_burst": 3,
        "lengths": "uniform", "prompt_len": 100, "prompt_len_high": 400, "output_len": 20,
        "output_len_high": 80, "sigma": 0.5, "shared_prefix_len": 32, "num_shared_prefixes": 2,
        "high_priority_fraction": 0.25, "seed": 7,
    },
    "slo_ttft_s": 0.5,
    "slo_tpot_s": 0.05,
}


@pytest.fixture
def client():
    with app_client() as client:
        yield client


def field_errors(response) -> list[list]:
    """The `loc` of every error in a 422 body."""
    assert response.status_code == 422, response.text
    return [error["loc"] for error in response.json()["detail"]]


def fresh_simulation(scenario: dict, num_steps: int):
    sim = Scenario.from_dict(scenario).build(keep_finished=True)
    for _ in range(num_steps):
        sim.step()
    return sim


# -- creating sessions ---------------------------------------------------------------------


def test_session_from_preset_uses_that_preset(client):
    """A session created from a preset runs that preset's scenario, at step 0."""
    created = create(client, preset="default")

    info = client.get(f"/api/sessions/{created['session_id']}").json()

    assert info["scenario"]["name"] == "default"
    assert info["scenario"]["engine"]["num_gpu_blocks"] == PRESET_SCENARIOS["default"]["engine"]["num_gpu_blocks"]
    assert info["scenario"]["workload"]["num_requests"] == PRESET_SCENARIOS["default"]["workload"]["num_requests"]
    assert info["step"] == 0 and info["done"] is False and info["playing"] is False
    assert created["control_url"].endswith(f"/s/{created['session_id']}") and created["control_token"]
    assert created["websocket_url"].endswith(f"/ws/{created['session_id']}")


def test_session_from_full_scenario_keeps_every_field(client):
    """Every field of a full scenario reaches the session unchanged."""
    created = create(client, scenario=FULL_SCENARIO)

    scenario = client.get(f"/api/sessions/{created['session_id']}").json()["scenario"]

    for key, value in FULL_SCENARIO.items():
        assert scenario[key] == value, key


def test_session_takes_the_older_tp_name_for_tensor_parallel_size(client):
    """Scenarios written with `tp` still work; the session reports vLLM's name."""
    created = create(client, scenario={"model": "llama-3.3-70b", "gpu": "h100-sxm", "tp": 4})

    scenario = client.get(f"/api/sessions/{created['session_id']}").json()["scenario"]

    assert scenario["tensor_parallel_size"] == 4 and "tp" not in scenario


def test_seed_overrides_the_workload_seed(client):
    """`seed` in the create body replaces the preset's workload seed."""
    created = create(client, preset="default", seed=42)

    scenario = client.get(f"/api/sessions/{created['session_id']}").json()["scenario"]

    assert scenario["workload"]["seed"] == 42


def test_sessions_are_listed(client):
    """GET /api/sessions lists every live session."""
    ids = {create(client, preset="default")["session_id"] for _ in range(3)}

    listed = {info["session_id"] for info in client.get("/api/sessions").json()}

    assert listed == ids


# -- bad input: 422 naming the field -------------------------------------------------------


def test_invalid_engine_value_is_422_naming_the_field(client):
    """A value outside its pydantic bounds is a 422 whose loc is the field's path."""
    response = client.post("/api/sessions", json={"scenario": {"engine": {"block_size": 0}}})

    assert field_errors(response) == [["body", "scenario", "engine", "block_size"]]


def test_unknown_engine_setting_is_422_naming_it(client):
    """A misspelt setting is refused, not ignored."""
    response = client.post("/api/sessions", json={"scenario": {"engine": {"max_num_seq": 8}}})

    assert ["body", "scenario", "engine", "max_num_seq"] in field_errors(response)


def test_core_config_error_is_422_naming_the_field(client):
    """A combination only the core rejects (budget below max_num_seqs) names the core's field."""
    response = client.post(
        "/api/sessions", json={"scenario": {"engine": {"max_num_seqs": 300, "max_num_batched_tokens": 100}}}
    )

    (loc,) = field_errors(response)
    assert loc[-1] == "max_num_batched_tokens"
    assert "max_num_seqs" in response.json()["detail"][0]["msg"]


def test_workload_that_cannot_fit_the_pool_is_422(client):
    """A request needing more blocks than the pool has is refused up front, naming num_gpu_blocks."""
    response = client.post("/api/sessions", json={"scenario": {"engine": {"num_gpu_blocks": 4}}})

    (loc,) = field_errors(response)
    assert loc[-1] == "num_gpu_blocks"
    assert client.get("/api/sessions").json() == []


def test_unknown_preset_is_422(client):
    """An unknown preset name is a 422 on `preset`."""
    response = client.post("/api/sessions", json={"preset": "no-such-preset"})

    assert field_errors(response) == [["body", "preset"]]


def test_preset_and_scenario_together_is_422(client):
    """A body with both a preset and a scenario is ambiguous and refused."""
    response = client.post("/api/sessions", json={"preset": "default", "scenario": FULL_SCENARIO})

    assert field_errors(response) == [["body", "preset"]]


def test_oversized_shared_prefix_is_rejected_before_it_is_built(client):
    """A shared prefix longer than max_model_len is refused at validation, at no cost proportional to it."""
    client.post("/api/sessions", json={"scenario": {"workload": {"seed": -1}}})  # first 422: one-time set-up
    start = time.perf_counter()
    response = client.post("/api/sessions", json={"scenario": {"workload": {"shared_prefix_len": 3_000_000}}})
    elapsed_s = time.perf_counter() - start

    assert field_errors(response)[0][-1] == "shared_prefix_len"
    assert elapsed_s < 0.2


def test_more_shared_prefixes_than_requests_is_422(client):
    """Shared prefixes beyond one per request can never be used; asking for 20,000 of them for 10
    requests is refused on num_shared_prefixes instead of being built."""
    response = client.post("/api/sessions", json={"scenario": {"workload": {
        "num_requests": 10, "shared_prefix_len": 64, "num_shared_prefixes": 20_000}}})

    assert field_errors(response)[0][-1] == "num_shared_prefixes"


# -- missing sessions and deletion ---------------------------------------------------------


@pytest.mark.parametrize("path", [
    "/api/sessions/nope",
    "/api/sessions/nope/export/metrics.json",
    "/api/sessions/nope/export/metrics.csv",
    "/api/sessions/nope/export/steps.jsonl",
    "/api/sessions/nope/export/trace.json",
    "/metrics?session=nope",
    "/s/nope/view",
])
def test_missing_session_is_404(client, path):
    """Every route of a session that does not exist answers 404."""
    assert client.get(path).status_code == 404


def test_websocket_to_missing_session_gets_no_session_error(client):
    """The websocket of a missing session sends one no_session error and closes with 4404."""
    from starlette.websockets import WebSocketDisconnect

    with client.websocket_connect("/ws/nope") as ws:
        frame = ws.receive_json()
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()

    assert frame["type"] == "error" and frame["code"] == "no_session"
    assert closed.value.code == 4404


def test_delete_without_token_is_403(client):
    """Deleting without X-Control-Token is refused and the session lives on."""
    created = create(client, preset="default")
    path = f"/api/sessions/{created['session_id']}"

    assert client.delete(path).status_code == 403
    assert client.delete(path, headers={"X-Control-Token": "wrong"}).status_code == 403
    assert client.get(path).status_code == 200


def test_delete_with_token_is_204_and_removes_the_session(client):
    """Deleting with the control token removes the session."""
    created = create(client, preset="default")
    path = f"/api/sessions/{created['session_id']}"

    response = client.delete(path, headers={"X-Control-Token": created["control_token"]})

    assert response.status_code == 204
    assert client.get(path).status_code == 404


# -- limits --------------------------------------------------------------------------------


def test_max_sessions_reached_is_422_on_session():
    """Past max_sessions a new session is a 422 on the field `session`; deleting one makes room."""
    with app_client(max_sessions=2) as client:
        first = create(client, preset="default")
        create(client, preset="default")

        response = client.post("/api/sessions", json={"preset": "default"})

        assert field_errors(response) == [["session"]]
        client.delete(f"/api/sessions/{first['session_id']}", headers={"X-Control-Token": first["control_token"]})
        create(client, preset="default")


def test_too_many_requests_is_422():
    """A workload over max_requests_per_session is a 422 on workload.num_requests; the limit itself is fine."""
    with app_client(max_requests_per_session=100) as client:
        over = client.post("/api/sessions", json={"scenario": {"workload": {"num_requests": 101}}})
        create(client, scenario={"workload": {"num_requests": 100}})

    assert field_errors(over) == [["workload", "num_requests"]]


def test_too_many_blocks_is_422():
    """A pool over max_blocks_per_session is a 422 on engine.num_gpu_blocks; the limit itself is fine."""
    with app_client(max_blocks_per_session=1000) as client:
        over = client.post("/api/sessions", json={"scenario": {"engine": {"num_gpu_blocks": 1001}}})
        create(client, scenario={"engine": {"num_gpu_blocks": 1000}})

    assert field_errors(over) == [["engine", "num_gpu_blocks"]]


def test_pool_sized_from_gpu_memory_is_held_to_the_block_limit():
    """A pool sized from GPU memory (no num_gpu_blocks) is also held to the limit."""
    with app_client(max_blocks_per_session=1000) as client:
        response = client.post("/api/sessions", json={"scenario": {"model": "llama-3.1-8b", "gpu": "h200"}})

    assert field_errors(response) == [["engine", "num_gpu_blocks"]]


# -- the schema ----------------------------------------------------------------------------


def test_schema_is_a_json_schema_with_engine_and_workload(client):
    """/api/schema is an object schema whose engine and workload resolve to their field lists."""
    schema = client.get("/api/schema").json()

    assert schema["type"] == "object"
    assert {"engine", "workload", "model", "gpu"} <= set(schema["properties"])
    defs = schema["$defs"]

    def resolve(prop):
        return defs[prop["$ref"].rsplit("/", 1)[-1]]

    engine = resolve(schema["properties"]["engine"])
    workload = resolve(schema["properties"]["workload"])
    assert set(engine["properties"]) == {f.name for f in dataclasses.fields(EngineConfig)}
    assert set(workload["properties"]) == {f.name for f in dataclasses.fields(WorkloadConfig)}
    assert engine["properties"]["block_size"]["minimum"] == 1


@pytest.mark.parametrize("model, dataclass", [
    (EngineModel, EngineConfig), (WorkloadModel, WorkloadConfig), (CompatModel, VllmCompat),
])
def test_api_models_have_exactly_the_core_fields(model, dataclass):
    """The pydantic models list exactly the core dataclass fields, in the same order."""
    assert list(model.model_fields) == [f.name for f in dataclasses.fields(dataclass)]


@pytest.mark.parametrize("model, dataclass", [
    (EngineModel, EngineConfig), (WorkloadModel, WorkloadConfig), (CompatModel, VllmCompat),
])
def test_api_model_defaults_equal_the_core_defaults(model, dataclass):
    """Defaults agree too, except those the API leaves empty for the server to fill in: num_gpu_blocks
    (sized from memory), the batch limits and async_scheduling (vLLM's own defaults for the
    chosen GPU and version), and enable_prefix_caching (off for a Mamba hybrid)."""
    api_defaults = model().model_dump()
    core_defaults = dataclasses.asdict(dataclass())
    for left_to_the_server in ("num_gpu_blocks", "async_scheduling", "max_num_seqs", "max_num_batched_tokens",
                               "enable_prefix_caching"):
        api_defaults.pop(left_to_the_server, None)
        core_defaults.pop(left_to_the_server, None)

    assert api_defaults == core_defaults


# -- exports -------------------------------------------------------------------------------

NUM_EXPORT_STEPS = 450


def token_of(created: dict) -> dict:
    return {"X-Control-Token": created["control_token"]}


@pytest.fixture
def stepped(client):
    """A default-preset session stepped NUM_EXPORT_STEPS times over its websocket."""
    created = create(client, preset="default")
    records = step_session(client, created, NUM_EXPORT_STEPS)
    return created, records


def test_metrics_json_is_the_report_at_the_current_step(client, stepped):
    """metrics.json holds the scenario, the step and the core's report at that step."""
    created, _ = stepped
    expected = finite(fresh_simulation(default_scenario(), NUM_EXPORT_STEPS).metrics.report())

    exported = client.get(f"/api/sessions/{created['session_id']}/export/metrics.json", headers=token_of(created)).json()

    assert exported["step"] == NUM_EXPORT_STEPS
    assert exported["scenario"]["name"] == "default"
    assert set(exported) == {"scenario", "step", *expected}
    assert {k: exported[k] for k in expected if k != "wall_s"} == {k: v for k, v in expected.items() if k != "wall_s"}
    assert exported["num_requests"] > 0


def test_metrics_csv_has_a_header_and_one_row_per_metric(client, stepped):
    """metrics.csv starts with `metric,value` and flattens the report into dotted names."""
    created, _ = stepped
    report = finite(fresh_simulation(default_scenario(), NUM_EXPORT_STEPS).metrics.report())
    expected_names = [f"{k}.{stat}" for k, v in report.items() if isinstance(v, dict) for stat in v] + [
        k for k, v in report.items() if not isinstance(v, dict)]

    response = client.get(f"/api/sessions/{created['session_id']}/export/metrics.csv", headers=token_of(created))
    rows = list(csv.reader(io.StringIO(response.text)))

    assert response.headers["content-type"].startswith("text/csv")
    assert rows[0] == ["metric", "value"]
    assert sorted(row[0] for row in rows[1:]) == sorted(expected_names)
    assert dict(rows[1:])["num_steps"] == str(NUM_EXPORT_STEPS)


def test_steps_jsonl_is_what_the_session_stepped(client, stepped):
    """steps.jsonl has one line per step taken, and the steps the deltas ended on are the records
    they carried."""
    created, records = stepped

    lines = client.get(f"/api/sessions/{created['session_id']}/export/steps.jsonl", headers=token_of(created)).text.splitlines()

    assert len(lines) == NUM_EXPORT_STEPS
    assert [record["step"] for record in records] == [199, 399, 449]
    assert [json.loads(lines[record["step"]]) for record in records] == records


def test_trace_json_is_a_chrome_trace(client, stepped):
    """trace.json parses as a Chrome trace: traceEvents with phases, one engine slice per step."""
    created, _ = stepped

    response = client.get(f"/api/sessions/{created['session_id']}/export/trace.json", headers=token_of(created))
    trace = json.loads(response.text)

    assert "attachment" in response.headers["content-disposition"]
    events = trace["traceEvents"]
    assert all({"name", "ph", "pid"} <= set(event) for event in events)
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == NUM_EXPORT_STEPS
    assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in slices)
    assert [e["ts"] for e in slices] == sorted(e["ts"] for e in slices)
    assert any(e["ph"] == "C" for e in events)


def test_exports_of_a_fresh_session_are_empty(client):
    """At step 0 the step log and the trace hold no steps."""
    created = create(client, preset="default")
    base = f"/api/sessions/{created['session_id']}/export"

    assert client.get(f"{base}/steps.jsonl", headers=token_of(created)).text == ""
    assert not [e for e in client.get(f"{base}/trace.json", headers=token_of(created)).json()["traceEvents"] if e["ph"] == "X"]


# -- Prometheus /metrics and /healthz ------------------------------------------------------


def test_prometheus_metrics_without_sessions_is_empty_but_ok(client):
    """With no session /metrics is a valid, empty exposition."""
    response = client.get("/metrics")

    assert response.status_code == 200
    assert "vllm:" not in response.text


def test_healthz_is_ok_and_counts_sessions(client):
    """/healthz answers ok with the number of sessions."""
    create(client, preset="default")

    assert client.get("/healthz").json() == {"status": "ok", "sessions": 1}


# -- pages ---------------------------------------------------------------------------------


def page_create_body(client, url: str, **params) -> dict:
    """The body the page at `url` will POST to create its session (GET itself creates nothing)."""
    import html
    import re

    response = client.get(url, params=params)
    assert response.status_code == 200 and "text/html" in response.headers["content-type"]
    return json.loads(html.unescape(re.search(r'data-create="([^"]*)"', response.text).group(1)))


def test_index_is_a_page_that_creates_no_session(client):
    """GET / answers the dashboard page, which will create a session of the default scenario by POST."""
    assert page_create_body(client, "/") == {"preset": "default"}
    assert client.get("/api/sessions").json() == []


def test_index_with_scenario_and_seed_hands_them_to_the_page(client):
    """`/?scenario=NAME&seed=3`: the page creates that preset with workload seed 3."""
    body = page_create_body(client, "/", scenario="qwen-7b-l40s-sharegpt-128", seed=3)
    created = create(client, **body)

    scenario = client.get(f"/api/sessions/{created['session_id']}").json()["scenario"]
    assert scenario["name"] == "qwen-7b-l40s-sharegpt-128"
    assert scenario["workload"]["seed"] == 3
    assert scenario["workload"]["concurrency"] == 128


def test_index_with_unknown_scenario_is_422(client):
    """An unknown preset in the URL is refused before any page is served."""
    assert client.get("/", params={"scenario": "nope"}, follow_redirects=False).status_code == 422
    assert client.get("/api/sessions").json() == []


@pytest.mark.parametrize("path", ["/s/{id}", "/s/{id}/view", "/s/{id}?token={token}"])
def test_session_pages_never_carry_the_token(client, path):
    """/s/ID and /s/ID/view render the same page, which never holds the control token: control
    comes from the token the presenter's tab keeps in sessionStorage."""
    created = create(client, preset="default")
    page = client.get(path.format(id=created["session_id"], token=created["control_token"]))

    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert f'data-session="{created["session_id"]}"' in page.text
    assert created["control_token"] not in page.text


def test_a_block_size_vllm_refuses_is_422_naming_the_field(client):
    """block_size 7 passes the setting's bound, but vLLM 0.33's CUDA attention backends take multiples of 16."""
    response = client.post("/api/sessions", json={"scenario": {"engine": {"block_size": 7}}})

    assert any(loc[-1] == "block_size" for loc in field_errors(response))
    assert "multiples of 16" in response.text


def test_a_model_too_big_for_the_gpu_is_422_naming_the_model_not_num_gpu_blocks(client):
    response = client.post("/api/sessions", json={"scenario": {"model": "llama-3.3-70b", "gpu": "a100-40g"}})

    assert [loc[-1] for loc in field_errors(response)] == ["model"]
    assert "The model does not fit" in response.text
