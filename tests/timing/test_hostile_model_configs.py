"""Hostile config.json values (issue 24 item 5, issue 25 item 6): every field of every preset set to
a value no real checkpoint holds is a ConfigError naming that field (or the object holding it, for a
wrong container), never a traceback and never a model taken on trust; whatever the reader accepts
survives the memory plan and the step-time model on every GPU at TP 1, 2 and 8."""

import json
import math
import subprocess
import sys

import pytest

from scheduler_core.errors import ConfigError
from scheduler_core.timing.config_fields import MAX_LIST_ITEMS, MAX_SHAPE_VALUE
from scheduler_core.timing.cost_model import CostModel
from scheduler_core.timing.hf_architecture import NEUTRAL_FIELDS
from scheduler_core.timing.hf_config import model_from_hf_config, packaged_configs
from scheduler_core.timing.hf_quantization import QUANT_NEUTRAL_FIELDS
from scheduler_core.timing.memory import plan_memory
from scheduler_core.timing.presets import GPUS, MODELS
from tests.paths import REPO

HOSTILE = (10**1000, -1, 0, "x", [], {}, 1.5, True, [1, "a"], 2**40, float("nan"), 1e308, "x" * 300,
           [0] * (MAX_LIST_ITEMS + 1))
# Hostile-looking values that are right for the field: transformers reads them the same way.
VALID = {
    ("first_k_dense_replace", 0), ("n_shared_experts", 0), ("shared_expert_intermediate_size", 0),
    ("mlp_only_layers", "[]"), ("no_rope_layers", "[]"), ("layer_types", "[]"), ("tie_word_embeddings", True),
    ("input_activations", "{}"), ("model_type", "x"),  # any other family is read as Llama-shaped
    # The modules a checkpoint keeps in 16 bits are assumed, not read (hf_quantization.py says so).
    ("ignore", "[]"), ("modules_to_not_convert", "[]"),
}


def fields_of(config: dict, path: tuple = ()):
    for key, value in config.items():
        yield (*path, key)
        if isinstance(value, dict):
            yield from fields_of(value, (*path, key))


def with_value(config: dict, path: tuple, value) -> dict:
    changed = json.loads(json.dumps(config))
    holder = changed
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return changed


def survives_downstream(model) -> None:
    """The memory plan and step times on every GPU, TP 1/2/8: finite numbers or a ConfigError."""
    for gpu in GPUS.values():
        for tp in (1, 2, 8):
            try:
                plan = plan_memory(model, gpu, tp)
                cost = CostModel(model, gpu, tp)
                times = [cost.step_time([(2048, 0), (1, 4000)], 2)[0], cost.decode_time(256, 8000),
                         cost.swap_time(10, 16), cost.draft_time("eagle", 3, 8)]
            except ConfigError:
                continue
            assert all(math.isfinite(t) and t >= 0 for t in times), (model.name, gpu.name, tp, times)
            assert plan.num_gpu_blocks >= 0 and math.isfinite(plan.max_concurrency)


def refusal_problem(preset: str, path: tuple, value) -> str:
    """'' when the reader refuses the value naming its field, or accepts a value it may accept."""
    key = path[-1]
    try:
        model = model_from_hf_config("m", with_value(packaged_configs()[preset], path, value))
    except ConfigError as e:
        # The field, the object holding it, or (for model_type) the field it makes unreadable, naming it.
        named = key in e.field or (len(path) > 1 and e.field.endswith(path[-2])) or key in e.reason
        return "" if named else f"{preset} {'.'.join(path)}={value!r:.30}: refused naming {e.field!r}"
    shown = json.dumps(value) if isinstance(value, (list, dict)) else value
    neutral = QUANT_NEUTRAL_FIELDS if "quantization_config" in path[:-1] else NEUTRAL_FIELDS
    if key in neutral or (key, shown) in VALID:
        if model != MODELS[preset].__class__(**{**MODELS[preset].__dict__, "name": "m"}):
            survives_downstream(model)
        return ""
    return f"{preset} {'.'.join(path)}={value!r:.30}: accepted"


@pytest.mark.parametrize("preset", sorted(packaged_configs()))
def test_every_hostile_field_value_is_refused_by_name(preset):
    problems = [refusal_problem(preset, path, value) for path in fields_of(packaged_configs()[preset])
                for value in HOSTILE]
    assert [p for p in problems if p] == []


@pytest.mark.parametrize("preset", sorted(packaged_configs()))
def test_null_fields_read_as_defaults_that_survive_downstream(preset):
    for path in fields_of(packaged_configs()[preset]):
        try:
            model = model_from_hf_config("m", with_value(packaged_configs()[preset], path, None))
        except ConfigError as e:
            assert path[-1] in e.field or path[-1] in e.reason or "missing" in e.reason, (path, e)
            continue
        survives_downstream(model)


@pytest.mark.parametrize("preset", sorted(packaged_configs()))
def test_every_shape_field_at_its_bound_at_once_is_refused_or_survives(preset):
    """Each number in bounds, their products the largest the bounds allow: no overflow downstream."""
    config = json.loads(json.dumps(packaged_configs()[preset]))

    def raise_all(obj: dict) -> None:
        for key, value in obj.items():
            if isinstance(value, int) and not isinstance(value, bool) and key != "num_key_value_heads":
                obj[key] = MAX_SHAPE_VALUE
            elif isinstance(value, dict):
                raise_all(value)

    raise_all(config)
    for holder in (config, config.get("text_config") or {}):
        for per_layer in ("layer_types", "no_rope_layers", "mlp_only_layers", "moe_layers"):
            holder.pop(per_layer, None)
    try:
        model = model_from_hf_config("m", config)
    except ConfigError:
        return
    survives_downstream(model)


@pytest.mark.parametrize("preset,change,field", [
    ("qwen3-next-80b-a3b", {"full_attention_interval": 0}, "model.full_attention_interval"),
    ("qwen3-next-80b-a3b", {"full_attention_interval": 49}, "model.full_attention_interval"),  # no attention layer
    ("qwen3-next-80b-a3b", {"partial_rotary_factor": 1.5}, "model.partial_rotary_factor"),
    ("qwen3-30b-a3b", {"num_experts_per_tok": 129}, "model.num_experts_per_tok"),
    ("qwen3-30b-a3b", {"mlp_only_layers": [3, 3]}, "model.mlp_only_layers"),
    ("qwen3-30b-a3b", {"mlp_only_layers": [48]}, "model.mlp_only_layers[0]"),
    ("qwen3-30b-a3b", {"moe_intermediate_size": None}, "model.moe_intermediate_size"),  # not intermediate_size
    ("gpt-oss-20b", {"sliding_window": 0}, "model.sliding_window"),
    ("gpt-oss-20b", {"experts_per_token": 5}, "model.experts_per_token"),  # disagrees with num_experts_per_tok
    ("gpt-oss-20b", {"layer_types": None}, "model.layer_types"),
    ("deepseek-r1", {"kv_lora_rank": 0}, "model.kv_lora_rank"),
    ("deepseek-r1", {"first_k_dense_replace": 62}, "model.first_k_dense_replace"),
    ("deepseek-r1", {"moe_layer_freq": 2}, "model.moe_layer_freq"),
    ("deepseek-r1", {"n_routed_experts": None}, "model.num_experts_per_tok"),  # MoE fields without experts
    ("deepseek-r1", {"quantization_config": {"quant_method": "fp8", "weight_block_size": [64, 64]}},
     "model.quantization_config.weight_block_size"),
    ("llama-3.1-8b", {"full_attention_interval": 4}, "model.full_attention_interval"),  # another family's field
    ("llama-3.1-8b", {"quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}},
     "model.quantization_config.quant_algo"),
    ("llama-3.3-70b-fp8", {"quantization_config": {"quant_method": "compressed-tensors",
                                                    "config_groups": {"g": {"weights": "x"}}}},
     "model.quantization_config.config_groups.g.weights"),
    ("gemma-3-27b", {"text_config": "x"}, "model.text_config"),
    ("gemma-3-27b", {"vision_config": []}, "model.vision_config"),
])
def test_nonsense_that_would_give_numbers_is_refused_by_name(preset, change, field):
    with pytest.raises(ConfigError) as error:
        model_from_hf_config("m", {**packaged_configs()[preset], **change})
    assert error.value.field == field


def test_a_modelled_layout_is_read_the_qwen2_way():
    """use_sliding_window with max_window_layers: the first max_window_layers layers attend in full."""
    config = {**packaged_configs()["qwen2.5-7b"], "use_sliding_window": True, "sliding_window": 4096,
              "max_window_layers": 20}
    groups = model_from_hf_config("m", config).arch.groups
    assert [(g.kind, g.num_layers) for g in groups] == [("full_attention", 20), ("sliding_window", 8)]


@pytest.mark.parametrize("preset,path,value,field", [
    ("qwen3-next-80b-a3b", ("full_attention_interval",), 0, "model.full_attention_interval"),
    ("gemma-3-27b", ("text_config", "head_dim"), 10**1000, "model.text_config.head_dim"),
])
def test_the_cli_names_file_and_field_in_one_line(tmp_path, preset, path, value, field):
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(with_value(packaged_configs()[preset], path, value)))
    result = subprocess.run([sys.executable, "-m", "scheduler_core", "run", "--model", str(config_file),
                             "--num-requests", "3", "--no-progress"], capture_output=True, text=True, cwd=REPO,
                            timeout=60)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and str(config_file) in lines[0], result.stderr
