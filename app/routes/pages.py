"""The dashboard pages. No GET creates anything: `/` (its query names the scenario) is a page
that creates its session with a POST from the browser, which keeps the control token in the tab's
sessionStorage; `/s/ID/view` shows an existing session (with control when this tab holds its
token) and is the only address the page ever puts in the address bar or in a Share link."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from scheduler_core.lessons.catalog import LESSONS, LESSONS_BY_NAME
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, apply_assignments, parse_assignment

from ..schemas import SessionCreate, scenario_json
from .api import lesson_arm, manager_of, scenario_from

router = APIRouter()


def page(request: Request, session_id: str, scenario_name: str, lesson: str, create: SessionCreate | None = None,
         class_form: dict | None = None):
    return request.app.state.templates.TemplateResponse(
        request,
        "dashboard.html",
        {
            "session_id": session_id,
            # What the page POSTs to create its session, and the query that names that run.
            "create": create.model_dump_json(exclude_none=True) if create else "",
            "origin": create.origin_query() if create else "",
            "presets": {name: data["description"] for name, data in PRESET_SCENARIOS.items()},
            "lessons": {lesson.name: lesson.title for lesson in LESSONS},
            "current_lesson": lesson,
            "scenario_name": scenario_name,
            "idle_minutes": round(request.app.state.settings.idle_timeout_s / 60),
            # A served session's page has the class's "send a request" form (app/openai/class_requests.py).
            "class_form": class_form,
        },
    )


@router.get("/", include_in_schema=False)
def index(request: Request, scenario: str = "", seed: int | None = None, config: str = "", lesson: str = "",
          arm: str = "") -> HTMLResponse:
    """The dashboard of `?scenario=PRESET&seed=N`, `?lesson=NAME&arm=ARM` or `?config=<scenario JSON>`,
    checked here; the page then creates the session (or reuses the one this tab made for it)."""
    try:
        if lesson:
            body = SessionCreate(lesson=lesson, arm=arm or None, seed=seed)
        elif config:
            body = SessionCreate.model_validate({"scenario": scenario_json(config), "seed": seed})
        else:
            body = SessionCreate(preset=scenario or request.app.state.settings.default_scenario, seed=seed)
    except (ValueError, json.JSONDecodeError) as e:
        raise HTTPException(422, f"bad scenario in the URL: {e}") from None
    checked = scenario_from(body)
    lesson_name = lesson_arm(body)[0] if body.lesson else ""
    return page(request, "", checked.name, lesson_name, create=body)


def render(request: Request, session_id: str) -> HTMLResponse:
    live = manager_of(request).get(session_id)
    if live is None:
        # An old link: its query still names the scenario, so offer to start the same run again.
        query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        return request.app.state.templates.TemplateResponse(
            request, "ended.html", {"session_id": session_id, "query": query}, status_code=404)
    session = live.session
    served = getattr(request.app.state, "served", None)
    class_form = request.app.state.class_desk.form if served is not None and served.engine.live is live else None
    return page(request, session_id, session.scenario.name, session.lesson[0] if session.lesson else "", class_form=class_form)


@router.get("/s/{session_id}", include_in_schema=False)
def control_page(request: Request, session_id: str) -> HTMLResponse:
    """The API's `control_url`: the same page as the view link; control comes from the token the
    tab holds (add `#token=TOKEN` to hand it to a browser: fragments never reach the server)."""
    return render(request, session_id)


@router.get("/s/{session_id}/view", include_in_schema=False)
def view_page(request: Request, session_id: str) -> HTMLResponse:
    return render(request, session_id)


@router.get("/compare", include_in_schema=False)
def compare_page(request: Request, lesson: str = "", a: str = "", b: str = "", scenario: str = "",
                 set_b: list[str] = Query(default=[])) -> HTMLResponse:
    """Two configurations on the same workload, side by side: a lesson's arms (`?lesson=NAME&a=ARM&b=ARM`),
    or a preset against itself with fields of B changed (`?scenario=NAME&set_b=policy=static`).
    The page creates the two sessions (a POST each), as the dashboard does."""
    if lesson:
        if lesson not in LESSONS_BY_NAME:
            raise HTTPException(404, f"no lesson {lesson!r}")
        arms = list(LESSONS_BY_NAME[lesson].arms)
        bodies = []
        for key, arm in (("a", a or arms[0]), ("b", b or arms[1])):
            try:
                bodies.append((arm, SessionCreate(lesson=lesson, arm=arm)))
            except ValidationError:
                raise HTTPException(422, [{"loc": ["query", key], "msg": f"not an arm of {lesson!r}"}]) from None
    else:
        name = scenario or request.app.state.settings.default_scenario
        try:
            base = SessionCreate(preset=name)
        except ValidationError:
            raise HTTPException(422, [{"loc": ["query", "scenario"], "msg": "not a preset's name"}]) from None
        scenario_from(base)
        # B's changes go through the same schema as every web scenario, so they can only name
        # fields the web may set: never `trace` (a file on the server), never a model file.
        data = {**json.loads(json.dumps(PRESET_SCENARIOS[name])), "name": f"{name} with {', '.join(set_b) or 'no changes'}"}
        try:
            apply_assignments(data, [parse_assignment(text) for text in set_b])
            changed = SessionCreate.model_validate({"scenario": data})
        except ValidationError as e:
            raise HTTPException(422, [{"loc": ["query", "set_b", *err["loc"][1:]], "msg": err["msg"]}
                                      for err in e.errors(include_input=False)]) from None
        bodies = [(name, base), (", ".join(set_b) or name, changed)]
    for _, body in bodies:  # checked now, so a bad link fails here rather than in the page
        scenario_from(body)
    return request.app.state.templates.TemplateResponse(request, "compare.html", {
        "sides": [{"label": label, "create": body.model_dump_json(exclude_none=True)} for label, body in bodies],
        "title": lesson or name,
    })
