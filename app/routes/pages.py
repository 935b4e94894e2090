"""The dashboard page. Opening `/` starts a session (the URL's query picks the scenario) and
hands its control link to whoever opened it; `/s/ID/view` is the read-only link to share."""

from __future__ import annotations

import json

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from scheduler_core.lesson_catalog import LESSONS
from scheduler_core.scenario import PRESET_SCENARIOS

from ..schemas import SessionCreate
from .api import lesson_arm, live_session, manager_of, scenario_from

router = APIRouter()


@router.get("/", include_in_schema=False)
def index(request: Request, scenario: str = "", seed: int | None = None, config: str = "", lesson: str = "",
          arm: str = "") -> RedirectResponse:
    """A new session: `?scenario=PRESET&seed=N`, `?lesson=NAME&arm=ARM`, or `?config=<scenario JSON>`."""
    try:
        if lesson:
            body = SessionCreate(lesson=lesson, arm=arm or None, seed=seed)
        elif config:
            body = SessionCreate.model_validate({"scenario": json.loads(config), "seed": seed})
        else:
            body = SessionCreate(preset=scenario or request.app.state.settings.default_scenario, seed=seed)
    except (ValueError, json.JSONDecodeError) as e:
        raise HTTPException(422, f"bad scenario in the URL: {e}") from None
    live = manager_of(request).create(scenario_from(body), lesson_arm(body))
    session = live.session
    return RedirectResponse(f"/s/{session.session_id}?token={session.control_token}", status_code=303)


def render(request: Request, session_id: str, token: str) -> HTMLResponse:
    live = live_session(request, session_id)
    can_control = bool(token) and token == live.session.control_token
    return request.app.state.templates.TemplateResponse(
        request,
        "dashboard.html",
        {
            "session_id": session_id,
            "token": token if can_control else "",
            "can_control": can_control,
            "presets": {name: data["description"] for name, data in PRESET_SCENARIOS.items()},
            "lessons": {lesson.name: lesson.title for lesson in LESSONS},
            "current_lesson": live.session.lesson[0] if live.session.lesson else "",
            "scenario_name": live.session.scenario.name,
        },
    )


@router.get("/s/{session_id}", include_in_schema=False)
def control_page(request: Request, session_id: str, token: str = "") -> HTMLResponse:
    return render(request, session_id, token)


@router.get("/s/{session_id}/view", include_in_schema=False)
def view_page(request: Request, session_id: str) -> HTMLResponse:
    return render(request, session_id, "")



