"""A scenario: model, GPU, engine configuration and workload, everything one run needs.

Scenario files are TOML or JSON with the sections `[engine]` and `[workload]` (fields of
`EngineConfig` and `WorkloadConfig`) and top-level `model`, `gpu`, `tensor_parallel_size` (or `tp`),
`gpu_memory_utilization`, `kv_cache_dtype`, `swap_space`, `trace`, `slo_*`: vLLM's argument names.
Without an explicit `engine.num_gpu_blocks` the KV pool is sized from GPU memory. Each top-level
setting is declared once on `Scenario` (`bounds.setting`), as the engine's are on `EngineConfig`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..bounds import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Bound, bounds_of, check_all, check_text, setting, settings_of
from ..engine.block_sizes import block_size_refusal
from ..engine.config import (
    EngineConfig,
    implied_release,
    vllm_default_async_scheduling,
    vllm_default_batch_limits,
)
from ..engine.releases import LATEST, VLLM_RELEASES, VllmRelease
from ..errors import ConfigError
from ..files import MAX_INT_DIGITS, MAX_SCENARIO_BYTES, parse_json, read_text
from ..sim.api_server import APIServer
from ..sim.metrics import SLO
from ..sim.replay import load_trace, workload_from_trace
from ..sim.simulation import Simulation
from ..timing.cost_model import CostModel, ModelSpec
from ..timing.memory import GIB, MemoryPlan, kv_block_bytes, num_gpu_blocks_from_memory, plan_memory
from ..timing.moe import ExpertPlacement
from ..timing.presets import GPUS, MODELS, resolve_gpu, resolve_model
from ..workload.traces import load_trace_workload
from ..workload.workload import Workload, WorkloadConfig, build_workload
from .kv_cache_wiring import startup_notes, wire_kv_cache_groups


def parse_assignment(text: str) -> tuple[str, object]:
    """`FIELD=VALUE`, the value read as JSON where it parses (numbers, booleans), else a bare word."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(text, "write FIELD=VALUE")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value  # a bare word such as static or h100-sxm
    except RecursionError:
        raise ConfigError(key, "nested too deeply") from None
    except ValueError:  # json's only other: an integer past Python's int-from-text limit
        raise ConfigError(key, f"an integer of more than {MAX_INT_DIGITS:,} digits") from None


def apply_assignments(data: dict, assignments) -> None:
    """FIELD=VALUE settings on a scenario's data: engine and workload fields by name, or top-level ones."""
    engine_fields = {f.name for f in dataclasses.fields(EngineConfig)} | {a for names in ENGINE_ALIASES.values() for a in names}
    workload_fields = {f.name for f in dataclasses.fields(WorkloadConfig)}
    for key, value in assignments:
        if key in engine_fields:
            data.setdefault("engine", {})[key] = value
        elif key in workload_fields:
            data.setdefault("workload", {})[key] = value
        elif key in ("vllm_version", "entrypoint", "api_server_count"):  # a sweep or `compare --set-b` over them
            data[key] = value
        elif key in SIZING_KEYS:
            data[key] = value
            for derived in ("num_gpu_blocks", "kv_cache_groups"):  # resize the pool, regroup for the model
                data.setdefault("engine", {}).pop(derived, None)
        else:
            raise ConfigError(key, "not an engine, workload or scenario field")


# Top-level settings that change how many KV blocks fit (a new value re-sizes the pool).
SIZING_KEYS = ("model", "gpu", "tensor_parallel_size", "tp", "gpu_memory_utilization", "kv_cache_dtype",
               "swap_space", "enforce_eager", "trace", "data_parallel_size", "enable_expert_parallel")
# The KV cache dtypes of `--kv-cache-dtype` that a CUDA GPU serves (a subset of vLLM's CacheDType),
# and the storage type each means; auto keeps the model's own.
KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
KV_CACHE_DTYPE_BYTES_NAME = {"float16": "fp16", "bfloat16": "bf16", "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}


ENTRYPOINTS = ("serve", "offline")


@dataclass(frozen=True)
class Scenario:
    """One run: the model, the GPU and how vLLM is given its memory, the engine and the workload.
    A flag is vLLM's `serve` flag unless `vllm_flag=False` marks it as servescope's own."""

    name: str = setting("custom", "the run's name", max_chars=MAX_NAME_CHARS)
    description: str = setting("", "what the run shows", max_chars=MAX_DESCRIPTION_CHARS)
    # vLLM takes the model as `vllm serve`'s positional argument (`parse_vllm_command` reads it
    # there); on the web only a preset, so no request names a file on the server.
    model: str = setting("llama-3.1-8b", f"preset ({', '.join(MODELS)}); on the command line also its Hugging Face id "
                                         "or a local config.json (or its folder)",
                         flag="--model", vllm_flag=False, web_choices=tuple(MODELS), max_chars=MAX_DESCRIPTION_CHARS)
    # vLLM runs on the GPU it finds; the simulation needs to be told which.
    gpu: str = setting("h200", "GPU preset", choices=tuple(GPUS), flag="--gpu", vllm_flag=False,
                       max_chars=MAX_DESCRIPTION_CHARS)
    tensor_parallel_size: int = setting(1, "GPUs of the tensor-parallel group", bound=Bound(1, 64),
                                        flag="--tensor-parallel-size", aliases=("-tp", "--tp"), field_aliases=("tp",))
    # vLLM's data parallelism: as many engine cores, each with its own scheduler and KV cache, run
    # as a fleet of ranks (cluster/scenario.py: dp_balancer.py, lockstep.py); a lone engine is refused one (`build`).
    data_parallel_size: int = setting(1, "data-parallel ranks of the deployment: engine cores with their own scheduler "
                                         "and KV cache, balanced by vLLM's DP coordinator; MoE layers span TP x DP GPUs",
                                      bound=Bound(1, 64), flag="--data-parallel-size", aliases=("-dp",))
    enable_expert_parallel: bool = setting(False, "MoE layers with whole experts per GPU over the TP x DP GPUs (EP size = "
                                                  "TP x DP) instead of a slice of every expert", flag="--enable-expert-parallel",
                                           aliases=("-ep",))
    # The release whose rules (`engine.compat`, switches given there win) and defaults apply; unset, the
    # latest, or 0.10.1.1 when every compat switch is off (`implied_release`).
    vllm_version: str = setting(LATEST, "vLLM release whose scheduler rules and defaults are simulated (unset: "
                                        f"{LATEST})", choices=VLLM_RELEASES, left_open=True)
    gpu_memory_utilization: float = setting(
        VllmRelease(LATEST).gpu_memory_utilization, "share of each GPU's memory vLLM may use; the KV cache gets what "
        "weights, activations and CUDA graphs leave of it (unset: vLLM's default for the version, 0.92 for 0.33.0)",
        bound=Bound(0, 1, integer=False, low_open=True), flag="--gpu-memory-utilization", left_open=True)
    kv_cache_dtype: str = setting("auto", "KV cache storage type; auto: the model's dtype; fp8 halves the bytes per token",
                                  choices=KV_CACHE_DTYPES, flag="--kv-cache-dtype")
    # vLLM 0.10's (V0) swap space: CPU memory per GPU for swapped-out blocks.
    swap_space: float = setting(0.0, "CPU swap space per GPU in GiB, for --preemption-mode swap (vLLM 0.10, V0)",
                                bound=Bound(0, 1024, integer=False), flag="--swap-space")
    # No CUDA graphs, so no memory kept for them; the web keeps vLLM's default.
    enforce_eager: bool = setting(False, "no CUDA graphs: the memory vLLM keeps for them goes to the KV cache",
                                  flag="--enforce-eager", web=False)
    # How requests reach the engine: `vllm serve`'s OpenAI API server (templates, tokenizes, detokenizes
    # and streams, in a process of its own: sim/api_server.py), or `LLM.generate` in the engine's own
    # process. Named after vLLM's two entry points (vllm/entrypoints/openai/api_server.py and llm.py).
    entrypoint: str = setting("serve", "serve: vllm serve's API server in front of the engine (tokenization, "
                                       "detokenization, the hops to and from the engine core); offline: LLM.generate, "
                                       "no API server", choices=ENTRYPOINTS, flag="--entrypoint", vllm_flag=False)
    api_server_count: int = setting(1, "API server processes in front of the engine (with --entrypoint serve)",
                                    bound=Bound(1, 64), flag="--api-server-count")
    engine: EngineConfig = field(default_factory=EngineConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    # A trace file (CSV or JSONL) replacing the synthetic workload's requests: never named on the web.
    trace: str = setting("", "trace file (CSV or JSONL) replacing the synthetic workload", max_chars=MAX_DESCRIPTION_CHARS,
                         web=False)
    slo_ttft_s: float = setting(math.inf, "TTFT objective for goodput, in seconds (unset: none)",
                                bound=Bound(0, 1e6, integer=False, low_open=True, infinite_ok=True), left_open=True)
    slo_tpot_s: float = setting(math.inf, "TPOT objective for goodput, in seconds (unset: none)",
                                bound=Bound(0, 1e6, integer=False, low_open=True, infinite_ok=True), left_open=True)

    def __post_init__(self) -> None:
        for name, declared in SCENARIO_SETTINGS.items():
            if declared.max_chars is not None:
                check_text(name, getattr(self, name), declared.max_chars)
        check_all(SCENARIO_BOUNDS, self)
        if self.entrypoint not in ENTRYPOINTS:
            raise ConfigError("entrypoint", f"unknown value {self.entrypoint!r}; expected one of {list(ENTRYPOINTS)}")

    @classmethod
    def from_dict(cls, data: dict, name: str = "custom") -> "Scenario":
        if not isinstance(data, dict):
            raise ConfigError("scenario", f"must be a table of settings, got {type(data).__name__}")
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                raise ConfigError(str(key)[:100], "unknown scenario setting")
        if not isinstance(data.get("engine", {}), dict):
            raise ConfigError("engine", f"must be a table of engine settings, got {data['engine']!r:.80}")
        data = normalize_aliases(data)
        engine = dict(data.get("engine", {}))
        release = apply_release(data, engine)
        data = {**data, "vllm_version": release.version}
        if refusal := block_size_refusal(engine.get("block_size"), release):
            raise ConfigError("block_size", refusal)
        top = {k: v for k, v in data.items() if k not in ("engine", "workload")}
        top.setdefault("name", name)
        scenario = cls(**top, workload=WorkloadConfig.from_dict(data.get("workload", {})))
        tp = scenario.tensor_parallel_size
        if scenario.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise ConfigError("kv_cache_dtype", f"invalid choice {scenario.kv_cache_dtype!r}; expected one of "
                                                f"{list(KV_CACHE_DTYPES)}")
        model, block_size = scenario.model_spec(), engine.get("block_size", EngineConfig.block_size)
        if scenario.enable_expert_parallel and (model.arch is None or model.arch.moe is None):
            raise ConfigError("enable_expert_parallel", (  # vLLM's ModelConfig._verify_with_expert_parallelism
                f"Number of experts in the model must be greater than 0 when expert parallelism is enabled "
                f"({scenario.model} has no experts)."))
        max_model_len = engine.get("max_model_len", EngineConfig.max_model_len)
        if isinstance(max_model_len, int) and max_model_len > model.max_position_embeddings:
            raise ConfigError("max_model_len", (  # vLLM's ModelConfig refuses it the same way
                f"User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
                f"(max_position_embeddings={model.max_position_embeddings} or model_max_length=None in "
                "model's config.json)."))
        wire_kv_cache_groups(model, tp, engine)  # the model's KV cache groups and block size, as vLLM's
        block_size = engine["block_size"]
        if scenario.swap_space:
            # vLLM V0: swap_space bytes // one block's K and V on this GPU.
            engine["num_cpu_blocks"] = int(scenario.swap_space * GIB // kv_block_bytes(model, tp, block_size))
        if "num_gpu_blocks" not in engine:
            sized = dataclasses.replace(scenario, engine=EngineConfig.from_dict({**engine, "num_gpu_blocks": 2}))
            engine["num_gpu_blocks"] = num_gpu_blocks_from_memory(sized.memory_plan())
        return dataclasses.replace(scenario, engine=EngineConfig.from_dict(engine))

    @staticmethod
    def read_data(path: str | Path) -> dict:
        """A scenario file's settings as written (TOML or JSON), before defaults and sizing."""
        path = Path(path)
        if not path.exists():
            raise ConfigError("scenario", f"no scenario file {path}")
        text = read_text(path, MAX_SCENARIO_BYTES)
        if path.suffix != ".toml":
            return parse_json(text, str(path))
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(str(path), f"cannot parse: {e}") from None
        except RecursionError:
            raise ConfigError(str(path), "nested too deeply") from None
        except ValueError:  # tomllib's only other: an integer past Python's int-from-text limit
            raise ConfigError(str(path), f"an integer of more than {MAX_INT_DIGITS:,} digits") from None

    @classmethod
    def load(cls, path: str | Path) -> "Scenario":
        try:
            return cls.from_dict(cls.read_data(path), name=Path(path).stem)
        except ConfigError as e:
            raise ConfigError(f"{path}:{e.field}", e.reason) from None

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["engine"] = self.engine.to_dict()
        if v0_swap_refusal(VllmRelease(self.vllm_version), data, data["engine"]):
            # Its release would refuse its swap settings, so it named none (`apply_release`): left
            # unnamed, it reads back (a Why? replay, an export) instead of being refused.
            del data["vllm_version"]
        return data

    def model_spec(self) -> ModelSpec:
        """The model, its KV cache stored as `kv_cache_dtype` says (auto: as the model file says)."""
        model = resolve_model(self.model)
        if self.kv_cache_dtype == "auto":
            return model
        return dataclasses.replace(model, kv_dtype=KV_CACHE_DTYPE_BYTES_NAME[self.kv_cache_dtype])

    def memory_plan(self) -> MemoryPlan:
        """How vLLM would divide each GPU's memory for this scenario; its KV cache is this engine's pool."""
        engine = self.engine
        plan = plan_memory(
            self.model_spec(), resolve_gpu(self.gpu), self.tensor_parallel_size, self.gpu_memory_utilization,
            engine.block_size, engine.max_num_batched_tokens, engine.max_num_seqs, engine.max_model_len,
            # The naive loop runs without CUDA graphs, so it reserves no graph memory either.
            self.enforce_eager or engine.policy == "naive", data_parallel_size=self.data_parallel_size,
            enable_expert_parallel=self.enable_expert_parallel,
            max_concurrent_batches=2 if engine.async_scheduling else 1, hybrid_kv_cache_manager=engine.is_hybrid,
            vllm_version=self.vllm_version,
        )
        return dataclasses.replace(plan, num_gpu_blocks=engine.num_gpu_blocks, notes=startup_notes(engine))

    def cost_model(self) -> CostModel:
        """One engine core's step time (one DP rank's, its MoE layers spread over TP x DP GPUs)."""
        tp = self.tensor_parallel_size
        return CostModel(self.model_spec(), resolve_gpu(self.gpu), tp,
                         placement=ExpertPlacement(tp, self.data_parallel_size, self.enable_expert_parallel),
                         vllm_version=self.vllm_version)

    def build_workload(self) -> Workload:
        if self.trace.endswith((".json", ".json.gz")):
            # A recorded-vLLM trace: arrivals by step, exactly as vLLM saw them.
            return workload_from_trace(load_trace(self.trace))
        if self.trace:
            return load_trace_workload(self.trace, self.engine.max_model_len, self.workload.num_requests)
        return build_workload(self.workload, self.engine.max_model_len)

    def build(self, keep_finished: bool = True) -> Simulation:
        if self.data_parallel_size > 1:
            raise ConfigError("data_parallel_size", (
                f"{self.data_parallel_size} data-parallel ranks are {self.data_parallel_size} engine cores, not one "
                "engine: run them as a fleet of ranks (`servescope run` on the command line, or POST /api/fleet with "
                "the scenario and 1 replica)"))
        workload = self.build_workload()
        return Simulation(
            self.engine, workload, self.cost_model(), keep_finished=keep_finished,
            slo=SLO(self.slo_ttft_s, self.slo_tpot_s), api_server=self.api_server(workload),
        )

    def api_server(self, workload: Workload | None = None) -> APIServer | None:
        """The API server in front of a served run (each replica of a fleet has its own); None offline,
        and for a recorded vLLM trace, whose requests reached the engine at the steps it logged."""
        if self.entrypoint != "serve" or (workload is not None and workload.arrivals_by_step):
            return None
        return APIServer(self.api_server_count)


SCENARIO_SETTINGS = settings_of(Scenario)
SCENARIO_BOUNDS = bounds_of(Scenario)
# Older names that scenario files used, each under the vLLM name that replaced it.
SCENARIO_ALIASES = {name: s.field_aliases for name, s in SCENARIO_SETTINGS.items() if s.field_aliases}
# What a scenario's top level may hold: its fields, under their names or older ones.
TOP_LEVEL_KEYS = {f.name for f in dataclasses.fields(Scenario)} | {a for names in SCENARIO_ALIASES.values() for a in names}
ENGINE_ALIASES = {"num_gpu_blocks": ("num_gpu_blocks_override",), "scheduling_order": ("scheduling_policy",)}


def normalize_aliases(data: dict) -> dict:
    """A copy of a scenario's data with vLLM's argument names and older servescope names folded
    into one field each; both spellings at once must agree."""
    data = dict(data)
    for table, target in ((SCENARIO_ALIASES, data), (ENGINE_ALIASES, None)):
        if target is None:
            if not isinstance(data.get("engine"), dict):
                continue
            target = data["engine"] = dict(data["engine"])
        for name, aliases in table.items():
            for alias in aliases:
                if alias not in target:
                    continue
                value = target.pop(alias)
                if name in target and target[name] != value:
                    raise ConfigError(alias, f"conflicts with {name}={target[name]!r}; give one of the two")
                target[name] = value
    return data


# Starting points; `servescope run --scenario NAME` or a scenario file of your own.
PRESET_SCENARIOS: dict[str, dict] = {
    "default": {
        "description": "Llama-3.1-8B on one H200 at a small memory budget: 12 requests waiting at the start, "
                       "then 6 a second, 120 in all: chunked prefill, prefix caching and a few preemptions.",
        "model": "llama-3.1-8b", "gpu": "h200",
        "engine": {"num_gpu_blocks": 896, "max_num_seqs": 64, "max_num_batched_tokens": 512},
        # The burst puts the engine to work from its first step (Poisson arrivals alone left it one
        # request for its first hundred steps, 5 s of play at 20 steps/s).
        "workload": {"num_requests": 120, "initial_burst": 12, "arrival_rate": 6.0, "lengths": "sharegpt",
                     "shared_prefix_len": 96, "num_shared_prefixes": 3, "seed": 1},
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
        "model": "llama-3.3-70b", "gpu": "h100-sxm", "tensor_parallel_size": 4,
        "engine": {"max_num_batched_tokens": 8192},
        "workload": {"num_requests": 1000, "concurrency": 64, "lengths": "azure-conversation"},
    },
    "qwen-7b-l40s-sharegpt-128": {
        "description": "Qwen2.5-7B on one L40S, ShareGPT lengths, 128 concurrent clients.",
        "model": "qwen2.5-7b", "gpu": "l40s",
        "workload": {"num_requests": 1000, "concurrency": 128, "lengths": "sharegpt"},
    },
    # Hybrids: vLLM 0.33's KV cache groups, derived from the model (kv_cache_wiring.py).
    "gpt-oss-120b-h200-sharegpt": {
        "description": "gpt-oss-120b on one H200 (sliding window 128 on half its layers: two KV cache groups), "
                       "ShareGPT lengths, 256 concurrent clients.",
        "model": "gpt-oss-120b", "gpu": "h200", "engine": {"max_model_len": 32768},
        "workload": {"num_requests": 1000, "concurrency": 256, "lengths": "sharegpt"},
    },
    "qwen3-next-h200-tp4-sharegpt": {
        "description": "Qwen3-Next-80B-A3B over 4 H200s (gated DeltaNet in 3 of 4 layers: Mamba groups, 272-token "
                       "blocks), ShareGPT lengths at 10 requests/s; prefix caching off (vLLM's align mode is not modelled).",
        "model": "qwen3-next-80b-a3b", "gpu": "h200", "tensor_parallel_size": 4,
        "engine": {"max_model_len": 32768, "enable_prefix_caching": False},
        "workload": {"num_requests": 1000, "arrival_rate": 10.0, "lengths": "sharegpt"},
    },
}


BATCH_LIMITS = ("max_num_seqs", "max_num_batched_tokens")


def named_release(data: dict) -> VllmRelease | None:
    """The release a scenario names (`vllm_version`), checked; None when it names none."""
    return VllmRelease.for_version(data["vllm_version"]) if data.get("vllm_version") is not None else None


def v0_swap_refusal(release: VllmRelease, data: dict, engine: dict) -> tuple[str, str] | None:
    """(field, reason) when this release's `vllm serve` refuses the scenario's V0 swap settings, or None."""
    given = {"swap_space": ("--swap-space", bool(data.get("swap_space"))),
             "engine.preemption_mode": ("--preemption-mode", engine.get("preemption_mode") == "swap")}
    for field_name, (flag, used) in given.items():
        if used and (reason := release.flag_refusal(flag)):
            return field_name, reason
    return None


def apply_release(data: dict, engine: dict) -> VllmRelease:
    """Write the named release's rule switches under `engine`'s own (those given win) and refuse what
    that release's `vllm serve` would not take; returns the release that applies. A scenario naming no
    release keeps servescope's own engine, which still offers V0's swap preemption."""
    release = named_release(data)
    if release is not None:
        compat = engine.get("compat", {})
        if isinstance(compat, dict):
            engine["compat"] = {**release.compat.__dict__, **compat}
        if refusal := v0_swap_refusal(release, data, engine):
            raise ConfigError(*refusal)
    release = release or implied_release(engine)
    spec = engine.get("speculative_config")
    if isinstance(spec, dict) and "num_speculative_tokens_per_batch_size" in spec:
        reason = release.flag_refusal("num_speculative_tokens_per_batch_size")
        raise ConfigError("engine.speculative_config.num_speculative_tokens_per_batch_size", reason)
    return release


def vllm_batch_defaults(data: dict, engine: dict, release: VllmRelease | None = None) -> dict:
    """vLLM's defaults for the batch limits `engine` leaves open, on the GPU `data` names; none for
    vllm-v0 and static (the "before" pictures) or a GPU given by its spec."""
    if engine.get("policy", "vllm-v1") != "vllm-v1" or not isinstance(data.get("gpu", Scenario.gpu), str):
        return {}
    gpu = resolve_gpu(data.get("gpu", Scenario.gpu))
    return vllm_default_batch_limits(engine, gpu.name, gpu.mem_bytes, release or named_release(data))


def with_vllm_defaults(data: dict) -> dict:
    """The scenario with the settings it leaves open set as vLLM would for its version and GPU:
    `gpu_memory_utilization`, the batch limits (`max_num_seqs`, `max_num_batched_tokens`) and
    `async_scheduling`. This is what `run`, `compare` and the dashboard simulate; lessons and
    replays pin their settings instead. vllm-v0 and static, the "before" pictures, keep
    `EngineConfig`'s defaults. A new dict: the caller's (a preset's, say) is left as it was."""
    engine = data.get("engine", {})
    if not isinstance(engine, dict):
        return data  # `from_dict` names the field
    data, engine = dict(data), dict(engine)
    data["engine"] = engine
    release = named_release(data) or implied_release(engine)
    data.setdefault("gpu_memory_utilization", release.gpu_memory_utilization)
    engine.update(vllm_batch_defaults(data, engine, release))
    if "async_scheduling" not in engine:
        engine["async_scheduling"] = vllm_default_async_scheduling(engine, release)
    return data

