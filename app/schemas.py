"""Request and response shapes of the API. The scenario, engine, speculative-decoding and workload
models are made from the core's declarations (`model_of`: `Scenario`, `EngineConfig`,
`SpeculativeConfig`, `WorkloadConfig`), and a fleet's pool from the same declarations under the
web's fleet budget, so they agree field for field; their JSON Schema, served at /api/schema, is what
the dashboard builds its configuration form from."""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, create_model

from scheduler_core.bounds import Setting, settings_of
from scheduler_core.engine.config import ENGINE_SETTINGS, EngineConfig, VllmCompat
from scheduler_core.engine.spec_decode import SpeculativeConfig
from scheduler_core.errors import ConfigError
from scheduler_core.files import parse_json
from scheduler_core.scenario.scenario import SCENARIO_BOUNDS, SCENARIO_SETTINGS, Scenario
from scheduler_core.workload.workload import WORKLOAD_BOUNDS, WorkloadConfig


class Strict(BaseModel):
    """Unknown fields are errors; numbers are finite (the web has no use for inf or NaN)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# A preset's, lesson's or arm's name, or a swept word (a policy, a GPU): short, and plain ASCII,
# so it can be written back into any message, page or URL.
Name = Annotated[str, Field(max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")]
Seed = Annotated[int, Field(**WORKLOAD_BOUNDS["seed"].field_constraints())]


def field_of(declared: Setting, kind: object = None) -> tuple[object, object]:
    """A declared setting as a pydantic field: its type (or `kind`, a nested table's model), default,
    bound, choices, older names and help; a setting the web leaves open to the server is empty by
    default, and a list setting is a list of bounded items."""
    choices = declared.web_choices or declared.choices
    kind = kind or (Literal[choices] if choices else declared.type)
    if typing.get_origin(declared.type) is tuple:  # a list setting: its length, each item within its bound
        item = Annotated[typing.get_args(declared.type)[0], Field(**declared.bound.field_constraints())]
        kind, constraints = list[item], {"default_factory": list, "min_length": int(declared.length.low),
                                         "max_length": int(declared.length.high)}
    else:
        constraints = {"default": None if declared.left_open else declared.default,
                       **(declared.bound.field_constraints() if declared.bound else {})}
    if declared.left_open:
        kind = kind | None
    if declared.max_chars is not None and not choices:
        constraints["max_length"] = declared.max_chars
    if declared.field_aliases:
        constraints["validation_alias"] = AliasChoices(declared.name, *declared.field_aliases)
    description = declared.help[:1].upper() + declared.help[1:]
    return kind, Field(**constraints, description=description)


def model_of(name: str, config: type, nested: dict[str, object] | None = None, doc: str | None = None) -> type[BaseModel]:
    """The pydantic model of a core config dataclass, made from its declared settings (`bounds.setting`):
    the same fields in the same order, but those declared `web=False`. `nested` gives the model of each
    nested table."""
    nested = nested or {}
    settings = settings_of(config)
    fields = {}
    for f in dataclasses.fields(config):
        declared = settings.get(f.name)
        if declared is None:  # a nested table without a declaration of its own: its model's defaults
            fields[f.name] = (nested[f.name], Field(default_factory=nested[f.name]))
        elif declared.web:
            fields[f.name] = field_of(declared, nested.get(f.name))
    return create_model(name, __base__=Strict, __doc__=doc, **fields)


SpeculativeModel = model_of("SpeculativeModel", SpeculativeConfig)
CompatModel = model_of("CompatModel", VllmCompat,
                       doc="vLLM behaviours that changed between 0.10.1.1 (all false) and 0.33.0 (all true).")
EngineModel = model_of("EngineModel", EngineConfig, {"compat": CompatModel, "speculative_config": SpeculativeModel | None})


WorkloadModel = model_of("WorkloadModel", WorkloadConfig)


class ScenarioModel(model_of("ScenarioSettings", Scenario, {"engine": EngineModel, "workload": WorkloadModel})):
    """A scenario as the web may give it: `Scenario`'s settings but the trace and enforce_eager."""

    def to_scenario_dict(self) -> dict:
        data = self.model_dump(exclude_none=True)
        data["engine"] = {k: v for k, v in data["engine"].items() if v is not None}
        return data


class SessionCreate(Strict):
    """A preset by name, a guided lesson's arm, or a full scenario; `seed` overrides the workload's seed."""

    preset: Name | None = None
    lesson: Name | None = None
    arm: Name | None = None
    scenario: ScenarioModel | None = None
    seed: Seed | None = None

    def origin_query(self) -> str:
        """The URL query that creates this same run again (`/?<query>`)."""
        from urllib.parse import urlencode

        if self.lesson is not None:
            params = {"lesson": self.lesson, "arm": self.arm}
        elif self.scenario is not None:
            params = {"config": self.scenario.model_dump_json(exclude_defaults=True)}
        else:
            params = {"scenario": self.preset or "default"}
        if self.seed is not None:
            params["seed"] = self.seed
        return urlencode({k: v for k, v in params.items() if v is not None})


# A scenario in a URL (`/?config=`): URLs of a few kilobytes are what browsers and servers pass along.
MAX_CONFIG_CHARS = 16 * 1024


def scenario_json(text: str) -> object:
    """A scenario written as JSON in a URL, parsed within the budget of a scenario file's JSON."""
    if len(text) > MAX_CONFIG_CHARS:
        raise ConfigError("config", f"at most {MAX_CONFIG_CHARS:,} characters, got {len(text):,}")
    return parse_json(text, "config")


class SessionCreated(BaseModel):
    session_id: str
    control_token: str
    view_url: str
    control_url: str
    websocket_url: str


class SessionInfo(BaseModel):
    session_id: str
    scenario: dict
    step: int
    clock_s: float
    done: bool
    playing: bool
    viewers: int
    num_requests: int


# -- fleets and sweeps ------------------------------------------------------------------------
from scheduler_core.cluster import LINKS, ROUTER_POLICIES  # noqa: E402

# What one web request may simulate: a fleet runs to the end inside the request.
MAX_FLEET_REPLICAS = 8
MAX_FLEET_REQUESTS = 2_000
MAX_SWEEP_POINTS = 24
MAX_SWEEP_REQUESTS = 12_000  # summed over the points


def pool_field(declared: Setting, high: int | None = None) -> tuple[object, object]:
    """A pool's setting: its scenario or engine declaration, empty by default (the scenario's value),
    and at most `high`, within what one web request may simulate."""
    bound = dataclasses.replace(declared.bound, high=high) if high is not None else declared.bound
    return field_of(dataclasses.replace(declared, bound=bound, left_open=True))


class PoolShape(Strict):
    """One side of a disaggregated fleet: its replicas, GPU, TP and token budget."""

    replicas: int = Field(1, ge=1, le=4)

    def to_pool_dict(self) -> dict:
        pool = self.model_dump(include={"replicas", "gpu", "tensor_parallel_size"}, exclude_none=True)
        engine = self.model_dump(include={"max_num_seqs", "max_num_batched_tokens"}, exclude_none=True)
        return {**pool, "engine": engine} if engine else pool


PoolModel = create_model(
    "PoolModel", __base__=PoolShape, __doc__=PoolShape.__doc__, gpu=pool_field(SCENARIO_SETTINGS["gpu"]),
    tensor_parallel_size=pool_field(SCENARIO_SETTINGS["tensor_parallel_size"], 8),
    max_num_seqs=pool_field(ENGINE_SETTINGS["max_num_seqs"], 4096),
    max_num_batched_tokens=pool_field(ENGINE_SETTINGS["max_num_batched_tokens"], 65_536))


class ClusterModel(Strict):
    """Colocated replicas behind a router, or (with `prefill` and `decode`) two pools joined by a link."""

    replicas: int = Field(2, ge=1, le=MAX_FLEET_REPLICAS)
    router: Literal[ROUTER_POLICIES] = "round-robin"  # type: ignore[valid-type]
    decode_router: Literal[ROUTER_POLICIES] = "least-requests"  # type: ignore[valid-type]
    link: Literal[tuple(LINKS)] = "infiniband"  # type: ignore[valid-type]
    prefill: PoolModel | None = None
    decode: PoolModel | None = None

    def to_cluster_dict(self) -> dict:
        if self.prefill is None and self.decode is None:
            return {"replicas": self.replicas, "router": self.router}
        return {"router": self.router, "decode_router": self.decode_router, "link": self.link,
                "prefill": (self.prefill or PoolModel()).to_pool_dict(), "decode": (self.decode or PoolModel()).to_pool_dict()}


class FleetCreate(Strict):
    """A fleet run: a preset or a scenario, a cluster, and optionally the workload's seed."""

    preset: Name | None = None
    scenario: ScenarioModel | None = None
    cluster: ClusterModel = Field(default_factory=ClusterModel)
    seed: Seed | None = None
    # A fleet lesson's arm instead (its scenario and cluster are the lesson's).
    lesson: Name | None = None
    arm: Name | None = None


class ReplicaSessionCreate(FleetCreate):
    """A single-engine session of one colocated or prefill replica of a fleet."""

    replica: str = Field(pattern=r"^(replica|prefill)-[0-9]{1,2}$")


# The scenario fields a web sweep may vary (never a file: no trace, no model file).
SWEEP_FIELDS = (
    "engine.max_num_seqs", "engine.max_num_batched_tokens", "engine.num_gpu_blocks", "engine.enable_chunked_prefill",
    "engine.enable_prefix_caching", "engine.policy", "engine.long_prefill_token_threshold", "workload.arrival_rate",
    "workload.concurrency", "workload.num_requests", "workload.seed", "gpu", "tp", "cluster.replicas", "cluster.router",
)


# A swept integer: the core bounds each field; this keeps a thousand-digit number out of its messages.
SweptInt = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class SweepCreate(FleetCreate):
    """A sweep the sweep page submits: `axes` maps fields of SWEEP_FIELDS to lists of values."""

    cluster: ClusterModel | None = None
    axes: dict[Literal[SWEEP_FIELDS], Annotated[list[float | SweptInt | bool | Name],  # type: ignore[valid-type]
                                                Field(min_length=1, max_length=MAX_SWEEP_POINTS)]] = Field(
        min_length=1, max_length=3)
    # As the scenario's slo_*_s, in milliseconds.
    slo_ttft_ms: float | None = Field(None, gt=0, le=SCENARIO_BOUNDS["slo_ttft_s"].high * 1e3)
    slo_tpot_ms: float | None = Field(None, gt=0, le=SCENARIO_BOUNDS["slo_tpot_s"].high * 1e3)
