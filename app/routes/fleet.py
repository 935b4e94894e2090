"""Fleet and sweep pages and their API. A fleet or a sweep runs to the end while its POST waits, in a
worker process (`app.workers`: off the event loop, within a budget of time and bytes, a few at a
time), within fixed bounds (replicas, requests, points), and returns data: it keeps nothing on the server. The
one exception is opening a replica's single-engine panels, which creates a session like any other.
Nothing here names a file: sweep results come from a sweep the page submits, or from a file the
browser reads itself."""

from __future__ import annotations

import json
import math

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from scheduler_core.cluster.replica_view import ReplicaScenario
from scheduler_core.cluster.scenario import ClusterScenario
from scheduler_core.errors import ConfigError
from scheduler_core.lessons.fleet import FLEET_LESSONS_BY_NAME
from scheduler_core.scenario.scenario import PRESET_SCENARIOS
from scheduler_core.sweep import Sweep
from scheduler_core.sweep.grid import build_run

from ..frames import finite
from ..rate_limits import limit
from ..schemas import (
    MAX_FLEET_REPLICAS,
    MAX_FLEET_REQUESTS,
    MAX_SWEEP_POINTS,
    MAX_SWEEP_REQUESTS,
    SWEEP_FIELDS,
    FleetCreate,
    ReplicaSessionCreate,
    ScenarioModel,
    SessionCreate,
    SweepCreate,
)
from ..workers import worker_result
from .api import manager_of, named_lesson, new_session, scenario_from, session_urls

router = APIRouter()


def fleet_data(body: FleetCreate) -> dict:
    """The fleet's scenario data, checked by the same path as every web scenario, within bounds."""
    scenario = scenario_from(SessionCreate(preset=body.preset, scenario=body.scenario, seed=body.seed)
                             if body.preset or body.scenario else SessionCreate(seed=body.seed))
    if scenario.workload.num_requests > MAX_FLEET_REQUESTS:
        raise HTTPException(422, [{"loc": ["body", "scenario", "workload", "num_requests"],
                                   "msg": f"a fleet on the web runs at most {MAX_FLEET_REQUESTS} requests"}])
    if scenario.data_parallel_size > MAX_FLEET_REPLICAS:  # each DP rank is an engine of the fleet
        raise HTTPException(422, [{"loc": ["body", "scenario", "data_parallel_size"],
                                   "msg": f"a fleet on the web runs at most {MAX_FLEET_REPLICAS} engines"}])
    if scenario.trace:
        raise HTTPException(422, [{"loc": ["body", "preset"], "msg": "a fleet on the web needs a synthetic workload"}])
    return {**scenario.to_dict(), "cluster": body.cluster.to_cluster_dict()}


def check_pools(fleet: ClusterScenario, request: Request) -> ClusterScenario:
    """Every replica within a session's limits (its KV blocks above all: they are memory)."""
    manager = manager_of(request)
    for pool in (fleet.prefill, fleet.decode) if fleet.disaggregated else (fleet.scenario,):
        manager.check_limits(pool)
    return fleet


def fleet_of(body: FleetCreate) -> ClusterScenario:
    if body.lesson is not None:
        lesson, arm = named_lesson(FLEET_LESSONS_BY_NAME, body.lesson, body.arm, kind="fleet lesson")
        return lesson.scenario(arm)
    data = fleet_data(body)
    return ClusterScenario.from_dict(data, data["name"])


@router.get("/fleet", include_in_schema=False)
def fleet_page(request: Request) -> HTMLResponse:
    return request.app.state.templates.TemplateResponse(request, "fleet.html", {
        "presets": {name: data["description"] for name, data in PRESET_SCENARIOS.items()},
        "lessons": {lesson.name: {"title": lesson.title, "summary": lesson.summary, "arms": list(lesson.arms)}
                    for lesson in FLEET_LESSONS_BY_NAME.values()},
        "served": hasattr(request.app.state, "served_fleet"),  # serve --openai: its replicas, live (app/openai/fleet_view.py)
    })


@router.post("/api/fleet")
async def run_fleet(body: FleetCreate, request: Request) -> dict:
    """Run a fleet to the end, in a worker process: per-replica frames (queues, KV gauge, small KV
    grid), the router's and the link's events, and the fleet's metrics; for a lesson's arm, its beats."""
    fleet = await run_in_threadpool(lambda: check_pools(fleet_of(body), request))
    if body.lesson is None:
        limit(request, "fleet")
        return await worker_result(request, {"kind": "fleet", "fleet": fleet.to_dict()})
    # A lesson's arm also tells its story (every arm runs, for the closing beat); its runs never
    # change, so each is computed once per server.
    lesson, arm = named_lesson(FLEET_LESSONS_BY_NAME, body.lesson, body.arm, kind="fleet lesson")
    cache = request.app.state.fleet_lesson_cache
    if (lesson.name, arm) not in cache:
        limit(request, "fleet")
        cache[lesson.name, arm] = await worker_result(request, {"kind": "fleet", "fleet": fleet.to_dict(),
                                                                "lesson": [lesson.name, arm]})
    return cache[lesson.name, arm]


@router.post("/api/fleet/replica", status_code=201)
def replica_session(body: ReplicaSessionCreate, request: Request):
    """A single-engine session of one replica: the requests the router sent it, through a lone engine."""
    limit(request, "session")
    scenario = ReplicaScenario.of(check_pools(fleet_of(body), request), body.replica)
    return session_urls(request, new_session(request, scenario))


@router.get("/sweep", include_in_schema=False)
def sweep_page(request: Request) -> HTMLResponse:
    return request.app.state.templates.TemplateResponse(request, "sweep.html", {
        "presets": {name: data["description"] for name, data in PRESET_SCENARIOS.items()},
        "fields": SWEEP_FIELDS, "max_points": MAX_SWEEP_POINTS,
    })


@router.post("/api/sweep")
async def run_web_sweep(body: SweepCreate, request: Request) -> dict:
    """Run a bounded sweep one point after another, in a worker process; its rows in grid order."""
    limit(request, "sweep")
    base, sweep = await run_in_threadpool(checked_sweep, body, request)
    rows = await worker_result(request, {"kind": "sweep", "sweep": {**base, "sweep": sweep.axes}, "name": sweep.name})
    return {**rows, **finite({"slo_ttft_s": base.get("slo_ttft_s"), "slo_tpot_s": base.get("slo_tpot_s")})}


@router.post("/api/sweep/check")
def check_web_sweep(body: SweepCreate, request: Request) -> dict:
    """The sweep Run would submit, checked and not run (the same path): the sweep page names the
    fields wrong as they are typed, and clears its banner once none is."""
    limit(request, "validate")
    return {"points": len(checked_sweep(body, request)[1].points())}


def axis_errors(body: SweepCreate, base: dict) -> list[dict]:
    """What is wrong with each axis on its own: every wrong axis named at once, not the first only
    (fixing one field must not leave the banner silent about the next)."""
    errors = []
    for field, values in body.axes.items():
        if field == "cluster.replicas":
            if not all(type(value) is int and 1 <= value <= MAX_FLEET_REPLICAS for value in values):
                errors.append({"loc": ["body", "axes", field], "msg": f"replicas are integers from 1 to {MAX_FLEET_REPLICAS}"})
            continue
        try:
            Sweep.from_dict({**base, "sweep": {field: values}}, name=base["name"], max_points=MAX_SWEEP_POINTS)
        except ConfigError as e:
            errors.append({"loc": ["body", "axes", e.field.removeprefix("sweep.")], "msg": e.reason})
    return errors


def checked_sweep(body: SweepCreate, request: Request) -> tuple[dict, Sweep]:
    """The sweep's base scenario and grid, every point checked like a scenario typed in the form."""
    base = fleet_data(FleetCreate(preset=body.preset, scenario=body.scenario, seed=body.seed,
                                  cluster=body.cluster or {"replicas": 1}))
    if body.cluster is None:
        del base["cluster"]
    if body.slo_ttft_ms:
        base["slo_ttft_s"] = body.slo_ttft_ms / 1e3
    if body.slo_tpot_ms:
        base["slo_tpot_s"] = body.slo_tpot_ms / 1e3
    errors = axis_errors(body, base)
    num_points = math.prod(len(values) for values in body.axes.values())
    if num_points > MAX_SWEEP_POINTS:
        errors.append({"loc": ["body", "axes"], "msg": f"the grid has {num_points} points; at most {MAX_SWEEP_POINTS}"})
    if errors:
        raise HTTPException(422, errors)
    try:
        sweep = Sweep.from_dict({**base, "sweep": dict(body.axes)}, name=base["name"], max_points=MAX_SWEEP_POINTS)
    except ConfigError as e:  # a swept value the core refuses: point at the axis that holds it
        raise HTTPException(422, [{"loc": ["body", "axes", e.field.removeprefix("sweep.")], "msg": e.reason}]) from None
    total_requests = 0
    for point in sweep.points():
        # Every point again through the web schema: a swept value is checked like a typed one.
        # Only what the web form can set: the base's other fields (no SLO is inf, defaults the
        # schema does not offer) were made by the server, not typed.
        data = {k: v for k, v in point.data.items() if k in ScenarioModel.model_fields
                and not (k.startswith("slo_") and not math.isfinite(v))}
        try:
            ScenarioModel.model_validate(json.loads(json.dumps(data)))
        except ValidationError as e:
            raise HTTPException(422, [{"loc": ["body", "axes", *map(str, err["loc"])], "msg": err["msg"]}
                                      for err in e.errors(include_input=False)]) from None
        total_requests += point.data["workload"]["num_requests"]
        run = build_run(point.data, sweep.name)
        try:
            check_pools(run, request) if isinstance(run, ClusterScenario) else manager_of(request).check_limits(run)
        except ConfigError as e:
            raise HTTPException(422, [{"loc": ["body", "axes"], "msg": f"point {point.values}: {e}"}]) from None
    if total_requests > MAX_SWEEP_REQUESTS:
        raise HTTPException(422, [{"loc": ["body", "axes"], "msg": f"the sweep simulates {total_requests} requests "
                                   f"in all; at most {MAX_SWEEP_REQUESTS}"}])
    return base, sweep
