"""A past step's reasons, replayed away from the server: the checkpoint written as the worker
process needs it (`checkpoint_payload`, on the server) and the replay itself (`replay_reasons`, in
the worker, `app.export_worker`). Nothing here imports the web framework, so a worker starts fast.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import pickle
from array import array

from scheduler_core.engine.decision_trace import traced_record
from scheduler_core.engine.prompt import Prompt
from scheduler_core.sim.frozen_state import FrozenState
from scheduler_core.sim.live_source import ServedSimulation

from .checkpoints import Checkpoint
from .frames import finite, record_view

_prefix_of = operator.attrgetter("prefix")
_tail_start_of = operator.attrgetter("tail_start")
_tail_len_of = operator.attrgetter("tail_len")


def checkpoint_payload(sim, checkpoint: Checkpoint) -> bytes:
    """A checkpoint as the worker needs it, cheap to write on the event loop: the frozen bytes as
    they are, and the requests' prompts as three columns of numbers (pickling 20,000 prompt
    objects one by one takes a sixth of a second of the loop). The finished requests stay
    behind: the replay reads only requests it has itself."""
    state = checkpoint.state
    return pickle.dumps({"state": dataclasses.replace(state, frozen=None, finished_requests={}),
                         "data": state.frozen.data, "prompts": prompt_columns(state.frozen.prompts),
                         "served": isinstance(sim, ServedSimulation)},  # its requests came from clients, not the scenario
                        protocol=pickle.HIGHEST_PROTOCOL)


def prompt_columns(prompts: tuple) -> tuple:
    """Synthetic prompts as (their shared prefixes, which prefix each has, tail starts, tail
    lengths); prompts of another kind (a trace's token ids) as they are."""
    if not all(type(prompt) is Prompt for prompt in prompts):
        return prompts
    index_of: dict[int, int] = {}
    prefixes: list[array] = []

    def prefix_index(prefix: array) -> int:
        if (index := index_of.get(id(prefix))) is None:
            index = index_of[id(prefix)] = len(prefixes)
            prefixes.append(prefix)
        return index

    return (prefixes, array("q", map(prefix_index, map(_prefix_of, prompts))),
            array("q", map(_tail_start_of, prompts)), array("q", map(_tail_len_of, prompts)))


def prompts_of(columns: tuple) -> tuple:
    if len(columns) != 4 or not isinstance(columns[1], array):
        return columns
    prefixes, which, starts, lengths = columns
    return tuple(map(Prompt, map(prefixes.__getitem__, which), starts, lengths))


def replay_reasons(scenario, step: int, payload: bytes) -> str:
    """In the worker: step `step` replayed with the trace on from the checkpoint in `payload`."""
    parts = pickle.loads(payload)
    frozen = FrozenState.__new__(FrozenState)
    frozen.data, frozen.prompts = parts["data"], prompts_of(parts["prompts"])
    if parts["served"]:
        sim = ServedSimulation(scenario.engine, scenario.cost_model(), api_server=scenario.api_server())
    else:
        sim = scenario.build(keep_finished=True)
    record = traced_record(sim, dataclasses.replace(parts["state"], frozen=frozen), step)
    answer = None if record is None else {"step": step, "record": record_view(record), "decisions": record.decisions}
    return json.dumps(finite(answer), separators=(",", ":"))
