"""vLLM V0's CPU work per scheduler call, and which engine's host time a configuration pays.

V0 (vLLM 0.5-0.10.0, servescope's `vllm-v0` policy) ran its scheduler, its input preparation and the
bookkeeping of the last step's sampled tokens in Python on the GPU's critical path: the GPU sat idle
while they ran. Multi-step scheduling (`num_scheduler_steps`, multi_step.py) pays them once per window
of decode passes instead of once per pass. Detokenization and the OpenAI-format streaming are the API
server's (a front end of its own since vLLM 0.6.0, PR #6883): charged by sim/api_server.py, not here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..engine.config import EngineConfig
from .host_time import NO_HOST_TIME, HostTime


@dataclass(frozen=True)
class V0HostTime:
    """Seconds of V0's host work for one scheduler call: a fixed part plus a part per scheduled
    request (a sequence group: one sequence each, as every servescope request is).

    From published profiles of the V0 engine, not fitted to any figure servescope checks:
    - vLLM RFC #6854 ("Multi-Step Scheduling", github.com/vllm-project/vllm/issues/6854, July 2024,
      vLLM 0.5.3, Llama 3 8B on one H100 serving ShareGPT, max_num_seqs 256): the GPU idles "5-13ms"
      per decode step while the CPU moves the sampled tokens back, pythonizes them, prepares the next
      inputs and runs the scheduler; its profiled trace shows "about 4ms" of idle per decode. Read as
      a line from a small batch (4 ms) to the full 256 sequences (13 ms): 4 ms + 35 us per request.
    - The vLLM v0.6.0 post (blog.vllm.ai/2024/09/05/perf-update.html) agrees on the scale: for the
      same model and GPU, 29% of the time went to "scheduling, including gathering the LLM results
      from the last step, scheduling the requests to run for the next step, and preparing these
      requests as inputs", against 38% on the GPU (the API server's 33% is the front end's), and an
      8B model made "1 token every 13 ms under light load", where its GPU step is about 7 ms.
    Both measure vLLM 0.5.3, before 0.6.0 overlapped output processing with the GPU (PR #7049) and
    cached its Python objects (PR #7162): for 0.6.0 this is an upper estimate.
    """

    fixed_s: float = 4e-3
    per_request_s: float = 35e-6

    def seconds(self, num_scheduled_reqs: int) -> float:
        """The host's work for a scheduler call that scheduled this many requests (none for an idle pass)."""
        return self.fixed_s + self.per_request_s * num_scheduled_reqs if num_scheduled_reqs else 0.0


def ran_v0_engine(config: EngineConfig) -> bool:
    """Whether the configuration is V0 in a release that still shipped it: the vllm-v0 policy under a
    0.10.0-0.10.1.1 profile (every compat switch off). Under a later profile (0.11 removed V0) the
    policy is the scheduling rule alone, on the GPU's time, as the lessons show it."""
    return config.policy == "vllm-v0" and not any(dataclasses.asdict(config.compat).values())


def engine_host_time(config: EngineConfig) -> HostTime | V0HostTime:
    """The host time an engine of this configuration pays per scheduler call: V1's per request, V0's
    where it ran, none for the static and naive baselines (their loops are the GPU's time alone)."""
    if config.policy == "vllm-v1":
        return HostTime()
    return V0HostTime() if ran_v0_engine(config) else NO_HOST_TIME
