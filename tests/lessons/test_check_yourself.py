"""Check yourself: every arm of every lesson asks two or three questions about moments its beats
showed, and each answer is what that step's record says. The answers are recomputed here from a
fresh run of the arm, read straight off the step records, not from the story's facts."""

from __future__ import annotations

import pytest

from scheduler_core.engine.kv_events import BlocksLeftWindow
from scheduler_core.lessons.catalog import LESSONS
from scheduler_core.lessons.check_yourself import check_yourself
from scheduler_core.lessons.framework import story


def chunk_of(record, rid):
    return next(c for c in record.scheduled if c.request_id == rid)


def only(ids: list[str]) -> str | None:
    return ids[0] if len(ids) == 1 else None


# moment (or "*" for any) and measure -> the answer, read from the step's record and the run at that step.
def read_answer(question, record, sim, preemptions_before: dict) -> object:
    moment, measure, rid = question["moment"], question["measure"], question["request"]
    decodes = sum(1 for c in record.scheduled if c.kind == "decode")
    if measure == "batched_tokens":
        return sum(c.num_tokens for c in record.scheduled)
    if measure in ("running", "waiting"):
        return record.num_running if measure == "running" else record.num_waiting
    if measure == "num_preempted":
        return len(record.preempted)
    if measure == "num_finished":
        return len(record.finished)
    if measure == "num_admitted":
        return len(record.admitted)
    if measure == "empty":
        return sim.config.max_num_seqs - record.num_running
    if measure == "decodes":
        return decodes
    if measure == "priority":
        return sim.request(only(record.preempted)).priority
    if measure == "request":
        if moment == "repeat_preemption":
            victim = only(record.preempted)
            return victim if preemptions_before.get(victim) == 1 else None
        ids = {"first_preemption": record.preempted, "first_priority_victim": record.preempted,
               "first_resume": record.resumed, "first_finish": record.finished, "seat_left_empty": record.finished,
               "late_release": record.finished, "missed_batch": record.admitted}[moment]
        return only(ids)
    if measure == "tokens":
        if moment in ("first_hit", "first_hit_block_dropped"):
            return record.cached_tokens[rid]
        chunk = chunk_of(record, rid)
        assert chunk.kind == "prefill"
        return chunk.num_tokens
    if measure == "start":
        return chunk_of(record, rid).num_computed_before
    if measure == "blocks":
        if moment == "first_eviction":
            return record.num_blocks_evicted
        if moment == "first_swap":
            return dict(record.swapped_out)[rid]
        if moment == "first_window_release":
            return sum(len(e.block_ids) for e in record.kv_events if isinstance(e, BlocksLeftWindow) and e.request_id == rid)
        if moment == "last_token_in_flight":
            return len(sim.block_table(rid))
    if measure == "drafts":
        return record.scheduled_spec_decode_tokens[rid]
    if measure == "accepted":
        return record.num_accepted_tokens[rid]
    if measure == "gained":
        assert record.num_accepted_tokens[rid] == record.scheduled_spec_decode_tokens[rid]  # all accepted
        return record.num_accepted_tokens[rid] + 1
    raise AssertionError(f"no way to read {measure!r} at {moment!r}")


def replayed_answers(lesson, arm: str, questions: list[dict]) -> list:
    """Each question's answer read from a fresh run of the arm, at the step it names."""
    sim = lesson.simulation(arm)
    sim.enable_kv_events()
    by_step = {}
    for q in questions:
        by_step.setdefault(q["step"], []).append(q)
    answers, preemptions, peak = {}, {}, 0
    record = None
    for record in sim.records():
        step = record.step + 1
        for q in by_step.get(step, []):
            if q["measure"] == "step":
                continue
            answers[id(q)] = read_answer(q, record, sim, preemptions)
            if q["moment"] == "peak_running" and q["measure"] == "running":  # the most at once, first reached here
                assert record.num_running > peak
        peak = max(peak, record.num_running)
        for rid in record.preempted:
            preemptions[rid] = preemptions.get(rid, 0) + 1
    for q in questions:
        if q["measure"] == "step":  # the last request finished in the run's last step
            assert record.finished and sim.done
            answers[id(q)] = record.step + 1
        if q["moment"] == "peak_running" and q["measure"] == "running":
            assert q["answer"] == peak
    return [answers[id(q)] for q in questions]


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_every_arms_questions_are_answered_by_its_own_step_records(lesson):
    results = lesson.run()
    for arm in lesson.arms:
        beats = story(lesson, arm, results)
        found = results[arm].events
        questions = check_yourself(beats, found)
        assert 2 <= len(questions) <= 3, (arm, questions)
        assert len({(q["step"], q["measure"]) for q in questions}) == len(questions), (arm, questions)
        assert len({q["text"] for q in questions}) == len(questions), (arm, questions)
        moments = {b["step"] for b in beats} | {facts["step"] for facts in found.values()}
        assert {q["step"] for q in questions} <= moments, (arm, "a question at a step no moment of the run is at")
        for q in questions:
            assert not (q["measure"] in TRIVIAL_IF_0_OR_1 and q["answer"] in (0, 1)), (arm, q)
            assert isinstance(q["answer"], (int, str)) and not isinstance(q["answer"], bool), q
            assert str(q["step"]) in q["hint"].replace(",", ""), q
        assert [q["answer"] for q in questions] == replayed_answers(lesson, arm, questions), arm


# Counts that a step of 0 or 1 of makes no question: most steps schedule one token or finish one request.
TRIVIAL_IF_0_OR_1 = ("batched_tokens", "num_finished")


def beat(event: str, step: int, **facts) -> dict:
    base = {"step": step, "running": 4, "waiting": 2, "batched_tokens": 100, "num_preempted": 0, "num_finished": 0,
            "num_admitted": 0, "num_resumed": 0}
    return {"event": event, "step": step, "facts": {**base, **facts}}


def test_a_lessons_own_moments_are_asked_about_before_those_every_lesson_has():
    beats = [beat("opening", 0), beat("first_admit", 1), beat("first_finish", 9, request="req-00003", num_finished=1),
             beat("first_preemption", 20, request="req-00017", num_preempted=1), beat("end", 90, num_finished=1)]
    questions = check_yourself(beats)
    assert [(q["moment"], q["measure"]) for q in questions] == [
        ("first_admit", "batched_tokens"), ("first_finish", "request"), ("first_preemption", "request")]
    assert questions[2]["answer"] == "req-00017" and "step 20" in questions[2]["text"]


def test_which_request_is_asked_only_when_the_step_did_it_to_one_request():
    beats = [beat("opening", 0), beat("first_preemption", 20, request="req-00017", num_preempted=2), beat("end", 90)]
    asked = {(q["moment"], q["measure"]): q["answer"] for q in check_yourself(beats)}
    assert ("first_preemption", "request") not in asked
    assert asked[("first_preemption", "num_preempted")] == 2


def test_an_arm_with_only_its_opening_and_end_is_asked_about_the_runs_untold_moments():
    found = {"first_admit": beat("first_admit", 1, request="req-00000", batched_tokens=2048)["facts"],
             "peak_running": beat("peak_running", 87, running=32)["facts"],
             "batch_full": beat("batch_full", 87, running=32)["facts"]}
    questions = check_yourself([beat("opening", 0), beat("end", 640, num_finished=1, batched_tokens=1)], found)
    assert [(q["moment"], q["measure"], q["answer"]) for q in questions] == [
        ("first_admit", "batched_tokens", 2048), ("peak_running", "running", 32), ("end", "step", 640)]
    assert "Seek to step 87" in questions[1]["hint"]


def test_a_step_of_one_token_or_one_finish_is_not_asked_about():
    # The last step of a run decodes one token and finishes one request: every run's last step.
    asked = [q["measure"] for q in check_yourself([beat("opening", 0), beat("end", 640, num_finished=1, batched_tokens=1)])]
    assert asked == ["step"]
    asked = [q["measure"] for q in check_yourself([beat("opening", 0), beat("end", 640, num_finished=3, batched_tokens=0)])]
    assert asked == ["step", "num_finished"]


def test_one_count_of_one_step_is_asked_once_whichever_moments_share_the_step():
    beats = [beat("opening", 0), beat("batch_full", 87, running=32), beat("end", 640)]
    found = {"peak_running": beat("peak_running", 87, running=32)["facts"]}
    asked = [(q["step"], q["measure"]) for q in check_yourself(beats, found)]
    assert asked.count((87, "running")) == 1, asked
