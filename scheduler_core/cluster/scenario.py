"""Cluster scenarios: a scenario plus a `[cluster]` table.

    [cluster]
    replicas = 4                 # colocated replicas of the scenario's engine
    router = "prefix-aware"      # round-robin, least-requests, least-kv, prefix-aware, session-affinity

or, disaggregated (the pools' own GPU, TP and engine settings override the scenario's):

    [cluster]
    router = "least-requests"    # over the prefill pool
    decode_router = "least-kv"   # over the decode pool
    link = "infiniband"          # nvlink, infiniband, ethernet
    [cluster.prefill]
    replicas = 1
    tp = 2
    [cluster.decode]
    replicas = 2
    engine = { max_num_seqs = 256 }

A scenario with `data_parallel_size = N` (vLLM's `--data-parallel-size`) is one deployment of N
engine cores, each with the scenario's engine, its own scheduler and KV cache: its ranks are the
fleet's replicas (`[cluster] replicas` is 1 or absent), requests are spread by vLLM's DP balancer
(`router = "vllm-dp"`, the default here; another router stands for an external load balancer,
vLLM's `--data-parallel-external-lb`), and for an MoE model the ranks step in lockstep (lockstep.py).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

from ..errors import ConfigError
from ..scenario.scenario import BATCH_LIMITS, Scenario, vllm_batch_defaults
from ..sim.metrics import SLO
from ..sim.simulation import Simulation
from .cluster import Cluster
from .kv_transfer import LINKS, resolve_link
from .router import ROUTER_POLICIES, Router

# A fleet is simulated in one process: this many replicas at most.
MAX_REPLICAS = 64
CLUSTER_KEYS = {"replicas", "router", "decode_router", "link", "prefill", "decode"}
POOL_KEYS = {"replicas", "gpu", "tensor_parallel_size", "tp", "gpu_memory_utilization", "engine"}


def _replica_count(value, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_REPLICAS:
        raise ConfigError(where, f"must be an integer from 1 to {MAX_REPLICAS}, got {value!r}")
    return value


def _pool_scenario(base: dict, pool: dict, where: str, name: str) -> Scenario:
    """The scenario's data with a pool's GPU, TP and engine settings laid over it."""
    if not isinstance(pool, dict):
        raise ConfigError(where, "must be a table")
    for key in pool:
        if key not in POOL_KEYS:
            raise ConfigError(f"{where}.{key}", f"unknown pool setting; expected one of {', '.join(sorted(POOL_KEYS))}")
    data = copy.deepcopy(base)
    engine = data.setdefault("engine", {})
    # The engine as if it had left its batch limits open, for vLLM's defaults on either GPU.
    limits_open = {key: value for key, value in engine.items() if key not in BATCH_LIMITS}
    try:
        base_gpu_defaults = vllm_batch_defaults(data, limits_open)
        for key in ("gpu", "tensor_parallel_size", "tp", "gpu_memory_utilization"):
            if key in pool:
                data["tensor_parallel_size" if key == "tp" else key] = pool[key]  # tp: vLLM's older name
                engine.pop("num_gpu_blocks", None)  # the pool's own memory sizes its KV cache
        if "gpu" in pool:
            # Batch limits that are vLLM's defaults on the scenario's GPU become its defaults on
            # the pool's (an A100 decode pool beside H200s runs 256 sequences, not 1,024).
            pool_gpu_defaults = vllm_batch_defaults(data, limits_open)
            for key, value in base_gpu_defaults.items():
                if engine.get(key) == value and key in pool_gpu_defaults:  # not for a GPU given by its spec
                    engine[key] = pool_gpu_defaults[key]
        engine.update(pool.get("engine", {}))
        return Scenario.from_dict(data, name=name)
    except ConfigError as e:
        raise ConfigError(f"{where}.{e.field}", e.reason) from None


@dataclass(frozen=True)
class ClusterScenario:
    """A fleet: `replicas` copies of `scenario`'s engine, or a prefill and a decode pool."""

    scenario: Scenario
    replicas: int = 1
    router: str = "round-robin"
    prefill: Scenario | None = None
    prefill_replicas: int = 0
    decode: Scenario | None = None
    decode_replicas: int = 0
    decode_router: str = "least-requests"
    link: str = "infiniband"
    # An MoE model's data-parallel ranks step together (lockstep.py).
    lockstep: bool = False

    @property
    def notes(self) -> tuple[str, ...]:
        """What the run does differently from vLLM, said where the report is printed."""
        if self.lockstep and self.scenario.engine.async_scheduling:
            return ("async scheduling is not modelled across lockstep DP ranks: they run the synchronous loop",)
        return ()

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def disaggregated(self) -> bool:
        return self.decode is not None

    @property
    def num_gpus(self) -> int:
        if self.disaggregated:
            return (self.prefill_replicas * self.prefill.tensor_parallel_size
                    + self.decode_replicas * self.decode.tensor_parallel_size)
        return self.replicas * self.scenario.tensor_parallel_size

    @classmethod
    def from_dict(cls, data: dict, name: str = "custom") -> "ClusterScenario":
        data = copy.deepcopy(data)
        cluster = data.pop("cluster", {})
        if not isinstance(cluster, dict):
            raise ConfigError("cluster", "must be a table")
        for key in cluster:
            if key not in CLUSTER_KEYS:
                raise ConfigError(f"cluster.{key}", f"unknown cluster setting; expected one of {', '.join(sorted(CLUSTER_KEYS))}")
        scenario = Scenario.from_dict(data, name=name)
        for key in ("router", "decode_router"):
            if key in cluster and cluster[key] not in ROUTER_POLICIES:
                raise ConfigError(f"cluster.{key}",
                                  f"unknown router {cluster[key]!r}; expected one of {', '.join(ROUTER_POLICIES)}")
        if "link" in cluster and cluster["link"] not in LINKS:
            raise ConfigError("cluster.link", f"unknown link {cluster['link']!r}; expected one of {', '.join(LINKS)}")
        common = {"router": cluster.get("router", "round-robin"), "decode_router": cluster.get("decode_router", "least-requests"),
                  "link": cluster.get("link", "infiniband")}
        if ("prefill" in cluster) != ("decode" in cluster):
            raise ConfigError("cluster.decode" if "prefill" in cluster else "cluster.prefill",
                              "a disaggregated fleet needs both [cluster.prefill] and [cluster.decode]")
        if scenario.data_parallel_size > 1:
            return cls._data_parallel(scenario, cluster, common)
        if "prefill" not in cluster:
            return cls(scenario, _replica_count(cluster.get("replicas", 1), "cluster.replicas"), **common)
        if "replicas" in cluster:
            raise ConfigError("cluster.replicas", "a disaggregated fleet counts replicas per pool ([cluster.prefill] replicas)")
        pools = {}
        for role in ("prefill", "decode"):
            pool = cluster[role]
            pools[role] = _pool_scenario(data, pool, f"cluster.{role}", f"{name}-{role}")
            pools[f"{role}_replicas"] = _replica_count(pool.get("replicas", 1) if isinstance(pool, dict) else 1,
                                                       f"cluster.{role}.replicas")
        if pools["prefill_replicas"] + pools["decode_replicas"] > MAX_REPLICAS:
            raise ConfigError("cluster", f"at most {MAX_REPLICAS} replicas in all")
        return cls(scenario, **pools, **common)

    @classmethod
    def _data_parallel(cls, scenario: Scenario, cluster: dict, common: dict) -> "ClusterScenario":
        dp = scenario.data_parallel_size
        if "prefill" in cluster:
            raise ConfigError("cluster.prefill", "a data-parallel deployment is colocated: give data_parallel_size or "
                                                 "prefill and decode pools, not both")
        if cluster.get("replicas", 1) != 1:
            raise ConfigError("cluster.replicas", (
                f"data_parallel_size={dp} is one vLLM server of {dp} engine cores: set replicas to 1 "
                "(several data-parallel deployments behind a router are not modelled)"))
        model = scenario.model_spec()
        moe = model.arch is not None and model.arch.moe is not None
        return cls(scenario, dp, **{**common, "router": cluster.get("router", "vllm-dp")}, lockstep=moe)

    def to_dict(self) -> dict:
        data = self.scenario.to_dict()
        cluster = {"router": self.router}
        if self.disaggregated:
            for role in ("prefill", "decode"):
                pool = getattr(self, role)
                cluster[role] = {"replicas": getattr(self, f"{role}_replicas"), "gpu": pool.gpu, "tp": pool.tensor_parallel_size,
                                 "gpu_memory_utilization": pool.gpu_memory_utilization, "engine": pool.engine.to_dict()}
            cluster.update(decode_router=self.decode_router, link=self.link)
        elif self.scenario.data_parallel_size == 1:
            cluster["replicas"] = self.replicas
        data["cluster"] = cluster
        return data

    def build(self, keep_finished: bool = False) -> Cluster:
        slo = SLO(self.scenario.slo_ttft_s, self.scenario.slo_tpot_s)

        def replicas(scenario: Scenario, count: int) -> list[Simulation]:
            return [Simulation(scenario.engine, [], scenario.cost_model(), keep_finished=keep_finished, slo=slo,
                               api_server=scenario.api_server())
                    for _ in range(count)]

        workload = self.scenario.build_workload()
        if self.lockstep:
            engine = dataclasses.replace(self.scenario.engine, async_scheduling=False)  # see `notes`
            synchronous = dataclasses.replace(self.scenario, engine=engine)
            return Cluster(replicas(synchronous, self.replicas), workload, Router(self.router), lockstep=True,
                           pad_to_largest=not self.scenario.enforce_eager)
        if not self.disaggregated:
            return Cluster(replicas(self.scenario, self.replicas), workload, Router(self.router))
        return Cluster(replicas(self.prefill, self.prefill_replicas), workload, Router(self.router),
                       decode=replicas(self.decode, self.decode_replicas), link=resolve_link(self.link),
                       decode_router=Router(self.decode_router))
