"""Hostile values against every endpoint, the websocket and the command line: each row is refused
with a 4xx (a 422 naming the field where there is one), an error frame, or a one-line
`servescope: error:`, and never a 500, an unhandled exception or a traceback.

Rows: non-finite numbers (NaN, Infinity, 1e400), integers past Python's 4,300 digits, negative
seeds, strings too long or holding a lone surrogate, floats where integers belong, wrong types,
deep nesting, bytes that are not UTF-8, and files that would expand into gigabytes."""

import gzip
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app import wire
from app.main import create_app
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
BIG = "9" * 5000  # past Python's int-from-text limit (4,300 digits)
LONG_INT = "9" * 4000  # under it: JSON reads it, the bounds refuse it
SURROGATE = '"\\ud800"'  # JSON's escape for a lone surrogate, which UTF-8 cannot carry
DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(heartbeat_s=0.2, allowed_hosts=("testserver",)))) as client:
        yield client


def with_scenario(path: str, scenario: str) -> str:
    """A body for `path` holding `scenario` (JSON text), with what else that endpoint needs."""
    extra = {"/api/sweep": ', "axes": {"tp": [1]}', "/api/fleet/replica": ', "replica": "replica-0"'}.get(path, "")
    return f'{{"scenario": {scenario}{extra}}}'


SCENARIO_ENDPOINTS = ["/api/sessions", "/api/scenarios/validate", "/api/fleet", "/api/sweep", "/api/fleet/replica"]
NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400"]

# (endpoint, raw JSON body, expected status, the field the error names: the end of its `loc`)
BODY_ROWS = [
    *[(path, with_scenario(path, f'{{"workload": {{"arrival_rate": {x}}}}}'), 422, "arrival_rate")
      for path in SCENARIO_ENDPOINTS for x in NON_FINITE],
    *[(path, with_scenario(path, f'{{"slo_ttft_s": {x}}}'), 422, "slo_ttft_s")
      for path in SCENARIO_ENDPOINTS for x in NON_FINITE],
    ("/api/sessions", '{"scenario": {"gpu_memory_utilization": Infinity}}', 422, "gpu_memory_utilization"),
    ("/api/sessions", '{"scenario": {"engine": {"speculative_config": {"acceptance_rate": [NaN]}}}}', 422, "0"),
    ("/api/sessions", '{"scenario": {"engine": {"speculative_config": {"acceptance_seed": -1}}}}', 422, "acceptance_seed"),
    ("/api/sweep", '{"axes": {"workload.arrival_rate": [NaN]}}', 422, "workload.arrival_rate"),
    ("/api/sweep", '{"axes": {"tp": [1]}, "slo_ttft_ms": Infinity}', 422, "slo_ttft_ms"),
    # Seeds and names with no bound used to reach a model built inside the route: a 500.
    *[(path, body, 422, "seed") for path, body in [
        ("/api/fleet", '{"seed": -1}'), ("/api/sweep", '{"seed": -1, "axes": {"tp": [1]}}'),
        ("/api/sessions", '{"seed": -1}'), ("/api/fleet", f'{{"seed": {LONG_INT}}}'),
        ("/api/fleet/replica", '{"seed": -1, "replica": "replica-0"}')]],
    *[(path, body, 422, field) for path, body, field in [
        ("/api/fleet", json.dumps({"preset": "x" * 300}), "preset"),
        ("/api/sweep", json.dumps({"preset": "x" * 300, "axes": {"tp": [1]}}), "preset"),
        ("/api/sessions", json.dumps({"preset": "x" * 300}), "preset"),
        ("/api/fleet", json.dumps({"lesson": "x" * 300}), "lesson"),
        ("/api/fleet", json.dumps({"lesson": "disaggregation", "arm": "x" * 300}), "arm"),
        ("/api/sessions", f'{{"preset": {SURROGATE}}}', "preset"),
        ("/api/fleet", f'{{"preset": {SURROGATE}}}', "preset"),
        ("/api/fleet/replica", f'{{"replica": {SURROGATE}}}', "replica"),
        ("/api/sessions", f'{{"scenario": {{"name": {SURROGATE}}}}}', "name"),
        ("/api/sessions", f'{{"scenario": {{"description": {SURROGATE}}}}}', "description"),
        ("/api/sessions", f'{{{SURROGATE}: 1}}', "body"),  # pydantic refuses the key itself
        ("/api/sessions", json.dumps({"scenario": {"name": "n" * 10_000}}), "name"),
        ("/api/sweep", json.dumps({"axes": {"engine.policy": ["x" * 300]}}), "engine.policy"),
        ("/api/sweep", json.dumps({"axes": {"tp": list(range(1, 100))}}), "tp"),
        ("/api/sweep", f'{{"axes": {{"workload.seed": [{LONG_INT}]}}}}', "workload.seed"),
        # Floats where integers belong, and wrong types.
        ("/api/sessions", '{"scenario": {"engine": {"max_num_seqs": 1.5}}}', "max_num_seqs"),
        ("/api/sessions", '{"scenario": {"tp": 2.5}}', "tp"),
        ("/api/sessions", f'{{"scenario": {{"engine": {{"max_num_seqs": {LONG_INT}}}}}}}', "max_num_seqs"),
        ("/api/sessions", '{"scenario": {"workload": []}}', "workload"),
        ("/api/sessions", '{"scenario": "default"}', "scenario"),
        ("/api/sessions", '{"seed": "one"}', "seed"),
        ("/api/fleet", '{"cluster": {"replicas": 1e9}}', "replicas"),
        ("/api/fleet", '{"cluster": {"prefill": {"tp": -1}}}', "tp"),
    ]],
    # Not JSON the parser can build: a 400, before any field is looked at.
    ("/api/sessions", f'{{"seed": {BIG}}}', 400, None),
    ("/api/sessions", f'{{"scenario": {DEEP}}}', 400, None),
    ("/api/fleet", f'{{"scenario": {DEEP}}}', 400, None),
]


def no_server_errors(caplog) -> None:
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "the server logged an error"


@pytest.mark.parametrize("path, body, status, field", BODY_ROWS,
                         ids=[f"{i}-{row[0]}-{row[3]}" for i, row in enumerate(BODY_ROWS)])
def test_a_hostile_body_is_refused_naming_its_field(client, caplog, path, body, status, field):
    response = client.post(path, content=body.encode("utf-8"), headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    if field is not None:
        assert field in [str(part) for part in response.json()["detail"][0]["loc"]], response.text
    no_server_errors(caplog)


def test_a_body_that_is_not_utf8_is_a_400(client, caplog):
    response = client.post("/api/sessions", content=b'{"preset": "\xff\xfe"}', headers={"content-type": "application/json"})
    assert response.status_code == 400
    no_server_errors(caplog)


# (page URL, query parameters, expected status)
PAGE_ROWS = [
    ("/", {"config": DEEP}, 422),  # a RecursionError and a 500, once
    ("/", {"config": "[" * 20_000}, 422),
    ("/", {"config": f'{{"workload": {{"seed": {BIG}}}}}'}, 422),
    ("/", {"config": '{"workload": {"arrival_rate": NaN}}'}, 422),
    ("/", {"config": f'{{"name": {SURROGATE}}}'}, 422),
    ("/", {"config": "[1, 2]"}, 422),
    ("/", {"seed": "-1"}, 422),
    ("/", {"seed": LONG_INT}, 422),
    ("/", {"seed": "1.5"}, 422),
    ("/", {"scenario": "x" * 300}, 422),
    ("/", {"scenario": "\u00e9t\u00e9"}, 422),
    ("/", {"lesson": "x" * 300}, 422),
    ("/compare", {"scenario": "x" * 300}, 422),
    ("/compare", {"set_b": f"seed={BIG}"}, 422),
    ("/compare", {"set_b": f"max_num_seqs={LONG_INT}"}, 422),
    ("/compare", {"set_b": "arrival_rate=NaN"}, 422),
    ("/compare", {"set_b": "name=" + "[" * 5000}, 422),
    ("/compare", {"lesson": "priority", "a": "<img src=x>"}, 422),
    ("/compare", {"lesson": "priority", "b": "x" * 300}, 422),
]


@pytest.mark.parametrize("url, params, status", PAGE_ROWS, ids=[f"{i}-{row[0]}" for i, row in enumerate(PAGE_ROWS)])
def test_a_hostile_page_query_is_a_4xx(client, caplog, url, params, status):
    assert client.get(url, params=params).status_code == status
    no_server_errors(caplog)


@pytest.fixture(scope="module")
def created(client) -> dict:
    response = client.post("/api/sessions", json={"preset": "default"})
    assert response.status_code == 201
    return response.json()


@pytest.mark.parametrize("path", [
    "/api/sessions/{sid}/steps/{big}/why", "/api/sessions/{sid}/steps/-1/why", "/api/sessions/{sid}/steps/1.5/why",
    "/api/sessions/{sid}/requests/%ED%A0%80", "/api/sessions/{sid}/requests/" + "r" * 5000,
    "/api/sessions/%ED%A0%80", "/api/lessons/%ED%A0%80", "/s/%ED%A0%80/view", "/metrics?session=%ED%A0%80",
])
def test_a_hostile_path_is_a_4xx_or_an_answer(client, caplog, created, path):
    response = client.get(path.format(sid=created["session_id"], big=LONG_INT))
    assert response.status_code < 500
    no_server_errors(caplog)


def received(ws) -> dict:
    message = ws.receive()
    return wire.decode(message["bytes"]) if message.get("bytes") is not None else json.loads(message["text"])


# (websocket message text, the error code it earns)
MESSAGE_ROWS = [
    (f'{{"type": "auth", "token": {SURROGATE}}}', "bad_token"),  # unhandled, once: no frame at all
    (f'{{"type": "auth", "token": {BIG}}}', "bad_json"),  # likewise
    (f'{{"type": "auth", "token": {LONG_INT}}}', "bad_token"),
    (f'{{"type": {SURROGATE}}}', "unknown_type"),
    (f'{{"type": "ack", "seq": {LONG_INT}}}', "bad_value"),
    ('{"type": "ack", "seq": NaN}', "bad_value"),
    (DEEP, "bad_json"),
    ('{"type": "speed", "steps_per_s": 1e400}', "read_only"),
]


@pytest.mark.parametrize("text, code", MESSAGE_ROWS, ids=[f"{i}-{row[1]}" for i, row in enumerate(MESSAGE_ROWS)])
def test_a_hostile_websocket_message_earns_an_error_frame_and_the_socket_stays(client, caplog, created, text, code):
    with client.websocket_connect(f"/ws/{created['session_id']}") as ws:
        ws.send_text(text)
        ws.send_json({"type": "ping"})
        frames = []
        while (frame := received(ws))["type"] != "pong":  # the socket still answers
            frames.append(frame)
    assert code in [f.get("code") for f in frames if f["type"] == "error"]
    no_server_errors(caplog)


@pytest.mark.parametrize("breakpoint", [{"kind": "request", "value": "\ud800"}, {"kind": "step", "value": 10**4000},
                                        {"kind": "kv_usage", "value": float("inf")}])
def test_hostile_breakpoints_from_the_presenter_leave_the_socket_answering(client, caplog, created, breakpoint):
    with client.websocket_connect(f"/ws/{created['session_id']}") as ws:
        ws.send_json({"type": "auth", "token": created["control_token"]})
        ws.send_text(json.dumps({"type": "breakpoints", "breakpoints": [breakpoint]}))
        ws.send_json({"type": "ping"})
        while received(ws)["type"] != "pong":
            pass
    no_server_errors(caplog)


# -- the command line -------------------------------------------------------------------------------
def servescope(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "scheduler_core", *argv], capture_output=True, text=True,
                          env=env, timeout=120, cwd=ROOT)


def model_config(**changes) -> str:
    config = json.loads((ROOT / "scheduler_core/data/models/llama-3.1-8b.json").read_text())
    return json.dumps({**config, **changes})


def write(path: Path, content: str | bytes) -> str:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


SWEEP = '[workload]\nnum_requests = 5\n[sweep]\n"engine.max_num_seqs" = [1, 2]\n'
FIFO = object()  # a file to make as a FIFO


def bomb(path: Path) -> str:
    """~200 KB of gzip that expands to 200 MB of `[[],[],...]`: 66 million lists, had it been built."""
    with gzip.open(path, "wb", compresslevel=9) as f:
        for _ in range(66):
            f.write(b"[]," * 1_000_000)
    return str(path)


# (name, files to write: name -> content, argv with <name> for their paths, what stderr must say)
CLI_ROWS = [
    ("a 5,000-digit seed in a JSON scenario", {"s.json": f'{{"workload": {{"seed": {BIG}}}}}'},
     ["run", "<s.json>"], "s.json: an integer of more than 4,300 digits"),
    ("a 5,000-digit seed in a TOML scenario", {"s.toml": f"[workload]\nseed = {BIG}\n"},
     ["run", "<s.toml>"], "s.toml: an integer of more than 4,300 digits"),
    ("a 5,000-digit length on a JSONL trace's third line",
     {"t.jsonl": '{"arrival_time": 0, "prompt_len": 5, "output_len": 2}\n\n'
                 f'{{"arrival_time": 1, "prompt_len": {BIG}, "output_len": 2}}\n'},
     ["run", "--workload", "<t.jsonl>"], "t.jsonl:3: an integer of more than 4,300 digits"),
    ("a 5,000-digit length in a CSV trace",
     {"t.csv": f"arrived_at,num_prefill_tokens,num_decode_tokens\n0,{BIG},2\n"},
     ["run", "--workload", "<t.csv>"], "t.csv:2:num_prefill_tokens: not an integer"),
    ("10^1000 layers in a model config", {"m.json": model_config(num_hidden_layers=10**1000)},
     ["run", "--model", "<m.json>"], "model.num_hidden_layers: "),
    ("10^1000 context in a model config", {"m.json": model_config(max_position_embeddings=10**1000)},
     ["run", "--model", "<m.json>"], "model.max_position_embeddings"),
    ("a list as torch_dtype", {"m.json": model_config(torch_dtype=["bf16"])},
     ["run", "--model", "<m.json>"], "model.torch_dtype"),
    ("a model file that is a JSON list", {"m.json": "[1]"}, ["run", "--model", "<m.json>"], "a model file holds a JSON object"),
    ("a scenario name with a lone surrogate", {"s.json": f'{{"name": {SURROGATE}}}'},
     ["run", "<s.json>"], "s.json:name: not Unicode text"),
    ("a scenario nested 5,000 deep", {"s.json": '{"engine": ' + DEEP + "}"}, ["run", "<s.json>"], "nested too deeply"),
    ("a gzip trace that expands to 66 million lists", {"t.json.gz": None},
     ["replay", "<t.json.gz>", "--out", "<out.jsonl>"], "t.json.gz: more than 4,194,304 JSON arrays and objects"),
    ("a 5,000-digit --set-b value", {}, ["compare", "default", "default", f"--set-b=seed={BIG}"],
     "seed: an integer of more than 4,300 digits"),
    ("a 5,000-digit number in --speculative-config", {},
     ["run", "--speculative-config", f'{{"num_speculative_tokens": {BIG}}}'], "an integer of more than 4,300 digits"),
    ("a 5,000-digit number in a step-time batch", {},
     ["step-time", "--model", "llama-3.1-8b", "--gpu", "h200", "--batch", f'[["decode", 1, {BIG}]]'],
     "an integer of more than 4,300 digits"),
    ("a step-time context past the budget", {},
     ["step-time", "--model", "llama-3.1-8b", "--gpu", "h200", "--batch", f'[["decode", 1, {LONG_INT}]]'],
     "batch[0]: C, N, P and L are at most"),
    ("a step-time batch file that does not exist", {},
     ["step-time", "--model", "llama-3.1-8b", "--gpu", "h200", "--batch", "@<missing.json>"], "no such file"),
    ("a 5,000-digit --max-num-seqs", {}, ["run", "--max-num-seqs", BIG], "--max-num-seqs"),
    ("a 1,001-digit --max-num-seqs", {}, ["run", "--max-num-seqs", str(10**1000)],
     "engine.max_num_seqs: must be >= 1 and <= 16,384, got an integer of about 1,001 digits"),
    ("a 1,001-digit --num-requests", {}, ["run", "--num-requests", str(10**1000)], "got an integer of about 1,001 digits"),
    ("a sweep's results file holding a 5,000-digit number", {"g.toml": SWEEP, "r.jsonl": f'{{"x": {BIG}}}\n'},
     ["sweep", "<g.toml>", "--out", "<r.jsonl>"], "r.jsonl:1: an integer of more than 4,300 digits"),
    ("a sweep's results file that is a FIFO", {"g.toml": SWEEP, "r.csv": FIFO},
     ["sweep", "<g.toml>", "--out", "<r.csv>"], "r.csv: not a regular file"),  # it used to wait for ever
    ("a negative --cost-per-gpu-hour", {"g.toml": SWEEP},
     ["sweep", "<g.toml>", "--out", "<out.jsonl>", "--cost-per-gpu-hour", "-1"], "must be a finite number > 0"),
    ("a scenario file of bytes that are not UTF-8", {"s.toml": b"\xff\xfe\x00garbage"}, ["run", "<s.toml>"], "not UTF-8"),
]


@pytest.mark.parametrize("name, files, argv, message", CLI_ROWS, ids=[row[0] for row in CLI_ROWS])
def test_the_cli_refuses_hostile_input_in_one_line_without_a_traceback(tmp_path, name, files, argv, message):
    paths = {"out.jsonl": str(tmp_path / "out.jsonl"), "missing.json": str(tmp_path / "missing.json")}
    for file_name, content in files.items():
        if content is FIFO:
            os.mkfifo(tmp_path / file_name)
            paths[file_name] = str(tmp_path / file_name)
        else:
            paths[file_name] = bomb(tmp_path / file_name) if content is None else write(tmp_path / file_name, content)
    for placeholder, path in paths.items():
        argv = [arg.replace(f"<{placeholder}>", path) for arg in argv]
    result = servescope(*argv, *(["--no-progress"] if argv[0] in ("run", "compare", "sweep") else []))
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert message in result.stderr, result.stderr[-2000:]
