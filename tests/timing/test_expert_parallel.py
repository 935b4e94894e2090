"""Experts spread over TP x DP GPUs (vLLM's --data-parallel-size, --enable-expert-parallel): weights
per GPU, the refusal on a model without experts, and the step cost of a DP rank (timing/moe.py)."""

import pytest

from scheduler_core.errors import ConfigError
from scheduler_core.scenario.engine_args import apply_settings, parse_vllm_command
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.timing.cost_model import CostModel
from scheduler_core.timing.memory import GIB, plan_memory, weight_bytes_per_gpu
from scheduler_core.timing.moe import INTER_NODE_BANDWIDTH, ExpertPlacement, MoeDispatch, dispatch_bandwidth
from scheduler_core.timing.presets import GPUS, MODELS

H200 = GPUS["h200"]
R1, QWEN30B = MODELS["deepseek-r1"], MODELS["qwen3-30b-a3b"]
# One routed expert as stored: DeepSeek-R1's gate, up and down projections in FP8 (7168 x 2048 each,
# 3 x 14,680,064 bytes) with an fp32 scale per 128 x 128 block (32 x 56 + 56 x 16 blocks);
# Qwen3-30B-A3B's in bf16 (3 x 2048 x 768 x 2 bytes).
R1_EXPERT_BYTES = 3 * 7168 * 2048 + (32 * 56 + 56 * 16) * 4
QWEN30B_EXPERT_BYTES = 3 * 2048 * 768 * 2


def weights(model, tp=1, dp=1, ep=False) -> int:
    return weight_bytes_per_gpu(model, tp, H200, ExpertPlacement(tp, dp, ep))


def test_deepseek_r1_dp8_ep_holds_32_of_256_experts_a_layer_and_all_of_attention():
    # TP 1 inside each rank: every GPU keeps the whole MLA attention, dense layers and shared expert,
    # and 256 / 8 = 32 whole experts in each of the 58 MoE layers instead of 256.
    assert weights(R1) - weights(R1, 1, 8, True) == 58 * (256 - 32) * R1_EXPERT_BYTES
    plan = plan_memory(R1, H200, 1, 0.92, data_parallel_size=8, enable_expert_parallel=True)
    assert plan.startup_lines()[0] == "Model loading took 93.93 GiB memory"


def test_qwen3_30b_dp4_ep_holds_32_of_128_experts_a_layer():
    assert weights(QWEN30B) - weights(QWEN30B, 1, 4, True) == 48 * (128 - 32) * QWEN30B_EXPERT_BYTES
    assert round(weights(QWEN30B, 1, 4, True) / GIB, 2) == 16.38


@pytest.mark.parametrize("model,dp", [(R1, 8), (QWEN30B, 4)])
def test_without_ep_every_expert_is_sliced_over_tp_x_dp_to_the_same_bytes(model, dp):
    # vLLM's FusedMoE shards each expert's intermediate dimension over TP x DP when EP is off: a
    # 1/dp slice of every expert weighs what 1/dp of the experts weighs (the block scales too).
    assert weights(model, 1, dp, False) == weights(model, 1, dp, True)


def test_ep_over_one_gpu_is_the_plain_layer():
    # FusedMoEParallelConfig.make: use_ep only when dp x tp > 1.
    assert ExpertPlacement(1, 1, True).ep_size == 1
    assert ExpertPlacement(2, 4, True).ep_size == 8
    assert ExpertPlacement(2, 4, False).ep_size == 1


def test_vllm_serve_line_for_deepseek_r1_dp8_ep_sizes_each_gpu():
    command = parse_vllm_command("vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 1 --data-parallel-size 8 "
                                 "--enable-expert-parallel")
    assert command.ignored == ()
    assert command.settings == {"tensor_parallel_size": 1, "data_parallel_size": 8, "enable_expert_parallel": True}
    data = {"model": command.model}
    apply_settings(data, command.settings)
    scenario = Scenario.from_dict(data)
    assert scenario.memory_plan().weights_bytes == weights(R1, 1, 8, True)


def test_expert_parallelism_on_a_model_without_experts_is_refused_in_vllms_words():
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict({"model": "llama-3.1-8b", "tensor_parallel_size": 2, "enable_expert_parallel": True})
    assert error.value.field == "enable_expert_parallel"
    assert error.value.reason.startswith(
        "Number of experts in the model must be greater than 0 when expert parallelism is enabled")


def test_a_data_parallel_scenario_is_not_one_engine():
    scenario = Scenario.from_dict({"model": "qwen3-30b-a3b", "data_parallel_size": 2})
    with pytest.raises(ConfigError) as error:
        scenario.build()
    assert error.value.field == "data_parallel_size"


# -- the step cost of one DP rank ---------------------------------------------------------------
DECODES = [(1, 2000)] * 16


def test_the_default_placement_costs_what_it_always_did():
    plain, explicit = CostModel(R1, H200, 8), CostModel(R1, H200, 8, placement=ExpertPlacement(8))
    assert plain.step_time(DECODES, 16) == explicit.step_time(DECODES, 16) == explicit.step_time(DECODES, 16, 16)


def test_a_dp_ranks_moe_layers_see_every_ranks_tokens():
    rank = CostModel(R1, H200, 1, placement=ExpertPlacement(1, 8, True))
    alone, _ = rank.step_time(DECODES, 16, 16)
    together, breakdown = rank.step_time(DECODES, 16, 8 * 16)
    assert together > alone  # more experts touched, more expert GEMMs, and the collectives
    assert breakdown["attention"] == rank.step_time(DECODES, 16, 16)[1]["attention"]  # attention is the rank's own


def test_dispatch_and_combine_cost_the_ring_bytes_of_the_dp_groups_tokens():
    dispatch = MoeDispatch(dp=8, hidden=7168, link_bandwidth=450e9, latency_s=8e-6)
    moved = 7 / 8 * 128 * 7168 * 2
    assert dispatch.seconds(128) == pytest.approx(2 * (8e-6 + moved / 450e9))
    assert MoeDispatch(dp=1, hidden=7168, link_bandwidth=450e9, latency_s=8e-6).seconds(128) == 0.0


def test_ep_and_tp_cost_the_same_in_expectation_over_the_same_gpus():
    # moe.py: E/N whole experts touched with probability 1 - (1 - k/E)^T each, or a 1/N slice of
    # E x (1 - (1 - k/E)^T) experts: the same bytes and the same FLOPs under balanced routing.
    ep = CostModel(QWEN30B, H200, 1, placement=ExpertPlacement(1, 4, True))
    sliced = CostModel(QWEN30B, H200, 1, placement=ExpertPlacement(1, 4, False))
    assert ep.step_time(DECODES, 16, 64)[0] == pytest.approx(sliced.step_time(DECODES, 16, 64)[0])


def test_a_dp_group_beyond_one_node_runs_its_collectives_over_infiniband():
    assert dispatch_bandwidth(H200, 8) == H200.interconnect_bandwidth
    assert dispatch_bandwidth(H200, 16) == INTER_NODE_BANDWIDTH
    assert dispatch_bandwidth(GPUS["gb200"], 64) == GPUS["gb200"].interconnect_bandwidth  # one NVL72 rack


def test_the_startup_line_says_rank_0s_experts_as_vllm_logs_them():
    # Mixtral's 8 experts over EP 6: ranks 0 and 1 hold 2, the others 1 (determine_expert_map).
    line = ExpertPlacement(2, 3, True).startup_line(MODELS["mixtral-8x7b"].arch.moe)
    assert line == ("[EP Rank 0/6] Expert parallelism is enabled. Expert placement strategy: linear. "
                    "Local/global number of experts: 2/8.")
    assert ExpertPlacement(8).startup_line(R1.arch.moe) == ""
