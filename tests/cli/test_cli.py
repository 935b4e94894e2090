"""The headless command line: `run` with overrides and --json, `compare`, `export --perfetto`,
`step-time` and `scenarios`; bad input exits 2 with `servescope: error:` on stderr."""

import json

import pytest

from scheduler_core.cli.main import main
from scheduler_core.scenario.scenario import PRESET_SCENARIOS

LATENCY_KEYS = ("ttft_s", "tpot_s", "itl_s", "e2e_s", "queue_s")
SUMMARY_KEYS = {"mean", "p50", "p90", "p95", "p99"}
DOCUMENTED_KEYS = {
    "num_requests", "num_steps", "simulated_s", "wall_s", "requests_per_s", "input_tokens_per_s",
    "output_tokens_per_s", "goodput_requests_per_s", "slo_attainment", *LATENCY_KEYS, "preemptions",
    "kv_usage_mean", "fragmentation", "prefix_cache_hit_rate",
}


def run_json(tmp_path, *args):
    """`servescope run ... --json FILE` and the JSON it wrote."""
    path = tmp_path / "out.json"
    assert main(["run", *args, "--no-progress", "--json", str(path)]) == 0
    return json.loads(path.read_text())


def export_events(tmp_path, *args):
    """`servescope export ... --perfetto FILE` and its trace events."""
    path = tmp_path / "trace.json"
    assert main(["export", *args, "--no-progress", "--perfetto", str(path)]) == 0
    return json.loads(path.read_text())["traceEvents"]


def request_spans(events):
    """(start, end) in microseconds of each request's outermost async span."""
    begins = {e["id"]: e["ts"] for e in events if e["ph"] == "b" and e["name"] == e["id"]}
    ends = {e["id"]: e["ts"] for e in events if e["ph"] == "e" and e["name"] == e["id"]}
    assert begins.keys() == ends.keys()
    return {rid: (begins[rid], ends[rid]) for rid in begins}


def write_trace(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n"
                    "0.0,100,10\n0.2,300,20\n0.4,50,5\n0.6,700,40\n0.8,20,2\n")
    return path


def assert_cli_error(capsys, argv, *words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("servescope: error:")
    for word in words:
        assert word in err


# -- run -----------------------------------------------------------------------------------


def test_run_writes_json_with_every_documented_metric(tmp_path, capsys):
    """`run --json F` writes the scenario and every documented metric; the table goes to stdout."""
    data = run_json(tmp_path, "--num-requests", "30")

    assert DOCUMENTED_KEYS <= set(data)
    for key in LATENCY_KEYS:
        assert set(data[key]) == SUMMARY_KEYS
    assert data["num_requests"] == 30
    assert data["scenario"]["name"] == "default"
    assert "request throughput" in capsys.readouterr().out


def test_run_with_fewer_requests_than_the_preset_has_shared_prefixes(tmp_path):
    """The default preset shares three prompt prefixes; two requests share at most two."""
    assert PRESET_SCENARIOS["default"]["workload"]["num_shared_prefixes"] == 3
    data = run_json(tmp_path, "--num-requests", "2")
    assert data["scenario"]["workload"]["num_shared_prefixes"] == 2
    assert data["num_requests"] == 2


def test_run_policy_override_shows_in_the_json_scenario(tmp_path):
    """--policy static replaces the scenario's policy."""
    assert run_json(tmp_path, "--num-requests", "20", "--policy", "static")["scenario"]["engine"]["policy"] == "static"


def test_run_num_gpu_blocks_override_sizes_the_pool(tmp_path, capsys):
    """--num-gpu-blocks 300 is the pool the run used, in the JSON and in the table's title."""
    data = run_json(tmp_path, "--num-requests", "20", "--num-gpu-blocks", "300")

    assert data["scenario"]["engine"]["num_gpu_blocks"] == 300
    assert "300 KV blocks" in capsys.readouterr().out


def test_run_model_and_gpu_overrides_resize_the_pool_from_memory(tmp_path):
    """Changing the GPU drops the preset's fixed pool and sizes it from the new GPU's memory."""
    default = run_json(tmp_path, "--num-requests", "20")
    resized = run_json(tmp_path, "--num-requests", "20", "--gpu", "h100-sxm")

    assert resized["scenario"]["gpu"] == "h100-sxm"
    assert resized["scenario"]["engine"]["num_gpu_blocks"] > 10 * default["scenario"]["engine"]["num_gpu_blocks"]


def test_run_seed_override_changes_the_workload(tmp_path):
    """--seed draws another workload, so the metrics differ."""
    first = run_json(tmp_path, "--num-requests", "20", "--seed", "1")
    second = run_json(tmp_path, "--num-requests", "20", "--seed", "2")

    assert first["scenario"]["workload"]["seed"] == 1 and second["scenario"]["workload"]["seed"] == 2
    assert first["input_tokens_per_s"] != second["input_tokens_per_s"]


def test_arrival_rate_inf_sends_every_request_at_time_0(tmp_path):
    """--arrival-rate inf: every request's span in the trace starts at 0."""
    spans = request_spans(export_events(tmp_path, "--num-requests", "20", "--arrival-rate", "inf"))

    assert len(spans) == 20
    assert {start for start, _ in spans.values()} == {0}


def test_a_finite_arrival_rate_spreads_arrivals_out(tmp_path):
    """Without inf, arrivals are spread over time (the contrast that makes the inf test meaningful);
    without the default preset's burst of requests waiting at the start, all of them."""
    spans = request_spans(export_events(tmp_path, "--num-requests", "20", "--arrival-rate", "5", "--initial-burst", "0"))

    assert len({start for start, _ in spans.values()}) == 20


def test_concurrency_4_keeps_at_most_4_requests_in_flight(tmp_path):
    """--concurrency 4: at any moment at most 4 request spans are open, and 4 are at some point."""
    spans = request_spans(export_events(tmp_path, "--num-requests", "20", "--concurrency", "4"))
    # At equal times an end comes before a begin: the finished client sends its next request then.
    events = sorted([(start, 1) for start, _ in spans.values()] + [(end, -1) for _, end in spans.values()])
    open_spans, most = 0, 0
    for _, change in events:
        open_spans += change
        most = max(most, open_spans)

    assert len(spans) == 20
    assert most == 4


def test_concurrency_shows_in_the_json_scenario(tmp_path):
    """--concurrency 4 is recorded as the workload's concurrency."""
    assert run_json(tmp_path, "--num-requests", "20", "--concurrency", "4")["scenario"]["workload"]["concurrency"] == 4


def test_workload_names_a_length_distribution(tmp_path):
    """--workload sharegpt / alpaca picks the lengths: Alpaca prompts are shorter than ShareGPT's."""
    sharegpt = run_json(tmp_path, "--num-requests", "30", "--workload", "sharegpt")
    alpaca = run_json(tmp_path, "--num-requests", "30", "--workload", "alpaca")

    def mean_prompt(data):
        return data["input_tokens_per_s"] / data["requests_per_s"]

    assert sharegpt["scenario"]["workload"]["lengths"] == "sharegpt"
    assert alpaca["scenario"]["workload"]["lengths"] == "alpaca"
    assert mean_prompt(alpaca) < mean_prompt(sharegpt)


def test_workload_reads_a_trace_file(tmp_path):
    """--workload FILE.csv runs the trace's requests: its count and its prompt tokens."""
    trace = write_trace(tmp_path)
    data = run_json(tmp_path, "--workload", str(trace))

    assert data["scenario"]["trace"] == str(trace)
    assert data["num_requests"] == 5
    assert data["input_tokens_per_s"] * data["simulated_s"] == pytest.approx(100 + 300 + 50 + 700 + 20)
    # The default scenario's shared prefixes do not apply to a trace.
    assert data["prefix_cache_hit_rate"] == 0


def test_slo_flags_set_goodput(tmp_path):
    """--slo-ttft-ms 1 is unreachable: goodput 0 while requests still finish."""
    data = run_json(tmp_path, "--num-requests", "20", "--slo-ttft-ms", "1")

    assert data["requests_per_s"] > 0
    assert data["goodput_requests_per_s"] == 0


# -- compare -------------------------------------------------------------------------------


def test_compare_prints_both_columns_and_their_ratio(tmp_path, capsys):
    """`compare default default --set-b policy=static` runs the same requests twice and prints A, B and B/A."""
    path = tmp_path / "cmp.json"
    assert main(["compare", "default", "default", "--set-b", "policy=static", "--num-requests", "20",
                 "--no-progress", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    data = json.loads(path.read_text())

    assert "policy=static" in out and "the same 20 requests" in out
    header = next(line for line in out.splitlines() if "metric" in line)
    assert header.split() == ["metric", "A", "B", "B/A"]
    throughput = next(line for line in out.splitlines() if "request throughput" in line)
    assert throughput.rstrip().endswith("x")
    assert data["a"]["scenario"]["engine"]["policy"] == "vllm-v1"
    assert data["b"]["scenario"]["engine"]["policy"] == "static"
    assert data["a"]["num_requests"] == data["b"]["num_requests"] == 20


def test_compare_of_identical_configurations_has_ratio_1(capsys):
    """The same configuration twice gives identical metrics: every ratio is 1.00x or undefined."""
    assert main(["compare", "default", "default", "--num-requests", "20", "--no-progress"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()[2:] if "wall" not in line]

    assert rows and all(line.split()[-1] in ("1.00x", "-") for line in rows)


def test_compare_honours_slo_flags_in_goodput(tmp_path):
    """--slo-ttft-ms 1 applies to compare as to run: goodput 0 on both sides."""
    path = tmp_path / "cmp.json"
    assert main(["compare", "default", "default", "--slo-ttft-ms", "1", "--num-requests", "20", "--no-progress",
                 "--json", str(path)]) == 0
    data = json.loads(path.read_text())

    assert data["a"]["goodput_requests_per_s"] == 0 and data["b"]["goodput_requests_per_s"] == 0


def test_compare_refuses_an_unknown_set_b_field(capsys):
    """--set-b with a field that exists nowhere is an error naming it."""
    assert_cli_error(capsys, ["compare", "default", "default", "--set-b", "polcy=static", "--num-requests", "20"],
                     "polcy")


# -- export --------------------------------------------------------------------------------


def test_export_writes_a_chrome_trace_with_slices_async_spans_and_counters(tmp_path):
    """The Perfetto file is JSON whose traceEvents hold step slices (X), request spans (b/e) and counters (C)."""
    events = export_events(tmp_path, "--num-requests", "20")
    phases = {e["ph"] for e in events}

    assert {"X", "b", "e", "C"} <= phases
    assert all(e["dur"] >= 0 for e in events if e["ph"] == "X")
    assert {e["name"] for e in events if e["ph"] == "C"} >= {"kv_usage", "queues"}
    assert len(request_spans(events)) == 20


def test_export_spans_nest_queued_prefill_decode_in_order(tmp_path):
    """Each request's queued, prefill and decode spans follow each other inside its outer span."""
    events = export_events(tmp_path, "--num-requests", "20")
    by_request = {}
    for e in events:
        if e["ph"] in "be" and e.get("cat") == "request":
            by_request.setdefault(e["id"], {})[(e["name"] if e["name"] != e["id"] else "all", e["ph"])] = e["ts"]

    for ts in by_request.values():
        assert ts[("all", "b")] == ts[("queued", "b")] <= ts[("queued", "e")] == ts[("prefill", "b")]
        assert ts[("prefill", "e")] == ts[("decode", "b")] <= ts[("decode", "e")] == ts[("all", "e")]


# -- step-time -----------------------------------------------------------------------------


def floats(out):
    return [float(line) for line in out.split()]


def test_step_time_prints_one_time_for_a_literal_batch(capsys):
    """A literal batch prints one number: its predicted milliseconds."""
    assert main(["step-time", "--model", "llama-3.1-8b", "--gpu", "h200",
                 "--batch", '[["prefill", 512, 0], ["decode", 32, 2048]]']) == 0
    times = floats(capsys.readouterr().out)

    assert len(times) == 1 and 5 < times[0] < 100


def test_step_time_prints_one_time_per_batch_of_a_file_growing_with_the_batch(tmp_path, capsys):
    """@FILE with 3 batches of increasing size prints 3 increasing times."""
    path = tmp_path / "batches.json"
    path.write_text(json.dumps([
        [["decode", 1, 1024]],
        [["decode", 64, 1024]],
        [["prefill", 2048, 0], ["decode", 64, 1024]],
    ]))

    assert main(["step-time", "--model", "llama-3.1-8b", "--gpu", "h200", "--batch", f"@{path}"]) == 0
    times = floats(capsys.readouterr().out)

    assert len(times) == 3
    assert times[0] < times[1] < times[2]


def test_step_time_on_a_slower_gpu_is_longer(capsys):
    """The same batch takes longer on an L40S than on an H200."""
    batch = '[["decode", 32, 1024]]'
    main(["step-time", "--model", "llama-3.1-8b", "--gpu", "h200", "--batch", batch])
    main(["step-time", "--model", "llama-3.1-8b", "--gpu", "l40s", "--batch", batch])
    h200, l40s = floats(capsys.readouterr().out)

    assert l40s > h200


def test_step_time_with_tp_2_is_faster_for_a_big_prefill(capsys):
    """--tp 2 splits a big prefill over two GPUs."""
    batch = '[["prefill", 8192, 0]]'
    main(["step-time", "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--batch", batch])
    main(["step-time", "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--tp", "2", "--batch", batch])
    tp1, tp2 = floats(capsys.readouterr().out)

    assert tp2 < tp1


def test_step_time_with_tp_0_is_an_error(capsys):
    """--tp 0 is bad input: exit 2 with a message, like every other bad value."""
    assert_cli_error(capsys, ["step-time", "--model", "llama-3.1-8b", "--gpu", "h200", "--tp", "0",
                              "--batch", '[["decode", 1, 1]]'])


# -- errors --------------------------------------------------------------------------------


def test_unknown_model_exits_2_with_an_error(capsys):
    """A model that is neither a preset nor a file is reported, not a traceback."""
    assert_cli_error(capsys, ["step-time", "--model", "gpt-17", "--gpu", "h200", "--batch", '[["decode", 1, 1]]'],
                     "gpt-17")


def test_unknown_model_in_run_exits_2_with_an_error(capsys):
    """`run --model` with an unknown model is reported the same way."""
    assert_cli_error(capsys, ["run", "--model", "gpt-17", "--num-requests", "20", "--no-progress"], "gpt-17")


@pytest.mark.parametrize("batch", ['[["foo", 1, 2]]', '[["decode", 0, 5]]', "[]", '[["prefill", 1]]', "not json"])
def test_malformed_batch_exits_2_with_an_error(capsys, batch):
    """A batch part that is not ["prefill", C, P] / ["decode", N, L] with sane numbers is refused."""
    assert_cli_error(capsys, ["step-time", "--model", "llama-3.1-8b", "--gpu", "h200", "--batch", batch], "batch")


def test_unknown_scenario_exits_2_with_an_error(capsys):
    """A scenario that is neither a preset nor a file is reported."""
    assert_cli_error(capsys, ["run", "no-such-scenario", "--no-progress"], "no-such-scenario")


def test_a_model_that_does_not_fit_its_gpu_exits_2(capsys):
    """Llama-3.3-70B fp8 on one L40S: its weights alone overflow the GPU, reported as the model's
    (issue 29: not as num_gpu_blocks, a setting the user never gave)."""
    assert_cli_error(capsys, ["run", "--model", "llama-3.3-70b-fp8", "--gpu", "l40s", "--num-requests", "20",
                              "--no-progress"], "model")


def test_a_workload_that_is_neither_a_name_nor_a_file_exits_2(capsys):
    """--workload with an unknown name is reported naming workload."""
    assert_cli_error(capsys, ["run", "--workload", "wikipedia", "--no-progress"], "workload")


def test_a_bad_trace_row_exits_2_naming_its_line(tmp_path, capsys):
    """A bad row in a --workload trace is reported with its file and line."""
    path = tmp_path / "bad.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,2\n1,ten,2\n")

    assert_cli_error(capsys, ["run", "--workload", str(path), "--no-progress"], f"{path}:3:num_prefill_tokens")


def test_bad_numeric_override_exits_2(capsys):
    """--num-requests 0 is an invalid workload, reported naming num_requests."""
    assert_cli_error(capsys, ["run", "--num-requests", "0", "--no-progress"], "num_requests")


# -- scenarios -----------------------------------------------------------------------------


def test_scenarios_lists_every_preset_with_its_description(capsys):
    """`scenarios` prints one line per preset: its name and description."""
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()

    assert len(lines) == len(PRESET_SCENARIOS)
    for line, (name, data) in zip(lines, PRESET_SCENARIOS.items()):
        assert line.split()[0] == name
        assert data["description"][:30] in line


@pytest.mark.parametrize("name", [n for n in PRESET_SCENARIOS if n != "default"])
def test_every_preset_scenario_runs(tmp_path, name):
    """Each preset builds and runs (shortened to 20 requests)."""
    assert run_json(tmp_path, name, "--num-requests", "20")["num_requests"] == 20
