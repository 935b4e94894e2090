"""The lab's compare page (`/lab?exercise=N`) and its two sessions, on a server started with
`serve --policy-file FILE` only (`policy_file.attach_policy` adds these routes). No request names a
file or any code: the student's scheduler is the one object the server loaded at startup, and a
request chooses only a side ("yours" or "vllm") of the exercise that server shows."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import Field

from scheduler_core.lab.exercises import EXERCISES

from ..checkpoints import MemoryBudgetSpent
from ..rate_limits import limit, scenario_cost
from ..schemas import SessionCreated, Strict
from .api import client_of, manager_of, session_urls

router = APIRouter()


class LabSessionCreate(Strict):
    """One side of the lab's comparison."""

    exercise: int = Field(ge=1, le=len(EXERCISES))
    side: Literal["yours", "vllm"]


def policy_for(request: Request, number: int, where: str):
    """The server's `policy_file.LabPolicy`, if it shows exercise `number` (a 404 naming `where`'s field if not)."""
    policy = request.app.state.lab_policy
    if number != policy.exercise.number:
        raise HTTPException(404, [{"loc": [where, "exercise"], "msg": (
            f"this server shows exercise {policy.exercise.number} (serve --policy-file FILE --exercise N chooses it)")}])
    return policy


@router.get("/lab", include_in_schema=False)
def lab_page(request: Request, exercise: int | None = Query(default=None, ge=1, le=len(EXERCISES))) -> HTMLResponse:
    """Your scheduler (A) beside vLLM's (B); the page creates the two sessions with a POST each."""
    policy = policy_for(request, exercise or request.app.state.lab_policy.exercise.number, "query")
    number = policy.exercise.number
    sides = [(f"your scheduler ({policy.file_name})", "yours"), (policy.exercise.reference_name, "vllm")]
    return request.app.state.templates.TemplateResponse(request, "compare.html", {
        "sides": [{"label": label, "create": LabSessionCreate(exercise=number, side=side).model_dump_json(),
                   "create_url": "/api/lab/sessions"} for label, side in sides],
        "title": f"lab exercise {number}: {policy.exercise.title}",
        "lab": policy.page_context(),
    })


@router.post("/api/lab/sessions", status_code=201)
def create_lab_session(body: LabSessionCreate, request: Request) -> SessionCreated:
    policy = policy_for(request, body.exercise, "body")
    scenario = policy.scenario(body.side)
    manager = manager_of(request)
    manager.check_limits(scenario)
    limit(request, "session", scenario_cost(scenario, request.app.state.settings))
    try:
        live = manager.create(scenario, owner=client_of(request), sim=policy.simulation(body.side))
    except MemoryBudgetSpent as spent:
        raise HTTPException(503, str(spent), headers={"Retry-After": "60"}) from None
    return session_urls(request, live)
