"""A web request names its vLLM release like a scenario file does; an unknown one is a 422 naming the field."""

from tests.app.clients import app_client, create


def test_an_unknown_vllm_version_is_a_422_naming_the_field():
    with app_client() as client:
        response = client.post("/api/sessions", json={"scenario": {"vllm_version": "0.9.2"}})
    assert response.status_code == 422, response.text
    assert any(error["loc"][-1] == "vllm_version" for error in response.json()["detail"])


def test_a_release_on_the_web_selects_its_memory_share():
    with app_client() as client:
        created = create(client, scenario={"vllm_version": "0.19.1", "gpu": "h100-sxm"})
        scenario = client.get(f"/api/sessions/{created['session_id']}").json()["scenario"]
    assert (scenario["vllm_version"], scenario["gpu_memory_utilization"]) == ("0.19.1", 0.9)
