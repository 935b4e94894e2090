"""Every benchmark runs at a tiny size and prints its figures, so none can break unnoticed.

The figures themselves are not checked (at this size they say nothing, and they depend on the
machine): only that each script exits cleanly and prints the lines it exists to print.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REPO as ROOT

HAS_CHROMIUM = Path("/usr/bin/chromium").exists()


def run_benchmark(*args: str) -> str:
    result = subprocess.run([sys.executable, *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result.stdout


def test_bench_core_replays_both_ways_and_prints_tokens_per_second():
    out = run_benchmark("benchmarks/bench_core.py", "--smoke")
    assert "prefix caching off: 200 requests" in out and "prefix caching on : 200 requests" in out
    assert out.count("simulated output tokens/s") == 2
    assert "blocks, 0 finished before:" in out


def test_bench_core_times_a_baseline_checkout_in_the_same_run():
    out = run_benchmark("benchmarks/bench_core.py", "--smoke", "--prefix-caching", "--baseline", str(ROOT))
    assert "baseline prefix caching on : 200 requests" in out
    assert "x the baseline's simulated output tokens/s" in out


def test_bench_long_run_prints_memory_along_the_way():
    out = run_benchmark("benchmarks/bench_long_run.py", "--requests", "1000")
    assert "1,000 finished" in out and "peak RSS" in out and "TTFT p99" in out


def test_bench_cost_model_prints_every_check():
    out = run_benchmark("benchmarks/bench_cost_model.py", "--smoke")
    for check in ("shipped defaults, in sample", "leave-one-out, mixed steps", "leave-one-model-out"):
        assert check in out


def test_bench_stream_prints_frame_costs_and_delivery():
    out = run_benchmark("benchmarks/bench_stream.py", "--smoke")
    assert "snapshot" in out and "delivery over ws://127.0.0.1" in out
    assert out.rstrip().splitlines()[-1].startswith("deflate")


def test_bench_sweep_writes_the_same_file_every_way():
    out = run_benchmark("benchmarks/bench_sweep.py", "--requests", "10", "--workers", "2")
    assert "serial" in out and "local processes" in out
    assert "same file: False" not in out


def test_bench_classroom_prints_both_groups():
    out = run_benchmark("benchmarks/bench_classroom.py", "--students", "2", "--viewers", "2", "--seconds", "1")
    assert "students" in out and "lecture_viewers" in out and "server CPU per delivered frame" in out


def test_bench_abuse_prints_every_attack_and_every_target():
    out = run_benchmark("benchmarks/bench_abuse.py", "--smoke")
    table, targets = out.split("targets (issue 24)")
    for row in ("baseline", "memory", "validate", "why", "sockets", "workers", "fast"):
        assert f"\n{row} " in table and f"\n{row} " in targets
    assert "frames/s" in table and "MiB" in table and " ms" in table
    assert targets.count("PASS") + targets.count("FAIL") >= 7 * 4


def test_validate_published_prints_its_table():
    out = run_benchmark("benchmarks/validate_published.py", "--smoke")
    assert out.count("\n|") >= 3  # a header, its rule and at least one row


@pytest.mark.browser
@pytest.mark.skipif(not HAS_CHROMIUM, reason="needs Debian's chromium at /usr/bin/chromium (CI installs it)")
def test_bench_ui_prints_its_table():
    out = run_benchmark("benchmarks/bench_ui.py", "--smoke")
    assert "frames drawn/s" in out and "server CPU ms per step" in out
