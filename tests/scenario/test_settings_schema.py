"""Each engine and workload setting is declared once, on its config dataclass (`bounds.setting`);
the web model, the command line's flags and the bounds table are all made from that declaration."""

import dataclasses

import pytest

from app.cli import add_app_commands
from app.schemas import EngineModel, WorkloadModel
from scheduler_core.bounds import settings_of
from scheduler_core.cli.main import build_parser
from scheduler_core.engine.config import ENGINE_BOUNDS, EngineConfig, VllmCompat
from scheduler_core.scenario.engine_args import ENGINE_ARGS, OWN_ENGINE_ARGS, parse_vllm_command
from scheduler_core.workload.workload import WORKLOAD_BOUNDS, WorkloadConfig


@pytest.mark.parametrize("config, undeclared", [(EngineConfig, {"compat"}), (WorkloadConfig, set()), (VllmCompat, set())])
def test_every_field_is_a_declared_setting_except_nested_tables(config, undeclared):
    names = {f.name for f in dataclasses.fields(config)}
    assert names - set(settings_of(config)) == undeclared


@pytest.mark.parametrize("config, bounds", [(EngineConfig, ENGINE_BOUNDS), (WorkloadConfig, WORKLOAD_BOUNDS)])
def test_the_bounds_table_is_the_declared_bounds(config, bounds):
    assert bounds == {name: s.bound for name, s in settings_of(config).items() if s.bound is not None}


@pytest.mark.parametrize("model, config", [(EngineModel, EngineConfig), (WorkloadModel, WorkloadConfig)])
def test_the_web_model_offers_the_declared_choices_and_help(model, config):
    properties = model.model_json_schema()["properties"]
    for name, declared in settings_of(config).items():
        prop = properties[name]
        assert prop["description"].lower() == declared.help.lower(), name
        if declared.choices:
            assert prop["enum"] == list(declared.choices), name


def test_a_setting_left_open_is_empty_on_the_web_and_unset_on_the_command_line():
    left_open = {name for name, s in settings_of(EngineConfig).items() if s.left_open}
    assert left_open == {"num_gpu_blocks", "max_num_seqs", "max_num_batched_tokens", "async_scheduling"}
    assert all(EngineModel().model_dump()[name] is None for name in left_open)


def test_every_declared_flag_is_on_the_command_line_with_its_help():
    parsers = {}
    build_parser(lambda commands, by_name: parsers.update(by_name))
    help_text = " ".join(parsers["run"].format_help().split())
    for config in (EngineConfig, WorkloadConfig):
        for declared in settings_of(config).values():
            if declared.flag:
                assert declared.flag in help_text and " ".join(declared.help.split()) in help_text, declared.flag


def test_vllm_flags_come_from_vllm_declarations_and_servescopes_own_do_not_reach_a_vllm_line():
    assert {arg.flag for arg in OWN_ENGINE_ARGS} == {"--policy", "--num-cpu-blocks", "--kv-allocator"}
    assert not {arg.flag for arg in OWN_ENGINE_ARGS} & {arg.flag for arg in ENGINE_ARGS}
    command = parse_vllm_command("vllm serve m --policy static --max-num-seqs 8")
    assert command.settings == {"engine.max_num_seqs": 8}
    assert command.ignored == ("--policy static",)


def test_a_servescope_flag_sets_its_engine_field():
    args = build_parser().parse_args(["run", "--policy", "static", "--kv-allocator", "contiguous", "--num-cpu-blocks", "64"])
    assert (args.policy, args.kv_allocator, args.num_cpu_blocks) == ("static", "contiguous", 64)


def test_the_app_adds_serve_and_sweep_ray_through_the_hook():
    core = build_parser()
    with pytest.raises(SystemExit):
        core.parse_args(["serve"])
    extended = build_parser(add_app_commands)
    assert extended.parse_args(["serve", "--port", "8123"]).port == 8123
    assert extended.parse_args(["sweep", "grid.toml", "--out", "x.csv", "--ray"]).ray == ""
