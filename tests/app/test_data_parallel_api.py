"""--data-parallel-size and --enable-expert-parallel on the web: the form's fields come from the
declarations, a bad value is a 422 naming it, a DP deployment runs through the fleet API (its
ranks as the fleet's engines) and the single-engine page refuses it by name."""

import json

from tests.app.clients import app_client

SMALL_MOE = {"model": "qwen3-30b-a3b", "gpu": "h200", "engine": {"num_gpu_blocks": 2000, "max_model_len": 4096},
             "workload": {"num_requests": 24, "concurrency": 8, "lengths": "fixed", "prompt_len": 200, "output_len": 8}}


def locations(response) -> list[list]:
    return [error["loc"] for error in response.json()["detail"]]


def test_the_configuration_form_has_both_settings():
    with app_client() as client:
        schema = json.dumps(client.get("/api/schema").json())
    assert "data_parallel_size" in schema and "enable_expert_parallel" in schema


def test_a_bad_value_is_a_422_naming_the_field():
    with app_client() as client:
        for scenario, field in (({"data_parallel_size": 0}, "data_parallel_size"),
                                ({"data_parallel_size": 65}, "data_parallel_size"),
                                ({"enable_expert_parallel": "yes please"}, "enable_expert_parallel")):
            response = client.post("/api/scenarios/validate", json={"scenario": {"gpu": "h200", **scenario}})
            assert response.status_code == 422
            assert ["body", "scenario", field] in locations(response)


def test_expert_parallelism_on_a_dense_model_is_refused_in_vllms_words():
    with app_client() as client:
        response = client.post("/api/scenarios/validate", json={"scenario": {"gpu": "h200", "enable_expert_parallel": True}})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["enable_expert_parallel"] and error["msg"].startswith("Number of experts in the model")


def test_the_single_engine_page_refuses_data_parallel_ranks_and_says_where_they_run():
    with app_client() as client:
        response = client.post("/api/sessions", json={"scenario": {**SMALL_MOE, "data_parallel_size": 2}})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["data_parallel_size"] and "/api/fleet" in error["msg"]


def test_expert_parallelism_over_tp_is_one_engine_on_the_single_engine_page():
    # gpt-oss-120b's MXFP4 experts whole on each GPU pad differently from halves of each: the model
    # line's weights per GPU are the startup line's.
    with app_client() as client:
        response = client.post("/api/scenarios/validate", json={"scenario": {
            "model": "gpt-oss-120b", "gpu": "h200", "tensor_parallel_size": 2, "enable_expert_parallel": True,
            "gpu_memory_utilization": 0.4}})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"]["weights_bytes_per_gpu"] == body["memory"]["weights_bytes"]


def test_a_data_parallel_deployment_runs_through_the_fleet_api():
    scenario = {**SMALL_MOE, "data_parallel_size": 2, "enable_expert_parallel": True}
    with app_client() as client:
        run = client.post("/api/fleet", json={"scenario": scenario, "cluster": {"replicas": 1, "router": "vllm-dp"}}).json()
        refused = client.post("/api/fleet", json={"scenario": scenario, "cluster": {"replicas": 2}})
        too_many = client.post("/api/fleet", json={"scenario": {**scenario, "data_parallel_size": 16},
                                                   "cluster": {"replicas": 1}})
    assert [r["name"] for r in run["replicas"]] == ["rank-0", "rank-1"] and run["num_gpus"] == 2
    assert run["report"]["num_requests"] == 24 and run["report"]["lockstep"]["num_steps"] > 0
    assert refused.status_code == 422 and locations(refused) == [["cluster", "replicas"]]
    assert too_many.status_code == 422 and locations(too_many) == [["body", "scenario", "data_parallel_size"]]
