"""The calibrated cost model: it reproduces the measured H200 steps, its step times move the way
the hardware does (more work costs more, tensor parallelism and fp8 help where they should), and
the presets size the KV pool from GPU memory."""

import dataclasses
import json

import pytest

from scheduler_core.errors import ConfigError
from scheduler_core.timing.all_reduce import PcieAllReduce, custom_all_reduce_latency_s, uses_custom_all_reduce
from scheduler_core.timing.calibration import measured_steps, relative_errors
from scheduler_core.timing.cost_model import DTYPE_BYTES, CostModel, Efficiency
from scheduler_core.timing.presets import GPUS, MODELS, load_calibration, resolve_model

LLAMA_8B = CostModel(MODELS["llama-3.1-8b"], GPUS["h200"])


def fixed_overhead_s(cost_model):
    """The latency every step pays whatever its batch: per step plus per layer."""
    efficiency = cost_model.efficiency
    return efficiency.step_overhead_s + efficiency.layer_overhead_s * cost_model.model.layers


def strictly_increasing(values):
    return all(a < b for a, b in zip(values, values[1:]))


# -- calibration ---------------------------------------------------------------------------


def test_shipped_efficiency_predicts_every_measured_pure_step_within_8_percent():
    """Every decode and prefill of the H200 calibration run is predicted within 8%."""
    steps = [s for s in measured_steps() if s.kind != "mixed"]
    errors = relative_errors(Efficiency(), steps)

    assert len(steps) >= 40 and {s.kind for s in steps} == {"decode", "prefill"}
    worst = max(zip(errors, steps), key=lambda pair: pair[0])
    assert worst[0] < 0.08, f"{worst[1]} predicted {worst[0]:.1%} off"


def test_shipped_efficiency_predicts_mixed_steps_within_10_percent():
    """A prompt chunk riding with decodes (calibration_h200_mixed.json) is predicted within 10%;
    without the mixed-step term (one query row per decode) the worst is off by more than 12%."""
    mixed = [s for s in measured_steps() if s.kind == "mixed"]
    without_term = dataclasses.replace(Efficiency(), mixed_decode_query_rows=1.0)

    assert len(mixed) == 10
    assert max(relative_errors(Efficiency(), mixed)) < 0.10
    assert max(relative_errors(without_term, mixed)) > 0.12


def test_decodes_in_a_mixed_step_cost_more_than_in_a_pure_decode_step():
    """Sharing an attention launch with a prompt chunk makes each decode's attention costlier."""
    cost_model = CostModel(MODELS["llama-3.3-70b-fp8"], GPUS["h200"])
    alone = cost_model.prefill_time(512) + cost_model.decode_time(32, 2048)
    mixed = cost_model.step_time([(512, 0)] + [(1, 2048)] * 32, 33)[0]
    without = CostModel(MODELS["llama-3.3-70b-fp8"], GPUS["h200"], efficiency=dataclasses.replace(
        Efficiency(), mixed_decode_query_rows=1.0)).step_time([(512, 0)] + [(1, 2048)] * 32, 33)[0]

    assert without < mixed < alone + cost_model.decode_time(32, 2048)


def test_calibration_covers_both_shipped_model_shapes():
    """The fit sees a bf16 8B and an fp8 70B, so both weight dtypes are calibrated."""
    shapes = {(s.model.layers, s.model.wdtype) for s in measured_steps()}

    assert shapes == {(32, "bf16"), (80, "fp8")}


# -- monotonicity --------------------------------------------------------------------------


def test_decode_step_time_grows_with_batch_size():
    """More sequences in a decode step read more KV and do more FLOPs."""
    times = [LLAMA_8B.decode_time(batch, 1024) for batch in (1, 8, 32, 128, 256)]

    assert strictly_increasing(times)


def test_decode_step_time_grows_with_context_length():
    """Longer contexts mean more cached K and V to read per decoded token."""
    times = [LLAMA_8B.decode_time(32, context) for context in (128, 1024, 4096, 16384)]

    assert strictly_increasing(times)


def test_prefill_step_time_grows_with_prompt_length():
    """A longer prompt chunk costs more linear and (quadratically) more attention work."""
    times = [LLAMA_8B.prefill_time(tokens) for tokens in (16, 128, 512, 2048, 8192)]

    assert strictly_increasing(times)


def test_an_empty_step_costs_nothing():
    """A step with no tokens is not a step: zero seconds and no breakdown."""
    assert LLAMA_8B.step_time([], 0) == (0.0, {})


def test_step_time_is_the_sum_of_its_breakdown():
    """The breakdown (linear, attention, other) accounts for the whole step time."""
    total, breakdown = LLAMA_8B.step_time([(512, 0)] + [(1, 1024)] * 32, 33)

    assert set(breakdown) == {"linear", "attention", "other"}
    assert sum(breakdown.values()) == pytest.approx(total)


# -- mixed steps ---------------------------------------------------------------------------


def test_mixed_step_costs_more_than_either_part_alone():
    """A prefill chunk batched with decodes costs more than the chunk alone or the decodes alone."""
    prefill = LLAMA_8B.step_time([(512, 0)], 1)[0]
    decodes = LLAMA_8B.step_time([(1, 1024)] * 32, 32)[0]
    mixed = LLAMA_8B.step_time([(512, 0)] + [(1, 1024)] * 32, 33)[0]

    assert mixed > max(prefill, decodes)


def test_mixed_step_saves_at_least_one_fixed_overhead_over_two_separate_steps():
    """Batching shares the weight read and the fixed latency: mixed < prefill + decodes - one overhead."""
    prefill = LLAMA_8B.step_time([(512, 0)], 1)[0]
    decodes = LLAMA_8B.step_time([(1, 1024)] * 32, 32)[0]
    mixed = LLAMA_8B.step_time([(512, 0)] + [(1, 1024)] * 32, 33)[0]

    assert mixed < prefill + decodes - fixed_overhead_s(LLAMA_8B)


# -- tensor parallelism and weight dtype ---------------------------------------------------


def test_tensor_parallel_2_speeds_up_a_big_prefill_but_less_than_2x():
    """tp=2 halves the per-GPU work but pays two all-reduces per layer, so the speedup is under 2x."""
    model, gpu = MODELS["llama-3.3-70b"], GPUS["h200"]
    tp1 = CostModel(model, gpu, tp=1).prefill_time(8192)
    tp2 = CostModel(model, gpu, tp=2).prefill_time(8192)

    assert tp2 < tp1 < 2 * tp2


def test_tensor_parallel_shortfall_from_2x_grows_with_tokens():
    """The all-reduces move bytes per token, so tp=2 falls further short of 2x on longer prefills."""
    model, gpu = MODELS["llama-3.3-70b"], GPUS["h200"]
    tp1, tp2 = CostModel(model, gpu, tp=1), CostModel(model, gpu, tp=2)

    def shortfall_s(tokens):
        return tp2.prefill_time(tokens) - tp1.prefill_time(tokens) / 2

    # Perfect scaling of everything but the fixed latency would leave exactly half of it.
    assert fixed_overhead_s(tp1) / 2 < shortfall_s(512) < shortfall_s(8192)


def test_tensor_parallel_below_1_is_refused():
    """tp counts GPUs: zero is not a configuration."""
    with pytest.raises(ValueError):
        CostModel(MODELS["llama-3.1-8b"], GPUS["h200"], tp=0)


def test_fp8_weights_decode_faster_than_bf16_at_batch_1_but_not_twice_as_fast():
    """At batch 1 the weight read dominates and fp8 halves it; KV, activations and latencies do not shrink."""
    gpu = GPUS["h200"]
    bf16 = CostModel(MODELS["llama-3.3-70b"], gpu).decode_time(1, 1024)
    fp8 = CostModel(MODELS["llama-3.3-70b-fp8"], gpu).decode_time(1, 1024)

    assert bf16 / 2 < fp8 < 0.75 * bf16


# -- all-reduce over PCIe ------------------------------------------------------------------

KIB, MIB = 1024, 1024 * 1024


@pytest.mark.parametrize(
    "tp, nvlink, message_bytes, custom",
    [
        (2, True, 256 * KIB, True),
        (4, True, 256 * KIB, True),
        (8, True, 256 * KIB, True),
        (2, False, 256 * KIB, True),  # two PCIe GPUs keep the custom kernel
        (4, False, 256 * KIB, False),  # "not supported on more than two PCIe-only GPUs"
        (8, False, 256 * KIB, False),
        (3, True, 256 * KIB, False),  # world sizes outside 2, 4, 6, 8 (16: over should_custom_ar's 8)
        (16, True, 256 * KIB, False),
        (2, False, 8 * MIB, False),  # messages from max_size (8 MiB) up go to NCCL
        (4, True, 8 * MIB - 16, True),
    ],
)
def test_vllm_uses_its_custom_all_reduce_only_for_two_gpus_or_an_nvlink_group(tp, nvlink, message_bytes, custom):
    """vLLM 0.33's rule (custom_all_reduce.py): the custom kernel for 2, 4, 6 or 8 GPUs that are two
    or all NVLink-connected, messages under 8 MiB; NCCL for everything else."""
    assert uses_custom_all_reduce(tp, nvlink, message_bytes) is custom


@pytest.mark.parametrize(
    "message_bytes, published_us",
    [(4 * KIB, 19.4), (8 * KIB, 20.3), (16 * KIB, 22.3), (32 * KIB, 24.2), (128 * KIB, 51.8), (384 * KIB, 83.5)],
)
def test_nccl_all_reduce_over_pcie_costs_what_was_measured_on_four_gpus(message_bytes, published_us):
    """Four PCIe GPUs, no NVLink, NCCL in a CUDA graph (github.com/haohervchb/sglang-V100/pull/2):
    each published per-call time is matched within 20%."""
    all_reduce = PcieAllReduce(tp=4, link_bandwidth=GPUS["a100-80g-pcie"].interconnect_bandwidth,
                               custom_latency_s=Efficiency().allreduce_latency_s)

    assert all_reduce.seconds(message_bytes) * 1e6 == pytest.approx(published_us, rel=0.20)


def test_nccl_beyond_the_measured_sizes_adds_bytes_at_the_link_rate():
    """A prompt chunk's megabytes move at the PCIe link's bandwidth, not the small-message rate."""
    link = GPUS["a100-80g-pcie"].interconnect_bandwidth
    all_reduce = PcieAllReduce(tp=4, link_bandwidth=link, custom_latency_s=8e-6)
    extra = all_reduce.seconds(4 * MIB) - all_reduce.seconds(2 * MIB)

    assert extra == pytest.approx(1.5 * 2 * MIB / link)


def test_only_the_pcie_presets_lack_nvlink():
    """The A100 PCIe, the L40S and the PCIe-only cards (L4, A10G, RTX) have no NVLink between
    tensor-parallel peers; the SXM parts do."""
    assert {name for name, gpu in GPUS.items() if not gpu.nvlink_fully_connected} == {
        "a100-80g-pcie", "l40s", "l4", "a10g", "rtx-4090", "rtx-5090"}


def test_four_pcie_gpus_pay_nccl_for_each_of_the_two_all_reduces_per_layer():
    """TP4 without NVLink: a decode step costs what the same step with the custom kernel costs, plus
    2 x layers x (NCCL's per-call time - the custom kernel's)."""
    model, pcie = MODELS["llama-3.3-70b"], GPUS["a100-80g-pcie"]
    nvlink = dataclasses.replace(pcie, nvlink_fully_connected=True)
    batch, latency = 16, Efficiency().allreduce_latency_s
    message = batch * model.hidden * 2
    nccl = PcieAllReduce(4, pcie.interconnect_bandwidth, latency).seconds(message)
    # The NVLink model's custom all-reduce at TP 4 (its latency scaled from TP 2's, all_reduce.py).
    custom = custom_all_reduce_latency_s(4, latency) + 1.5 * message / pcie.interconnect_bandwidth

    extra = CostModel(model, pcie, tp=4).decode_time(batch, 512) - CostModel(model, nvlink, tp=4).decode_time(batch, 512)

    assert nccl > 2 * custom
    assert extra == pytest.approx(2 * model.layers * (nccl - custom))


def test_a_draft_model_over_four_pcie_gpus_pays_its_share_of_their_all_reduces():
    """A separate draft model costs a tenth of the target's step for a token per position: over PCIe
    that step includes the NCCL all-reduces, which NVLink's fixed term holds instead."""
    model, pcie = MODELS["llama-3.3-70b"], GPUS["a100-80g-pcie"]
    nvlink = dataclasses.replace(pcie, nvlink_fully_connected=True)
    latency = Efficiency().allreduce_latency_s
    nccl = PcieAllReduce(4, pcie.interconnect_bandwidth, latency).seconds(model.hidden * 2)
    custom_latency = 2 * model.layers * custom_all_reduce_latency_s(4, latency)  # in the NVLink model's fixed term

    extra = CostModel(model, pcie, tp=4).draft_time("draft_model", 3, 16) - \
        CostModel(model, nvlink, tp=4).draft_time("draft_model", 3, 16)

    assert extra == pytest.approx(3 * 0.1 * (2 * model.layers * nccl - custom_latency))
    assert extra > 0


def test_two_pcie_gpus_keep_the_custom_all_reduce_until_8_mib():
    """TP2 over PCIe costs what the custom kernel costs for decode-sized messages; a 2048-token
    prompt chunk (32 MiB per all-reduce for a 70B) goes to NCCL and costs more."""
    model, pcie = MODELS["llama-3.3-70b"], GPUS["a100-80g-pcie"]
    nvlink = dataclasses.replace(pcie, nvlink_fully_connected=True)
    over_pcie, with_nvlink = CostModel(model, pcie, tp=2), CostModel(model, nvlink, tp=2)

    assert over_pcie.decode_time(64, 512) == pytest.approx(with_nvlink.decode_time(64, 512))
    assert over_pcie.prefill_time(2048) > with_nvlink.prefill_time(2048)


# -- swapping ------------------------------------------------------------------------------


def test_swap_time_is_proportional_to_the_number_of_blocks():
    """Swapping is a PCIe copy: twice the blocks take twice as long, none take no time."""
    one = LLAMA_8B.swap_time(10, 16)

    assert LLAMA_8B.swap_time(0, 16) == 0.0
    assert one > 0
    assert LLAMA_8B.swap_time(20, 16) == pytest.approx(2 * one)
    assert LLAMA_8B.swap_time(10, 32) == pytest.approx(2 * one)


# -- KV capacity from GPU memory -----------------------------------------------------------


@pytest.mark.parametrize(
    "name, billions",
    [("llama-3.1-8b", 8.03), ("llama-3.3-70b", 70.6), ("llama-3.3-70b-fp8", 70.6), ("qwen2.5-7b", 7.61),
     ("qwen2.5-72b", 72.7), ("mistral-7b", 7.24)],
)
def test_preset_models_have_their_published_parameter_counts(name, billions):
    """Each preset's shape adds up (weights read per step plus the embedding) to its published size, within 1.5%."""
    model = MODELS[name]
    params = model.weight_bytes / DTYPE_BYTES[model.wdtype] + model.hidden * model.vocab

    assert params / 1e9 == pytest.approx(billions, rel=0.015)


def test_llama_8b_kv_cache_holds_128_kib_per_token():
    """32 layers x 8 KV heads x 128 dims x (K and V) x 2 bytes: the figure vLLM's profiler reports."""
    assert MODELS["llama-3.1-8b"].kv_bytes_per_token == 128 * 1024


# -- models from files ---------------------------------------------------------------------


def test_resolve_model_accepts_a_calibration_style_json_file(tmp_path):
    """A file holding a calibration entry (its `config` fields) defines a model named after the file."""
    path = tmp_path / "my-llama.json"
    path.write_text(json.dumps(load_calibration()["models"]["llama-3.1-8b-bf16"]))

    model = resolve_model(str(path))

    assert model.name == "my-llama"
    assert dataclasses.replace(model, name="llama-3.1-8b") == MODELS["llama-3.1-8b"]


def test_resolve_model_accepts_the_config_fields_at_top_level(tmp_path):
    """The `config` wrapper is optional: the fields may sit at the top of the file."""
    path = tmp_path / "flat.json"
    path.write_text(json.dumps(load_calibration()["models"]["llama-3.3-70b-fp8"]["config"]))

    assert dataclasses.replace(resolve_model(str(path)), name="x") == dataclasses.replace(
        MODELS["llama-3.3-70b-fp8"], name="x"
    )


def test_resolve_model_refuses_a_file_missing_heads(tmp_path):
    """A model file without `heads` names `model.heads` as the missing field."""
    config = dict(load_calibration()["models"]["llama-3.1-8b-bf16"]["config"])
    del config["heads"]
    path = tmp_path / "headless.json"
    path.write_text(json.dumps({"config": config}))

    with pytest.raises(ConfigError) as error:
        resolve_model(str(path))

    assert error.value.field == "model.heads"


def test_resolve_model_refuses_an_unknown_name():
    """A name that is neither a preset nor a file is a `model` error listing the presets."""
    with pytest.raises(ConfigError) as error:
        resolve_model("gpt-17")

    assert error.value.field == "model"
    assert "llama-3.1-8b" in error.value.reason
