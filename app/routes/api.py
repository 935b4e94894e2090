"""REST: presets, the config schema, sessions (create, inspect, delete), their requests and steps
(the exports are in `exports.py`)."""

from __future__ import annotations

import json

from fastapi import APIRouter, Header, HTTPException, Request, Response

from scheduler_core.lessons.catalog import LESSONS, LESSONS_BY_NAME
from scheduler_core.lessons.check_yourself import check_yourself
from scheduler_core.lessons.framework import claims_slide, story
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario, with_vllm_defaults
from scheduler_core.sim.capacity import KVCapacity
from scheduler_core.timing.model_summary import model_summary
from scheduler_core.timing.moe import ExpertPlacement
from scheduler_core.timing.presets import resolve_gpu

from ..checkpoints import MemoryBudgetSpent
from ..frames import finite
from ..live import LiveSession
from ..rate_limits import limit, scenario_cost
from ..schemas import ScenarioModel, SessionCreate, SessionCreated, SessionInfo
from ..session_manager import SessionManager
from ..why import step_reasons

router = APIRouter(prefix="/api")
# The engine settings a scenario may leave for the server to derive from the model and hardware.
DERIVED_ENGINE_SETTINGS = ("num_gpu_blocks", "kv_cache_groups", "block_size", "enable_prefix_caching")


def manager_of(request: Request) -> SessionManager:
    return request.app.state.manager


def client_of(request: Request) -> str:
    """The caller's address: a session's owner, for per-client quotas and listings on a public server."""
    return request.client.host if request.client else ""


def live_session(request: Request, session_id: str) -> LiveSession:
    live = manager_of(request).get(session_id)
    if live is None:
        raise HTTPException(404, f"no session {session_id!r} (it may have expired)")
    return live


def named_lesson(catalog: dict, name: str, arm: str | None, kind: str = "lesson"):
    """The lesson `name` of `catalog` and its arm (the first if none is named), or a 422."""
    lesson = catalog.get(name)
    if lesson is None:
        raise HTTPException(422, [{"loc": ["body", "lesson"], "msg": f"unknown {kind} {name!r}"}])
    arm = arm or next(iter(lesson.arms))
    if arm not in lesson.arms:
        raise HTTPException(422, [{"loc": ["body", "arm"], "msg": f"lesson {lesson.name} has arms {list(lesson.arms)}"}])
    return lesson, arm


def lesson_arm(body: SessionCreate) -> tuple[str, str] | None:
    """(lesson, arm) named by the request, checked; None if it names no lesson."""
    if body.lesson is None:
        return None
    lesson, arm = named_lesson(LESSONS_BY_NAME, body.lesson, body.arm)
    return lesson.name, arm


def scenario_from(body: SessionCreate) -> Scenario:
    if sum(x is not None for x in (body.scenario, body.preset, body.lesson)) > 1:
        raise HTTPException(422, [{"loc": ["body", "preset"], "msg": "give one of a preset, a lesson or a scenario"}])
    if body.lesson is not None:
        name, arm = lesson_arm(body)
        scenario = LESSONS_BY_NAME[name].scenario(arm)
        if body.seed is not None:
            data = scenario.to_dict()
            scenario = Scenario.from_dict({**data, "workload": {**data["workload"], "seed": body.seed}})
        return scenario
    if body.scenario is not None:
        data = body.scenario.to_scenario_dict()
    else:
        name = body.preset or "default"
        if name not in PRESET_SCENARIOS:
            raise HTTPException(422, [{"loc": ["body", "preset"], "msg": f"unknown preset {name!r}"}])
        data = json.loads(json.dumps(PRESET_SCENARIOS[name]))
        data["name"] = name
    if body.seed is not None:
        data.setdefault("workload", {})["seed"] = body.seed
    return Scenario.from_dict(with_vllm_defaults(data))


def session_urls(request: Request, live: LiveSession) -> SessionCreated:
    sid, token = live.session.session_id, live.session.control_token
    base = str(request.base_url).rstrip("/")
    ws_base = base.replace("http", "ws", 1)
    return SessionCreated(
        session_id=sid, control_token=token, view_url=f"{base}/s/{sid}/view",
        # No token in any URL: URLs reach access logs, history and projected address bars. The
        # page that created the session keeps the token in its tab's sessionStorage.
        control_url=f"{base}/s/{sid}", websocket_url=f"{ws_base}/ws/{sid}",
    )


@router.get("/presets")
def presets() -> dict:
    return {name: {"description": data["description"], "scenario": data} for name, data in PRESET_SCENARIOS.items()}


@router.get("/lessons")
def lessons() -> list[dict]:
    return [{"name": lesson.name, "title": lesson.title, "arms": list(lesson.arms)} for lesson in LESSONS]


@router.get("/lessons/{name}")
def lesson_detail(name: str, request: Request) -> dict:
    """A lesson with its claims and table filled from running every arm, and each arm's questions to
    check yourself with (cached: runs are deterministic)."""
    lesson = LESSONS_BY_NAME.get(name)
    if lesson is None:
        raise HTTPException(404, f"no lesson {name!r}")
    cache = request.app.state.lesson_cache
    if name not in cache:
        results = lesson.run()
        cache[name] = finite({
            "name": lesson.name, "title": lesson.title, "summary": lesson.summary, "arms": list(lesson.arms),
            "stories": (stories := {arm: story(lesson, arm, results) for arm in lesson.arms}),
            "questions": {arm: check_yourself(beats, results[arm].events) for arm, beats in stories.items()},
            **claims_slide(lesson, results),
        })
    return cache[name]


@router.get("/schema")
def schema() -> dict:
    return ScenarioModel.model_json_schema()


@router.post("/scenarios/validate")
def validate_scenario(body: SessionCreate, request: Request) -> dict:
    """Check a configuration the way creating a session would, without creating one."""
    scenario = scenario_from(body)
    manager_of(request).check_limits(scenario)
    limit(request, "validate", scenario_cost(scenario, request.app.state.settings))
    sim = scenario.build(keep_finished=False)
    # vLLM's startup numbers for this configuration and the model's size, which the configuration form shows,
    # and whether the clients' conversations fit the KV cache at once.
    tp = scenario.tensor_parallel_size
    model = model_summary(scenario.model_spec(), resolve_gpu(scenario.gpu), tp,
                          ExpertPlacement(tp, scenario.data_parallel_size, scenario.enable_expert_parallel))
    # What the server derived for the settings a form leaves open, which it shows beside them.
    engine = {name: getattr(scenario.engine, name) for name in DERIVED_ENGINE_SETTINGS}
    plan = scenario.memory_plan()
    return {"ok": True, "num_gpu_blocks": scenario.engine.num_gpu_blocks, "memory": plan.to_dict(), "model": model,
            "engine": engine, "capacity": KVCapacity.of(sim.workload, sim.config, plan.kv_cache_size_tokens).to_dict()}


@router.post("/sessions", status_code=201)
def create_session(body: SessionCreate, request: Request) -> SessionCreated:
    scenario = scenario_from(body)
    manager_of(request).check_limits(scenario)  # too large is a 422, before it costs anything
    limit(request, "session", scenario_cost(scenario, request.app.state.settings))
    return session_urls(request, new_session(request, scenario, lesson_arm(body), body.origin_query()))


def new_session(request: Request, scenario: Scenario, lesson: tuple[str, str] | None = None, origin: str = "") -> LiveSession:
    """A session owned by the caller, or 503 when the server's memory budget has no room for it."""
    try:
        return manager_of(request).create(scenario, lesson, origin, client_of(request))
    except MemoryBudgetSpent as spent:
        raise HTTPException(503, str(spent), headers={"Retry-After": "60"}) from None


@router.get("/sessions")
def list_sessions(request: Request) -> list[SessionInfo]:
    """Every session; on a public server (`serve --public`) only the caller's own, so a stranger
    learns nothing of the others' ids, scenarios or viewers."""
    sessions = manager_of(request).sessions.values()
    if request.app.state.settings.public:
        sessions = [live for live in sessions if live.owner == client_of(request)]
    return [info(live) for live in sessions]


def info(live: LiveSession) -> SessionInfo:
    session = live.session
    return SessionInfo(
        session_id=session.session_id, scenario=finite(session.scenario.to_dict()), step=session.step,
        clock_s=session.sim.clock_s, done=session.done, playing=session.playing, viewers=len(live.viewers),
        num_requests=session.sim.num_requests,
    )


@router.get("/sessions/{session_id}")
def get_session(session_id: str, request: Request) -> SessionInfo:
    return info(live_session(request, session_id))


@router.delete("/sessions/{session_id}", status_code=204)
async def delete_session(session_id: str, request: Request, x_control_token: str = Header(default="")) -> Response:
    live = live_session(request, session_id)
    if not live.token_matches(x_control_token):
        raise HTTPException(403, "deleting a session needs its control token (X-Control-Token)")
    await manager_of(request).delete(session_id)
    return Response(status_code=204)


@router.get("/sessions/{session_id}/requests/{request_id}")
def get_request(session_id: str, request_id: str, request: Request, history: bool = False) -> dict:
    """One request at the session's current step: counters, latencies, timeline, block table, and
    with `?history=true` one row per step it ran (what the inspector lists while paused)."""
    detail = live_session(request, session_id).session.request_detail(request_id, history)
    if detail is None:
        raise HTTPException(404, f"no request {request_id!r} has arrived by this step")
    return finite(detail)


@router.get("/sessions/{session_id}/steps/{step}/why")
async def get_step_reasons(session_id: str, step: int, request: Request) -> Response:
    """The decision trace of one step already taken: its record and the reasons behind it (a
    replay in a worker unless asked before: counted against the limits, one at a time)."""
    live = live_session(request, session_id)
    answer = await step_reasons(request, live, step)
    if answer is None:
        raise HTTPException(404, f"step {step} has not been taken (the session is at step {live.session.step})")
    return Response(answer, media_type="application/json")
