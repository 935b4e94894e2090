"""servescope's simulation core: vLLM's scheduler and paged KV cache, step by step.

Pure Python, standard library only; usable headless:

    from scheduler_core import EngineConfig, Simulation, synthetic_workload
    sim = Simulation(EngineConfig(num_gpu_blocks=2048), synthetic_workload(100, 10.0, 512, 128, seed=0))
    for record in sim.records():
        print(record.step, record.num_batched_tokens, record.kv_usage)
"""

from .engine.config import VLLM_PROFILES, EngineConfig, VllmCompat
from .engine.policies import SCHEDULERS, make_scheduler
from .engine.request import Request, RequestStatus
from .engine.scheduler import Scheduler, SchedulerError, SchedulerOutput
from .engine.step_record import ScheduledChunk, StepRecord
from .errors import ConfigError
from .sim.simulation import Simulation, SimulationStalled, SimulationState
from .timing.cost_model import CostModel, Efficiency, GpuSpec, ModelSpec
from .workload.workload import RequestSpec, synthetic_workload

__all__ = [
    "VLLM_PROFILES",
    "ConfigError",
    "CostModel",
    "Efficiency",
    "EngineConfig",
    "GpuSpec",
    "ModelSpec",
    "Request",
    "RequestSpec",
    "RequestStatus",
    "SCHEDULERS",
    "ScheduledChunk",
    "Scheduler",
    "SchedulerError",
    "SchedulerOutput",
    "Simulation",
    "SimulationStalled",
    "SimulationState",
    "StepRecord",
    "VllmCompat",
    "make_scheduler",
    "synthetic_workload",
]
