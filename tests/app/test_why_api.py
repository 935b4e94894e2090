""""Why?" over the API: any past step's decision trace, replayed on demand from a checkpoint, and
a request's history step by step; the live simulation itself runs without the trace."""

import pytest

from app.session import Session
from app.settings import Settings
from scheduler_core.lessons.todays_engine import drafted as drafted_arm
from scheduler_core.scenario.scenario import Scenario
from tests.app.clients import app_client, create, default_scenario, step_session


@pytest.fixture(scope="module")
def first_preemption():
    """The default scenario's first preempting step, and that step's record with the trace on."""
    sim = Scenario.from_dict(default_scenario()).build(keep_finished=True)
    sim.scheduler.enable_decision_trace()
    while True:
        record = sim.step()
        if record.preempted:
            return record


@pytest.fixture(scope="module")
def stepped(first_preemption):
    """A default session stepped just past its first preemption."""
    with app_client() as client:
        created = create(client, preset="default")
        step_session(client, created, first_preemption.step + 1)
        yield client, created


def why(client, created, step):
    return client.get(f"/api/sessions/{created['session_id']}/steps/{step}/why")


def test_a_preemption_step_names_the_needing_request_the_victim_and_the_rule(stepped, first_preemption):
    client, created = stepped
    answer = why(client, created, first_preemption.step).json()
    assert answer["record"]["preempted"] == first_preemption.preempted
    preemption = answer["decisions"]["preemptions"][0]
    assert preemption == first_preemption.decisions["preemptions"][0]
    assert preemption["victim"] == first_preemption.preempted[0]
    assert preemption["blocks_needed"] > preemption["blocks_free"]
    assert preemption["rule"] in ("fcfs_last_running", "self")
    freed = [f for f in answer["decisions"]["frees"] if f["request"] == preemption["victim"]]
    assert freed and freed[0]["cause"] == "preempted" and freed[0]["blocks"] == preemption["victim_blocks"]


def test_the_live_simulation_does_not_trace(stepped):
    client, created = stepped
    live = client.app.state.manager.get(created["session_id"])
    assert live.session.sim.scheduler.decision_trace is None
    assert live.session.last_record.decisions is None


def test_every_past_step_can_be_asked_and_agrees_with_its_record(stepped, first_preemption):
    client, created = stepped
    for step in (0, 1, first_preemption.step // 2, first_preemption.step):
        answer = why(client, created, step).json()
        scheduled = {rid: n for rid, n, _, _ in answer["record"]["scheduled"]}
        given = {e["request"]: e["given"] for e in answer["decisions"]["running"] if e["scheduled"]}
        given.update((e["request"], e["given"]) for e in answer["decisions"]["waiting"] if e["admitted"])
        assert given == scheduled and answer["step"] == step


def test_a_step_not_yet_taken_is_404_and_a_bad_step_is_422(stepped, first_preemption):
    client, created = stepped
    assert why(client, created, first_preemption.step + 1).status_code == 404
    assert why(client, created, -1).status_code == 404
    assert why(client, created, "x").status_code == 422


def test_request_history_lists_every_step_it_ran_with_the_blocks_it_held(stepped):
    client, created = stepped
    live = client.app.state.manager.get(created["session_id"])
    rid = live.session.sim.scheduler.running[0].request_id
    url = f"/api/sessions/{created['session_id']}/requests/{rid}"
    assert client.get(url).json()["history"] is None
    detail = client.get(url, params={"history": "true"}).json()
    history = detail["history"]
    steps = [row[0] for row in history]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    last_step, tokens, before, blocks, kind = history[-1]
    assert kind == "decode"
    assert last_step == live.session.step - 1
    assert blocks == len(detail["block_table"])
    assert before + tokens == detail["request"]["computed"]


def test_a_drafted_request_s_history_gives_each_step_its_drafts_and_where_it_started():
    """With speculative decoding a decode step schedules one token and its drafts, and rejected
    drafts roll back: each history row says what that step scheduled and where it started."""
    session = Session("d", Scenario.from_dict({**drafted_arm("eagle3"), "name": "drafted"}), Settings())
    ran: dict[str, list] = {}
    for _ in range(120):
        records, _ = session.advance(1)
        for chunk in records[0].scheduled:
            row = [records[0].step, chunk.num_tokens, chunk.num_computed_before, chunk.kind]
            ran.setdefault(chunk.request_id, []).append(row)
    rid = max(ran, key=lambda r: sum(row[1] > 1 and row[3] == "decode" for row in ran[r]))
    rows = session.request_detail(rid, with_history=True)["history"]
    assert [[step, tokens, before, kind] for step, tokens, before, _, kind in rows] == ran[rid]
    assert any(kind == "decode" and tokens > 1 for _, tokens, _, _, kind in rows)


def test_a_request_whose_last_token_is_in_flight_stays_running_a_pass_longer():
    """Under async scheduling a request's last token is scheduled while the batch before runs: the
    request's detail counts it in flight, the request stays running with its blocks through that
    pass, and the next pass finishes it."""
    scenario = default_scenario()
    scenario["engine"]["async_scheduling"] = True
    session = Session("a", Scenario.from_dict(scenario), Settings())
    for _ in range(2000):
        session.advance(1)
        last = [r for r in session.sim.scheduler.running if r.num_output_placeholders and r.num_output_tokens + 1 == r.max_tokens]
        if last:
            break
    rid = last[0].request_id
    detail = session.request_detail(rid)
    assert detail["in_flight"] >= 1 and detail["request"]["status"] == "running" and detail["block_table"]
    records, _ = session.advance(1)
    assert rid in records[0].finished
    assert session.request_detail(rid)["in_flight"] == 0
