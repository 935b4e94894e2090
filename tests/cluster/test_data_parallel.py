"""Data parallelism as vLLM 0.33 runs it: engine-core ranks spread by the DP balancer
(cluster/dp_balancer.py) and, for an MoE model, stepped in lockstep (cluster/lockstep.py)."""

from types import SimpleNamespace

import pytest

from scheduler_core.cli.main import main
from scheduler_core.cluster import Cluster, Router, fleet_report
from scheduler_core.cluster.dp_balancer import DPLoadBalancer
from scheduler_core.cluster.scenario import ClusterScenario
from scheduler_core.engine.config import EngineConfig
from scheduler_core.errors import ConfigError
from scheduler_core.sim.simulation import Simulation
from scheduler_core.timing.cost_model import CostModel
from scheduler_core.timing.moe import ExpertPlacement
from scheduler_core.timing.presets import GPUS, MODELS
from scheduler_core.workload.workload import RequestSpec


def fake_rank(waiting=0, running=0, kv_usage=0.0, in_flight=0):
    """What the balancer reads of a rank: its scheduler's queues, KV usage and requests in flight."""
    scheduler = SimpleNamespace(waiting=[None] * waiting, running=[None] * running)
    return SimpleNamespace(sim=SimpleNamespace(scheduler=scheduler), kv_usage=kv_usage, num_outstanding=in_flight)


# -- the balancer's decisions ---------------------------------------------------------------------
def test_equal_scores_go_round_robin_from_a_start_that_moves_on():
    balancer, ranks = DPLoadBalancer(stats_interval_s=0.0), [fake_rank() for _ in range(3)]
    chosen = [balancer.choose(ranks, t)[0] for t in (0.0, 1.0, 2.0, 3.0)]
    assert [next(i for i, rank in enumerate(ranks) if rank is c) for c in chosen] == [0, 1, 2, 0]


def test_the_score_is_waiting_plus_running_or_the_requests_in_flight():
    balancer = DPLoadBalancer()
    ranks = [fake_rank(waiting=1, running=3), fake_rank(running=2, in_flight=5), fake_rank(running=3)]
    chosen, reason = balancer.choose(ranks, 0.0)
    assert chosen is ranks[2] and reason == "lowest DP score 3"  # 4, max(5, 2) = 5, 3


def test_waiting_requests_weigh_more_on_a_rank_whose_kv_cache_is_past_half_full():
    # Rank 0: 2 waiting at 100% KV: 2 + 2 x 6 x 0.5 = 8; rank 1: 5 running, none waiting: 5.
    balancer = DPLoadBalancer()
    ranks = [fake_rank(waiting=2, kv_usage=1.0), fake_rank(running=5)]
    assert balancer.choose(ranks, 0.0)[0] is ranks[1]
    # At 50% KV usage or less the penalty is off: 2 against 5.
    assert DPLoadBalancer().choose([fake_rank(waiting=2, kv_usage=0.5), fake_rank(running=5)], 0.0)[1] == "lowest DP score 2"


def test_between_snapshots_the_balancer_counts_its_own_choices_as_waiting():
    balancer = DPLoadBalancer()  # the coordinator publishes every 100 ms
    ranks = [fake_rank(), fake_rank(running=1)]
    assert balancer.choose(ranks, 0.00)[0] is ranks[0]  # 0 against 1
    assert balancer.choose(ranks, 0.05)[0] is ranks[1]  # rank 0 now counts 1 waiting; the tie goes on in turn
    ranks[1].sim.scheduler.running = [None] * 9  # the engine's counts change, the snapshot does not yet
    assert balancer.choose(ranks, 0.09)[0] is ranks[0]  # rank 0: 1 waiting; rank 1: 1 running + 1 waiting
    assert balancer.counts == [[2, 0, 0.0], [1, 1, 0.0]]
    balancer.choose(ranks, 0.10)  # a new snapshot: rank 1 runs 9
    assert balancer.counts[1][1] == 9


# -- lockstep steps ---------------------------------------------------------------------------
ENGINE = EngineConfig(num_gpu_blocks=4096, max_num_batched_tokens=8192, max_model_len=8192, max_num_seqs=64,
                      enable_prefix_caching=False)


def rank_cost(model="qwen3-30b-a3b", dp=2):
    return CostModel(MODELS[model], GPUS["h200"], 1, placement=ExpertPlacement(1, dp, True))


def spec(request_id, prompt_len, max_tokens=4, arrival_time=0.0):
    first_token = 10_000 * len(request_id)  # prompts that share no block
    return RequestSpec(request_id, arrival_time, list(range(first_token, first_token + prompt_len)), max_tokens)


def lockstep_fleet(workload, dp=2):
    ranks = [Simulation(ENGINE, [], rank_cost(dp=dp)) for _ in range(dp)]
    return Cluster(ranks, workload, Router("vllm-dp"), lockstep=True)


def test_lockstep_ranks_end_each_step_together_at_the_slowest_ranks_time():
    # The balancer sends the long prompt to rank 0 and the short one to rank 1.
    fleet = lockstep_fleet([spec("long", 6000), spec("s", 10)])
    fleet.step()
    fleet.step()  # both arrivals
    events = fleet.step()
    (long_rank, long_step), (short_rank, short_step) = [(e.replica, e.record) for e in events]
    assert (long_rank, short_rank) == ("rank-0", "rank-1")
    assert long_step.clock_s_after == short_step.clock_s_after
    # Each rank's own time with the MoE layers seeing 2 x the largest batch (CUDA-graph padding).
    own = rank_cost().step_time([(10, 0)], 1, 2 * 6000)[0] + Simulation(ENGINE, []).host_time.seconds(1)
    assert short_step.cost_breakdown["dp_wait"] == pytest.approx(short_step.step_s - own)
    assert "dp_wait" not in long_step.cost_breakdown


def test_an_idle_rank_runs_a_dummy_batch_in_every_step():
    fleet = lockstep_fleet([spec("only", 100, max_tokens=8)])
    fleet.run()
    assert fleet.lockstep.num_dummy_batches == fleet.lockstep.num_steps == 8  # one prefill step, 7 decodes
    assert fleet.replicas[1].sim.clock_s == fleet.replicas[0].sim.clock_s
    assert fleet_report(fleet)["lockstep"] == {"num_steps": 8, "num_dummy_batches": 8}


def test_dense_data_parallel_ranks_step_on_their_own():
    scenario = ClusterScenario.from_dict({"model": "llama-3.1-8b", "data_parallel_size": 2,
                                          "workload": {"num_requests": 6, "arrival_rate": 100.0}})
    assert (scenario.replicas, scenario.router, scenario.lockstep) == (2, "vllm-dp", False)
    fleet = scenario.build()
    fleet.run()
    assert fleet.lockstep is None and "lockstep" not in fleet_report(fleet)


# -- the scenario -------------------------------------------------------------------------------
MOE_DP = {"model": "qwen3-30b-a3b", "data_parallel_size": 4, "enable_expert_parallel": True,
          "workload": {"num_requests": 40, "concurrency": 16, "lengths": "fixed", "prompt_len": 200, "output_len": 20}}


def test_an_moe_data_parallel_scenario_is_one_deployment_of_lockstep_ranks():
    scenario = ClusterScenario.from_dict(MOE_DP)
    assert (scenario.replicas, scenario.router, scenario.lockstep, scenario.num_gpus) == (4, "vllm-dp", True, 4)
    assert ClusterScenario.from_dict(scenario.to_dict()) == scenario
    fleet = scenario.build()
    fleet.run()
    report = fleet_report(fleet)
    assert report["num_requests"] == 40 and sum(report["router"]["decisions"].values()) == 40


def test_replicas_of_a_data_parallel_deployment_are_refused_by_name():
    with pytest.raises(ConfigError) as error:
        ClusterScenario.from_dict({**MOE_DP, "cluster": {"replicas": 2}})
    assert error.value.field == "cluster.replicas"


def test_servescope_run_of_a_vllm_serve_line_with_dp_and_ep(capsys):
    assert main(["run", "--vllm", "vllm serve Qwen/Qwen3-30B-A3B -dp 2 -ep", "--num-requests", "20", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "vLLM startup, per GPU (2 DP ranks x 1 x h200):" in out
    assert "[EP Rank 0/2] Expert parallelism is enabled. Expert placement strategy: linear. " \
           "Local/global number of experts: 64/128." in out
    assert "2 DP ranks of 1 x h200, expert parallel, lockstep, router vllm-dp" in out
    assert "note: async scheduling is not modelled across lockstep DP ranks" in out
    assert "DP ranks in lockstep:" in out


@pytest.mark.parametrize("argv,words", [
    (["run", "--data-parallel-size", "0"], ["--data-parallel-size", "Input should be greater than or equal to 1, got 0"]),
    (["run", "--vllm", "vllm serve m -dp two"], ["--data-parallel-size: invalid value: 'two'"]),
    (["run", "--model", "llama-3.1-8b", "--enable-expert-parallel"],
     ["enable_expert_parallel: Number of experts in the model must be greater than 0"]),
])
def test_a_bad_value_on_the_command_line_names_the_flag(capsys, argv, words):
    try:
        status = main(argv)
    except SystemExit as exit:  # argparse's own refusal of a flag's value
        status = exit.code
    assert status == 2
    err = capsys.readouterr().err
    assert all(word in err for word in words) and "Traceback" not in err


def test_a_bad_value_in_a_scenario_file_names_the_file_and_the_field(tmp_path, capsys):
    path = tmp_path / "dp.toml"
    path.write_text('model = "qwen3-30b-a3b"\ndata_parallel_size = 65\n')
    assert main(["run", str(path)]) == 2
    assert f"{path}:data_parallel_size: must be >= 1 and <= 64, got 65" in capsys.readouterr().err


def test_a_sweep_over_data_parallel_ranks_runs_each_point_as_a_deployment():
    from scheduler_core.sweep import Sweep
    from scheduler_core.sweep.grid import build_run, num_gpus

    grid = Sweep.from_dict({**MOE_DP, "sweep": {"data_parallel_size": [1, 2, 4]}}, name="dp")
    runs = [build_run(point.data, "dp") for point in grid.points()]
    assert [type(run).__name__ for run in runs] == ["Scenario", "ClusterScenario", "ClusterScenario"]
    assert [num_gpus(run) for run in runs] == [1, 2, 4]
