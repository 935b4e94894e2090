"""Every claim a guided scenario narrates holds on the simulation's own numbers.

The dashboard's captions and `servescope lesson NAME` print these same claims, filled in from
the same runs, so a change that breaks one fails here rather than misleading a learner.
"""

import pytest

from scheduler_core.cli import main
from scheduler_core.lesson_catalog import LESSONS, LESSONS_BY_NAME
from scheduler_core.lessons import evaluate, fill


@pytest.fixture(scope="module")
def results():
    return {lesson.name: lesson.run() for lesson in LESSONS}


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_every_claim_of_the_lesson_holds(lesson, results):
    """Each narrated claim is true of the numbers the lesson's arms produce."""
    failed = [text for holds, text in evaluate(lesson, results[lesson.name]) if not holds]
    assert not failed


def test_the_seven_lessons_of_the_issue_exist():
    """Paged vs contiguous, static vs continuous, chunked prefill, memory pressure, prefix caching,
    the 0.10 admission thrash and priority each have a lesson."""
    assert set(LESSONS_BY_NAME) == {"paged-vs-contiguous", "static-vs-continuous", "chunked-prefill", "memory-pressure",
                                    "prefix-caching", "admission-thrash", "priority"}


def test_the_thrash_lesson_reproduces_vllms_recording(results):
    """Scenario b under 0.10's admission rule gives vLLM's recorded 210 preemptions, 57 of one request."""
    thrash = results["admission-thrash"]["vllm-0.10"]
    assert (thrash.preemptions, thrash.max_preemptions_of_one_request) == (210, 57)
    assert results["admission-thrash"]["vllm-0.33"].preemptions == 1


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
