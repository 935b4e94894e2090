"""A `vllm serve` line pasted into the configuration form: read by the CLI's own parser
(scheduler_core/scenario/engine_args.py) into the form's scenario, and checked the way creating a
session would check it. The line is text, never a file; it changes nothing on the server."""

from __future__ import annotations

import copy
from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from pydantic import Field, ValidationError

from scheduler_core.errors import ConfigError
from scheduler_core.scenario.engine_args import apply_settings, check_like_vllm, parse_vllm_command
from scheduler_core.scenario.scenario import Scenario, with_vllm_defaults
from scheduler_core.timing.presets import HF_REPOS, MODELS

from ..rate_limits import limit, scenario_cost
from ..schemas import ScenarioModel, Strict
from .api import manager_of

router = APIRouter(prefix="/api")

MAX_COMMAND_CHARS = 4_000  # a long `vllm serve` line is a few hundred characters


class VllmLine(Strict):
    command: Annotated[str, Field(max_length=MAX_COMMAND_CHARS)]
    scenario: ScenarioModel | None = None  # the form's settings the line is applied over


@router.post("/scenarios/vllm-command")
def scenario_of_vllm_command(body: VllmLine, request: Request) -> dict:
    """The form's scenario with the line's model and flags written in, as `servescope run --vllm`
    writes them, and the arguments it ignores (they change nothing the simulation models)."""
    command = parse_vllm_command(body.command)
    data = body.scenario.to_scenario_dict() if body.scenario is not None else {}
    if command.model is not None:
        # A preset or its Hugging Face id; never a path: the web names no file on the server (a model's
        # config.json is for the command line).
        if command.model not in MODELS and command.model not in HF_REPOS:
            raise ConfigError("command", f"model {command.model[:200]!r} is not a preset ({', '.join(MODELS)}) nor a "
                                         "preset's Hugging Face id; a config.json is for the command line "
                                         "(servescope run --model FILE)")
        data["model"] = HF_REPOS.get(command.model, command.model)
    apply_settings(data, command.settings)
    # The line's settings through the web's one validation path: its bounds, and no setting the web may not
    # give (a 422 naming it, under `command`).
    try:
        ScenarioModel.model_validate(data)
    except ValidationError as e:
        raise RequestValidationError([{**error, "loc": ("body", "command", *error["loc"])} for error in e.errors()]) from None
    full = with_vllm_defaults(copy.deepcopy(data))
    check_like_vllm(full.get("engine", {}))
    scenario = Scenario.from_dict(full)
    manager_of(request).check_limits(scenario)
    limit(request, "validate", scenario_cost(scenario, request.app.state.settings))
    return {"scenario": data, "ignored": list(command.ignored)}
