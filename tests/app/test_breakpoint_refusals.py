"""A breakpoint that could never stop the run is refused, through the one path every breakpoint set
takes (app/breakpoints.py): an error frame naming the field at fault, and the set as it was."""

from types import SimpleNamespace

import pytest

from app.breakpoints import MAX_REQUEST_ID_CHARS, BreakpointError, parse_breakpoints
from app.settings import Settings
from tests.app import test_protocol as protocol
from tests.sim.test_live_source import scenario, served

TIGHT = protocol.TIGHT
# The protocol tests' fixtures: a TIGHT session with its presenter connected, at step 0.
client, connect, session = protocol.client, protocol.connect, protocol.session


def refusal(conn, breakpoints: list[dict]) -> dict:
    conn.send({"type": "breakpoints", "breakpoints": breakpoints})
    return conn.until_type("error")


def breakpoints_now(conn) -> list[dict]:
    conn.fresh_snapshot()
    return conn.seen[-1]["status"]["breakpoints"]


def test_a_step_breakpoint_already_behind_is_refused_saying_where_the_run_is(session):
    _, presenter = session
    presenter.step_to(297)

    error = refusal(presenter, [{"kind": "finish"}, {"kind": "step", "value": 10}])

    assert error["code"] == "bad_value" and error["field"] == "breakpoints[1].value"
    assert error["message"] == "breakpoints[1].value: step 10 is already behind: the run is at step 297"
    assert breakpoints_now(presenter) == []  # the whole set refused: the finish breakpoint is not kept either


def test_a_step_breakpoint_at_the_current_step_is_refused(session):
    _, presenter = session
    presenter.step_to(40)

    error = refusal(presenter, [{"kind": "step", "value": 40}])

    assert error["field"] == "breakpoints[0].value" and "the run is at step 40 now" in error["message"]


def test_a_step_breakpoint_past_the_sessions_step_budget_is_refused(session):
    _, presenter = session
    last = Settings().max_steps_per_session

    error = refusal(presenter, [{"kind": "step", "value": last + 1}])

    assert error["field"] == "breakpoints[0].value"
    assert error["message"].endswith(f"step {last + 1} is past this session's last step, {last}")


def test_an_unknown_request_id_is_refused_naming_it_and_the_workloads_ids(session):
    _, presenter = session
    num_requests = TIGHT["workload"]["num_requests"]

    error = refusal(presenter, [{"kind": "request", "value": "req-99999"}])

    assert error["code"] == "bad_value" and error["field"] == "breakpoints[0].value"
    assert error["message"] == (f"breakpoints[0].value: no request 'req-99999' in this workload: its ids run "
                                f"req-00000 to req-{num_requests - 1:05d} ({num_requests} requests)")


def test_an_id_that_only_looks_like_a_workload_id_is_unknown(session):
    _, presenter = session

    assert "no request 'req-12'" in refusal(presenter, [{"kind": "request", "value": "req-12"}])["message"]


def test_a_request_already_finished_is_refused(session):
    _, presenter = session
    presenter.step_to(200)  # TIGHT's first finish is at step 28
    finished = presenter.fresh_snapshot()["queues"]["finished"][0]

    error = refusal(presenter, [{"kind": "request", "value": finished}])

    assert error["field"] == "breakpoints[0].value"
    assert error["message"].endswith(f"{finished} has already finished: it is not scheduled again")


def test_a_request_of_the_workload_not_yet_arrived_is_kept(session):
    _, presenter = session
    last = f"req-{TIGHT['workload']['num_requests'] - 1:05d}"

    presenter.send({"type": "breakpoints", "breakpoints": [{"kind": "request", "value": last}]})
    status = presenter.until(lambda f: f["type"] in ("status", "error") and (f["type"] == "error" or f["breakpoints"]))[-1]

    assert status["type"] == "status" and status["breakpoints"] == [{"kind": "request", "value": last}]


def test_a_refused_set_leaves_the_set_before_it(session):
    _, presenter = session
    presenter.send({"type": "breakpoints", "breakpoints": [{"kind": "preemption"}]})
    presenter.until(lambda f: f["type"] == "status" and f["breakpoints"])

    refusal(presenter, [{"kind": "request", "value": "nobody"}])

    assert breakpoints_now(presenter) == [{"kind": "preemption", "value": None}]


def test_shape_errors_name_their_field_too(session):
    _, presenter = session

    kind = refusal(presenter, [{"kind": "finish"}, {"kind": "lunch"}])
    usage = refusal(presenter, [{"kind": "kv_usage", "value": True}])
    long_id = refusal(presenter, [{"kind": "request", "value": "r" * (MAX_REQUEST_ID_CHARS + 1)}])
    not_a_list = refusal(presenter, [{"kind": "finish"}] * 33)

    assert kind["field"] == "breakpoints[1].kind"
    assert usage["field"] == "breakpoints[0].value"
    assert long_id["field"] == "breakpoints[0].value" and "r" * 20 not in long_id["message"]
    assert not_a_list["field"] == "breakpoints"


# -- a served engine: its requests come from its clients as it runs ------------------------------
def served_session() -> SimpleNamespace:
    """What parse_breakpoints reads of a session (app.session.Session), over a served engine with one
    request submitted."""
    sim, source = served(scenario())
    source.submit(0.0, list(range(40)), 4)
    return SimpleNamespace(sim=sim, step=0, settings=Settings())


def test_a_served_engine_takes_a_breakpoint_on_a_request_still_to_come():
    session = served_session()

    assert [b.value for b in parse_breakpoints([{"kind": "request", "value": "req-00042"}], session)] == ["req-00042"]


def test_a_served_engine_takes_a_breakpoint_on_a_request_that_arrived_after_it_stops_serving():
    session = served_session()
    session.sim.step()
    session.sim.serving = False

    assert parse_breakpoints([{"kind": "request", "value": "req-00000"}], session)[0].value == "req-00000"
    with pytest.raises(BreakpointError, match="no request 'req-00042'"):
        parse_breakpoints([{"kind": "request", "value": "req-00042"}], session)
