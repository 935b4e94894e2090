"""One replica of a fleet as a single engine, for the single-engine panels.

A colocated or prefill replica's run depends only on the requests the router sent it and when:
replaying those requests through a lone engine of the same configuration repeats the replica step
for step. (A decode replica's requests arrive with transferred KV, which a lone engine's workload
cannot express.)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ConfigError
from ..scenario.scenario import Scenario
from ..workload.workload import RequestSpec, Workload
from .scenario import ClusterScenario


def routed_requests(fleet: ClusterScenario, replica: str) -> list[RequestSpec]:
    """The requests the fleet's router sent to `replica`, in the order they reached it."""
    cluster = fleet.build()
    names = [r.name for r in cluster.entry_pool]
    if replica not in names:
        decode = [r.name for r in cluster.decode_pool]
        reason = ("receives transferred KV, which a lone engine cannot replay" if replica in decode
                  else f"no such replica; expected one of {', '.join(names)}")
        raise ConfigError("replica", f"{replica}: {reason}")
    return [event.spec for event in cluster.events() if event.kind == "route" and event.replica == replica]


@dataclass(frozen=True)
class ReplicaScenario(Scenario):
    """A scenario whose workload is what a fleet's router sent one replica."""

    fleet: ClusterScenario | None = None
    replica: str = ""
    requests: tuple[RequestSpec, ...] = ()

    @classmethod
    def of(cls, fleet: ClusterScenario, replica: str) -> "ReplicaScenario":
        requests = tuple(routed_requests(fleet, replica))
        pool = fleet.prefill if fleet.disaggregated else fleet.scenario
        fields = {f.name: getattr(pool, f.name) for f in dataclasses.fields(Scenario)}
        fields.update(name=f"{fleet.name} / {replica}", description=f"{replica} of the fleet, alone")
        return cls(**fields, fleet=fleet, replica=replica, requests=requests)

    def build_workload(self) -> Workload:
        return Workload(list(self.requests))

    def to_dict(self) -> dict:
        data = dataclasses.asdict(dataclasses.replace(self, fleet=None, requests=()))
        del data["fleet"], data["requests"]
        data["engine"] = self.engine.to_dict()
        data["fleet"] = self.fleet.to_dict()
        return data
