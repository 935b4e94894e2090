"""Beyond one engine: replicas behind a router, and disaggregated prefill and decode pools."""

from .cluster import Cluster, ClusterEvent
from .fleet_metrics import fleet_report, merge_metrics
from .kv_transfer import LINKS, KVLink, kv_transfer_cost
from .replica import Replica
from .router import ROUTER_POLICIES, Router

__all__ = ["Cluster", "ClusterEvent", "KVLink", "LINKS", "ROUTER_POLICIES", "Replica", "Router", "fleet_report",
           "kv_transfer_cost", "merge_metrics"]
