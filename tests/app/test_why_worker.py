""""Why?" of a step not answered before is replayed by a worker process from the checkpoint the
server hands it, never on the server's event loop: the same answer as a replay in place, one at
a time (429 while one runs), within a time budget (503 past it), and kept in a cache bounded in
bytes."""

import json
import pickle
from array import array

import pytest

import app.why_replay
from app.session import Session
from app.settings import Settings
from app.why import ReasonsCache
from app.why_replay import checkpoint_payload, replay_reasons
from scheduler_core.engine.decision_trace import traced_record
from scheduler_core.scenario.scenario import Scenario
from tests.app.clients import app_client, create, default_scenario, step_session


def in_place(session: Session, step: int) -> dict:
    """The answer as the server computed it before workers: a replay on a scratch copy."""
    record = traced_record(session.sim, session.checkpoints.at_or_before(step).state, step)
    return json.loads(json.dumps({"step": step, "record": app.why_replay.record_view(record),
                                  "decisions": record.decisions}))


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_the_workers_replay_from_the_handed_checkpoint_is_the_same_step(async_scheduling):
    data = default_scenario()
    data["engine"]["async_scheduling"] = async_scheduling
    scenario = Scenario.from_dict(data)
    session = Session("w", scenario, Settings(checkpoint_interval=16))
    session.advance(150)
    session.seek(70)  # back, then on again: checkpoints taken on the second pass
    session.advance(40)
    for step in (0, 15, 16, 47, 69, 100, 109):
        payload = checkpoint_payload(session.sim, session.checkpoints.at_or_before(step))
        assert json.loads(replay_reasons(Scenario.from_dict(scenario.to_dict()), step, payload)) == in_place(session, step)


def test_the_checkpoint_travels_as_its_bytes_and_the_prompts_as_columns_of_numbers():
    """Cheap to write on the event loop: no prompt objects pickled, no finished requests sent."""
    session = Session("w", Scenario.from_dict(default_scenario()), Settings(checkpoint_interval=256))
    session.advance(3000)
    checkpoint = session.checkpoints[-1]
    parts = pickle.loads(checkpoint_payload(session.sim, checkpoint))
    prefixes, *columns = parts["prompts"]
    assert all(type(prefix) is array for prefix in prefixes) and all(type(column) is array for column in columns)
    assert len(columns[0]) == len(checkpoint.state.frozen.prompts) > 0
    assert parts["data"] == checkpoint.state.frozen.data
    assert parts["state"].finished_requests == {} and checkpoint.state.finished_requests


@pytest.fixture(scope="module")
def stepped():
    with app_client() as client:
        created = create(client, preset="default")
        step_session(client, created, 60)
        yield client, created


def why(client, created, step):
    return client.get(f"/api/sessions/{created['session_id']}/steps/{step}/why")


def test_an_uncached_why_is_replayed_outside_the_servers_process(stepped, monkeypatch):
    """A replay in the server's process fails here; the worker, a process of its own, answers."""
    client, created = stepped

    def not_here(*args):
        raise AssertionError("replayed in the server's process")

    monkeypatch.setattr(app.why_replay, "traced_record", not_here)
    answer = why(client, created, 33)
    assert answer.status_code == 200 and answer.json()["step"] == 33
    assert len(client.app.state.why_workers) == 0  # its slot is free again


def test_while_a_replay_runs_another_uncached_why_is_a_429_that_takes_no_rate_token(stepped):
    client, created = stepped
    slots = client.app.state.why_workers
    limits = client.app.state.rate_limits.limits["why"].per_client
    slots.num_reserved = slots.limit  # as if one were running
    try:
        before = dict(limits._buckets)
        refused = why(client, created, 34)
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "2"
        assert "being replayed" in refused.json()["detail"]
        assert limits._buckets == before
    finally:
        slots.num_reserved = 0
    assert why(client, created, 34).status_code == 200


def test_a_replay_past_its_time_budget_is_a_503_naming_it():
    # Starting a process alone takes longer than a millisecond.
    with app_client(why_timeout_s=0.001) as client:
        created = create(client, preset="default")
        step_session(client, created, 10)
        refused = why(client, created, 5)
        assert refused.status_code == 503 and "limited to 0.001 s" in refused.json()["detail"]
        assert len(client.app.state.why_workers) == 0


def test_the_answer_cache_is_bounded_in_bytes_least_recently_asked_dropped_first():
    cache = ReasonsCache(max_bytes=100)
    for step in range(3):
        cache.put(("s", step), b"x" * 30)
    assert cache.num_bytes == 90 and cache.get(("s", 0)) is not None
    cache.put(("s", 3), b"x" * 30)  # step 1 was asked least recently
    assert cache.get(("s", 1)) is None and cache.get(("s", 0)) is not None and cache.num_bytes == 90
    cache.put(("s", 5), b"x" * 101)  # larger than the whole cache: not kept
    assert cache.get(("s", 5)) is None and cache.num_bytes <= 100
