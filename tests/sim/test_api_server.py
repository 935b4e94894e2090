"""vLLM's API server in front of the engine: one serial process per `--api-server-count`, tokenizing
requests before the engine core sees them and detokenizing every output token on the way back;
none for the offline engine or a replayed trace."""

import math

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.request import Request
from scheduler_core.engine.scheduler import UpdateResult
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.sim.api_server import APIServer, APIServerCost
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import RequestSpec

COST = APIServerCost(per_request_s=1e-3, per_prompt_token_s=1e-6, per_output_token_s=20e-6, hop_s=50e-6)


class Burst:
    """Clients that all send at `arrival_s`, one prompt of `prompt_len` tokens each."""

    def __init__(self, num_requests: int, prompt_len: int = 100, arrival_s: float = 0.0):
        self.specs = [RequestSpec(f"req-{i}", arrival_s, range(prompt_len), 4) for i in range(num_requests)]
        self.next = 0

    def next_client_time(self):
        return self.specs[self.next].arrival_time if self.next < len(self.specs) else None

    def take_client_request(self):
        self.next += 1
        return self.next - 1, self.specs[self.next - 1]


def admitted_times(server: APIServer, clients: Burst) -> list[float]:
    times = []
    while (ready_s := server.next_ready_s(clients)) is not None:
        server.pass_on()
        times.append(ready_s)
    return times


def test_a_burst_reaches_the_engine_at_the_rate_the_api_server_handles_it():
    times = admitted_times(APIServer(1, COST), Burst(1000))
    per_request_s = 1e-3 + 100 * 1e-6
    assert times[0] == pytest.approx(per_request_s + 50e-6)
    assert times[-1] == pytest.approx(1000 * per_request_s + 50e-6)
    assert len(times) / times[-1] == pytest.approx(1 / per_request_s, rel=1e-3)  # ~909 requests/s, not all at once


def test_two_api_servers_take_a_burst_twice_as_fast():
    one, two = admitted_times(APIServer(1, COST), Burst(1000)), admitted_times(APIServer(2, COST), Burst(1000))
    assert two[-1] == pytest.approx((one[-1] - 50e-6) / 2 + 50e-6)


def test_every_output_token_is_detokenized_and_its_time_becomes_its_clients():
    server, clients = APIServer(1, COST), Burst(1)
    server.next_ready_s(clients)
    _, spec = server.pass_on()
    request = Request(spec.request_id, spec.prompt_token_ids, 8)
    step_end_s = 1.0
    request.token_times.extend([step_end_s] * 3)  # one step sampled a token and accepted two drafts
    request.num_output_tokens = 3
    server.stream(UpdateResult([spec.request_id], []), {spec.request_id: request}, 0.9, step_end_s, clients)
    sent_s = step_end_s + 50e-6 + 3 * 20e-6
    assert list(request.token_times) == [pytest.approx(sent_s)] * 3
    assert server.last_stream_s == pytest.approx(sent_s - step_end_s)
    # The next step's one token is streamed after the first three, once.
    request.token_times.append(1.01)
    server.stream(UpdateResult([spec.request_id], [request]), {}, 1.0, 1.01, clients)
    assert request.token_times[-1] == pytest.approx(1.01 + 50e-6 + 20e-6)
    assert request.finish_time == request.token_times[-1]


def test_a_steps_outputs_wait_for_the_request_in_progress_not_for_the_whole_burst():
    server, clients = APIServer(1, COST), Burst(1000)
    server.next_ready_s(clients)
    _, spec = server.pass_on()
    request = Request(spec.request_id, spec.prompt_token_ids, 8)
    request.token_times.append(0.01)
    server.stream(UpdateResult([spec.request_id], []), {spec.request_id: request}, 0.0011, 0.01, clients)
    # Requests begun before the outputs came back (up to 10.05 ms) go first, the rest after them.
    per_request_s = 1e-3 + 100 * 1e-6
    handled = math.ceil((0.01 + 50e-6) / per_request_s)
    assert request.token_times[0] == pytest.approx(handled * per_request_s + 20e-6)


def served_and_offline(**workload):
    data = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "engine": {"num_gpu_blocks": 4096},
            "workload": {"num_requests": 1, "lengths": "fixed", "prompt_len": 500, "output_len": 16, **workload}}
    reports = []
    for entrypoint in ("serve", "offline"):
        sim = Scenario.from_dict({**data, "entrypoint": entrypoint}).build()
        sim.run()
        reports.append(sim.metrics.report())
    return reports


def test_served_and_offline_differ_by_the_modelled_amounts():
    served, offline = served_and_offline()
    cost = APIServerCost()
    admission_s = cost.per_request_s + 500 * cost.per_prompt_token_s + cost.hop_s
    stream_s = cost.hop_s + cost.per_output_token_s
    assert served["ttft_s"]["mean"] - offline["ttft_s"]["mean"] == pytest.approx(admission_s + stream_s, abs=1e-9)
    assert served["e2e_s"]["mean"] - offline["e2e_s"]["mean"] == pytest.approx(admission_s + stream_s, abs=1e-9)
    assert served["itl_s"]["mean"] == pytest.approx(offline["itl_s"]["mean"], abs=1e-9)  # every token moved alike
    assert served["front_end"]["ttft_added_s_mean"] == pytest.approx(admission_s + stream_s)
    assert "front_end" not in offline


def test_a_run_is_the_same_run_again_and_after_stepping_back():
    scenario = Scenario.from_dict({"workload": {"num_requests": 60, "arrival_rate": math.inf, "seed": 3}})
    first, again = scenario.build(), scenario.build()
    records = list(first.records())
    assert list(again.records()) == records
    third = scenario.build()
    for _ in range(20):
        third.step()
    state = third.snapshot()
    rest = list(third.records())
    third.restore(state)
    assert list(third.records()) == rest == records[20:]


def test_a_replayed_trace_and_the_offline_engine_have_no_api_server():
    assert Simulation(EngineConfig(), []).api_server is None
    assert Scenario.from_dict({"entrypoint": "offline"}).build().api_server is None
    assert Scenario.from_dict({}).build().api_server is not None
    workload = Scenario.from_dict({}).build_workload()
    stepped = type(workload)(workload.requests, arrivals_by_step=True)  # as a recorded vLLM trace gives them
    assert Scenario.from_dict({}).api_server(stepped) is None


@pytest.mark.parametrize("data, field", [({"entrypoint": "llm"}, "entrypoint"), ({"api_server_count": 0}, "api_server_count"),
                                         ({"api_server_count": 65}, "api_server_count")])
def test_bad_front_end_settings_name_their_field(data, field):
    with pytest.raises(ConfigError) as caught:
        Scenario.from_dict(data)
    assert caught.value.field == field
