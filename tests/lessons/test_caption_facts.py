"""The caption checker (caption_facts.py): what it reads out of a caption, what it finds wrong on a
screen, and that it never passes a request id or a number it has no rule for."""

from __future__ import annotations

import copy

import pytest

from tests.lessons.caption_facts import Fact, mismatches, named, read_caption

PREEMPTION = ("3/6 Preemption. Step 20: blocks ran out; req-00017, the newest running request, is preempted: "
              "its 38 blocks go to CPU memory.")
ADMIT = ("2/5 The first blocks. Step 1: req-00000 is admitted with a 326-token prompt and holds 21 blocks, no more; "
         "reserving max_model_len would set 2,048 tokens aside for it.")


def facts(text: str, closing: bool = False) -> set[tuple]:
    return {(f.kind, f.request, f.value) for f in read_caption(text, closing).facts}


def screen(**changes) -> dict:
    """Step 20 of a swap arm: req-00017 preempted and swapped out, req-00003 running with 5 blocks."""
    shown = {
        "step": 20, "beat": 2, "beats": 6, "beat_title": "Preemption", "beat_step": 20,
        "record": {"step": 19, "scheduled": [["req-00003", 1, 700, "decode"]], "admitted": [], "resumed": [],
                   "preempted": ["req-00017"], "finished": [], "cached_tokens": {}, "swapped_out": [["req-00017", 38]],
                   "blocks_freed": 0, "blocks_evicted": 0, "running": 18, "waiting": 2, "kv_usage": 0.9403,
                   "scheduled_spec_decode_tokens": {}, "num_accepted_tokens": {}},
        "session": {"num_requests": 80, "num_gpu_blocks": 700, "block_size": 16, "max_num_batched_tokens": 8192,
                    "max_num_seqs": 256, "max_model_len": 2048},
        "requests": {"req-00017": {"prompt": 600, "computed": 0, "output": 5},
                     "req-00003": {"prompt": 600, "computed": 701, "output": 101}},
        "tables": {"req-00003": [4, 5, 6, 7, 8]}, "group_tables": {}, "cached": {"4": 0, "5": 0, "6": 0, "7": 0, "8": 0},
        "used_blocks": 658, "lanes": {"running": ["req-00003"], "waiting": []}, "lane_counts": {"running": 18},
        "lanes_visible": {"running": True, "waiting": True, "preempted": False},
        "panels_visible": {"KV grid": True, "KV gauge": True}, "buttons_visible": ["Reserve max"],
    }
    for path, value in changes.items():
        *keys, last = path.split("__")
        place = shown
        for key in keys:
            place = place[key]
        place[last] = value
    return shown


def test_it_reads_the_beat_the_step_and_what_happened_to_the_request():
    assert facts(PREEMPTION) == {("beat", None, 3), ("beats", None, 6), ("title", None, "Preemption"),
                                 ("step", None, 20), ("preempted", "req-00017", None), ("swapped_out", "req-00017", 38)}


def test_numbers_may_carry_thousands_separators():
    with_commas = facts("Step 4,860: nobody waits any more; 8 requests run to the end.")
    assert with_commas == facts("Step 4860: nobody waits any more; 8 requests run to the end.")
    assert ("step", None, 4860) in with_commas and ("running", None, 8) in with_commas


def test_it_reads_a_request_s_blocks_and_the_configuration():
    assert {("prompt", "req-00000", 326), ("table", "req-00000", 21), ("admitted", "req-00000", None),
            ("max_model_len", None, 2048)} <= facts(ADMIT)


def test_it_reads_a_recorded_trace_s_ids_and_the_lanes_named():
    read = facts("1/5 Tight memory. vLLM's recorded scenario b: 160 blocks, chunked prefill at 512 tokens. Watch the "
                 "KV gauge and the preempted lane.")
    assert {("num_gpu_blocks", None, 160), ("budget", None, 512), ("panel", None, "KV gauge"),
            ("lane", None, "preempted")} <= read
    assert ("preempted", "r02", None) in facts("Step 8: r02 is preempted a second time; each time its work is thrown away.")


def test_now_at_step_is_read_with_or_without_separators():
    assert ("now", None, 2301) in facts("Step 2254: the end. (now at step 2,301)")
    assert ("now", None, 2301) in facts("Step 2254: the end. (now at step 2301)")


def test_a_request_or_a_number_without_a_rule_is_unread_not_skipped():
    caption = read_caption("Step 9: req-00042 is evicted from 12 blocks by a new rule.")
    assert caption.unread == ["req-00042", "12 blocks"]


def test_a_phrasing_it_cannot_verify_is_named_and_counts_as_read():
    caption = read_caption("Step 2: req-00000's first decode was put in this batch 9.7 ms before its prompt's step came back")
    assert caption.unverified == ["9.7 ms"] and caption.unread == []
    assert Fact("decode", "req-00000", None, "req-00000's first decode was put in this batch") in caption.facts


def test_the_closing_beat_s_results_are_named_unverified():
    caption = read_caption("5/5 Result. Paged: 1.3% of allocated memory unused, 95 requests at once.", closing=True)
    assert caption.unread == [] and "1.3%" in caption.unverified


def test_a_screen_that_shows_the_claims_has_no_mismatch():
    assert mismatches(read_caption(PREEMPTION), screen()) == []


@pytest.mark.parametrize("change, wrong", [
    ({"record__preempted": []}, "'req-00017, the newest running request, is preempted' (preempted)"),
    ({"record__swapped_out": [["req-00017", 37]]}, "(swapped_out): the screen shows 37"),
    ({"step": 21, "record__step": 20}, "'Step 20:' (step): the screen shows 21"),
    ({"record__step": 18}, "the record shown is iteration 18, not step 20's"),
    ({"beat": 3}, "'3/6 ' (beat): the screen shows 4"),
])
def test_each_claim_the_screen_contradicts_is_a_line(change, wrong):
    found = mismatches(read_caption(PREEMPTION), screen(**change))
    assert len(found) == 1 and wrong in found[0], found


def test_a_lane_or_a_panel_the_caption_points_at_must_be_on_screen():
    caption = read_caption("1/6 Tight memory. Watch the KV gauge and the preempted lane.")
    opening = screen(record=None, step=0, beat=0, beat_title="Tight memory", beat_step=0)
    assert mismatches(caption, opening) == [
        "'the preempted lane' (lane): the screen shows 'no such lane on screen'"]


def test_block_counts_are_checked_against_the_kv_panel_s_tables():
    caption = read_caption("Step 20: req-00003 stays in Running with its 5 blocks.")
    assert mismatches(caption, screen()) == []
    shown = screen()
    shown["tables"]["req-00003"] = [4, 5, 6, 7]
    assert mismatches(caption, shown) == ["'req-00003 stays in Running with its 5 blocks' (table): the screen shows 4"]
    assert named(caption) == (["req-00003"], [])


def test_away_from_the_beat_only_now_at_step_and_the_configuration_count():
    away = screen(step=23)
    caption = read_caption(PREEMPTION + " (now at step 23)")
    assert mismatches(caption, away, at_beat=False) == []
    assert mismatches(caption, screen(step=24), at_beat=False) == ["'(now at step 23)' (now): the screen shows 24"]
    assert mismatches(read_caption(PREEMPTION), copy.deepcopy(away), at_beat=False) == [
        "no '(now at step 23)' away from the beat"]


def test_an_eviction_caption_is_read_in_the_singular_and_the_plural():
    for text, count in (("the cache evicts 1 cached block", 1), ("the cache evicts 12 cached blocks", 12),
                        ("3 cached blocks are evicted", 3)):
        assert [(f.kind, f.value) for f in read_caption(text).facts] == [("evicted", count)]
