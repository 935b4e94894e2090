"""Every claim a guided scenario narrates holds on the simulation's own numbers.

The dashboard's captions and `servescope lesson NAME` print these same claims, filled in from
the same runs, so a change that breaks one fails here rather than misleading a learner.
"""

import pytest

from app.frames import record_view
from scheduler_core.cli.main import main
from scheduler_core.lessons.catalog import LESSONS, LESSONS_BY_NAME
from scheduler_core.lessons.events import event_holds
from scheduler_core.lessons.framework import PANELS, evaluate, fill, story

# Almost every test reads `results`, every lesson's arms run to the end (a quarter of a minute).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results():
    return {lesson.name: lesson.run() for lesson in LESSONS}


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_every_claim_of_the_lesson_holds(lesson, results):
    """Each narrated claim is true of the numbers the lesson's arms produce."""
    failed = [text for holds, text in evaluate(lesson, results[lesson.name]) if not holds]
    assert not failed


def test_the_lessons_of_the_issues_exist():
    """Paged vs contiguous, static vs continuous, chunked prefill, memory pressure, prefix caching,
    the 0.10 admission thrash and priority (issue 10), capacity (issue 12), speculative decoding and
    async scheduling (issue 14), mixtures of experts with sliding windows (issue 25) each have a lesson."""
    assert set(LESSONS_BY_NAME) == {"paged-vs-contiguous", "static-vs-continuous", "chunked-prefill", "memory-pressure",
                                    "prefix-caching", "admission-thrash", "priority", "capacity", "speculative-decoding",
                                    "async-scheduling", "everything-on", "moe-sliding-window"}


def test_capacity_lesson_shows_the_startup_numbers_vllm_would_print(results):
    """The capacity lesson's KV sizes are the memory arithmetic's, arm by arm: fp8 KV (half the bytes
    per token) at 0.95 of an H100's memory, 2.4 GiB more than vLLM 0.33's 0.92 on a cache of about
    2.6 GiB, holds about four times the tokens of the defaults, and an H200 more than both."""
    capacity = results["capacity"]
    for arm in ("h100-defaults", "h100-fp8-kv", "h200-defaults"):
        plan = LESSONS_BY_NAME["capacity"].scenario(arm).memory_plan()
        assert capacity[arm].memory["kv_cache_size_tokens"] == plan.kv_cache_size_tokens
    tokens = [capacity[arm].memory["kv_cache_size_tokens"] for arm in ("h100-defaults", "h100-fp8-kv", "h200-defaults")]
    assert tokens[0] * 3 < tokens[1] < tokens[2]


def test_the_thrash_lesson_reproduces_vllms_recording(results):
    """Scenario b under 0.10's admission rule gives vLLM's recorded 210 preemptions, 57 of one request."""
    thrash = results["admission-thrash"]["vllm-0.10"]
    assert (thrash.preemptions, thrash.max_preemptions_of_one_request) == (210, 57)
    assert results["admission-thrash"]["vllm-0.33"].preemptions == 1


def test_async_lesson_frees_a_finished_requests_blocks_one_pass_after_its_last_token(results):
    """Async scheduling's late release, told on req-00001: its last token is scheduled in one pass,
    the next pass schedules its batch without it and only then frees its blocks (the same number
    the block table held); without async scheduling it finishes in the step that computed it."""
    lesson = LESSONS_BY_NAME["async-scheduling"]
    beats = {b["event"]: b for b in story(lesson, "async", results[lesson.name])}
    in_flight, late = beats["last_token_in_flight"], beats["late_release"]
    assert late["step"] == in_flight["step"] + 1 and late["facts"]["request"] == in_flight["facts"]["request"]
    records = list(lesson.simulation("async").records(max_steps=late["step"]))
    rid = in_flight["facts"]["request"]
    assert rid in {c.request_id for c in records[-2].scheduled} and rid not in records[-2].finished
    assert rid in records[-1].finished and rid not in {c.request_id for c in records[-1].scheduled}
    assert records[-1].num_blocks_freed == in_flight["facts"]["blocks"] > 0
    assert not event_holds("late_release", late["facts"], record_view(records[-2]) | {"step": late["step"] - 1})
    finish = next(b for b in story(lesson, "sync", results[lesson.name]) if b["event"] == "first_finish")
    assert finish["facts"]["request"] == rid
    sync_record = list(lesson.simulation("sync").records(max_steps=finish["step"]))[-1]
    assert rid in sync_record.finished and rid in {c.request_id for c in sync_record.scheduled}


def test_async_lesson_request_arriving_after_the_choice_gets_its_first_token_a_step_later(results):
    """The request told at 'A batch too late' arrived between the previous pass's choice and that
    batch's start on the GPU; its first token comes one decode step later than without async."""
    lesson = LESSONS_BY_NAME["async-scheduling"]
    missed = next(b for b in story(lesson, "async", results[lesson.name]) if b["event"] == "missed_batch")
    rid, facts = missed["facts"]["request"], missed["facts"]
    assert facts["chosen_ms"] > 0 and facts["started_ms"] > 0
    ttft = {}
    for arm in ("async", "sync"):
        sim = lesson.simulation(arm)
        for _ in sim.records(max_steps=missed["step"] + 2):
            pass
        request = sim.request(rid)
        ttft[arm] = request.token_times[0] - request.arrival_time
    step_s = results[lesson.name]["sync"].report["tpot_s"]["p50"]
    assert 0.8 * step_s < ttft["async"] - ttft["sync"] < 1.2 * step_s


def test_chunked_prefill_beats_prefill_first_on_itl_p99(results):
    """The issue's example claim: chunked prefill's ITL p99 is below prefill-first's."""
    arms = results["chunked-prefill"]
    assert arms["chunked-512"].report["itl_s"]["p99"] < arms["prefill-first"].report["itl_s"]["p99"]


def test_captions_and_claims_are_filled_from_numbers(results):
    """A placeholder becomes the simulated number, formatted as asked."""
    arms = results["paged-vs-contiguous"]
    text = fill("{paged:peak_running} vs {contiguous:report.fragmentation:.0%}", arms)
    assert text == f"{arms['paged'].peak_running} vs {arms['contiguous'].report['fragmentation']:.0%}"


def test_lesson_command_prints_the_table_and_verdicts(capsys):
    """`servescope lesson admission-thrash` prints each arm and every claim as holding, exit 0."""
    assert main(["lesson", "admission-thrash"]) == 0
    out = capsys.readouterr().out
    assert "vllm-0.10" in out and "vllm-0.33" in out
    assert "FAILS" not in out and out.count("holds:") == len(LESSONS_BY_NAME["admission-thrash"].claims)


def test_lesson_command_lists_lessons_and_rejects_unknown_ones(capsys):
    """Without a name it lists the lessons; an unknown name exits 2 with an error."""
    assert main(["lesson"]) == 0
    assert "prefix-caching" in capsys.readouterr().out
    assert main(["lesson", "nope"]) == 2
    assert "servescope: error:" in capsys.readouterr().err


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_each_lesson_tells_a_story_on_the_arm_it_opens(lesson, results):
    """The first arm's story: an opening at step 0, at least three beats bound to moments of the
    run, a closing beat at the last step quoting the results; every beat stages 2-3 known panels."""
    arm = next(iter(lesson.arms))
    beats = story(lesson, arm, results[lesson.name])
    assert beats[0]["event"] == "opening" and beats[0]["step"] == 0
    assert beats[-1]["event"] == "end" and beats[-1]["step"] == results[lesson.name][arm].num_steps
    assert len([b for b in beats if b["event"] not in ("opening", "end")]) >= 3
    assert [b["step"] for b in beats] == sorted({b["step"] for b in beats})
    for beat in beats:
        assert 2 <= len(beat["stage"]) <= 3 and set(beat["stage"]) <= set(PANELS)
        assert "{" not in beat["text"], beat["text"]


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_every_beat_is_true_of_the_step_it_shows(lesson, results):
    """Replaying each arm, the record of the step a beat seeks to carries the moment its caption
    names: that request chunked, preempted, hit the cache, ... in that very step."""
    for arm in lesson.arms:
        beats = [b for b in story(lesson, arm, results[lesson.name]) if b["event"] not in ("opening", "end")]
        at = {b["step"]: b for b in beats}
        sim = lesson.simulation(arm)
        for record in sim.records(max_steps=max(at, default=0)):
            beat = at.get(record.step + 1)
            if beat:
                assert event_holds(beat["event"], beat["facts"], record_view(record)), (arm, beat["text"])


def test_a_caption_bound_to_a_moment_fails_on_another_step(results):
    """The check can fail: the first preemption's facts do not hold on the step before it."""
    lesson = LESSONS_BY_NAME["memory-pressure"]
    beat = next(b for b in story(lesson, "recompute", results[lesson.name]) if b["event"] == "first_preemption")
    records = list(lesson.simulation("recompute").records(max_steps=beat["step"]))
    assert event_holds("first_preemption", beat["facts"], record_view(records[-1]))
    shifted = {**beat["facts"], "step": beat["step"] - 1}
    assert not event_holds("first_preemption", shifted, record_view(records[-2]))
