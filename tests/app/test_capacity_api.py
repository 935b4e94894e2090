"""/api/scenarios/validate says whether the clients' conversations fit the KV cache (sim/capacity.py),
so the configuration form can warn before a run that can only preempt."""

from scheduler_core.scenario.scenario import Scenario
from scheduler_core.sim.capacity import KVCapacity
from tests.app.clients import app_client

CLOSED_LOOP = {"gpu": "h200", "engine": {"num_gpu_blocks": 200}, "workload": {"num_requests": 64, "concurrency": 32,
                                                                           "lengths": "sharegpt", "seed": 1}}


def validate(client, scenario):
    response = client.post("/api/scenarios/validate", json={"scenario": scenario})
    assert response.status_code == 200, response.text
    return response.json()["capacity"]


def test_validate_sends_the_core_rules_verdict_and_its_warning_line():
    """32 ShareGPT clients need about 15,000 KV tokens; 200 blocks hold 3,200."""
    with app_client() as client:
        capacity = validate(client, CLOSED_LOOP)
    scenario = Scenario.from_dict(CLOSED_LOOP)
    expected = KVCapacity.of(scenario.build_workload(), scenario.engine, scenario.memory_plan().kv_cache_size_tokens)
    assert capacity == expected.to_dict()
    assert capacity["exceeded"] and capacity["warning"].startswith("capacity warning: 32 clients x ")


def test_validate_sends_no_warning_when_the_clients_fit_or_arrive_at_a_rate():
    with app_client() as client:
        fits = validate(client, {**CLOSED_LOOP, "engine": {"num_gpu_blocks": 4096}})
        open_loop = validate(client, {**CLOSED_LOOP, "workload": {"num_requests": 64, "arrival_rate": 4.0}})
    assert (fits["exceeded"], fits["warning"]) == (False, "")
    assert (open_loop["clients"], open_loop["warning"]) == (0, "")
