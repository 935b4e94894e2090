"""vLLM V0's multi-step scheduling (`--num-scheduler-steps N`, vLLM 0.5.5-0.10.0).

One scheduler call, then N decode passes back to back: the scheduler gives every running request
slots for N tokens (its token and N - 1 lookahead slots, `Scheduler._append_slots`), and the engine
skips the scheduler while the batch has steps left (`LLMEngine._has_remaining_steps`). So the host's
scheduling and input preparation are paid once per window, and a request that arrives mid-window
waits for it to end. A step with prompts is a window of one (prefills get no lookahead slots).

    schedule ──> pass 1 ──> pass 2 ──> ... ──> pass N ──> schedule ──> ...
    (host work)  (the GPU runs the window's passes with no scheduler between them)
"""

from __future__ import annotations

from ..errors import ConfigError
from .request import Request

# servescope's bound on `num_scheduler_steps` (vLLM set none; its own benchmarks used 8-16).
MAX_NUM_SCHEDULER_STEPS = 64


def check_multi_step(config) -> None:
    """vLLM's refusals for multi-step (`EngineArgs.create_engine_config`), and servescope's: only V0 has it."""
    if config.policy != "vllm-v0":
        raise ConfigError("num_scheduler_steps", "multi-step scheduling is vLLM V0's (--num-scheduler-steps > 1): "
                                                 f"it needs policy vllm-v0, not {config.policy}")
    if config.speculative_config is not None:
        raise ConfigError("num_scheduler_steps", "Speculative decoding is not supported with multi-step "
                                                 "(--num-scheduler-steps > 1)")
    if config.async_scheduling:
        raise ConfigError("num_scheduler_steps", "async scheduling is vLLM V1's; V0's multi-step "
                                                 "(--num-scheduler-steps > 1) runs without it")


class MultiStepWindow:
    """The decode batch of the current window and how many of its passes are left."""

    def __init__(self, num_scheduler_steps: int):
        self.num_scheduler_steps = num_scheduler_steps
        self.request_ids: list[str] = []
        self.remaining_steps = 0

    @property
    def num_lookahead_slots(self) -> int:
        """KV slots past a decode's one new token, reserved for the window's later passes."""
        return self.num_scheduler_steps - 1

    def open(self, scheduled_request_ids: list[str]) -> None:
        """A decode batch was scheduled: its requests run the window's remaining passes."""
        if self.num_scheduler_steps > 1 and scheduled_request_ids:
            self.request_ids = scheduled_request_ids
            self.remaining_steps = self.num_scheduler_steps - 1

    def next_pass(self, requests: dict[str, Request]) -> list[Request] | None:
        """The requests of the window's next pass, or None when the window is over (the scheduler runs).

        A request that reached its length mid-window leaves it: vLLM still runs it to the window's
        end and drops those tokens; a decode pass costs about the same either way. A window all of
        whose requests finished ends there, where vLLM would run empty passes."""
        if not self.remaining_steps:
            return None
        self.remaining_steps -= 1
        alive = [requests[rid] for rid in self.request_ids if rid in requests]
        if not alive:
            self.remaining_steps = 0
            return None
        self.request_ids = [request.request_id for request in alive]
        return alive
