"""Every arm tells its own story: a caption shown on an arm's screen speaks of what that arm's
engine does (its allocator, its prefix cache, its queue), not of the lesson's other arms. The
closing beat quotes every arm's results by name and is left out."""

import re

import pytest

from scheduler_core.lessons.catalog import LESSONS
from scheduler_core.lessons.framework import story

pytestmark = pytest.mark.slow

# (words in a caption, what the arm on screen must have for them to be true, why)
PAGED_WORDS = re.compile(r"only the blocks its tokens fill|click 'Reserve max'|holds [\d,]+ blocks, no more")
CACHE_WORDS = re.compile(r"hash|corner mark|hit the cache|tokens from the cache")
WAITING_WORDS = re.compile(r"next waiting request")


def arm_facts(lesson, arm):
    engine = lesson.scenario(arm).engine
    return engine.kv_allocator, engine.enable_prefix_caching


@pytest.fixture(scope="module")
def stories():
    out = {}
    for lesson in LESSONS:
        results = lesson.run()
        out[lesson.name] = {arm: story(lesson, arm, results) for arm in lesson.arms}
    return out


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_every_arms_captions_describe_that_arms_screen(lesson, stories):
    wrong = []
    for arm, beats in stories[lesson.name].items():
        allocator, caching = arm_facts(lesson, arm)
        for beat in beats:
            if beat["event"] == "end":
                continue
            text, facts = beat["text"], beat["facts"]
            if allocator != "paged" and PAGED_WORDS.search(text):
                wrong.append((arm, "paged blocks on a reserving allocator", text))
            if not caching and CACHE_WORDS.search(text):
                wrong.append((arm, "the prefix cache with caching off", text))
            if facts.get("waiting", 1) == 0 and WAITING_WORDS.search(text):
                wrong.append((arm, "a waiting request while none waits", text))
            held = re.search(r"holds ([\d,]+)", text)
            if held and "table" in facts:
                if int(held.group(1).replace(",", "")) != facts["table"]:
                    wrong.append((arm, f"holds {held.group(1)} while its table has {facts['table']} blocks", text))
    assert not wrong


def test_the_contiguous_arm_says_each_request_holds_its_whole_reservation(stories):
    beats = {b["event"]: b for b in stories["paged-vs-contiguous"]["contiguous"]}
    assert beats["first_admit"]["facts"]["table"] == 128
    assert "holds 128" in beats["first_admit"]["text"]
    assert "reserves max_model_len" in beats["opening"]["text"]
