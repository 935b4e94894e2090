"""Trace import: the Azure LLM trace's CSV, the simple CSV and JSONL become requests that start
at time 0 in arrival order; a bad row is an error naming its file, line and column."""

import json
import math

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.errors import ConfigError
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.traces import load_trace_workload
from tests.paths import REPO

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
AZURE_CODE_TRACE_CANDIDATES = (REPO.parent / "shared" / "data" / "azure_llm_2023_code.csv",)


def write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def summary(workload):
    return [(r.arrival_time, len(r.prompt_token_ids), r.max_tokens) for r in workload.requests]


def config_error(path, max_model_len=4096):
    with pytest.raises(ConfigError) as error:
        load_trace_workload(path, max_model_len)
    return error.value


# -- formats -------------------------------------------------------------------------------


def test_azure_csv_with_7_fractional_digits_is_read_in_arrival_order_from_time_0(tmp_path):
    """The Azure trace's ISO timestamps (7 fractional digits) become seconds after the first arrival."""
    path = write(tmp_path, "azure.csv", [
        AZURE_HEADER,
        "2023-11-16 18:17:03.9799600,4808,10",
        "2023-11-16 18:17:04.0319600,3180,8",
        "2023-11-16 18:17:05.5000000,110,27",
    ])

    requests = summary(load_trace_workload(path, 8192))

    assert [(n, m) for _, n, m in requests] == [(4808, 10), (3180, 8), (110, 27)]
    assert [t for t, _, _ in requests] == pytest.approx([0.0, 0.052, 1.52004], abs=1e-6)


def test_simple_csv_is_read_in_arrival_order_from_time_0(tmp_path):
    """`arrived_at,num_prefill_tokens,num_decode_tokens` rows, out of order, come back sorted and shifted."""
    path = write(tmp_path, "simple.csv", [
        "arrived_at,num_prefill_tokens,num_decode_tokens",
        "12.5,100,20",
        "10.0,50,5",
        "11.0,70,9",
    ])

    assert summary(load_trace_workload(path, 4096)) == [(0.0, 50, 5), (1.0, 70, 9), (2.5, 100, 20)]


def test_jsonl_is_read_in_arrival_order_from_time_0(tmp_path):
    """JSONL rows with arrival_time / prompt_len / output_len (or vLLM-style names) are read and sorted."""
    path = write(tmp_path, "trace.jsonl", [
        json.dumps({"arrival_time": 3.0, "prompt_len": 40, "output_len": 4}),
        "",
        json.dumps({"arrived_at": 2.0, "num_prefill_tokens": 30, "num_decode_tokens": 3}),
        json.dumps({"arrival_time": 2.5, "prompt_token_ids": [1, 2, 3, 4, 5], "max_tokens": 7}),
    ])

    assert summary(load_trace_workload(path, 4096)) == [(0.0, 30, 3), (0.5, 5, 7), (1.0, 40, 4)]


def test_trace_requests_get_unique_ids_and_prompts(tmp_path):
    """Trace prompts share no token, so a trace alone never produces prefix-cache hits."""
    path = write(tmp_path, "same.csv", ["arrived_at,num_prefill_tokens,num_decode_tokens"] + ["0,64,4"] * 5)
    requests = load_trace_workload(path, 4096).requests
    tokens = [token for r in requests for token in r.prompt_token_ids]

    assert len({r.request_id for r in requests}) == 5
    assert len(tokens) == len(set(tokens))


def test_num_requests_keeps_the_first_arrivals(tmp_path):
    """num_requests=N keeps the N earliest requests of the trace."""
    path = write(tmp_path, "t.csv", ["arrived_at,num_prefill_tokens,num_decode_tokens",
                                     "3,30,3", "1,10,1", "2,20,2", "4,40,4"])

    assert summary(load_trace_workload(path, 4096, num_requests=2)) == [(0.0, 10, 1), (1.0, 20, 2)]


def test_prompts_longer_than_max_model_len_are_clipped_and_the_description_says_so(tmp_path):
    """A 5000-token prompt under max_model_len=2048 becomes 2047 tokens, and the description counts it."""
    path = write(tmp_path, "long.csv", [AZURE_HEADER,
                                        "2023-11-16 18:17:03.9799600,5000,10",
                                        "2023-11-16 18:17:04.9799600,2047,10",
                                        "2023-11-16 18:17:05.9799600,100,10"])

    workload = load_trace_workload(path, 2048)

    assert [len(r.prompt_token_ids) for r in workload.requests] == [2047, 2047, 100]
    assert "1 prompts clipped" in workload.description


def test_description_does_not_mention_clipping_when_nothing_was_clipped(tmp_path):
    """Only a trace that was actually clipped says so."""
    path = write(tmp_path, "short.csv", ["arrived_at,num_prefill_tokens,num_decode_tokens", "0,10,2"])

    assert "clipped" not in load_trace_workload(path, 2048).description


def test_a_trace_runs_through_the_simulation(tmp_path):
    """Every request of a trace is served by the engine."""
    path = write(tmp_path, "run.csv", ["arrived_at,num_prefill_tokens,num_decode_tokens",
                                       "0.0,300,12", "0.01,900,4", "0.5,50,30"])
    sim = Simulation(EngineConfig(num_gpu_blocks=200), load_trace_workload(path, 4096))
    sim.run()

    assert sim.metrics.num_finished == 3


# -- bad rows ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row, column",
    [
        ("2023-11-16 18:17:04.0319600,many,8", "ContextTokens"),
        ("2023-11-16 18:17:04.0319600,12.5,8", "ContextTokens"),
        ("2023-11-16 18:17:04.0319600,0,8", "ContextTokens"),
        ("2023-11-16 18:17:04.0319600,-3,8", "ContextTokens"),
        ("2023-11-16 18:17:04.0319600,100,0", "GeneratedTokens"),
        ("2023-11-16 18:17:04.0319600,100", "GeneratedTokens"),
        ("yesterday at noon,100,8", "TIMESTAMP"),
        ("2023-13-45 18:17:04.0319600,100,8", "TIMESTAMP"),
    ],
)
def test_a_bad_azure_row_names_file_line_and_column(tmp_path, row, column):
    """Non-integer or non-positive tokens, a missing cell or a bad timestamp on line 3 is `path:3:COLUMN`."""
    path = write(tmp_path, "bad.csv", [AZURE_HEADER, "2023-11-16 18:17:03.9799600,4808,10", row])

    assert config_error(path).field == f"{path}:3:{column}"


def test_a_bad_simple_csv_row_names_its_column(tmp_path):
    """The simple format names its own columns in errors."""
    path = write(tmp_path, "bad.csv", ["arrived_at,num_prefill_tokens,num_decode_tokens", "0,10,2", "1,10,2",
                                       "2,10,two"])

    assert config_error(path).field == f"{path}:4:num_decode_tokens"


@pytest.mark.parametrize("timestamp", ["nan", "inf"])
def test_a_non_finite_timestamp_is_a_bad_row(tmp_path, timestamp):
    """`nan` or `inf` is not an arrival time: the row is refused, naming line and column."""
    path = write(tmp_path, "bad.csv", ["arrived_at,num_prefill_tokens,num_decode_tokens", "0,10,2",
                                       f"{timestamp},10,2"])

    assert config_error(path).field == f"{path}:3:arrived_at"


def test_an_unknown_header_names_line_1(tmp_path):
    """A CSV whose columns match neither format is refused at its header, line 1."""
    path = write(tmp_path, "odd.csv", ["time,input,output", "0,10,2"])

    error = config_error(path)

    assert error.field == f"{path}:1"
    assert "TIMESTAMP" in error.reason and "arrived_at" in error.reason


def test_an_empty_csv_names_line_1(tmp_path):
    """A file with no header at all is refused at line 1."""
    path = tmp_path / "empty.csv"
    path.write_text("")

    assert config_error(path).field == f"{path}:1"


def test_a_header_without_rows_is_refused(tmp_path):
    """A trace with no requests is an error naming the file."""
    path = write(tmp_path, "none.csv", [AZURE_HEADER])

    assert config_error(path).field == str(path)


def test_spaces_after_commas_in_the_header_are_tolerated(tmp_path):
    """`TIMESTAMP, ContextTokens, GeneratedTokens` is recognised as the Azure format (the header is stripped)."""
    path = write(tmp_path, "spaced.csv", ["TIMESTAMP, ContextTokens, GeneratedTokens",
                                          "2023-11-16 18:17:03.9799600,4808,10"])

    assert summary(load_trace_workload(path, 8192)) == [(0.0, 4808, 10)]


def test_a_missing_trace_file_names_the_workload(tmp_path):
    """A path that does not exist is a `workload` error."""
    assert config_error(tmp_path / "nope.csv").field == "workload"


def test_bad_json_names_file_and_line(tmp_path):
    """A JSONL line that is not JSON is `path:LINE`."""
    path = write(tmp_path, "bad.jsonl", [json.dumps({"arrival_time": 0, "prompt_len": 5, "output_len": 2}),
                                         "{arrival_time: 1"])

    assert config_error(path).field == f"{path}:2"


@pytest.mark.parametrize(
    "row, column",
    [
        ({"arrival_time": -1, "prompt_len": 5, "output_len": 2}, "arrival_time"),
        ({"arrival_time": "soon", "prompt_len": 5, "output_len": 2}, "arrival_time"),
        ({"prompt_len": 5, "output_len": 2}, "arrival_time"),
        ({"arrival_time": 1, "prompt_len": 0, "output_len": 2}, "prompt_len"),
        ({"arrival_time": 1, "prompt_len": "five", "output_len": 2}, "prompt_len"),
        ({"arrival_time": 1, "output_len": 2}, "prompt_len"),
        ({"arrival_time": 1, "prompt_len": 5, "output_len": -2}, "output_len"),
    ],
)
def test_a_bad_jsonl_row_names_file_line_and_field(tmp_path, row, column):
    """A JSONL row with a missing, negative or non-numeric value on line 2 is `path:2:FIELD`."""
    path = write(tmp_path, "bad.jsonl", [json.dumps({"arrival_time": 0, "prompt_len": 5, "output_len": 2}),
                                         json.dumps(row)])

    assert config_error(path).field == f"{path}:2:{column}"


def test_a_fractional_token_count_in_jsonl_is_a_bad_row(tmp_path):
    """12.7 tokens is not a token count, in JSONL as in CSV."""
    path = write(tmp_path, "frac.jsonl", [json.dumps({"arrival_time": 0, "prompt_len": 12.7, "output_len": 3})])

    assert config_error(path).field == f"{path}:1:prompt_len"


def test_a_jsonl_line_that_is_not_an_object_is_a_bad_row(tmp_path):
    """`[1, 2]` is JSON but not a request: ConfigError naming the line, not a crash."""
    path = write(tmp_path, "list.jsonl", ["[1, 2]"])

    assert config_error(path).field.startswith(f"{path}:1")


# -- the real Azure trace ------------------------------------------------------------------


def azure_code_trace():
    for path in AZURE_CODE_TRACE_CANDIDATES:
        if path.exists():
            return path
    pytest.skip("the Azure LLM 2023 code trace is not beside this checkout (../shared/data/)")


def test_the_azure_2023_code_trace_loads_all_8819_requests():
    """The published Azure code-service trace reads whole: 8,819 requests over about 57 minutes."""
    workload = load_trace_workload(azure_code_trace(), max_model_len=8192)
    times = [r.arrival_time for r in workload.requests]

    assert len(workload.requests) == 8819
    assert times[0] == 0.0 and times == sorted(times)
    assert 50 * 60 < times[-1] < 60 * 60
    assert all(math.isfinite(t) for t in times)
    # Its longest prompt (7,437 tokens) fits 8192, so nothing was clipped.
    assert "clipped" not in workload.description
    assert max(len(r.prompt_token_ids) for r in workload.requests) == 7437


def test_the_azure_2023_code_trace_is_clipped_under_a_4096_context():
    """Under max_model_len=4096 the trace's long prompts are clipped to 4095 and counted."""
    workload = load_trace_workload(azure_code_trace(), max_model_len=4096)

    assert max(len(r.prompt_token_ids) for r in workload.requests) == 4095
    assert "prompts clipped" in workload.description
