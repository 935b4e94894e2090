"""A served engine fed request by request while it runs, and its trace replayed headless."""

import dataclasses
import random

import pytest

from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario, with_vllm_defaults
from scheduler_core.sim.live_source import LiveRequestSource, ServedSimulation
from scheduler_core.sim.metrics import SLO
from scheduler_core.workload.standin_tokenizer import StandInTokenizer
from tests.sim.decisions import decisions


def scenario() -> Scenario:
    return Scenario.from_dict(with_vllm_defaults(PRESET_SCENARIOS["default"]))


def served(scenario: Scenario, **budgets) -> tuple[ServedSimulation, LiveRequestSource]:
    sim = ServedSimulation(scenario.engine, scenario.cost_model(), SLO(), scenario.api_server())
    source = LiveRequestSource(sim, budgets.get("max_requests", 1000), budgets.get("max_prompt_tokens", 10**7))
    return sim, source


def live_run(scenario: Scenario, num_requests: int = 60) -> tuple[list, LiveRequestSource]:
    """Requests arriving while the engine steps, as a served session's do: each one submitted
    at a time the engine's clock has not passed yet (the wall clock's order), some with a shared prefix."""
    sim, source = served(scenario)
    tokenizer, rng, records, arrival = StandInTokenizer(), random.Random(3), [], 0.0
    system = "You are a helpful assistant that answers in one sentence. " * 6
    for index in range(num_requests):
        # The first request sets the clock's origin (a trace's times count from its first arrival).
        arrival = arrival + rng.expovariate(40.0) if index else 0.0
        while sim.has_work() and sim.clock_s < arrival:
            records.append(sim.step())
        text = (system if index % 2 else "") + " ".join(f"word{rng.randrange(500)}" for _ in range(rng.randrange(5, 400)))
        source.submit(arrival, tokenizer.encode(text), rng.randrange(1, 200))
    while sim.has_work():
        records.append(sim.step())
    return records, source


def test_an_idle_served_engine_is_waiting_not_done():
    """With nothing submitted it has no work, yet is not finished while it serves."""
    sim, _ = served(scenario())
    assert not sim.has_work() and not sim.done
    sim.serving = False
    assert sim.done


def test_requests_are_numbered_as_a_trace_numbers_them():
    sim, source = served(scenario())
    assert [source.submit(0.0, [1, 2, 3], 4), source.submit(0.5, [5], 1)] == ["req-00000", "req-00001"]
    assert sim.has_work()


def test_a_prompt_over_max_model_len_is_refused_naming_the_prompt():
    sim, source = served(scenario())
    with pytest.raises(ConfigError) as error:
        source.submit(0.0, [7] * (sim.config.max_model_len + 1), 4)
    assert "prompt_token_ids" in error.value.field and not sim.has_work()


def test_the_budgets_of_requests_and_prompt_tokens_are_kept():
    _, source = served(scenario(), max_requests=1, max_prompt_tokens=10)
    with pytest.raises(ConfigError, match="prompt tokens"):
        source.submit(0.0, [1] * 11, 1)
    source.submit(0.0, [1] * 10, 1)
    with pytest.raises(ConfigError, match="1 requests"):
        source.submit(0.0, [1], 1)


def test_the_trace_of_a_live_run_replays_headless_step_for_step(tmp_path):
    """Saved as JSONL (prompt ids and all) and replayed as a scenario's trace, the run makes the
    same decisions at the same simulated times: the same batches, hits, preemptions and finishes."""
    base = scenario()
    records, source = live_run(base)
    path = tmp_path / "served.jsonl"
    path.write_text("\n".join(source.trace_lines()) + "\n")
    replay = dataclasses.replace(base, trace=str(path),
                                 workload=dataclasses.replace(base.workload, num_requests=len(source.requests)))

    replayed = list(replay.build().records())

    assert any(record.cached_tokens for record in records), "the shared system prompt should hit the prefix cache"
    assert [decisions(r) for r in replayed] == [decisions(r) for r in records]


def test_a_trace_row_with_the_prompts_ids_keeps_them_and_bad_ids_name_their_line(tmp_path):
    """A served session's rows carry the prompt itself (replayed, it hits the prefix cache where the
    session did); ids that are not token ids are an error naming the line and the column."""
    from scheduler_core.workload.traces import load_trace_workload

    good = tmp_path / "good.jsonl"
    good.write_text('{"arrival_time": 0.0, "prompt_token_ids": [5, 6, 7], "output_len": 2}\n'
                    '{"arrival_time": 0.5, "prompt_token_ids": [5, 6, 8], "output_len": 1}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"arrival_time": 0.0, "prompt_token_ids": [5, -1], "output_len": 2}\n')

    assert [list(r.prompt_token_ids) for r in load_trace_workload(good, 4096).requests] == [[5, 6, 7], [5, 6, 8]]
    with pytest.raises(ConfigError) as error:
        load_trace_workload(bad, 4096)
    assert error.value.field.endswith("bad.jsonl:1:prompt_token_ids")
