"""Models from a Hugging Face config.json: the presets ship as such files, and a user's own file
(or the folder holding it) gives the same model."""

import json

import pytest

from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.timing.cost_model import ModelSpec
from scheduler_core.timing.hf_config import model_from_hf_config, packaged_configs
from scheduler_core.timing.presets import MODELS, resolve_model

# The presets as they were written by hand before they were read from config.json files (model
# cards of each checkpoint): the import must give exactly these shapes and storage types.
EXPECTED = {
    "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336, 128256, "bf16", 131072),
    "llama-3.3-70b": (80, 8192, 64, 8, 128, 28672, 128256, "bf16", 131072),
    "llama-3.3-70b-fp8": (80, 8192, 64, 8, 128, 28672, 128256, "fp8", 131072),
    "qwen2.5-7b": (28, 3584, 28, 4, 128, 18944, 152064, "bf16", 32768),
    "qwen2.5-72b": (80, 8192, 64, 8, 128, 29568, 152064, "bf16", 32768),
    "mistral-7b": (32, 4096, 32, 8, 128, 14336, 32768, "bf16", 32768),
}


def shape(model: ModelSpec) -> tuple:
    return (model.layers, model.hidden, model.heads, model.kv_heads, model.head_dim, model.inter, model.vocab,
            model.wdtype, model.max_position_embeddings)


def test_presets_ship_as_config_json():
    assert set(packaged_configs()) == set(MODELS) and set(EXPECTED) <= set(MODELS)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_config_json_import_of_each_preset_equals_the_preset(name, tmp_path):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(packaged_configs()[name]))

    from_folder, from_file = resolve_model(str(folder)), resolve_model(str(folder / "config.json"))

    assert shape(MODELS[name]) == EXPECTED[name]
    assert from_folder == from_file == MODELS[name]


def test_a_preset_is_found_by_its_hugging_face_id():
    assert resolve_model("meta-llama/Llama-3.1-8B-Instruct") == MODELS["llama-3.1-8b"]


def test_an_unknown_hub_id_is_not_downloaded():
    with pytest.raises(ConfigError, match="never downloads"):
        resolve_model("someone/Some-Model-7B")


def test_head_dim_defaults_to_hidden_over_heads():
    config = {**packaged_configs()["qwen2.5-7b"]}
    config.pop("head_dim", None)
    assert model_from_hf_config("q", config).head_dim == 3584 // 28


def test_fp8_quantization_config_stores_weights_in_fp8():
    config = {**packaged_configs()["llama-3.3-70b"], "quantization_config": {"quant_method": "fp8"}}
    assert model_from_hf_config("m", config).wdtype == "fp8"


def test_tied_embeddings_are_read():
    config = {**packaged_configs()["llama-3.1-8b"], "tie_word_embeddings": True}
    assert model_from_hf_config("m", config).tie_word_embeddings is True


def test_float16_checkpoint_keeps_an_fp16_kv_cache():
    config = {**packaged_configs()["mistral-7b"], "torch_dtype": "float16"}
    model = model_from_hf_config("m", config)
    assert (model.wdtype, model.kv_dtype) == ("fp16", "fp16")


@pytest.mark.parametrize("change,field", [
    ({"num_hidden_layers": 0}, "model.num_hidden_layers"),
    ({"num_key_value_heads": 5}, "model.num_key_value_heads"),
    ({"torch_dtype": "float32"}, "model.torch_dtype"),
    ({"quantization_config": {"quant_method": "awq"}}, "model.quantization_config.bits"),
    ({"hidden_size": "4096"}, "model.hidden_size"),
])
def test_bad_config_names_the_field(change, field):
    with pytest.raises(ConfigError) as error:
        model_from_hf_config("m", {**packaged_configs()["llama-3.1-8b"], **change})
    assert error.value.field == field


def test_missing_field_is_named(tmp_path):
    config = {**packaged_configs()["llama-3.1-8b"]}
    del config["intermediate_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ConfigError) as error:
        resolve_model(str(path))
    assert error.value.field == "model.intermediate_size"


def test_max_model_len_beyond_the_model_is_refused_as_vllm_does():
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict({"model": "qwen2.5-7b", "engine": {"max_model_len": 65536}})
    assert error.value.field == "max_model_len"
    assert "greater than the derived max_model_len (max_position_embeddings=32768" in str(error.value)


def test_a_scenario_runs_a_model_from_its_config_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(packaged_configs()["mistral-7b"]))
    scenario = Scenario.from_dict({"model": str(path), "gpu": "l40s", "workload": {"num_requests": 3}})
    assert scenario.model_spec() == MODELS["mistral-7b"].__class__(**{**MODELS["mistral-7b"].__dict__, "name": tmp_path.name})


def test_an_oversized_config_json_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"num_hidden_layers": 2, "padding": "x" * (2 << 20)}))
    with pytest.raises(ConfigError, match="larger than"):
        resolve_model(str(path))
