"""Step back's checkpoints within a budget of bytes: measured as each is taken, thinned to the
session's share, all sessions together within the server's budget, and a session that finds no
room refused with a 503 naming the budget. Stepping back stays exact however thin they get."""

import asyncio
import tracemalloc

import pytest
from fastapi.testclient import TestClient

from app.checkpoints import MemoryBudget, MemoryBudgetSpent
from app.main import create_app
from app.session import Session
from app.session_manager import SessionManager
from app.settings import Settings
from scheduler_core.scenario.scenario import Scenario

# Many requests arriving at once on a large pool: checkpoints of a few hundred kB that grow.
BIG = Scenario.from_dict({
    "engine": {"num_gpu_blocks": 8192, "max_num_seqs": 64, "max_num_batched_tokens": 2048, "max_model_len": 8192},
    "workload": {"num_requests": 1000, "arrival_rate": 1000, "lengths": "uniform", "prompt_len": 500,
                 "prompt_len_high": 3000, "output_len": 100, "output_len_high": 400},
})


def test_a_checkpoints_measured_size_is_what_taking_it_allocates():
    session = Session("s", BIG, Settings(checkpoint_interval=50))
    session.advance(49)
    session.advance(1, checkpoint_later=True)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        session.take_due_checkpoint()
        allocated = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    measured = session.checkpoints[-1].num_bytes
    assert measured > 100_000
    assert 0.9 * allocated <= measured <= 1.1 * allocated


def test_a_sessions_checkpoints_stay_within_its_budget_and_step_back_stays_exact():
    first = Session("s", BIG, Settings(checkpoint_interval=8))
    first.advance(40)
    one_checkpoint = first.checkpoints[-1].num_bytes
    budget = 3 * one_checkpoint  # room for step 0 and about two more
    session = Session("s", BIG, Settings(checkpoint_interval=8, max_session_bytes=budget))
    for _ in range(30):
        session.advance(10)
        assert session.checkpoints.num_bytes <= budget
        assert session.checkpoints.num_bytes == sum(c.num_bytes for c in session.checkpoints)
    assert session.checkpoints.interval > 8 and session.checkpoints[0].step_index == 0
    session.seek(123)
    fresh = Session("t", BIG, Settings())
    fresh.advance(123)
    assert session.sim.metrics.report() == fresh.sim.metrics.report()
    assert session.sim.kv_view().block_tables == fresh.sim.kv_view().block_tables


def test_all_sessions_together_stay_within_the_servers_budget():
    probe = Session("p", BIG, Settings(checkpoint_interval=8))
    probe.advance(40)
    server_budget = 6 * probe.checkpoints[-1].num_bytes
    manager = SessionManager(Settings(checkpoint_interval=8, max_server_bytes=server_budget))
    sessions = [manager.create(BIG).session for _ in range(3)]
    for _ in range(20):
        for session in sessions:
            session.advance(10)
            assert manager.memory.num_bytes <= server_budget
    # Each is held to an equal share, whatever the others do.
    assert all(s.checkpoints.num_bytes <= server_budget // 3 for s in sessions)


def test_a_session_finding_no_room_is_refused_and_an_ended_one_frees_its_share():
    probe = Session("p", BIG, Settings())
    manager = SessionManager(Settings(max_server_bytes=int(2.5 * probe.checkpoints[0].num_bytes)))
    first = manager.create(BIG)
    manager.create(BIG)
    with pytest.raises(MemoryBudgetSpent, match="memory budget for sessions"):
        manager.create(BIG)
    assert len(manager.sessions) == 2 and len(manager.memory.members) == 2
    asyncio.run(manager.delete(first.session.session_id))
    manager.create(BIG)


def test_over_http_a_session_past_the_servers_budget_is_a_503_naming_it():
    settings = Settings(allowed_hosts=("testserver",), max_server_bytes=1)
    with TestClient(create_app(settings)) as client:
        refused = client.post("/api/sessions", json={"preset": "default"})
    assert refused.status_code == 503 and "memory budget for sessions (0 MiB)" in refused.json()["detail"]
    assert refused.headers["Retry-After"]


def test_the_budget_gives_each_session_an_equal_share_of_the_server():
    budget = MemoryBudget(max_session_bytes=100, max_server_bytes=250)
    assert budget.share == 100
    budget.members.update({object(), object(), object()})
    assert budget.share == 83
