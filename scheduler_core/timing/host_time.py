"""The engine's host work per step: what the GPU waits for between steps under synchronous
scheduling, and what async scheduling runs while the previous batch is still on the GPU."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HostTime:
    """Seconds of CPU work per engine step of vLLM's V1 engine (scheduling, input preparation,
    output processing), per scheduled request: the measurement below finds no fixed part.

    The default is measured, not fitted: vLLM PR #23914 (github.com/vllm-project/vllm/pull/23914,
    A100, TP 2, offline, August 2025) ran the same batches with and without overlapping the
    scheduler with the GPU at 32, 64, 128 and 256 requests: 1,014/1,025, 1,853/1,896, 3,048/3,177
    and 4,039/4,258 output tok/s. Read as step times, the overlap hid 0.34, 0.78, 1.71 and 3.26 ms
    per step: 12.8 us per request through the origin (a free intercept comes out at -0.04 ms). It
    is a lower bound, since that version overlapped the scheduler only, not input preparation.
    vLLM 0.33's own scheduler alone costs 18 us + 23.5 us per request on a 2-core cloud VM
    (`tools/vllm_recorder/time_scheduler.py`): the same order, on a slower host.
    """

    per_request_s: float = 12.8e-6

    def seconds(self, num_scheduled_reqs: int) -> float:
        """The host's work for a step that schedules this many requests (none for an idle pass)."""
        return self.per_request_s * num_scheduled_reqs


# The static-batching baselines, and the vllm-v0 policy under a profile without V0 (v0_host_time.py),
# are modelled on the GPU's time alone.
NO_HOST_TIME = HostTime(0.0)
