"""Check yourself on the fleet lessons: every arm asks two or three questions about moments its
story showed in the fleet view, and each answer is what the fleet did. The answers are read again
here from a second run's events (the fleet is deterministic) and from the cards of the frame the
question sends the class to, not from the moments' facts."""

from __future__ import annotations

from collections import Counter

import pytest

from scheduler_core.lessons.fleet import FLEET_LESSONS
from scheduler_core.lessons.fleet_questions import fleet_check_yourself

ARMS = [(lesson, arm) for lesson in FLEET_LESSONS for arm in lesson.arms]


def first_block(spec) -> tuple:
    return tuple(spec.prompt_token_ids[:16])


def placements_when_all_prompts_arrived(events, fleet, t: float) -> int:
    """Copies of the shared system prompts routed to the replicas, when the last of them first arrives."""
    counts = Counter(first_block(spec) for spec in fleet.workload.requests)
    shared = {key for key, n in counts.items() if n > 1}
    seen, placed = set(), set()
    for e in events:
        if e.kind == "route" and first_block(e.spec) in shared:
            seen.add(first_block(e.spec))
            placed.add((e.replica, first_block(e.spec)))
            if seen == shared:
                assert e.time_s == t
                return len(placed)
    raise AssertionError("not every prompt arrived")


def read_answer(q: dict, events: list, fleet, frames: list):
    """The answer to `q` from the second run's events, or from the cards of the frame it names."""
    moment, measure, rid, t = q["moment"], q["measure"], q["request"], q["t"]
    roles = {r.name: r.role for r in fleet.replicas}
    steps = [e for e in events if e.kind == "step"]
    if moment == "first_hit":
        hit = next(e for e in steps if any(e.record.cached_tokens.get(r) for r in e.record.admitted))
        assert hit.time_s == t and hit.record.cached_tokens[rid]
        return {"hit": hit.record.cached_tokens[rid], "replica": hit.replica}[measure]
    if moment == "all_prompts":
        return placements_when_all_prompts_arrived(events, fleet, t)
    if moment == "worst_imbalance":  # the card: running + waiting, in the frame pinned at that instant
        card = frames[q["frame"]]["replicas"][[r.name for r in fleet.replicas].index(q["replica"])]
        assert frames[q["frame"]]["t"] == t
        return card["running"] + card["waiting"]
    if moment == "first_transfer":
        transfer = next(e for e in events if e.kind == "transfer")
        assert transfer.time_s == t and transfer.request_id == rid
        return {"blocks": transfer.transfer.num_blocks, "decode": transfer.replica}[measure]
    if moment == "first_token":
        first = next(e for e in steps if roles[e.replica] != "prefill" and e.record.sampled)
        assert first.time_s == t and first.record.sampled[0] == rid
        if measure == "replica":
            return first.replica
        return sum(1 for e in steps if e.time_s <= t for c in e.record.scheduled if c.request_id == rid and c.kind == "prefill")
    if moment == "mixed_step":
        step = next(e for e in steps if e.time_s == t and e.replica == q["replica"])
        assert any(c.kind == "decode" for c in step.record.scheduled)
        return next(c.num_tokens for c in step.record.scheduled if c.request_id == rid and c.kind == "prefill")
    if moment == "slowest_decode_step":
        with_decodes = [e for e in steps if roles[e.replica] != "prefill" and any(c.kind == "decode" for c in e.record.scheduled)]
        slowest = max(with_decodes, key=lambda e: e.record.step_s)  # the first to reach the longest
        assert slowest.time_s == t and slowest.replica == q["replica"]
        return sum(1 for c in slowest.record.scheduled if c.kind == "decode")
    if moment == "end":
        routed = Counter(e.replica for e in events if e.kind == "route")
        return {"busiest_routed": max(routed.values()), "busiest": routed.most_common(1)[0][0]}[measure]
    raise AssertionError(f"no way to read {measure!r} at {moment!r}")


@pytest.mark.slow
@pytest.mark.parametrize(("lesson", "arm"), ARMS, ids=[f"{lesson.name}:{arm}" for lesson, arm in ARMS])
def test_every_fleet_arms_questions_are_answered_by_a_second_run_and_its_cards(lesson, arm):
    run = lesson.timeline(arm)
    questions, beats = run["lesson"]["questions"], run["lesson"]["beats"]
    assert 2 <= len(questions) <= 3, questions
    assert len({(q["t"], q["measure"]) for q in questions}) == len(questions), questions
    assert {q["frame"] for q in questions} <= {b["frame"] for b in beats}, "a question at an instant no beat shows"
    for q in questions:
        assert isinstance(q["answer"], (int, str)) and not isinstance(q["answer"], bool), q
        assert q["at"] in q["text"] and q["at"] in q["hint"], q
    fleet = lesson.scenario(arm).build()
    events = list(fleet.events())
    assert [q["answer"] for q in questions] == [read_answer(q, events, fleet, run["frames"]) for q in questions]


def beat(event: str, frame: int, t: float, **facts) -> dict:
    return {"event": event, "frame": frame, "facts": {"t": t, **facts}}


REPORT = {"router": {"decisions": {"replica-0": 120, "replica-1": 90, "replica-2": 95, "replica-3": 95}}}


def test_the_lessons_point_is_asked_about_before_the_first_route_and_the_end():
    beats = [beat("opening", 0, 0.0), beat("first_route", 1, 0.02, request="req-00000", replica="replica-0"),
             beat("first_hit", 4, 0.13, request="req-00004", replica="replica-1", hit=1024),
             beat("worst_imbalance", 40, 3.19, request="req-00095", replica="replica-3", busiest_n=9),
             beat("end", 150, 14.1)]
    asked = [(q["moment"], q["measure"], q["answer"]) for q in fleet_check_yourself(beats, REPORT)]
    assert asked == [("first_hit", "hit", 1024), ("worst_imbalance", "busiest_n", 9), ("end", "busiest_routed", 120)]


def test_an_arm_with_only_its_end_asks_the_busiest_replica_and_its_count():
    questions = fleet_check_yourself([beat("opening", 0, 0.0), beat("end", 150, 14.1)], REPORT)
    assert [(q["measure"], q["answer"]) for q in questions] == [("busiest_routed", 120), ("busiest", "replica-0")]
    assert all(q["frame"] == 150 and "14.100 s" in q["text"] + q["hint"] for q in questions)


def test_which_replica_is_busiest_is_not_asked_on_a_tie():
    tied = {"router": {"decisions": {"replica-0": 100, "replica-1": 100}}}
    questions = fleet_check_yourself([beat("opening", 0, 0.0), beat("first_route", 1, 0.02, request="req-00000",
                                                                      replica="replica-0"), beat("end", 150, 14.1)], tied)
    assert "busiest" not in [q["measure"] for q in questions]
