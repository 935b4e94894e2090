"""A hybrid engine's KV cache groups in the frames, on models whose layers make them (gpt-oss's two, Gemma 3's
seven, Llama 4's four) with a small pool and short prompts: the groups named in vLLM's words, each table per
group with its null slots, each block's group, deltas that rebuild the snapshot, and the decision trace saying
which blocks a sliding window gave back; a single-group engine's frames as before."""

import copy

import pytest

from app import wire
from app.kv_group_frames import NO_GROUP
from app.session import Session
from app.settings import Settings
from scheduler_core.engine.decision_trace import traced_record
from scheduler_core.scenario.scenario import Scenario, with_vllm_defaults

from .test_protocol import TIGHT

# gpt-oss's layers make two groups, in vLLM's order: sliding window 128 (group 0), then full attention (group 1).
HYBRID = "gpt-oss-20b"
SLIDING, FULL = 0, 1


def session(model: str | None = None) -> Session:
    """TIGHT's small pool and short prompts on `model` (None: TIGHT's single-group llama-3.1-8b)."""
    data = copy.deepcopy(TIGHT)
    if model:
        data["model"] = model
    return Session("s", Scenario.from_dict(with_vllm_defaults(data)), Settings())


def per_group(frame: dict, num_groups: int) -> dict[str, list[list[int]]]:
    """request id -> its table in each group, from a frame's flat arrays."""
    tables, at, lengths = {}, 0, iter(frame["table_lengths"])
    for rid in frame["table_ids"]:
        tables[rid] = []
        for _ in range(num_groups):
            length = next(lengths)
            tables[rid].append(frame["table_blocks"][at:at + length])
            at += length
    return tables


def test_a_single_group_engine_sends_no_groups():
    live = session()
    live.advance(10)
    frame = wire.decode(live.snapshot_frame())
    assert "kv_groups" not in frame and "block_group" not in frame
    assert len(frame["table_lengths"]) == len(frame["table_ids"])
    records, _ = live.advance(2)
    assert "block_group" not in wire.decode(live.delta_frame(records).encode())


@pytest.mark.parametrize("model, labels", [
    ("gpt-oss-20b", ["sliding window 128", "full attention"]),
    ("gemma-3-27b", ["sliding window 1024"] * 6 + ["full attention"]),
    ("llama-4-scout", ["chunked local attention 8192"] * 3 + ["full attention"]),
])
def test_the_snapshot_names_the_groups_as_vllm_does(model, labels):
    frame = wire.decode(session(model).snapshot_frame())
    assert [group["label"] for group in frame["kv_groups"]] == labels
    assert frame["kv_groups"][0]["kind"] != "full_attention" and frame["kv_groups"][-1]["kind"] == "full_attention"


def test_gpt_oss_groups_carry_kind_and_window():
    frame = wire.decode(session(HYBRID).snapshot_frame())
    assert frame["kv_groups"][SLIDING] == {"kind": "sliding_window", "window": 128, "label": "sliding window 128"}
    assert frame["kv_groups"][FULL] == {"kind": "full_attention", "window": 0, "label": "full attention"}


def test_the_snapshot_holds_each_table_per_group_with_its_null_slots():
    live = session(HYBRID)
    live.advance(20)
    frame = wire.decode(live.snapshot_frame())
    kv = live.sim.kv_view()
    tables = per_group(frame, 2)
    assert tables and tables == {rid: [list(t) for t in kv.group_block_tables(rid)] for rid in tables}
    # Tokens past the 64-token window left the sliding-window table: the null block holds their place.
    assert any(0 in window for window, _ in tables.values())
    assert all(0 not in full for _, full in tables.values())


def test_gemma_3s_seven_groups_each_hold_a_table_and_name_their_blocks():
    live = session("gemma-3-27b")
    live.advance(10)
    frame = wire.decode(live.snapshot_frame())
    kv = live.sim.kv_view()
    tables = per_group(frame, 7)
    assert tables and tables == {rid: [list(t) for t in kv.group_block_tables(rid)] for rid in tables}
    assert set(frame["block_group"]) - {NO_GROUP} == set(range(7))


def test_each_block_names_the_group_whose_table_holds_it():
    live = session(HYBRID)
    live.advance(20)
    frame = wire.decode(live.snapshot_frame())
    expected = [NO_GROUP] * frame["num_blocks"]
    for tables in per_group(frame, 2).values():
        for group_id, table in enumerate(tables):
            for block in table:
                if block:
                    expected[block] = group_id
    assert frame["block_group"] == expected
    assert {0, 1} <= set(frame["block_group"])


def test_deltas_rebuild_the_next_snapshots_tables_and_groups():
    live = session(HYBRID)
    start = wire.decode(live.snapshot_frame())
    tables, groups = per_group(start, 2), list(start["block_group"])
    for _ in range(40):
        records, _ = live.advance(3)
        delta = wire.decode(live.delta_frame(records).encode())
        for rid, table in per_group(delta, 2).items():
            if any(table):
                tables[rid] = table
            else:
                tables.pop(rid, None)
        for block, group_id in zip(delta["block_ids"], delta.get("block_group", ())):
            groups[block] = group_id
    end = wire.decode(live.snapshot_frame())
    assert tables == per_group(end, 2)
    assert groups == end["block_group"]


@pytest.mark.parametrize("prefix_caching", [True, False])
def test_the_trace_says_which_positions_left_the_window_and_where_they_went(prefix_caching):
    live = session(HYBRID)
    if not prefix_caching:
        data = live.scenario.to_dict()
        data["engine"]["enable_prefix_caching"] = False
        live = Session("s", Scenario.from_dict(data), Settings())
    for _ in range(30):
        step = live.sim.step_index
        record = traced_record(live.sim, live.sim.snapshot(), step)
        live.advance(1)  # the same step, live: its tables are those the trace speaks of
        entries = record.decisions.get("left_window", [])
        for entry in entries:
            assert entry["group"] == SLIDING and entry["blocks"] >= 1
            went = entry["to_head"] + entry["to_tail_cached"] + entry["to_tail"] + entry["still_shared"]
            assert len(went) == entry["blocks"]
            # Full blocks carry a cached prefix when caching is on: they stay findable at the queue's
            # tail; without caching they go to its head, reused first.
            assert bool(entry["to_tail_cached"]) == prefix_caching and bool(entry["to_head"]) != prefix_caching
            window = live.sim.kv_view().group_block_tables(entry["request"])[SLIDING]
            if window:  # still running: its window table's null slots end where the blocks given back ended
                first, end = entry["first_index"], entry["first_index"] + entry["blocks"]
                assert set(window[first:end]) == {0} and (end == len(window) or window[end] != 0)
        if entries:
            return
    pytest.fail("no blocks left the window in 30 steps")


def test_a_single_group_trace_has_no_window_entries():
    live = session()
    state = live.sim.snapshot()
    assert all("left_window" not in traced_record(live.sim, state, step).decisions for step in range(12))


@pytest.mark.parametrize("async_scheduling", [True, False])
def test_the_history_counts_the_blocks_each_groups_table_really_held(async_scheduling):
    data = copy.deepcopy(TIGHT)
    data["model"], data["engine"]["async_scheduling"] = HYBRID, async_scheduling
    live = Session("s", Scenario.from_dict(with_vllm_defaults(data)), Settings())
    held: dict[str, dict[int, int]] = {}  # request -> step -> blocks in its tables after that step
    for _ in range(60):
        records, _ = live.advance(1)
        kv = live.sim.kv_view()
        for chunk in records[-1].scheduled:
            tables = kv.group_block_tables(chunk.request_id)
            if tables and any(tables):
                held.setdefault(chunk.request_id, {})[records[-1].step] = sum(len(t) - t.count(0) for t in tables)
    windowed = 0
    for rid, steps in held.items():
        rows = {row[0]: row[3] for row in live.request_detail(rid, True)["history"]}
        assert {step: rows[step] for step in steps} == steps
        windowed += any(0 in table for table in live.sim.kv_view().group_block_tables(rid))
    assert windowed  # some tables gave blocks back: the count is not every token's
