"""What one session may hold: its requests and its KV blocks, each within the server's bound.

A pool sized from GPU memory (num_gpu_blocks left unset, as vLLM sizes it) can pass the bound
without the user ever writing a block count; the refusal then says what the memory plan gave and
the settings that bring it within the bound, still naming `engine.num_gpu_blocks`.
"""

from __future__ import annotations

import math

from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.timing.memory import MemoryPlan

from .settings import Settings


def check_session_limits(scenario: Scenario, settings: Settings) -> None:
    """ConfigError naming the field past its bound, before the session costs anything."""
    if scenario.workload.num_requests > settings.max_requests_per_session:
        raise ConfigError("workload.num_requests", f"at most {settings.max_requests_per_session} per session")
    blocks, most = scenario.engine.num_gpu_blocks, settings.max_blocks_per_session
    if blocks <= most:
        return
    plan = scenario.memory_plan()
    if blocks != plan.profiled_num_gpu_blocks:  # the user's own block count
        raise ConfigError("engine.num_gpu_blocks", f"at most {most:,} per session, got {blocks:,}")
    raise ConfigError("engine.num_gpu_blocks", (
        f"at most {most:,} per session; num_gpu_blocks was left unset, and the memory plan gives {blocks:,} "
        f"({plan.kv_cache_bytes / 2**30:.2f} GiB of KV cache per GPU: {scenario.model} on "
        f"{scenario.tensor_parallel_size} x {scenario.gpu} at gpu_memory_utilization {scenario.gpu_memory_utilization:g}); "
        f"lower gpu_memory_utilization (at most {utilization_within(plan, most):g} here) or set num_gpu_blocks "
        f"(at most {most:,})"))


def utilization_within(plan: MemoryPlan, num_blocks: int) -> float:
    """The largest gpu_memory_utilization, in hundredths, whose KV cache holds at most `num_blocks`:
    what vLLM reserves besides the KV cache (weights, activation peak, CUDA graphs) stays the same."""
    others = plan.requested_bytes - plan.kv_cache_bytes
    return math.floor((others + num_blocks * plan.block_bytes) / plan.total_bytes * 100) / 100
