"""The event log's lines count as the dashboard does: separators past a thousand, a noun singular
for one ("1 cached block evicted", never "1 cached blocks")."""

import dataclasses

from app.event_log import events_of
from scheduler_core.engine.step_record import ScheduledChunk
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario


def a_record(**changes):
    record = Scenario.from_dict(PRESET_SCENARIOS["default"], name="default").build().step()
    return dataclasses.replace(record, **{"admitted": [], "resumed": [], "preempted": [], "finished": [], "scheduled": [],
                                          "num_blocks_evicted": 0, **changes})


def lines(record) -> dict[str, str]:
    return {event["kind"]: event["text"] for event in events_of(record, "fcfs")}


def test_one_of_a_thing_is_singular():
    record = a_record(num_blocks_evicted=1, admitted=["req-1"], cached_tokens={"req-1": 1},
                      scheduled=[ScheduledChunk("req-1", 1, 1, "prefill")])
    assert lines(record) == {"evicted": "1 cached block evicted from the prefix cache",
                             "admitted": "req-1 admitted, 1 prompt token hit the prefix cache",
                             "chunk": "req-1 prefill chunk of 1 token (from token 1)"}


def test_counts_past_a_thousand_have_separators():
    record = a_record(num_blocks_evicted=2048, admitted=["req-1"], cached_tokens={"req-1": 4096},
                      scheduled=[ScheduledChunk("req-1", 2048, 4096, "prefill")])
    assert lines(record) == {"evicted": "2,048 cached blocks evicted from the prefix cache",
                             "admitted": "req-1 admitted, 4,096 prompt tokens hit the prefix cache",
                             "chunk": "req-1 prefill chunk of 2,048 tokens (from token 4,096)"}
