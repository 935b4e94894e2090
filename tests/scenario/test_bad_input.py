"""Bad input is refused with a `ConfigError` whose `.field` names what is wrong, so a form, an API
or the CLI can point at it; the CLI turns it into exit code 2 and a message on stderr."""

import copy
import json

import pytest

from scheduler_core.cli.main import main
from scheduler_core.engine.config import EngineConfig, VllmCompat
from scheduler_core.engine.request import Request
from scheduler_core.errors import ConfigError
from scheduler_core.sim.replay import replay
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import RequestSpec, unique_prompt


def config_error(make):
    with pytest.raises(ConfigError) as error:
        make()
    return error.value


# -- engine configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, field",
    [
        ({"block_size": 0}, "block_size"),
        ({"num_gpu_blocks": 0}, "num_gpu_blocks"),
        ({"max_num_seqs": -1}, "max_num_seqs"),
        ({"max_num_batched_tokens": 0}, "max_num_batched_tokens"),
        ({"max_model_len": -5}, "max_model_len"),
        ({"long_prefill_token_threshold": -1}, "long_prefill_token_threshold"),
        ({"num_cpu_blocks": -1}, "num_cpu_blocks"),
    ],
)
def test_sizes_that_are_zero_negative_or_too_small_name_their_field(settings, field):
    """Sizes must be positive (num_gpu_blocks = 1, only the null block, is accepted as vLLM does)."""
    assert config_error(lambda: EngineConfig(**settings)).field == field


def test_a_size_given_as_a_non_integer_is_refused():
    """A float or a bool is not a block count, even when it looks like one."""
    assert config_error(lambda: EngineConfig(block_size=16.0)).field == "block_size"
    assert config_error(lambda: EngineConfig(max_num_seqs=True)).field == "max_num_seqs"


def test_unknown_policy_is_refused():
    """`policy` must name a scheduler that exists."""
    error = config_error(lambda: EngineConfig(policy="shortest-job-first"))

    assert error.field == "policy"
    assert "vllm-v1" in error.reason


def test_unknown_scheduling_order_is_refused():
    """`scheduling_order` is fcfs or priority."""
    assert config_error(lambda: EngineConfig(scheduling_order="lifo")).field == "scheduling_order"


def test_swap_preemption_without_cpu_blocks_is_refused():
    """Swapping needs somewhere to swap to: preemption_mode=swap requires num_cpu_blocks > 0."""
    assert config_error(lambda: EngineConfig(preemption_mode="swap")).field == "num_cpu_blocks"


def test_prefix_caching_with_the_contiguous_allocator_is_refused():
    """Contiguous regions cannot share blocks, so prefix caching must be off with them."""
    error = config_error(lambda: EngineConfig(kv_allocator="contiguous", enable_prefix_caching=True))

    assert error.field == "enable_prefix_caching"


def test_no_chunking_with_a_budget_below_max_model_len_is_refused():
    """Without chunked prefill a max_model_len prompt must fit one step's budget, as vLLM requires."""
    error = config_error(
        lambda: EngineConfig(enable_chunked_prefill=False, max_num_batched_tokens=2048, max_model_len=4096)
    )

    assert error.field == "max_num_batched_tokens"


def test_from_dict_refuses_an_unknown_key():
    """A typo in a config file is an error naming the key, not a silently ignored setting."""
    error = config_error(lambda: EngineConfig.from_dict({"block_size": 16, "max_num_seq": 8}))

    assert error.field == "max_num_seq"


def test_from_dict_refuses_an_unknown_compat_switch():
    """Unknown vLLM behaviour switches are named with their `compat.` prefix."""
    error = config_error(lambda: EngineConfig.from_dict({"compat": {"full_prompt_admision": False}}))

    assert error.field == "compat.full_prompt_admision"


def test_unknown_vllm_version_is_refused():
    """Only the recorded vLLM releases have a behaviour profile; the error lists them."""
    error = config_error(lambda: VllmCompat.for_version("0.9.0"))

    assert error.field == "vllm_version"
    assert "0.33.0" in error.reason and "0.10.1.1" in error.reason


# -- requests and workloads ----------------------------------------------------------------


@pytest.mark.parametrize("max_tokens", [0, -3])
def test_request_without_a_positive_max_tokens_is_refused(max_tokens):
    """A request must ask for at least one output token."""
    error = config_error(lambda: Request("r7", [1, 2, 3], max_tokens))

    assert error.field == "requests[r7].max_tokens"


def test_request_with_an_empty_prompt_is_refused():
    """A prompt needs at least one token: the model has nothing to continue otherwise."""
    error = config_error(lambda: Request("r7", [], 10))

    assert error.field == "requests[r7].prompt_token_ids"


def test_workload_prompt_longer_than_max_model_len_is_refused_naming_the_request():
    """Simulation validates each request: a prompt over max_model_len names that request."""
    config = EngineConfig(max_model_len=256)
    specs = [
        RequestSpec("fine", 0.0, unique_prompt(0, 100), 10),
        RequestSpec("too-long", 0.1, unique_prompt(1, 300), 10),
    ]

    error = config_error(lambda: Simulation(config, specs))

    assert error.field == "workload[too-long].prompt_token_ids"


# -- replay traces -------------------------------------------------------------------------

TRACE = {
    "config": {"block_size": 16, "num_gpu_blocks": 64, "max_num_seqs": 4, "max_num_batched_tokens": 128, "max_model_len": 256},
    "requests": [
        {"id": f"r{i}", "arrival_step": i, "prompt_token_ids": list(range(10 * i, 10 * i + 20)), "max_tokens": 4}
        for i in range(5)
    ],
}


def replay_error(trace):
    return config_error(lambda: list(replay(trace)))


def test_the_valid_trace_used_below_replays():
    """The base trace is valid, so each error below comes from the one field the test breaks."""
    assert list(replay(TRACE))[-1]["finished"]


@pytest.mark.parametrize("key", ["id", "arrival_step", "prompt_token_ids", "max_tokens"])
def test_trace_request_missing_a_field_is_refused(key):
    """Each trace request needs id, arrival_step, prompt_token_ids and max_tokens; the missing one is named."""
    trace = copy.deepcopy(TRACE)
    del trace["requests"][3][key]

    assert replay_error(trace).field == f"requests[3].{key}"


def test_trace_request_with_a_negative_arrival_step_is_refused():
    """Arrival steps count from 0."""
    trace = copy.deepcopy(TRACE)
    trace["requests"][1]["arrival_step"] = -1

    assert replay_error(trace).field == "requests[1].arrival_step"


def test_trace_request_with_a_non_positive_max_tokens_is_refused():
    """Every traced request must produce at least one token."""
    trace = copy.deepcopy(TRACE)
    trace["requests"][3]["max_tokens"] = 0

    assert replay_error(trace).field == "requests[3].max_tokens"


def test_trace_with_a_duplicate_request_id_is_refused_at_the_second_use():
    """Request ids are unique; the entry that repeats one is named."""
    trace = copy.deepcopy(TRACE)
    trace["requests"][2]["id"] = "r0"

    assert replay_error(trace).field == "requests[2].id"


def test_trace_with_an_unknown_config_key_is_refused():
    """A trace config setting the simulator does not know is named, not ignored."""
    trace = copy.deepcopy(TRACE)
    trace["config"]["swap_space"] = 4

    assert replay_error(trace).field == "config.swap_space"


def test_trace_prompt_longer_than_max_model_len_is_refused():
    """Replay validates prompt lengths against the trace's max_model_len before running."""
    trace = copy.deepcopy(TRACE)
    trace["requests"][4]["prompt_token_ids"] = list(range(300))

    assert replay_error(trace).field == "requests[4].prompt_token_ids"


# -- the command line ----------------------------------------------------------------------


def test_cli_reports_a_missing_trace_file_with_exit_code_2(tmp_path, capsys):
    """A trace path that does not exist is an error message on stderr and exit code 2, not a traceback."""
    missing = tmp_path / "no-such-trace.json"

    code = main(["replay", str(missing), "--out", str(tmp_path / "log.jsonl")])

    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("servescope: error:")
    assert "no-such-trace.json" in err


def test_cli_reports_a_malformed_json_trace_with_exit_code_2(tmp_path, capsys):
    """A trace that is not JSON is reported as such, naming the file, with exit code 2."""
    trace = tmp_path / "broken.json"
    trace.write_text('{"config": {"block_size": 16,')

    code = main(["replay", str(trace), "--out", str(tmp_path / "log.jsonl")])

    assert code == 2
    err = capsys.readouterr().err
    assert "broken.json" in err and "not valid JSON" in err


def test_cli_reports_an_invalid_trace_entry_with_its_field(tmp_path, capsys):
    """A well-formed trace with a bad entry gets exit code 2 and the offending field on stderr."""
    bad = copy.deepcopy(TRACE)
    del bad["requests"][3]["max_tokens"]
    trace = tmp_path / "bad.json"
    trace.write_text(json.dumps(bad))

    code = main(["replay", str(trace), "--out", str(tmp_path / "log.jsonl")])

    assert code == 2
    assert "requests[3].max_tokens" in capsys.readouterr().err
