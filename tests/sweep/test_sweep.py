"""Sweeps: a grid of runs whose results file is the same however the points ran (serially, in
processes, on Ray, interrupted and resumed), and the cheapest configuration meeting an SLO."""

import functools
import json
import math

import pytest

import app.cli
from app.ray_sweep import run_ray
from scheduler_core.cli.main import build_parser
from scheduler_core.errors import ConfigError
from scheduler_core.sweep import Sweep, cheapest_meeting_slo, run_processes, run_serial, run_sweep
from scheduler_core.sweep.grid import build_run

SWEEP = {
    "model": "llama-3.1-8b", "gpu": "h200",
    "engine": {"num_gpu_blocks": 1200},
    "workload": {"num_requests": 30, "lengths": "fixed", "prompt_len": 200, "output_len": 24, "seed": 3},
    "sweep": {"cluster.replicas": [1, 2], "engine.max_num_seqs": [4, 32], "workload.arrival_rate": [10.0, 40.0]},
}


def sweep(data=SWEEP):
    return Sweep.from_dict(data, name="test")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The sweep run one point after another, uninterrupted."""
    path = tmp_path_factory.mktemp("sweep") / "reference.csv"
    rows = run_sweep(sweep(), path, run_serial)
    return path.read_bytes(), rows


def test_grid_is_the_product_in_file_order():
    points = sweep().points()
    assert len(points) == 8
    assert points[1].values == {"cluster.replicas": 1, "engine.max_num_seqs": 4, "workload.arrival_rate": 40.0}
    assert points[7].data["cluster"] == {"replicas": 2} and points[7].data["engine"]["max_num_seqs"] == 32


def test_a_point_on_another_gpu_takes_vllms_defaults_for_it():
    """What the sweep leaves open is filled in per point, as `run` would for that point's GPU."""
    grid = sweep({**SWEEP, "engine": {}, "sweep": {"gpu": ["h100-sxm", "l40s"]}})
    h100, l40s = (build_run(point.data, "test").engine for point in grid.points())
    assert (h100.max_num_seqs, h100.max_num_batched_tokens) == (1024, 8192)
    assert (l40s.max_num_seqs, l40s.max_num_batched_tokens) == (256, 2048)


def test_same_seed_twice_gives_identical_files_in_processes(tmp_path, reference):
    expected, rows = reference
    for name in ("a.csv", "b.csv"):
        run_sweep(sweep(), tmp_path / name, functools.partial(run_processes, workers=2))
        assert (tmp_path / name).read_bytes() == expected
    assert [int(r["point"]) for r in rows] == list(range(8))
    # The grid's points differ from each other: more replicas, more throughput at 40 req/s.
    by_point = {int(r["point"]): r for r in rows}
    assert float(by_point[5]["ttft_s.p99"]) < float(by_point[1]["ttft_s.p99"])
    assert by_point[5]["num_gpus"] == "2"


class Interrupted(Exception):
    pass


def stopping_after(count, executor):
    def run(points, name):
        for done, row in enumerate(executor(points, name), 1):
            yield row
            if done == count:
                raise Interrupted
    return run


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, reference, suffix):
    path = tmp_path / f"results{suffix}"
    whole = tmp_path / f"whole{suffix}"
    run_sweep(sweep(), whole, run_serial)
    if suffix == ".csv":
        assert whole.read_bytes() == reference[0]
    with pytest.raises(Interrupted):
        run_sweep(sweep(), path, stopping_after(3, run_serial))
    # Killed mid-write: half a row at the end of the file.
    text = path.read_text()
    assert len(text.splitlines()) == 3 + (suffix == ".csv")
    path.write_text(text + text.splitlines()[-1][:20])
    ran = []

    def counting(points, name):
        ran.extend(p.index for p in points)
        yield from run_serial(points, name)

    run_sweep(sweep(), path, counting)
    assert len(ran) == 5  # the three finished points were not run again
    assert path.read_bytes() == whole.read_bytes()


def test_a_file_of_another_sweep_is_refused(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("point,something\n0,1\n")
    with pytest.raises(ConfigError) as error:
        run_sweep(sweep(), path, run_serial)
    assert error.value.field == "--out"


def test_bad_sweeps_name_the_field():
    for axes, field in (({}, "sweep"), ({"engine.max_num_seqs": 8}, "sweep.engine.max_num_seqs"),
                        ({"engine.max_num_seqs": [8, 8]}, "sweep.engine.max_num_seqs"),
                        ({"engine.max_num_seqs": [8, -1]}, "sweep.engine.max_num_seqs"),
                        ({"cluster.router": ["random"]}, "sweep.cluster.router")):
        with pytest.raises(ConfigError) as error:
            Sweep.from_dict({**SWEEP, "sweep": axes})
        assert error.value.field == field, axes
    with pytest.raises(ConfigError, match="at most 5"):
        Sweep.from_dict(SWEEP, max_points=5)


def test_cheapest_configuration_meeting_the_slo_at_each_rate():
    def row(replicas, tp, rate, ttft, tpot, goodput):
        return {"cluster.replicas": replicas, "tp": tp, "workload.arrival_rate": rate, "num_gpus": replicas * tp,
                "ttft_s.p99": ttft, "tpot_s.p99": tpot, "goodput_requests_per_s": goodput}

    rows = [row(1, 1, 10, 0.1, 0.02, 9.0), row(2, 1, 10, 0.05, 0.02, 10.0), row(1, 2, 10, 0.08, 0.01, 9.5),
            row(1, 1, 40, 2.0, 0.02, 5.0), row(2, 1, 40, 0.18, 0.02, 30.0), row(1, 2, 40, 0.15, 0.03, 38.0),
            row(4, 1, 80, 0.9, 0.05, 1.0)]
    choices = cheapest_meeting_slo(rows, ["cluster.replicas", "tp", "workload.arrival_rate"], 0.2, 0.025, 2.0)
    assert [c.workload for c in choices] == [{"workload.arrival_rate": r} for r in (10, 40, 80)]
    assert choices[0].config == {"cluster.replicas": 1, "tp": 1} and choices[0].dollars_per_hour == 2.0
    assert choices[0].goodput_per_dollar == pytest.approx(9.0 * 3600 / 2.0) and choices[0].num_meeting == 3
    # At 40 req/s only two replicas meet p99 TTFT 200 ms with TPOT in bounds (TP 2 misses TPOT).
    assert choices[1].config == {"cluster.replicas": 2, "tp": 1}
    assert choices[2].config is None and math.isnan(choices[2].dollars_per_hour)


@pytest.mark.slow
def test_ray_path_gives_the_same_file_on_a_local_ray(tmp_path, reference):
    # The test extra installs Ray (servescope[ray]), so this runs wherever `make test` does; imported
    # here, as app.ray_sweep imports it, so the other tests do not pay for Ray's import.
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        run_sweep(sweep(), tmp_path / "ray.csv", run_ray)
    finally:
        ray.shutdown()
    assert (tmp_path / "ray.csv").read_bytes() == reference[0]


def test_the_servescope_command_hands_sweep_its_ray_executor_and_scheduler_core_knows_no_ray(tmp_path, monkeypatch, capsys):
    """`servescope sweep --ray ADDRESS` runs the points through app.ray_sweep (here a stand-in that
    records its address and runs them serially); `scheduler_core` alone has no Ray flag."""
    seen = []

    def stand_in(points, name, address=None):
        seen.append(address)
        return run_serial(points, name)

    monkeypatch.setattr(app.cli, "run_ray", stand_in)
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({**SWEEP, "sweep": {"workload.arrival_rate": [10.0, 40.0]}}))
    assert app.cli.main(["sweep", str(path), "--out", str(tmp_path / "rows.csv"), "--ray", "ray://head:10001",
                         "--no-progress"]) == 0
    assert seen == ["ray://head:10001"] and len((tmp_path / "rows.csv").read_text().splitlines()) == 3
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sweep", str(path), "--out", "x.csv", "--ray"])
    assert "--ray" in capsys.readouterr().err
