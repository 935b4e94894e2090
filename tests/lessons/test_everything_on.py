"""The "Everything on at once" lesson: EAGLE with prefix caching, release by release, on 128-token
blocks. Its claims, its numbers, and the moment its story stops at: the last shared block of a hit
given up and allocated fresh, as the step's record and decision trace show it."""

import pytest

from app.frames import record_view
from scheduler_core.cli.main import main
from scheduler_core.engine.eagle_hit_rule import RULE_EAGLE_DROP, RULE_EAGLE_DROP_CONNECTOR
from scheduler_core.lessons.catalog import LESSONS_BY_NAME
from scheduler_core.lessons.events import event_holds
from scheduler_core.lessons.framework import evaluate, story

# Every arm runs to the end (a few seconds).
pytestmark = pytest.mark.slow

LESSON = LESSONS_BY_NAME["everything-on"]


@pytest.fixture(scope="module")
def results():
    return LESSON.run()


def test_every_claim_holds(results):
    assert all(holds for holds, _ in evaluate(LESSON, results))


def test_the_arms_numbers(results):
    """Per arm: the prefix hit rate, the admissions whose hit lost a block (every request but the
    first of each of the four prompts, under the drop), and the median TTFT the drop costs."""
    hit = {arm: round(r.report["prefix_cache_hit_rate"], 3) for arm, r in results.items()}
    assert hit == {"cache-only": 0.880, "eagle-0.18": 0.754, "eagle-0.30-opt-out": 0.880, "eagle-0.33": 0.880,
                   "eagle-0.33-connector": 0.754, "eagle-0.18-small-blocks": 0.864}
    dropped = {arm: r.dropped_hit_blocks for arm, r in results.items()}
    assert dropped == {"cache-only": 0, "eagle-0.18": 196, "eagle-0.30-opt-out": 0, "eagle-0.33": 0,
                       "eagle-0.33-connector": 196, "eagle-0.18-small-blocks": 196}
    ttft = {arm: r.report["ttft_s"]["p50"] for arm, r in results.items()}
    assert ttft["eagle-0.18"] == ttft["eagle-0.33-connector"] > 1.2 * ttft["eagle-0.33"]


@pytest.mark.parametrize(("arm", "rule"), [("eagle-0.18", RULE_EAGLE_DROP),
                                           ("eagle-0.33-connector", RULE_EAGLE_DROP_CONNECTOR)])
def test_the_dropped_block_is_allocated_fresh_in_the_step_told(results, arm, rule):
    """At the beat, the request is admitted with one block fewer than it matched; the dropped block
    stays cached (another request's, not in this one's table) and a new block sits at its place in
    the table; the decision trace names the block and the rule, as "Why?" reads it."""
    beat = next(b for b in story(LESSON, arm, results) if b["event"] == "first_hit_block_dropped")
    facts = beat["facts"]
    assert (facts["matched"], facts["kept"], facts["recomputed"], facts["rule"]) == (7, 6, 128, rule)
    sim = LESSON.simulation(arm)
    sim.scheduler.enable_decision_trace()
    record = list(sim.records(max_steps=beat["step"]))[-1]
    view = record_view(record)
    assert event_holds("first_hit_block_dropped", facts, view)
    table = sim.block_table(facts["request"])
    assert table[facts["kept"]] == facts["fresh"] != facts["block"] and facts["block"] not in table
    assert facts["fresh"] in record.decisions["allocated"][facts["request"]]
    assert record.decisions["dropped_hit_blocks"] == {facts["request"]: {"block": facts["block"], "rule": rule}}
    assert not event_holds("first_hit_block_dropped", facts, view | {"step": view["step"] + 1})


@pytest.mark.parametrize("arm", ["eagle-0.30-opt-out", "eagle-0.33"])
def test_the_opt_out_and_lookahead_hashes_tell_a_whole_hit(results, arm):
    """With disable_eagle_block_drop on 0.30.0, or on 0.33.0 without a connector, nothing is
    dropped: the story's hit is all 7 blocks."""
    beats = {b["event"]: b for b in story(LESSON, arm, results)}
    assert "first_hit_block_dropped" not in beats and beats["first_hit"]["facts"]["blocks"] == 7


def test_the_lesson_command_prints_the_arms_and_claims(capsys):
    assert main(["lesson", "everything-on"]) == 0
    out = capsys.readouterr().out
    assert "hits cut by a block" in out and out.count("holds:") == len(LESSON.claims) and "FAILS" not in out
