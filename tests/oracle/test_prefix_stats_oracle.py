"""servescope's prefix-cache counts equal vLLM 0.33.0's own `PrefixCacheStats` summed over a run
(`tools/vllm_recorder/prefix_stats.py`): queries and hits per admission, preempted requests'
re-admissions counted apart, under memory pressure, priority preemption and a hybrid model."""

import json

import pytest

from scheduler_core.sim.replay import engine_config_from_trace, load_trace, workload_from_trace
from scheduler_core.sim.simulation import Simulation
from tests.paths import FIXTURES, REPO

MEASURED = FIXTURES / "vllm_oracle_spec_prefix" / "prefix_stats_0.33.0.jsonl"


def measured():
    for line in MEASURED.read_text().splitlines():
        run = json.loads(line)
        yield pytest.param(run, id=f"{run['trace'].split('/')[-1][len('trace_'):-len('.json.gz')]}"
                                   f"{'-async' if run['async_scheduling'] else ''}")


@pytest.mark.parametrize("run", list(measured()))
def test_prefix_cache_stats_equal_vllms(run):
    trace = load_trace(REPO / run["trace"])
    config = engine_config_from_trace(trace).replace(async_scheduling=run["async_scheduling"])
    sim = Simulation(config, workload_from_trace(trace))
    sim.run()
    stats = sim.scheduler.prefix_cache_stats
    assert {name: getattr(stats, name) for name in run if name not in ("trace", "async_scheduling")} == \
        {name: value for name, value in run.items() if name not in ("trace", "async_scheduling")}
    assert sim.metrics.report()["prefix_cache_hit_rate"] == pytest.approx(run["hits"] / run["queries"])
