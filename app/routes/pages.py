"""The dashboard page. Opening `/` starts a session (the URL's query picks the scenario) and
hands its control link to whoever opened it; `/s/ID/view` is the read-only link to share."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from scheduler_core.lesson_catalog import LESSONS, LESSONS_BY_NAME
from scheduler_core.scenario import PRESET_SCENARIOS, apply_assignments, parse_assignment

from ..schemas import SessionCreate
from .api import lesson_arm, manager_of, scenario_from

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
    live = manager_of(request).create(scenario_from(body), lesson_arm(body), body.origin_query())
    session = live.session
    return RedirectResponse(f"/s/{session.session_id}?token={session.control_token}&{session.origin}", status_code=303)


def render(request: Request, session_id: str, token: str) -> HTMLResponse:
    live = manager_of(request).get(session_id)
    if live is None:
        # An old link: its query still names the scenario, so offer to start the same run again.
        query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        return request.app.state.templates.TemplateResponse(
            request, "ended.html", {"session_id": session_id, "query": query}, status_code=404)
    can_control = live.token_matches(token)
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





@router.get("/compare", include_in_schema=False)
def compare_page(request: Request, lesson: str = "", a: str = "", b: str = "", scenario: str = "",
                 set_b: list[str] = Query(default=[])) -> HTMLResponse:
    """Two configurations on the same workload, side by side: a lesson's arms (`?lesson=NAME&a=ARM&b=ARM`),
    or a preset against itself with fields of B changed (`?scenario=NAME&set_b=policy=static`)."""
    manager = manager_of(request)
    if lesson:
        if lesson not in LESSONS_BY_NAME:
            raise HTTPException(404, f"no lesson {lesson!r}")
        arms = list(LESSONS_BY_NAME[lesson].arms)
        sides = [(a or arms[0], SessionCreate(lesson=lesson, arm=a or arms[0])),
                 (b or arms[1], SessionCreate(lesson=lesson, arm=b or arms[1]))]
        bodies = [(label, scenario_from(body), lesson_arm(body)) for label, body in sides]
    else:
        name = scenario or request.app.state.settings.default_scenario
        base = scenario_from(SessionCreate(preset=name))
        # B's changes go through the same schema as every web scenario, so they can only name
        # fields the web may set: never `trace` (a file on the server), never a model file.
        data = {**json.loads(json.dumps(PRESET_SCENARIOS[name])), "name": f"{name} with {', '.join(set_b) or 'no changes'}"}
        try:
            apply_assignments(data, [parse_assignment(text) for text in set_b])
            changed = scenario_from(SessionCreate.model_validate({"scenario": data}))
        except ValidationError as e:
            raise HTTPException(422, [{"loc": ["query", "set_b", *err["loc"][1:]], "msg": err["msg"]}
                                      for err in e.errors(include_input=False)]) from None
        bodies = [(name, base, None), (", ".join(set_b) or name, changed, None)]
    sessions = [(label, manager.create(scenario_, lesson_)) for label, scenario_, lesson_ in bodies]
    return request.app.state.templates.TemplateResponse(request, "compare.html", {
        "sides": [{"label": label, "session_id": live.session.session_id, "token": live.session.control_token}
                  for label, live in sessions],
        "title": lesson or name,
    })
