"""`servescope run` simulates the workload it was asked for and says which: a `--workload` on the
command line replaces a preset's traffic shape (its shared system prompts), and the lengths
measured from the requests built are printed before the run."""

import json

from scheduler_core.cli.main import build_parser, main
from scheduler_core.cli.overrides import build_scenario
from scheduler_core.scenario.scenario import PRESET_SCENARIOS
from scheduler_core.workload.summary import WorkloadSummary
from scheduler_core.workload.workload import NAMED_LENGTHS

SEED_COMMAND = ["run", "--model", "llama-3.3-70b-fp8", "--gpu", "h100-sxm", "--kv-cache-dtype", "fp8",
                "--gpu-memory-utilization", "0.95", "--workload", "sharegpt", "--concurrency", "128"]


def summary_of(argv, assignments=()):
    args = build_parser().parse_args(argv)
    return WorkloadSummary.of(build_scenario(args, args.scenario, assignments).build_workload())


def test_workload_flag_drops_the_default_presets_shared_prefixes(tmp_path):
    """The seed's command once simulated ShareGPT prompts lengthened by one of the default preset's
    three 96-token system prompts (a mean of 263 tokens, not ShareGPT's 161)."""
    assert PRESET_SCENARIOS["default"]["workload"]["shared_prefix_len"] == 96
    path = tmp_path / "out.json"
    assert main([*SEED_COMMAND, "--num-requests", "20", "--no-progress", "--json", str(path)]) == 0
    workload = json.loads(path.read_text())["scenario"]["workload"]
    assert workload["lengths"] == "sharegpt"
    assert workload["shared_prefix_len"] == 0


def test_sharegpt_on_the_command_line_has_sharegpt_mean_lengths():
    summary = summary_of([*SEED_COMMAND, "--num-requests", "4000"])
    sharegpt = NAMED_LENGTHS["sharegpt"]
    assert summary.num_shared_prefixes == 0
    assert abs(summary.prompt_mean - sharegpt.prompt_mean) < 0.08 * sharegpt.prompt_mean
    assert abs(summary.output_mean - sharegpt.output_mean) < 0.08 * sharegpt.output_mean


def test_shared_prefixes_a_sweep_assigns_are_kept():
    """A sweep's `shared_prefix_len=64` is asked on the command line too."""
    summary = summary_of([*SEED_COMMAND, "--num-requests", "50"],
                         [("shared_prefix_len", 64), ("num_shared_prefixes", 2)])
    assert (summary.num_shared_prefixes, summary.shared_prefix_len) == (2, 64)
    assert summary.prompt_mean > 64


def test_the_preset_alone_keeps_its_prefixes_and_says_so(capsys):
    assert main(["run", "--num-requests", "20", "--no-progress"]) == 0
    line = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("workload simulated:"))
    assert "20 requests" in line
    assert "one of 3 shared prefixes of 96 tokens" in line


def test_run_prints_mean_and_p99_lengths_of_the_workload(capsys):
    assert main([*SEED_COMMAND, "--num-requests", "20", "--no-progress"]) == 0
    line = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("workload simulated:"))
    summary = summary_of([*SEED_COMMAND, "--num-requests", "20"])
    assert f"prompt mean {summary.prompt_mean:,.1f}, p99 {summary.prompt_p99:,} tokens" in line
    assert f"output mean {summary.output_mean:,.1f}, p99 {summary.output_p99:,} tokens" in line
    assert "shared prefixes" not in line


def capacity_line(argv, capsys) -> list[str]:
    assert main([*argv, "--no-progress"]) == 0
    return [t for t in capsys.readouterr().out.splitlines() if t.startswith("capacity warning:")]


def test_run_warns_when_128_sharegpt_clients_outgrow_the_kv_cache(capsys):
    """The seed's command: 128 ShareGPT conversations need about twice the ~32k fp8 KV tokens one
    H100 keeps beside the weights; the warning says so before the numbers it explains."""
    [line] = capacity_line([*SEED_COMMAND, "--num-requests", "256"], capsys)
    assert line.startswith("capacity warning: 128 clients x ")
    assert "more than the 32,416 the cache holds" in line


def test_run_does_not_warn_when_short_requests_fit(capsys):
    alpaca = [*SEED_COMMAND[:SEED_COMMAND.index("sharegpt")], "alpaca", "--concurrency", "128"]
    assert capacity_line([*alpaca, "--num-requests", "256"], capsys) == []
