"""V0's host time: a fixed part and a part per scheduled request, paid per scheduler call (once per
multi-step window), and only where V0 ran: the vllm-v0 policy under a 0.10.0-0.10.1.1 profile."""

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.releases import VLLM_PROFILES
from scheduler_core.sim.simulation import Simulation
from scheduler_core.timing.host_time import NO_HOST_TIME, HostTime
from scheduler_core.timing.v0_host_time import V0HostTime, engine_host_time
from scheduler_core.workload.workload import RequestSpec, unique_prompt

V0_ERA = VLLM_PROFILES["0.10.1.1"]
V0 = EngineConfig(policy="vllm-v0", enable_chunked_prefill=False, enable_prefix_caching=False, num_gpu_blocks=400,
                  max_num_seqs=16, max_num_batched_tokens=512, max_model_len=512, compat=V0_ERA)


def test_v0_host_time_is_a_fixed_part_plus_a_part_per_request():
    host = V0HostTime()
    assert host.seconds(256) == pytest.approx(4e-3 + 256 * 35e-6)


def test_an_idle_pass_costs_no_host_time():
    assert V0HostTime().seconds(0) == 0.0


def test_each_engine_pays_its_own_host_time():
    assert engine_host_time(EngineConfig()) == HostTime()
    assert engine_host_time(V0) == V0HostTime()
    assert engine_host_time(V0.replace(policy="static")) == NO_HOST_TIME


def test_v0_under_a_profile_without_v0_is_the_scheduling_rule_alone():
    """0.11 removed V0: under the default profile the policy keeps the lessons' GPU-only picture."""
    assert engine_host_time(V0.replace(compat=EngineConfig().compat)) == NO_HOST_TIME


def workload(num_requests=3, max_tokens=9):
    return [RequestSpec(f"r{i}", 0.0, unique_prompt(i, 8), max_tokens) for i in range(num_requests)]


def test_host_time_is_charged_once_per_multi_step_window():
    records = list(Simulation(V0.replace(num_scheduler_steps=4), workload()).records())
    charged = [r.step for r in records if "host" in r.cost_breakdown]

    # The prefill, then two windows of four passes: the scheduler ran at steps 0, 1 and 5.
    assert charged == [0, 1, 5]
    assert records[1].cost_breakdown["host"] == pytest.approx(V0HostTime().seconds(3))


def test_single_step_v0_pays_host_time_on_every_step():
    records = list(Simulation(V0, workload()).records())
    assert all(r.cost_breakdown["host"] == pytest.approx(V0HostTime().seconds(len(r.scheduled))) for r in records)


def test_multi_step_makes_a_decode_heavy_run_faster_by_the_host_time_it_saves():
    one = Simulation(V0, workload(max_tokens=41))
    ten = Simulation(V0.replace(num_scheduler_steps=10), workload(max_tokens=41))
    one.run(), ten.run()
    # 40 decode passes: 40 scheduler calls against 4; the GPU's work is the same.
    assert one.clock_s - ten.clock_s == pytest.approx(36 * V0HostTime().seconds(3))
