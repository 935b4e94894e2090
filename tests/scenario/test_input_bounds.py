"""Every scenario value has a bound, held in one table (`scheduler_core.bounds`) that the core's
checks and the web schema both read: what would blow a session's memory or time budget, or make a
random draw overflow, is refused naming its field, on the web (422) and in the core (ConfigError)."""

import math

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.main import create_app
from app.schemas import ScenarioModel, SessionCreate
from app.settings import Settings
from scheduler_core.engine.config import ENGINE_BOUNDS, EngineConfig
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import SCENARIO_BOUNDS, Scenario
from scheduler_core.workload.workload import WORKLOAD_BOUNDS, WorkloadConfig


@pytest.fixture(scope="module")
def client():
    # "testserver" is the host name TestClient sends.
    with TestClient(create_app(Settings(heartbeat_s=0.2, allowed_hosts=("testserver",)))) as client:
        yield client


def validate(client, workload=None, **top):
    return client.post("/api/scenarios/validate", json={"scenario": {"workload": workload or {}, **top}})


def refused_field(response) -> str:
    assert response.status_code == 422, response.text
    return response.json()["detail"][0]["loc"][-1]


# -- the memory bombs and 500s, on the web ------------------------------------------


def test_a_huge_shared_prefix_is_refused_by_validation(client):
    assert refused_field(validate(client, {"shared_prefix_len": 10**9})) == "shared_prefix_len"


def test_twenty_thousand_shared_prefixes_of_a_thousand_tokens_are_refused(client):
    response = validate(client, {"num_requests": 20000, "num_shared_prefixes": 20000, "shared_prefix_len": 1000})
    assert refused_field(response) == "num_shared_prefixes"


def test_shared_prefix_tokens_in_all_are_bounded_across_fields(client):
    """Each value within its bound, but 2,000 prefixes x 1,000 tokens is over the 2^20 held in all."""
    response = validate(client, {"num_requests": 2000, "num_shared_prefixes": 2000, "shared_prefix_len": 1000})
    assert refused_field(response) == "shared_prefix_len"


@pytest.mark.parametrize("cv", [1e-300, 1e300])
def test_gamma_burstiness_that_would_overflow_is_a_422(client, cv):
    assert refused_field(validate(client, {"arrival": "gamma", "arrival_cv": cv})) == "arrival_cv"


def test_a_lognormal_mean_of_1e308_is_a_422(client):
    assert refused_field(validate(client, {"lengths": "lognormal", "prompt_len": 1e308})) == "prompt_len"


@pytest.mark.parametrize("field, value", [("max_model_len", 10**9), ("num_gpu_blocks", 10**9),
                                          ("max_num_batched_tokens", 10**9), ("max_num_seqs", 10**7)])
def test_engine_sizes_beyond_their_bound_are_a_422(client, field, value):
    response = client.post("/api/scenarios/validate", json={"scenario": {"engine": {field: value}}})
    assert refused_field(response) == field


def test_a_long_name_is_a_422(client):
    assert refused_field(validate(client, name="x" * 100_000)) == "name"


@pytest.mark.parametrize("seed", [-1, 2**64])
def test_a_seed_outside_its_range_is_a_422(client, seed):
    assert refused_field(client.post("/api/scenarios/validate", json={"preset": "default", "seed": seed})) == "seed"


def test_the_compare_page_set_b_goes_through_the_same_bounds(client):
    response = client.get("/compare", params={"scenario": "default", "set_b": "shared_prefix_len=100000000"})
    assert response.status_code == 422
    assert "shared_prefix_len" in response.text


def test_the_url_config_goes_through_the_same_bounds():
    """`/?config=` is read with `SessionCreate.model_validate`, the same model as the REST body."""
    with pytest.raises(ValidationError) as error:
        SessionCreate.model_validate({"scenario": {"workload": {"arrival_cv": 1e300, "arrival": "gamma"}}})
    assert error.value.errors()[0]["loc"][-1] == "arrival_cv"


# -- one table for both --------------------------------------------------------------------


@pytest.mark.parametrize("section, bounds", [("EngineModel", ENGINE_BOUNDS), ("WorkloadModel", WORKLOAD_BOUNDS),
                                             (None, SCENARIO_BOUNDS)])
def test_the_web_schema_carries_the_core_bounds(section, bounds):
    """The JSON Schema the dashboard builds its form from states the core's bounds, field for field."""
    schema = ScenarioModel.model_json_schema()
    properties = schema["$defs"][section]["properties"] if section else schema["properties"]
    for name, bound in bounds.items():
        prop = properties[name]
        prop = next((p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"), prop)
        assert prop["maximum"] == bound.high, name
        assert prop.get("exclusiveMinimum" if bound.low_open else "minimum") == bound.low, name


@pytest.mark.parametrize("settings, field", [
    ({"arrival": "gamma", "arrival_cv": 1e-300}, "arrival_cv"),
    ({"arrival": "gamma", "arrival_cv": 1e300}, "arrival_cv"),
    ({"lengths": "lognormal", "prompt_len": 1e308}, "prompt_len"),
    ({"arrival_rate": math.nan}, "arrival_rate"),
    ({"arrival_rate": "10"}, "arrival_rate"),
    ({"prompt_len": "512"}, "prompt_len"),
    ({"concurrency": "4"}, "concurrency"),
    ({"seed": "abc"}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"num_requests": 10**7}, "num_requests"),
    ({"sigma": 1e6}, "sigma"),
])
def test_core_workload_checks_name_the_field(settings, field):
    with pytest.raises(ConfigError) as error:
        WorkloadConfig(**settings)
    assert error.value.field == field


def test_core_engine_checks_bound_sizes_and_switch_types():
    with pytest.raises(ConfigError) as error:
        EngineConfig(max_model_len=10**9)
    assert error.value.field == "max_model_len"
    with pytest.raises(ConfigError) as error:
        EngineConfig.from_dict({"compat": "yes"})
    assert error.value.field == "compat"
    with pytest.raises(ConfigError) as error:
        EngineConfig.from_dict({"compat": {"full_prompt_admission": "no"}})
    assert error.value.field == "compat.full_prompt_admission"


@pytest.mark.parametrize("data, field", [
    ({"engine": 5}, "engine"),
    ({"workload": [1]}, "workload"),
    ({"slo_ttft_s": -1}, "slo_ttft_s"),
    ({"slo_tpot_s": math.nan}, "slo_tpot_s"),
    ({"name": "x" * 10_000}, "name"),
    ({"tp": "2"}, "tensor_parallel_size"),  # tp is vLLM's older name for it
])
def test_core_scenario_checks_name_the_field(data, field):
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict(data)
    assert error.value.field == field
