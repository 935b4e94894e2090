"""Beyond one engine: replicas behind a router, disaggregated prefill and decode pools, and the
engine-core ranks of a data-parallel deployment."""

from .cluster import Cluster, ClusterEvent
from .dp_balancer import DPLoadBalancer
from .fleet_metrics import fleet_report, merge_metrics
from .kv_transfer import LINKS, KVLink, kv_transfer_cost
from .lockstep import LockstepRanks
from .replica import Replica
from .router import ROUTER_POLICIES, Router

__all__ = ["Cluster", "ClusterEvent", "DPLoadBalancer", "KVLink", "LINKS", "LockstepRanks", "ROUTER_POLICIES", "Replica",
           "Router", "fleet_report", "kv_transfer_cost", "merge_metrics"]
