"""Each scenario, engine, speculative-decoding and workload setting is declared once, on its config
dataclass (`bounds.setting`); the web model, the command line's flags and the bounds table are all
made from that declaration."""

import dataclasses
import re

import pytest
from pydantic import ValidationError

from app.cli import add_app_commands
from app.schemas import EngineModel, PoolModel, ScenarioModel, SpeculativeModel, WorkloadModel
from scheduler_core.bounds import settings_of
from scheduler_core.cli.main import build_parser
from scheduler_core.engine.config import ENGINE_BOUNDS, ENGINE_SETTINGS, EngineConfig, VllmCompat
from scheduler_core.engine.spec_decode import SpeculativeConfig
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.engine_args import ENGINE_ARGS, OWN_ENGINE_ARGS, OWN_SCENARIO_ARGS, parse_vllm_command
from scheduler_core.scenario.scenario import SCENARIO_BOUNDS, SCENARIO_SETTINGS, Scenario
from scheduler_core.workload.workload import WORKLOAD_BOUNDS, WorkloadConfig

WEB_MODELS = [(ScenarioModel, Scenario), (EngineModel, EngineConfig), (SpeculativeModel, SpeculativeConfig),
              (WorkloadModel, WorkloadConfig)]


@pytest.mark.parametrize("config, undeclared", [(EngineConfig, {"compat"}), (WorkloadConfig, set()), (VllmCompat, set()),
                                                (Scenario, {"engine", "workload"}), (SpeculativeConfig, set())])
def test_every_field_is_a_declared_setting_except_nested_tables(config, undeclared):
    names = {f.name for f in dataclasses.fields(config)}
    assert names - set(settings_of(config)) == undeclared


@pytest.mark.parametrize("config, bounds", [(EngineConfig, ENGINE_BOUNDS), (WorkloadConfig, WORKLOAD_BOUNDS),
                                            (Scenario, SCENARIO_BOUNDS)])
def test_the_bounds_table_is_the_declared_bounds(config, bounds):
    assert bounds == {name: s.bound for name, s in settings_of(config).items() if s.bound is not None}


def web_property(model, name: str) -> dict:
    prop = model.model_json_schema()["properties"][name]
    return next((p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"), prop)


@pytest.mark.parametrize("model, config", WEB_MODELS)
def test_the_web_model_offers_the_declared_choices_bounds_and_help(model, config):
    for name, declared in settings_of(config).items():
        if not declared.web:
            continue
        assert model.model_json_schema()["properties"][name]["description"].lower() == declared.help.lower(), name
        prop = web_property(model, name)
        if declared.web_choices or declared.choices:
            assert prop["enum"] == list(declared.web_choices or declared.choices), name
        if declared.length:  # a list: its length, and each item within the bound
            assert (prop["minItems"], prop["maxItems"]) == (declared.length.low, declared.length.high), name
            prop = prop["items"]
        if declared.bound:
            assert prop["maximum"] == declared.bound.high, name
            assert prop["exclusiveMinimum" if declared.bound.low_open else "minimum"] == declared.bound.low, name


def test_what_names_a_file_or_is_the_command_lines_alone_never_reaches_the_web():
    assert {name for name, s in SCENARIO_SETTINGS.items() if not s.web} == {"trace", "enforce_eager"}
    for name in ("trace", "enforce_eager"):
        assert name not in ScenarioModel.model_json_schema()["properties"]
        with pytest.raises(ValidationError):
            ScenarioModel.model_validate({name: "x.csv" if name == "trace" else True})


def test_the_web_offers_only_model_presets_where_the_command_line_takes_any_model():
    assert "gpt-17" not in web_property(ScenarioModel, "model")["enum"]
    with pytest.raises(ValidationError):
        ScenarioModel.model_validate({"model": "/etc/passwd"})
    assert build_parser().parse_args(["run", "--model", "meta-llama/Llama-3.1-8B-Instruct"]).model == (
        "meta-llama/Llama-3.1-8B-Instruct")


@pytest.mark.parametrize("spelling", ["tp", "tensor_parallel_size"])
def test_tp_is_an_older_name_of_one_tensor_parallel_field_on_the_web_in_files_and_in_pools(spelling):
    assert ScenarioModel.model_validate({spelling: 4}).to_scenario_dict()["tensor_parallel_size"] == 4
    assert Scenario.from_dict({spelling: 2}).tensor_parallel_size == 2
    assert PoolModel.model_validate({spelling: 2}).to_pool_dict() == {"replicas": 1, "tensor_parallel_size": 2}
    assert "tp" not in ScenarioModel.model_json_schema()["properties"]


def test_a_pool_is_its_scenario_and_engine_declarations_under_the_fleet_budget():
    properties = PoolModel.model_json_schema()["properties"]
    for name, declared, high in [("gpu", SCENARIO_SETTINGS["gpu"], None),
                                 ("tensor_parallel_size", SCENARIO_SETTINGS["tensor_parallel_size"], 8),
                                 ("max_num_seqs", ENGINE_SETTINGS["max_num_seqs"], 4096),
                                 ("max_num_batched_tokens", ENGINE_SETTINGS["max_num_batched_tokens"], 65_536)]:
        assert properties[name]["default"] is None, name  # the scenario's value
        prop = web_property(PoolModel, name)
        if high is None:
            assert prop["enum"] == list(declared.choices)
        else:
            assert (prop["minimum"], prop["maximum"]) == (declared.bound.low, high), name
            assert high <= declared.bound.high, name


@pytest.mark.parametrize("settings, message", [
    ({"num_speculative_tokens": 0}, "must be an integer from 1 to 16, got 0"),
    ({"num_speculative_tokens": 17}, "must be an integer from 1 to 16, got 17"),
    ({"num_speculative_tokens": 1, "acceptance_rate": (1.5,)}, "each rate must be a number from 0 to 1"),
    ({"num_speculative_tokens": 2, "acceptance_rate": (0.5,)}, "needs one rate per draft position (2), got 1"),
])
def test_the_speculative_configs_own_messages_are_kept(settings, message):
    with pytest.raises(ConfigError) as error:
        SpeculativeConfig(**settings)
    assert error.value.reason == message


@pytest.mark.parametrize("seed", [-1, 2**63])
def test_an_acceptance_seed_out_of_range_is_refused_on_the_web_and_in_the_core_alike(seed):
    with pytest.raises(ValidationError):
        SpeculativeModel.model_validate({"acceptance_seed": seed})
    with pytest.raises(ConfigError) as error:
        SpeculativeConfig(acceptance_seed=seed)
    assert error.value.field == "speculative_config.acceptance_seed"


def test_a_setting_left_open_is_empty_on_the_web_and_unset_on_the_command_line():
    left_open = {name for name, s in settings_of(EngineConfig).items() if s.left_open}
    assert left_open == {"num_gpu_blocks", "max_num_seqs", "max_num_batched_tokens", "async_scheduling",
                         "enable_prefix_caching"}
    assert all(EngineModel().model_dump()[name] is None for name in left_open)


def test_every_declared_flag_is_on_the_command_line_with_its_help():
    parsers = {}
    build_parser(lambda commands, by_name: parsers.update(by_name))
    def words(text: str) -> str:  # argparse wraps lines after hyphens too ("llama-3.3-" / "70b")
        return re.sub(r"-\s+", "-", " ".join(text.split()))

    help_text = words(parsers["run"].format_help())
    for config in (Scenario, EngineConfig, WorkloadConfig):
        for declared in settings_of(config).values():
            if declared.flag:
                assert declared.flag in help_text and words(declared.help) in help_text, declared.flag


def test_the_scenarios_flags_come_from_its_declarations():
    assert {arg.flag for arg in OWN_SCENARIO_ARGS} == {"--model", "--gpu", "--entrypoint"}
    scenario_flags = {arg.flag for arg in ENGINE_ARGS if "." not in arg.field}
    assert scenario_flags == {"--tensor-parallel-size", "--data-parallel-size", "--enable-expert-parallel",
                              "--gpu-memory-utilization", "--kv-cache-dtype", "--swap-space", "--enforce-eager",
                              "--api-server-count"}
    args = build_parser().parse_args(["run", "--model", "qwen2.5-7b", "--gpu", "l40s", "-tp", "2", "--swap-space", "4"])
    assert (args.model, args.gpu, args.tensor_parallel_size, args.swap_space) == ("qwen2.5-7b", "l40s", 2, 4.0)


def test_vllm_flags_come_from_vllm_declarations_and_servescopes_own_do_not_reach_a_vllm_line():
    assert {arg.flag for arg in OWN_ENGINE_ARGS} == {"--policy", "--num-cpu-blocks", "--kv-allocator", "--kv-connector"}
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
