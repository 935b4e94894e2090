"""The configuration form's model lines: /api/scenarios/validate sends the model's size as the
simulation computes it (scheduler_core/timing/model_summary.py), per GPU of the scenario's TP group."""

from scheduler_core.timing.model_summary import model_summary
from scheduler_core.timing.presets import GPUS, MODELS
from tests.app.clients import app_client


def validate(client, **scenario):
    response = client.post("/api/scenarios/validate", json={"scenario": {"gpu": "h200", **scenario}})
    assert response.status_code == 200, response.text
    return response.json()


def test_validate_sends_parameters_weights_experts_and_kv_per_group_of_a_moe_model():
    """gpt-oss-120b: 116.83B parameters, 5.13B active, MXFP4 experts, 128 experts 4 a token, and two
    KV groups (sliding window 128 and full attention, 18 layers each, 2,048 B per token per layer)."""
    with app_client() as client:
        model = validate(client, model="gpt-oss-120b")["model"]
    assert model == model_summary(MODELS["gpt-oss-120b"], GPUS["h200"])
    assert round(model["total_params"] / 1e9, 2) == 116.83 and round(model["active_params"] / 1e9, 2) == 5.13
    assert model["weight_formats"] == {"linear": "bf16", "experts": "mxfp4"}
    assert model["experts"] == {"num_experts": 128, "per_token": 4, "shared": False, "num_moe_layers": 36}
    assert model["kv_groups"] == [
        {"kind": "sliding_window", "num_layers": 18, "window": 128, "bytes_per_token": 2048},
        {"kind": "full_attention", "num_layers": 18, "window": 0, "bytes_per_token": 2048}]


def test_validate_sends_a_dense_models_shard_per_gpu_and_no_experts():
    """Llama-3.1-8B at TP 2: half the KV heads per GPU (1,024 B per token per layer of the 2,048 of
    one GPU's 8 heads), the weights the memory plan loads on each GPU, no experts."""
    with app_client() as client:
        body = validate(client, model="llama-3.1-8b", tensor_parallel_size=2)
    model = body["model"]
    assert model["experts"] is None and model["weight_formats"] == {"linear": "bf16"}
    assert model["kv_groups"] == [{"kind": "full_attention", "num_layers": 32, "window": 0, "bytes_per_token": 2048}]
    assert model["weights_bytes_per_gpu"] == body["memory"]["weights_bytes"]
