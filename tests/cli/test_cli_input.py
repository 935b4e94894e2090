"""The CLI's bad files and values: each a one-line `servescope: error:` naming the file, the line
(where there is one) and the field, with exit code 2, never a traceback; FIFOs and devices are
refused before anything is read from them."""

import os

import pytest

from scheduler_core.cli.main import main


def cli_error(capsys, argv) -> str:
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("servescope: error:")
    assert "Traceback" not in err
    return err


BINARY = b"\x00\xff\xfe\x01\x80garbage\n"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_binary_trace_is_an_error_naming_file_and_line(tmp_path, capsys, suffix):
    path = tmp_path / f"trace{suffix}"
    path.write_bytes(BINARY)
    assert f"{path}:1: not UTF-8" in cli_error(capsys, ["run", "--workload", str(path)])


def test_a_binary_byte_on_a_later_line_names_that_line(tmp_path, capsys):
    path = tmp_path / "trace.csv"
    path.write_bytes(b"arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,2\n1,2\xff0,3\n")
    assert f"{path}:3: not UTF-8" in cli_error(capsys, ["run", "--workload", str(path)])


def test_a_binary_scenario_file_is_an_error_naming_it(tmp_path, capsys):
    path = tmp_path / "scenario.toml"
    path.write_bytes(BINARY)
    assert f"{path}:1: not UTF-8" in cli_error(capsys, ["run", str(path)])


def test_a_deeply_nested_jsonl_line_is_an_error_not_a_recursion_crash(tmp_path, capsys):
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    assert f"{path}:1: JSON nested too deeply" in cli_error(capsys, ["run", "--workload", str(path)])


@pytest.mark.parametrize("text, field", [
    ('[engine]\ncompat = "yes"\n', "compat"),
    ("engine = 5\n", "engine"),
    ('[workload]\narrival_rate = "fast"\n', "arrival_rate"),
    ('[workload]\nprompt_len = "long"\n', "prompt_len"),
    ('[workload]\nconcurrency = "many"\n', "concurrency"),
    ("slo_ttft_s = -1\n", "slo_ttft_s"),
    ('[workload]\nseed = "abc"\n', "seed"),
    ('[workload]\narrival = "gamma"\narrival_cv = 1e-300\n', "arrival_cv"),
])
def test_a_bad_scenario_value_names_file_and_field(tmp_path, capsys, text, field):
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    assert f"{path}:{field}:" in cli_error(capsys, ["run", str(path)])


def test_a_scenario_json_that_is_not_an_object_is_an_error(tmp_path, capsys):
    path = tmp_path / "scenario.json"
    path.write_text("[1, 2]")
    assert str(path) in cli_error(capsys, ["run", str(path)])


def test_a_csv_trace_with_a_utf8_bom_is_read(tmp_path, capsys):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfarrived_at,num_prefill_tokens,num_decode_tokens\n0,10,2\n0.5,20,3\n")
    assert main(["run", "--workload", str(path), "--no-progress"]) == 0


def test_a_fifo_trace_is_refused_without_being_opened_for_a_blocking_read(tmp_path, capsys):
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    # Opening a FIFO with no writer blocks for ever: returning at all proves it never waited.
    assert "not a regular file" in cli_error(capsys, ["run", "--workload", str(fifo)])


def test_a_fifo_scenario_file_is_refused(tmp_path, capsys):
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    assert "not a regular file" in cli_error(capsys, ["run", str(fifo)])


def test_dev_zero_as_a_trace_is_refused_before_reading(capsys):
    assert "/dev/zero: not a regular file" in cli_error(capsys, ["run", "--workload", "/dev/zero"])


def test_a_replay_trace_at_a_fifo_is_refused(tmp_path, capsys):
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    assert main(["replay", str(fifo), "--out", str(tmp_path / "log.jsonl")]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_trace_larger_than_the_budget_is_refused_unread(tmp_path, capsys, monkeypatch):
    import scheduler_core.workload.traces as traces

    monkeypatch.setattr(traces, "MAX_TRACE_BYTES", 64)
    path = tmp_path / "big.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n" + "0,10,2\n" * 20)
    assert "MiB" in cli_error(capsys, ["run", "--workload", str(path)])


@pytest.mark.parametrize("flag, value, field", [
    ("--num-requests", "5000000", "num_requests"),
    ("--max-model-len", "1000000000", "max_model_len"),
    ("--seed", "-3", "seed"),
    ("--slo-ttft-ms", "-5", "slo_ttft_s"),
])
def test_out_of_bound_flags_name_their_field(capsys, flag, value, field):
    assert field in cli_error(capsys, ["run", flag, value])
