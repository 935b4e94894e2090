"""Captions and claims write numbers as the dashboard does: every count of four digits or more
with thousands separators ("Step 4,860", "1,024 conversations"), and a count's noun singular for
one ("1 cached block"). Names that hold digits are not counts: models ("Llama-3.1-8B"), GPUs
("H100"), versions ("v0.18.0"), arm names ("chunked-2048"), pull requests and issues ("#23914")."""

from __future__ import annotations

import re

import pytest

from scheduler_core.lessons.catalog import LESSONS
from scheduler_core.lessons.check_yourself import check_yourself
from scheduler_core.lessons.figures import FIGURES
from scheduler_core.lessons.fleet import FLEET_LESSONS
from scheduler_core.lessons.framework import claims_slide, evaluate, story
from scheduler_core.utils import plural

# Four digits or more, not inside a name: no letter, digit, dot, comma, hyphen, slash or '#' before,
# no letter or digit after.
BARE_NUMBER = re.compile(r"(?<![\w.,/#-])\d{4,}(?!\w)")
NAMES_WITH_DIGITS = ["Llama-3.1-8B", "H100", "v0.18.0", "vLLM 0.10", "chunked-2048", "PR #23914", "0.0116 s"]


def bare_numbers(texts: list[str]) -> list[str]:
    return [text for text in texts if BARE_NUMBER.search(text)]


def test_the_scan_tells_a_bare_count_from_a_name_with_digits():
    assert bare_numbers(["Step 4860: nobody waits", "1024 conversations", "in 7818 steps"]) == [
        "Step 4860: nobody waits", "1024 conversations", "in 7818 steps"]
    assert bare_numbers(["Step 4,860", "1,024 conversations", *NAMES_WITH_DIGITS]) == []


def test_a_caption_writes_counts_with_separators_and_a_noun_singular_for_one():
    assert FIGURES.format("Step {step}: {n} requests, {kv:.1f}%, {ok}", step=4860, n=1024, kv=98.46, ok=True) == \
        "Step 4,860: 1,024 requests, 98.5%, True"
    assert FIGURES.format("{blocks:plural:cached block} evicted", blocks=1) == "1 cached block evicted"
    assert FIGURES.format("{blocks:plural:cached block} evicted", blocks=2048) == "2,048 cached blocks evicted"
    assert FIGURES.format("{n:plural:copy|copies}", n=3) == "3 copies" and plural(1, "copy", "copies") == "1 copy"


def lesson_texts(lesson) -> list[str]:
    results = lesson.run()
    texts = [lesson.title, lesson.summary, *(text for _, text in evaluate(lesson, results))]
    stories = [story(lesson, arm, results) for arm in lesson.arms]
    texts += [beat["text"] for beats in stories for beat in beats]
    texts += [question["text"] for beats in stories for question in check_yourself(beats)]
    return texts + [value for row in claims_slide(lesson, results)["table"]["rows"] for value in row["values"]]


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_no_beat_claim_table_or_question_of_a_lesson_has_a_bare_count(lesson):
    assert bare_numbers(lesson_texts(lesson)) == []


@pytest.mark.slow
@pytest.mark.parametrize("lesson", FLEET_LESSONS, ids=[lesson.name for lesson in FLEET_LESSONS])
def test_no_beat_claim_table_or_question_of_a_fleet_lesson_has_a_bare_count(lesson):
    texts = [lesson.title, lesson.summary]
    for arm in lesson.arms:
        shown = lesson.timeline(arm)["lesson"]
        texts += [beat["text"] for beat in shown["beats"]] + [claim["text"] for claim in shown["claims"]]
        texts += [value for row in shown["table"]["rows"] for value in row["values"]]
        texts += [question["text"] for question in shown.get("questions", [])]
    assert bare_numbers(texts) == []
