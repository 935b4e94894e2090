"""The validation table's rows (benchmarks/validate_published.py) are checkable: each cites where its
figure was published and which vLLM ran it, reads a metric the simulation reports, and describes a
scenario the simulation accepts. Nothing here simulates; the script itself does that."""

import dataclasses
import importlib.util
import re
import sys

import pytest

from scheduler_core.engine.releases import VLLM_RELEASES, VllmCompat
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.sim.metrics import MetricsCollector
from tests.paths import REPO

SCRIPT = REPO / "benchmarks" / "validate_published.py"
spec = importlib.util.spec_from_file_location("validate_published", SCRIPT)
validate_published = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = validate_published  # its dataclasses look their module up there
spec.loader.exec_module(validate_published)
ROWS = validate_published.ROWS + validate_published.MOE_ROWS
URL = re.compile(r"\b[a-z0-9-]+(\.[a-z0-9-]+)+/\S+")
VERSION = re.compile(r"\d+\.\d+(\.\d+)*")


@pytest.mark.parametrize("row", ROWS, ids=[row.label for row in ROWS])
def test_row_cites_a_url_and_a_vllm_version(row):
    assert URL.search(row.source), f"{row.label}: the source names no address"
    # "n/a" only where the source itself never says which vLLM ran (the A100 gist).
    assert VERSION.fullmatch(row.vllm_version) or row.vllm_version == "n/a"
    assert row.assumptions


@pytest.mark.parametrize("row", ROWS, ids=[row.label for row in ROWS])
def test_row_reads_a_reported_metric_of_a_valid_scenario(row):
    report = MetricsCollector(block_size=16).report()
    name, _, stat = row.metric.partition(".")
    assert name in report
    if stat:
        assert stat in report[name]
    assert row.unit in ("ms", "tok/s", "req/s")
    assert (row.unit != "ms") == (not stat), "latencies are in ms, throughputs in tok/s or req/s"
    Scenario.from_dict(row.release_scenario)  # raises ConfigError naming the field if the setup is not one servescope runs


@pytest.mark.parametrize("row", ROWS, ids=[row.label for row in ROWS])
def test_a_row_of_a_release_servescope_has_runs_that_release(row):
    """The rules of the release the source ran, not a mix: 0.19.1's rows run 0.19.1's profile."""
    scenario = Scenario.from_dict(row.release_scenario)
    if row.vllm_version in VLLM_RELEASES:
        assert scenario.vllm_version == row.vllm_version
        assert scenario.engine.compat == VllmCompat.for_version(row.vllm_version)


def test_rows_are_distinct_figures():
    labels = [row.label for row in ROWS]
    assert len(labels) == len(set(labels))


def test_the_moe_table_has_eight_figures_or_more_all_of_mixtures_of_experts():
    moe_rows = validate_published.MOE_ROWS
    assert len(moe_rows) >= 8
    for row in moe_rows:
        model = Scenario.from_dict(row.scenario).model_spec()
        assert model.arch is not None and model.arch.moe is not None, row.label


def test_the_dense_table_has_forty_figures_or_more_across_a100_h100_and_b200():
    """Issue 27, item 6: more rows, on more GPUs (the H200's own figures are the calibration, not rows)."""
    dense_rows = validate_published.ROWS
    assert len(dense_rows) >= 40
    gpus = {Scenario.from_dict(row.scenario).gpu for row in dense_rows}
    assert {"a100-80g-pcie", "a100-40g", "h100-sxm", "b200"} <= gpus


def test_a_figure_that_informed_a_parameter_is_marked_and_left_out_of_the_summary():
    """Calibration and checks apart: a row naming the parameter it set is shown as calibration, and the
    error summary counts only the checks."""
    check = validate_published.ROWS[0]
    fitted = dataclasses.replace(check, label="fitted", informed="kv_read")
    text = validate_published.table([(check, check.published * 1.1), (fitted, fitted.published * 3)])
    assert "| 2 | fitted (calibration: set kv_read) |" in text
    assert "worst 10% over 1 figures." in text
    assert "Rows 2 informed a parameter" in text


def test_only_the_fp8_slopes_and_the_api_servers_burst_informed_a_parameter():
    """The FP8 KV post's fitted fp8 slopes set the fp8 read cost (timing/kernel_rates.py): its four fp8
    rows at 125k, where the slope is most of the figure, are calibration; so is the burst that set the
    API server's time per request (sim/api_server.py). The table marks them and leaves them out of the
    error summary; every other row is a check."""
    informed = [row for row in ROWS if row.informed]
    fp8 = [row.label for row in informed if "125k in, fp8 KV" in row.label]
    api_server = [row.label for row in informed if row.label not in fp8]
    assert len(fp8) == 4 and api_server == ["MoE gpt-oss-20b H100 async, 1000 x 128 prompts at once: requests/s"]
    burst = next(row for row in informed if row.label in api_server)
    text = validate_published.table([(burst, burst.published), (ROWS[0], ROWS[0].published)])
    assert "Rows 1 informed a parameter (marked): calibration, not counted above." in text
    assert "over 1 figures" in text
    assert "No figure in this table informed any parameter" in validate_published.table([(ROWS[0], ROWS[0].published)])


def test_an_excluded_figure_is_shown_with_its_reason_and_left_out_of_the_summary():
    """A figure whose own source shows it measures something other than vLLM stays in the table, marked,
    with the reason printed, and out of the error summary: never dropped silently."""
    check = validate_published.ROWS[0]
    client_bound = dataclasses.replace(check, label="client-bound", excluded="the client sets the pace")
    text = validate_published.table([(check, check.published * 1.1), (client_bound, client_bound.published * 5)])
    assert "| 2 | client-bound (excluded: see below) |" in text
    assert "worst 10% over 1 figures." in text
    assert "Rows 2 excluded from the summary: the client sets the pace." in text


def test_only_the_client_bound_inferencebench_points_are_excluded():
    """InferenceBench's 16- and 64-client points: its tok/s is flat from 16 to 64 clients while its TPOT
    grows 4.3x, so clients / TPOT is a fixed token rate (the harness's client), not an engine's."""
    excluded = [row for row in validate_published.ROWS + validate_published.MOE_ROWS if row.excluded]
    assert {row.label.split(":")[0] for row in excluded} == {"8B H100, 16 clients", "8B H100, 64 clients"}
    assert all(row.source == validate_published.INFERENCEBENCH for row in excluded)
    published = {row.label: row.published for row in validate_published.ROWS if row.source == validate_published.INFERENCEBENCH}
    rate_16 = 16 / published["8B H100, 16 clients: median TPOT"] * 1e3
    rate_64 = 64 / published["8B H100, 64 clients: median TPOT"] * 1e3
    assert abs(rate_64 / rate_16 - 1) < 0.1  # the same tokens a second at 4x the clients
    assert published["8B H100, 64 clients: output tok/s"] < published["8B H100, 16 clients: output tok/s"]
