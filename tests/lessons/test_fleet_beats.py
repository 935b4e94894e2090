"""The fleet lessons' beats: each is bound to a moment that is in the fleet's own events, quotes that
moment's numbers, and points at a frame of the fleet view taken at that very instant.

Every moment is found again here from the events of a second run of the same arm (the fleet is
deterministic), by its own definition rather than by `FleetMoments`' bookkeeping."""

from __future__ import annotations

import pytest

from scheduler_core.lessons.fleet import FLEET_LESSONS, FleetArmResult
from scheduler_core.lessons.fleet_moments import MOMENT_KINDS, FleetMoments
from scheduler_core.lessons.fleet_story import FleetBeat
from scheduler_core.lessons.fleet_timeline import fleet_timeline

# Almost every test reads `runs`, every fleet lesson's arms run to the end.
pytestmark = pytest.mark.slow

ARMS = [(lesson, arm) for lesson in FLEET_LESSONS for arm in lesson.arms]
EXPECTED = {  # the story each arm tells, in time order
    ("routing-with-prefix-caches", "round-robin"): ["opening", "first_route", "cold_follower", "first_hit", "first_eviction",
                                                    "all_prompts", "worst_imbalance", "end"],
    ("routing-with-prefix-caches", "prefix-aware"): ["opening", "first_route", "first_hit", "all_prompts", "worst_imbalance",
                                                     "first_eviction", "end"],
    ("disaggregation", "colocated"): ["opening", "first_route", "first_token", "mixed_step", "slowest_decode_step", "end"],
    ("disaggregation", "split"): ["opening", "first_route", "first_transfer", "first_token", "slowest_decode_step", "end"],
}


@pytest.fixture(scope="module")
def runs():
    """Each arm's timeline with its story, and every event of a second run of it."""
    cache = {}

    def run(lesson, arm):
        if (lesson.name, arm) not in cache:
            fleet = lesson.scenario(arm).build()
            cache[lesson.name, arm] = lesson.timeline(arm), list(fleet.events()), fleet
        return cache[lesson.name, arm]
    return run


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def first_block(spec) -> tuple:
    return tuple(spec.prompt_token_ids[:16])


def found_in_events(kind: str, facts: dict, events: list, fleet) -> bool:
    """Whether the moment, as the caption quotes it, is in the fleet's events at its instant."""
    t = facts["t"]
    now = [e for e in events if e.time_s == t]
    before = [e for e in events if e.time_s < t]
    routes = {e.request_id: e for e in events if e.kind == "route"}
    roles = {r.name: r.role for r in fleet.replicas}
    steps = [e for e in now if e.kind == "step" and e.replica == facts.get("replica")]
    route = next((e for e in now if e.kind == "route" and e.request_id == facts.get("request")), None)
    if kind == "first_route":
        return route is events[0] and route.replica == facts["replica"] and route.detail == facts["reason"] \
            and len(route.spec.prompt_token_ids) == facts["prompt"]
    if kind == "cold_follower":
        key = first_block(route.spec)
        sent = {e.replica for e in before if e.kind == "route" and first_block(e.spec) == key}
        return route.replica == facts["replica"] and facts["replica"] not in sent and facts["warm"] in sent \
            and routes[facts["first"]].replica == facts["warm"] and first_block(routes[facts["first"]].spec) == key
    if kind == "all_prompts":
        seen = [first_block(e.spec) for e in before if e.kind == "route"]
        every = [first_block(e.spec) for e in routes.values()]
        shared = {k for k in every if every.count(k) > 1}  # the workload's system prompts
        on = {name: {first_block(e.spec) for e in before + [route] if e.kind == "route" and e.replica == name}
              for name in roles}
        return first_block(route.spec) not in seen and len(shared) == facts["count"] \
            and shared <= set(seen) | {first_block(route.spec)} \
            and facts["per_replica"] == ", ".join(f"{name} {len(keys & shared)}" for name, keys in on.items()) \
            and facts["placements"] == sum(len(keys & shared) for keys in on.values())
    if kind == "worst_imbalance":
        return route is not None and route.replica == facts["replica"] and route.detail == facts["reason"]
    if kind == "first_transfer":
        transfer = next(e for e in now if e.kind == "transfer" and e.request_id == facts["request"])
        chunks = [c.num_tokens for e in before if e.kind == "step" and roles[e.replica] == "prefill"
                  for c in e.record.scheduled if c.request_id == facts["request"]]
        return not any(e.kind == "transfer" for e in before) and transfer.replica == facts["decode"] \
            and transfer.transfer.num_blocks == facts["blocks"] and close(transfer.transfer.num_bytes / 1e6, facts["mb"]) \
            and close(transfer.transfer.seconds * 1e3, facts["transfer_ms"]) \
            and close((t - routes[facts["request"]].spec.arrival_time) * 1e3, facts["prefill_ms"]) \
            and facts["chunks"] == " + ".join(f"{n:,}" for n in chunks)
    if not steps:
        return kind == "end" and close(t, max(e.record.clock_s_after for e in events if e.kind == "step"))
    record = steps[0].record
    chunk = {c.request_id: c for c in record.scheduled}
    prefill = [c for c in record.scheduled if c.kind == "prefill"]
    decodes = sum(1 for c in record.scheduled if c.kind == "decode")
    if kind == "first_hit":
        earlier = any(e.kind == "step" and roles[e.replica] != "decode" and any(e.record.cached_tokens.values()) for e in before)
        c = chunk[facts["request"]]
        return not earlier and record.cached_tokens[facts["request"]] == facts["hit"] == c.num_computed_before \
            and facts["hit"] + facts["computed"] == facts["prompt"] == len(routes[facts["request"]].spec.prompt_token_ids) \
            and routes[facts["by"]].replica == facts["replica"] \
            and first_block(routes[facts["by"]].spec) == first_block(routes[facts["request"]].spec)
    if kind == "first_eviction":
        return record.num_blocks_evicted == facts["blocks"] and f"{record.kv_usage:.4f}" == f"{facts['kv'] / 100:.4f}" \
            and not any(e.kind == "step" and e.record.num_blocks_evicted for e in before)
    if kind == "first_token":
        arrival = routes[facts["request"]].spec.arrival_time
        holds = facts["request"] in record.sampled and close((record.clock_s_after - arrival) * 1e3, facts["ttft_ms"])
        if roles[facts["replica"]] == "decode":
            landed = next(e for e in events if e.kind == "landed" and e.request_id == facts["request"])
            transfer = next(e for e in events if e.kind == "transfer" and e.request_id == facts["request"])
            parts = facts["prefill_ms"] + facts["transfer_ms"] + facts["wait_ms"] + facts["decode_ms"]
            holds = holds and close((t - landed.time_s) * 1e3, facts["wait_ms"]) and close(parts, facts["ttft_ms"]) \
                and close((landed.time_s - transfer.time_s) * 1e3, facts["transfer_ms"])
        return holds
    if kind == "mixed_step":
        return chunk[facts["request"]].kind == "prefill" and chunk[facts["request"]].num_tokens == facts["tokens"] \
            and decodes == facts["decodes"] and close(record.step_s * 1e3, facts["step_ms"])
    if kind == "slowest_decode_step":
        decoding = [e.record for e in events if e.kind == "step" and roles[e.replica] != "prefill"
                    and any(c.kind == "decode" for c in e.record.scheduled)]
        largest = max(c.num_tokens for r in decoding for c in r.scheduled if c.kind == "prefill")
        return decodes == facts["decodes"] and close(record.step_s * 1e3, facts["step_ms"]) \
            and record.step_s == max(r.step_s for r in decoding) and facts["largest_chunk_in_run"] == largest \
            and sum(c.num_tokens for c in prefill) == facts["prompt_tokens"]
    return False


@pytest.mark.parametrize("lesson, arm", ARMS, ids=[f"{lesson.name}:{arm}" for lesson, arm in ARMS])
def test_every_beat_is_a_moment_of_the_fleets_events_with_its_numbers(runs, lesson, arm):
    timeline, events, fleet = runs(lesson, arm)
    beats = timeline["lesson"]["beats"]
    assert [b["event"] for b in beats] == EXPECTED[lesson.name, arm]
    for beat in beats:
        if beat["event"] != "opening":
            assert found_in_events(beat["event"], beat["facts"], events, fleet), beat["text"]
        assert "{" not in beat["text"] and "}" not in beat["text"]
        if beat["event"] not in ("opening", "end"):
            assert beat["text"].startswith(f"{beat['t']:.3f} s: "), beat["text"]  # the instant the view shows


@pytest.mark.parametrize("lesson, arm", ARMS, ids=[f"{lesson.name}:{arm}" for lesson, arm in ARMS])
def test_each_beat_points_at_a_frame_of_its_very_instant(runs, lesson, arm):
    timeline, _, _ = runs(lesson, arm)
    frames, beats = timeline["frames"], timeline["lesson"]["beats"]
    assert [f["t"] for f in frames] == sorted(f["t"] for f in frames)
    assert [b["frame"] for b in beats] == sorted(b["frame"] for b in beats)
    assert beats[0]["frame"] == 0 and beats[-1]["frame"] == len(frames) - 1
    for beat in beats:
        assert frames[beat["frame"]]["t"] == beat["t"], beat["title"]
    # A frame shows the fleet after everything up to its time: the opening, before the first arrival, shows no request.
    assert all(r["running"] + r["waiting"] == 0 for r in frames[0]["replicas"])
    names = [r["name"] for r in timeline["replicas"]]
    for beat in beats:
        facts, shown = beat["facts"], dict(zip(names, frames[beat["frame"]]["replicas"]))
        if beat["event"] == "worst_imbalance":  # the cards' running + waiting are the counts quoted
            assert shown[facts["replica"]]["running"] + shown[facts["replica"]]["waiting"] == facts["busiest_n"]
            assert shown[facts["idlest"]]["running"] + shown[facts["idlest"]]["waiting"] == facts["idlest_n"]
        if beat["event"] == "first_eviction":
            assert f"{100 * shown[facts['replica']]['kv']:.1f}%" in beat["text"]  # as the card shows it
            if arm == "round-robin":  # "its grid has no empty cell left"
                assert "." not in shown[facts["replica"]]["grid"]


def test_what_the_captions_say_beyond_the_numbers_holds(runs):
    routing = {arm: runs(FLEET_LESSONS[0], arm)[0]["lesson"]["beats"] for arm in FLEET_LESSONS[0].arms}
    facts = {arm: {b["event"]: b["facts"] for b in beats} for arm, beats in routing.items()}
    # "Every prompt, once": prefix-aware routing placed each system prompt on one replica.
    assert facts["prefix-aware"]["all_prompts"]["placements"] == facts["prefix-aware"]["all_prompts"]["count"] == 16
    assert facts["round-robin"]["all_prompts"]["placements"] > 16
    # "Only now": round-robin's first hit and prefix-aware's first eviction come later than the other arm's.
    assert facts["round-robin"]["first_hit"]["t"] > facts["prefix-aware"]["first_hit"]["t"]
    assert facts["prefix-aware"]["first_eviction"]["t"] > facts["round-robin"]["first_eviction"]["t"]
    split = {b["event"]: b["facts"] for b in runs(FLEET_LESSONS[1], "split")[0]["lesson"]["beats"]}
    # "at most 1 prompt token per request" in the decode pool's steps.
    assert split["slowest_decode_step"]["largest_chunk_in_run"] == 1


def test_the_closing_beat_quotes_every_arms_report(runs):
    lesson = FLEET_LESSONS[1]
    timelines = {arm: runs(lesson, arm)[0] for arm in lesson.arms}
    end = timelines["split"]["lesson"]["beats"][-1]["text"]
    assert end == timelines["colocated"]["lesson"]["beats"][-1]["text"]
    for arm, timeline in timelines.items():
        report = FleetArmResult(arm, timeline["report"]).report
        assert f"{report['ttft_s']['p50']:.4f} s" in end and f"{report['itl_s']['p99']:.4f} s" in end


def test_pinned_frames_survive_when_the_frames_are_thinned():
    lesson = FLEET_LESSONS[0]
    fleet = lesson.scenario("prefix-aware").build()
    moments = FleetMoments(fleet)
    frames = fleet_timeline(fleet, max_frames=12, moments=moments)["frames"]
    found = moments.finish()
    pinned = {f["moment"]: f["t"] for f in frames if "moment" in f}
    assert pinned == {kind: found[kind]["t"] for kind in found if kind != "end"}
    assert len(frames) - len(pinned) <= 12 + 1 and [f["t"] for f in frames] == sorted(f["t"] for f in frames)


def test_a_beat_names_a_known_moment():
    assert set(MOMENT_KINDS) >= {b.event for lesson in FLEET_LESSONS for b in lesson.beats} - {"opening", "end"}
    with pytest.raises(ValueError, match="unknown moment"):
        FleetBeat("first_preemption", "x", "y")


@pytest.mark.parametrize("lesson, arm", ARMS, ids=[f"{lesson.name}:{arm}" for lesson, arm in ARMS])
def test_the_fleet_view_gets_what_the_lesson_proves_checked_on_its_runs(runs, lesson, arm):
    """The timeline carries the slide "What it proves" opens: every claim filled in and holding, and
    the table of every arm, as the single-engine lessons' API gives them."""
    timeline, _, _ = runs(lesson, arm)
    slide = timeline["lesson"]
    assert slide["summary"] == lesson.summary
    assert [claim["holds"] for claim in slide["claims"]] == [True] * len(lesson.claims)
    assert all("{" not in claim["text"] for claim in slide["claims"])
    assert slide["table"]["arms"] == list(lesson.arms)
    assert [row["label"] for row in slide["table"]["rows"]] == [label for label, _, _ in lesson.columns]

