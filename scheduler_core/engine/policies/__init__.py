"""Scheduling policies: each a small `Scheduler` subclass that writes only `schedule()`."""

from ..config import EngineConfig
from ..scheduler import Scheduler
from .naive import NaiveScheduler
from .static import StaticScheduler
from .vllm_v0 import VllmV0Scheduler
from .vllm_v1 import VllmV1Scheduler

SCHEDULERS: dict[str, type[Scheduler]] = {
    "vllm-v1": VllmV1Scheduler,
    "vllm-v0": VllmV0Scheduler,
    "static": StaticScheduler,
    "naive": NaiveScheduler,
}


def make_scheduler(config: EngineConfig) -> Scheduler:
    return SCHEDULERS[config.policy](config)


__all__ = ["SCHEDULERS", "NaiveScheduler", "StaticScheduler", "VllmV0Scheduler", "VllmV1Scheduler", "make_scheduler"]
