"""A scenario: model, GPU, engine configuration and workload, everything one run needs.

Scenario files are TOML or JSON with the sections `[engine]` and `[workload]` (fields of
`EngineConfig` and `WorkloadConfig`) and top-level `model`, `gpu`, `tp`, `trace`, `slo_*`.
Without an explicit `engine.num_gpu_blocks` the KV pool is sized from GPU memory.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .bounds import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, SCENARIO_BOUNDS, check_all, check_text
from .config import EngineConfig
from .cost_model import CostModel
from .errors import ConfigError
from .files import MAX_SCENARIO_BYTES, read_text
from .metrics import SLO
from .presets import num_gpu_blocks_for, resolve_gpu, resolve_model
from .replay import load_trace, workload_from_trace
from .simulation import Simulation
from .traces import load_trace_workload
from .workload import Workload, WorkloadConfig, build_workload

def parse_assignment(text: str) -> tuple[str, object]:
    """`FIELD=VALUE`, the value read as JSON where it parses (numbers, booleans), else a bare word."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(text, "write FIELD=VALUE")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value  # a bare word such as static or h100-sxm


def apply_assignments(data: dict, assignments) -> None:
    """FIELD=VALUE settings on a scenario's data: engine and workload fields by name, or top-level ones."""
    engine_fields = {f.name for f in dataclasses.fields(EngineConfig)}
    workload_fields = {f.name for f in dataclasses.fields(WorkloadConfig)}
    for key, value in assignments:
        if key in engine_fields:
            data.setdefault("engine", {})[key] = value
        elif key in workload_fields:
            data.setdefault("workload", {})[key] = value
        elif key in ("model", "gpu", "tp", "gpu_memory_utilization", "trace"):
            data[key] = value
            data.setdefault("engine", {}).pop("num_gpu_blocks", None)  # resize the pool
        else:
            raise ConfigError(key, "not an engine, workload or scenario field")


TOP_LEVEL_KEYS = {"name", "description", "model", "gpu", "tp", "gpu_memory_utilization", "trace",
                  "slo_ttft_s", "slo_tpot_s", "engine", "workload"}


@dataclass(frozen=True)
class Scenario:
    name: str = "custom"
    description: str = ""
    model: str = "llama-3.1-8b"
    gpu: str = "h200"
    tp: int = 1
    gpu_memory_utilization: float = 0.9
    engine: EngineConfig = field(default_factory=EngineConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    # A trace file (CSV or JSONL) replacing the synthetic workload's requests.
    trace: str = ""
    slo_ttft_s: float = math.inf
    slo_tpot_s: float = math.inf

    def __post_init__(self) -> None:
        check_text("name", self.name, MAX_NAME_CHARS)
        check_text("description", self.description, MAX_DESCRIPTION_CHARS)
        for name in ("model", "gpu", "trace"):
            check_text(name, getattr(self, name), MAX_DESCRIPTION_CHARS)
        check_all(SCENARIO_BOUNDS, self)

    @classmethod
    def from_dict(cls, data: dict, name: str = "custom") -> "Scenario":
        if not isinstance(data, dict):
            raise ConfigError("scenario", f"must be a table of settings, got {type(data).__name__}")
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                raise ConfigError(str(key)[:100], "unknown scenario setting")
        engine = data.get("engine", {})
        if not isinstance(engine, dict):
            raise ConfigError("engine", f"must be a table of engine settings, got {engine!r:.80}")
        engine = dict(engine)
        top = {k: v for k, v in data.items() if k not in ("engine", "workload")}
        top.setdefault("name", name)
        scenario = cls(**top, workload=WorkloadConfig.from_dict(data.get("workload", {})))
        if "num_gpu_blocks" not in engine:
            block_size = engine.get("block_size", EngineConfig.block_size)
            engine["num_gpu_blocks"] = num_gpu_blocks_for(
                resolve_model(scenario.model), resolve_gpu(scenario.gpu), block_size, scenario.tp,
                scenario.gpu_memory_utilization,
            )
        return dataclasses.replace(scenario, engine=EngineConfig.from_dict(engine))

    @classmethod
    def load(cls, path: str | Path) -> "Scenario":
        path = Path(path)
        if not path.exists():
            raise ConfigError("scenario", f"no scenario file {path}")
        text = read_text(path, MAX_SCENARIO_BYTES)
        try:
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
            raise ConfigError(str(path), f"cannot parse: {e}") from None
        except RecursionError:
            raise ConfigError(str(path), "nested too deeply") from None
        try:
            return cls.from_dict(data, name=path.stem)
        except ConfigError as e:
            raise ConfigError(f"{path}:{e.field}", e.reason) from None

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["engine"] = self.engine.to_dict()
        return data

    def cost_model(self) -> CostModel:
        return CostModel(resolve_model(self.model), resolve_gpu(self.gpu), self.tp)

    def build_workload(self) -> Workload:
        if self.trace.endswith((".json", ".json.gz")):
            # A recorded-vLLM trace: arrivals by step, exactly as vLLM saw them.
            return workload_from_trace(load_trace(self.trace))
        if self.trace:
            return load_trace_workload(self.trace, self.engine.max_model_len, self.workload.num_requests)
        return build_workload(self.workload, self.engine.max_model_len)

    def build(self, keep_finished: bool = True) -> Simulation:
        return Simulation(
            self.engine, self.build_workload(), self.cost_model(), keep_finished=keep_finished,
            slo=SLO(self.slo_ttft_s, self.slo_tpot_s),
        )


# Starting points; `servescope run --scenario NAME` or a scenario file of your own.
PRESET_SCENARIOS: dict[str, dict] = {
    "default": {
        "description": "Llama-3.1-8B on one H200 at a small memory budget: chunked prefill, prefix caching "
                       "and a few preemptions in a minute of traffic.",
        "model": "llama-3.1-8b", "gpu": "h200",
        "engine": {"num_gpu_blocks": 896, "max_num_seqs": 64, "max_num_batched_tokens": 512},
        "workload": {"num_requests": 120, "arrival_rate": 6.0, "lengths": "sharegpt", "shared_prefix_len": 96,
                     "num_shared_prefixes": 3, "seed": 1},
    },
    "llama-8b-h100-sharegpt": {
        "description": "Llama-3.1-8B on one H100 SXM, ShareGPT lengths at 10 requests/s.",
        "model": "llama-3.1-8b", "gpu": "h100-sxm",
        "engine": {"max_num_batched_tokens": 8192},
        "workload": {"num_requests": 1000, "arrival_rate": 10.0, "lengths": "sharegpt"},
    },
    "llama-70b-fp8-h200-azure-code": {
        "description": "Llama-3.3-70B in fp8 on one H200, Azure 2023 code-service lengths at 2 requests/s: long "
                       "prompts, short answers.",
        "model": "llama-3.3-70b-fp8", "gpu": "h200",
        "engine": {"max_num_batched_tokens": 8192},
        "workload": {"num_requests": 500, "arrival_rate": 2.0, "arrival": "gamma", "arrival_cv": 3.0,
                     "lengths": "azure-code"},
    },
    "llama-70b-h100-tp4-conversation": {
        "description": "Llama-3.3-70B in bf16 over 4 H100s (tensor parallel), Azure conversation lengths, "
                       "64 concurrent clients.",
        "model": "llama-3.3-70b", "gpu": "h100-sxm", "tp": 4,
        "engine": {"max_num_batched_tokens": 8192},
        "workload": {"num_requests": 1000, "concurrency": 64, "lengths": "azure-conversation"},
    },
    "qwen-7b-l40s-sharegpt-128": {
        "description": "Qwen2.5-7B on one L40S, ShareGPT lengths, 128 concurrent clients.",
        "model": "qwen2.5-7b", "gpu": "l40s",
        "workload": {"num_requests": 1000, "concurrency": 128, "lengths": "sharegpt"},
    },
}

