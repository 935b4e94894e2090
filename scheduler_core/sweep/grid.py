"""A sweep: a scenario plus a `[sweep]` table of dotted scenario fields, each with a list of values.

    [sweep]
    "engine.max_num_seqs" = [32, 128]
    "workload.arrival_rate" = [10, 40]
    "cluster.replicas" = [1, 2, 4]

The grid is the product of the lists, in the order the keys are written (the last key varies
fastest); each point is an independent run of the scenario with those fields set.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from dataclasses import dataclass

from ..cluster.scenario import ClusterScenario
from ..errors import ConfigError
from ..scenario.scenario import Scenario, with_vllm_defaults

# Beyond this many points a sweep is a mistake more often than a plan.
MAX_POINTS = 10_000


def set_dotted(data: dict, key: str, value) -> None:
    """data["a"]["b"] = value for key "a.b", making the tables on the way."""
    *path, last = key.split(".")
    for part in path:
        table = data.setdefault(part, {})
        if not isinstance(table, dict):
            raise ConfigError(f"sweep.{key}", f"{part!r} is not a table")
        data = table
    data[last] = value


def build_run(data: dict, name: str) -> Scenario | ClusterScenario:
    """A point's scenario: a fleet if it has a [cluster] table or several data-parallel ranks, else
    one engine. What the point leaves open takes vLLM's default for its own GPU, as `run` does."""
    data = with_vllm_defaults(copy.deepcopy(data))
    if "cluster" in data or data.get("data_parallel_size", 1) != 1:
        return ClusterScenario.from_dict(data, name)
    return Scenario.from_dict(data, name)


def num_gpus(run: Scenario | ClusterScenario) -> int:
    return run.num_gpus if isinstance(run, ClusterScenario) else run.tensor_parallel_size


@dataclass(frozen=True)
class SweepPoint:
    """One point of the grid: its index, the swept values, and the scenario data to run."""

    index: int
    values: dict
    data: dict

    @property
    def key(self) -> str:
        """The swept values as canonical JSON: what a resumed sweep recognises a finished point by."""
        return json.dumps(self.values, sort_keys=True)


@dataclass(frozen=True)
class Sweep:
    name: str
    base: dict
    axes: dict  # dotted key -> list of values, in file order

    @classmethod
    def from_dict(cls, data: dict, name: str = "sweep", max_points: int = MAX_POINTS) -> "Sweep":
        data = copy.deepcopy(data)
        axes = data.pop("sweep", None)
        if not isinstance(axes, dict) or not axes:
            raise ConfigError("sweep", "a sweep needs a [sweep] table of \"dotted.field\" = [values]")
        for key, values in axes.items():
            if not isinstance(values, list) or not values:
                raise ConfigError(f"sweep.{key}", "must be a non-empty list of values")
            if len(set(json.dumps(v, sort_keys=True) for v in values)) != len(values):
                raise ConfigError(f"sweep.{key}", "lists a value twice")
        size = math.prod(len(values) for values in axes.values())
        if size > max_points:
            raise ConfigError("sweep", f"the grid has {size:,} points; at most {max_points:,}")
        sweep = cls(name, data, axes)
        for point in sweep.points():  # every point must be a valid scenario before anything runs
            try:
                build_run(point.data, name)
            except ConfigError as e:
                # Name the swept field the error is about when it is one of them.
                field = next((k for k in axes if k.split(".")[-1] == e.field.split(".")[-1]), None)
                values = json.dumps(point.values)
                raise ConfigError(f"sweep.{field}" if field else "sweep", f"point {values}: {e.field}: {e.reason}") from None
        return sweep

    @property
    def keys(self) -> list[str]:
        return list(self.axes)

    def points(self) -> list[SweepPoint]:
        points = []
        for index, combo in enumerate(itertools.product(*self.axes.values())):
            values = dict(zip(self.axes, combo))
            data = copy.deepcopy(self.base)
            for key, value in values.items():
                set_dotted(data, key, value)
            points.append(SweepPoint(index, values, data))
        return points
