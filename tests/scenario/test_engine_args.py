"""vLLM's engine arguments: every one parses under vLLM's spelling and its older alias, reaches the
scenario's engine configuration, and a whole `vllm serve` command line gives the same run."""

import json
import shlex

import pytest

from scheduler_core.cli.main import build_parser, main
from scheduler_core.cli.overrides import build_scenario
from scheduler_core.engine.spec_decode import SpeculativeConfig
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.engine_args import ENGINE_ARGS, human_readable_int, parse_vllm_command
from scheduler_core.scenario.scenario import Scenario, with_vllm_defaults

MODEL = "llama-3.1-8b"
# (flags as vLLM spells them, where the value lands, the value expected there)
CASES = [
    (["--tensor-parallel-size", "2"], "tensor_parallel_size", 2),
    (["-tp", "4"], "tensor_parallel_size", 4),
    (["--gpu-memory-utilization", "0.5"], "gpu_memory_utilization", 0.5),
    (["--kv-cache-dtype", "fp8"], "kv_cache_dtype", "fp8"),
    (["--kv-cache-dtype", "fp8_e5m2"], "kv_cache_dtype", "fp8_e5m2"),
    (["--block-size", "32"], "engine.block_size", 32),
    (["--num-gpu-blocks-override", "777"], "engine.num_gpu_blocks", 777),
    (["--swap-space", "1", "--preemption-mode", "swap"], "engine.num_cpu_blocks", 512),  # 1 GiB / (16 tokens x 128 KiB)
    (["--max-num-seqs", "48"], "engine.max_num_seqs", 48),
    (["--max-num-batched-tokens", "4k"], "engine.max_num_batched_tokens", 4000),
    (["--max-model-len", "8K"], "engine.max_model_len", 8192),
    (["--no-enable-chunked-prefill", "--max-num-batched-tokens", "4096"], "engine.enable_chunked_prefill", False),
    (["--enable-chunked-prefill"], "engine.enable_chunked_prefill", True),
    (["--no-enable-prefix-caching"], "engine.enable_prefix_caching", False),
    (["--long-prefill-token-threshold", "128"], "engine.long_prefill_token_threshold", 128),
    (["--scheduling-policy", "priority"], "engine.scheduling_order", "priority"),
    (["--preemption-mode", "swap", "--swap-space", "0.5"], "engine.preemption_mode", "swap"),
    (["--enforce-eager"], "enforce_eager", True),
    (["--data-parallel-size", "2"], "data_parallel_size", 2),
    (["-dp", "4"], "data_parallel_size", 4),
    (["--model", "qwen3-30b-a3b", "--tensor-parallel-size", "2", "--enable-expert-parallel"], "enable_expert_parallel", True),
    (["--model", "qwen3-30b-a3b", "-dp", "2", "-ep"], "enable_expert_parallel", True),
    (["--no-async-scheduling"], "engine.async_scheduling", False),
    (["--async-scheduling"], "engine.async_scheduling", True),
    (["--api-server-count", "4"], "api_server_count", 4),
    (["--speculative-config", '{"method": "eagle", "num_speculative_tokens": 2}'], "engine.speculative_config",
     SpeculativeConfig("eagle", 2)),
    # More than one step is V0's (tests/engine/test_multi_step.py), which a `vllm serve` line cannot name.
    (["--num-scheduler-steps", "1"], "engine.num_scheduler_steps", 1),
    (["--prefix-caching-hash-algo", "sha256_cbor"], "engine.prefix_caching_hash_algo", "sha256_cbor"),
]


def field(scenario: Scenario, path: str):
    value = scenario
    for part in path.split("."):
        value = getattr(value, part)
    return value


def from_flags(flags: list[str]) -> Scenario:
    args = build_parser().parse_args(["run", "--model", MODEL, "--num-requests", "5", *flags])
    return build_scenario(args, args.scenario)


def from_vllm(flags: list[str]) -> Scenario:
    args = build_parser().parse_args(["run", "--vllm", shlex.join(["vllm", "serve", MODEL, *flags]), "--num-requests", "5"])
    return build_scenario(args, args.scenario)


def test_every_engine_argument_has_a_case():
    # --swap-space is checked by the CPU blocks it gives.
    tested = {path.replace("engine.num_cpu_blocks", "swap_space") for _, path, _ in CASES}
    assert tested == {arg.field for arg in ENGINE_ARGS}


@pytest.mark.parametrize("flags,path,expected", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_engine_argument_reaches_the_scenario(flags, path, expected):
    assert field(from_flags(flags), path) == expected


@pytest.mark.parametrize("flags,path,expected", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_vllm_command_line_gives_the_same_scenario(flags, path, expected):
    assert from_vllm(flags).to_dict() == from_flags(flags).to_dict()


@pytest.mark.parametrize("old,new", [
    (["--tp", "2"], ["--tensor-parallel-size", "2"]),
    (["--num-gpu-blocks", "500"], ["--num-gpu-blocks-override", "500"]),
    (["--no-chunked-prefill", "--max-num-batched-tokens", "4096"],
     ["--no-enable-chunked-prefill", "--max-num-batched-tokens", "4096"]),
    (["--no-prefix-caching"], ["--no-enable-prefix-caching"]),
    (["--scheduling-order", "priority"], ["--scheduling-policy", "priority"]),
])
def test_older_flags_stay_as_aliases(old, new):
    assert from_flags(old).to_dict() == from_flags(new).to_dict()


def test_fp8_kv_cache_doubles_the_blocks_that_fit():
    bf16 = from_flags(["--gpu-memory-utilization", "0.9"]).engine.num_gpu_blocks
    fp8 = from_flags(["--gpu-memory-utilization", "0.9", "--kv-cache-dtype", "fp8"]).engine.num_gpu_blocks
    assert fp8 in (2 * bf16, 2 * bf16 + 1)


def test_more_memory_more_blocks():
    assert from_flags(["--gpu-memory-utilization", "0.95"]).engine.num_gpu_blocks > from_flags(
        ["--gpu-memory-utilization", "0.9"]).engine.num_gpu_blocks


@pytest.mark.parametrize("flags,flag,reason", [
    (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization", "less than or equal to 1"),
    (["--gpu-memory-utilization", "0"], "--gpu-memory-utilization", "greater than 0"),
    (["--kv-cache-dtype", "int3"], "--kv-cache-dtype", "invalid choice: 'int3'"),
    (["--max-num-seqs", "0"], "--max-num-seqs", "greater than or equal to 1"),
    (["--max-model-len", "1.5K"], "--max-model-len", "Decimals are not allowed with binary suffixes"),
    (["--block-size", "x"], "--block-size", "invalid value: 'x'"),
    (["--scheduling-policy", "lifo"], "--scheduling-policy", "invalid choice"),
    (["--swap-space", "-1"], "--swap-space", "greater than or equal to 0"),
])
def test_invalid_values_name_the_argument(flags, flag, reason, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", *flags])
    assert f"argument {flag.split()[0]}" in capsys.readouterr().err or flag == "-tp"
    with pytest.raises(ConfigError) as error:
        parse_vllm_command(" ".join(["vllm serve m", *flags]))
    assert error.value.field == flag and reason in str(error.value)


@pytest.mark.parametrize("flags,reason", [
    (["--max-num-seqs", "512", "--max-num-batched-tokens", "256"],
     "max_num_batched_tokens (256) must be greater than or equal to max_num_seqs (512)."),
    (["--no-enable-chunked-prefill", "--max-model-len", "8192", "--max-num-batched-tokens", "2048"],
     "max_num_batched_tokens (2048) is smaller than max_model_len (8192)."),
    (["--long-prefill-token-threshold", "9000", "--max-model-len", "8192"],
     "long_prefill_token_threshold (9000) cannot be greater than the max_model_len (8192)."),
])
def test_combinations_vllm_rejects_are_rejected_with_its_reason(flags, reason):
    for build in (from_flags, from_vllm):
        with pytest.raises(ConfigError) as error:
            build(flags)
        assert reason in str(error.value) and error.value.field.startswith("--")


def test_arguments_the_simulation_does_not_model_are_listed_in_one_warning(tmp_path, capsys):
    out = tmp_path / "run.json"
    code = main(["run", "--vllm", "vllm serve llama-3.1-8b --host 0.0.0.0 --port=8000 --trust-remote-code "
                 "--max-num-seqs 16 --served-model-name x", "--num-requests", "3", "--json", str(out)])
    err = capsys.readouterr().err
    assert code == 0
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == ["servescope: warning: not simulated, ignored: --host 0.0.0.0 --port=8000 "
                        "--trust-remote-code --served-model-name x"]
    assert json.loads(out.read_text())["scenario"]["engine"]["max_num_seqs"] == 16


def test_done_when_run_and_its_vllm_command_line_give_identical_metrics(tmp_path):
    common = ["--gpu", "h100-sxm", "--workload", "sharegpt", "--concurrency", "128", "--num-requests", "150"]
    flags, vllm = tmp_path / "flags.json", tmp_path / "vllm.json"
    assert main(["run", "--model", "llama-3.3-70b-fp8", "--kv-cache-dtype", "fp8", "--gpu-memory-utilization",
                 "0.95", *common, "--json", str(flags)]) == 0
    assert main(["run", "--vllm", "vllm serve llama-3.3-70b-fp8 --kv-cache-dtype fp8 --gpu-memory-utilization 0.95",
                 *common, "--json", str(vllm)]) == 0
    a, b = json.loads(flags.read_text()), json.loads(vllm.read_text())
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b


def test_flags_win_over_the_vllm_command_line():
    args = build_parser().parse_args(["run", "--vllm", "vllm serve llama-3.1-8b --max-num-seqs 16", "--max-num-seqs", "8"])
    assert build_scenario(args, args.scenario).engine.max_num_seqs == 8


def test_vllm_command_line_must_be_vllm_serve():
    with pytest.raises(ConfigError, match="vllm serve"):
        parse_vllm_command("sglang launch_server --model x")


def test_flag_without_its_value_is_refused():
    with pytest.raises(ConfigError) as error:
        parse_vllm_command("vllm serve m --max-num-seqs --enforce-eager")
    assert error.value.field == "--max-num-seqs"


def test_human_readable_ints_follow_vllm():
    assert [human_readable_int(t) for t in ("8192", "32k", "1.5k", "32K", "1M")] == [8192, 32000, 1500, 32768, 2**20]


def test_scenario_files_take_vllm_names_and_the_older_ones():
    new = Scenario.from_dict({"model": MODEL, "tensor_parallel_size": 2, "engine": {"num_gpu_blocks_override": 99,
                                                                                       "scheduling_policy": "priority"}})
    old = Scenario.from_dict({"model": MODEL, "tp": 2, "engine": {"num_gpu_blocks": 99, "scheduling_order": "priority"}})
    assert new.to_dict() == old.to_dict()
    assert (new.tensor_parallel_size, new.engine.num_gpu_blocks, new.engine.scheduling_order) == (2, 99, "priority")


def test_a_name_and_its_alias_that_disagree_are_refused():
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict({"tp": 2, "tensor_parallel_size": 4})
    assert error.value.field == "tp"


def test_scenario_refuses_an_unknown_kv_cache_dtype():
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict({"kv_cache_dtype": "int3"})
    assert error.value.field == "kv_cache_dtype"


def test_async_scheduling_follows_vllms_default_unless_given():
    """0.33.0 turns async scheduling on, n-gram drafts too (Model Runner V2); 0.14-0.32 turned it off for
    n-gram drafting; the flag wins."""
    assert from_flags([]).engine.async_scheduling is True
    ngram = '{"method": "ngram", "num_speculative_tokens": 3}'
    assert from_vllm(["--speculative-config", ngram]).engine.async_scheduling is True
    assert from_flags(["--speculative-config", ngram, "--vllm-version", "0.32.0"]).engine.async_scheduling is False
    assert from_flags(["--speculative-config", ngram, "--vllm-version", "0.32.0", "--async-scheduling"]
                      ).engine.async_scheduling is True


def test_a_bad_speculative_config_names_the_flag():
    with pytest.raises(ConfigError) as error:
        speculative_config = '{"method": "x", "num_speculative_tokens": 1}'
        parse_vllm_command(shlex.join(["vllm", "serve", "m", "--speculative-config", speculative_config]))
    assert error.value.field == "--speculative-config" and "unknown method 'x'" in str(error.value)


# vLLM's defaults for what a `vllm serve` line leaves open, read from `EngineArgs.get_batch_defaults`
# and `CacheConfig` in the 0.33.0 and 0.10.1.1 wheels: (GPU, engine settings given, version,
# max_num_batched_tokens, max_num_seqs, gpu_memory_utilization expected).
V010 = ["--vllm-version", "0.10.1.1"]
DEFAULT_CASES = [
    ("h100-sxm", [], [], 8192, 1024, 0.92),  # 70 GiB or more: the H100/H200 tier
    ("h200", [], [], 8192, 1024, 0.92),
    ("a100-80g", [], [], 2048, 256, 0.92),  # 80 GB, but vLLM keeps A100s on the small tier
    ("l40s", [], [], 2048, 256, 0.92),
    # Without chunked prefill the budget holds one max_model_len prompt: 0.33 never goes below its default...
    ("h100-sxm", ["--no-enable-chunked-prefill", "--max-model-len", "16384"], [], 16384, 1024, 0.92),
    ("h100-sxm", ["--no-enable-chunked-prefill", "--max-model-len", "2048"], [], 8192, 1024, 0.92),
    # ...0.10.1.1 set it to exactly max_model_len, and kept max_num_seqs within it; its memory share was 0.9.
    ("h100-sxm", ["--no-enable-chunked-prefill", "--max-model-len", "2048"], V010, 2048, 1024, 0.9),
    ("l40s", ["--no-enable-chunked-prefill", "--max-model-len", "128"], V010, 128, 128, 0.9),
    # 0.33: no more tokens than max_num_seqs full contexts.
    ("h100-sxm", ["--max-num-seqs", "2", "--max-model-len", "1024"], [], 2048, 2, 0.92),
    # Given values win.
    ("h100-sxm", ["--max-num-seqs", "64", "--max-num-batched-tokens", "512", "--gpu-memory-utilization", "0.8"], [],
     512, 64, 0.8),
]


@pytest.mark.parametrize("gpu,flags,version,tokens,seqs,utilization", DEFAULT_CASES,
                         ids=[f"{c[0]} {' '.join(c[1] + c[2])}" for c in DEFAULT_CASES])
def test_what_a_command_line_leaves_open_takes_vllms_default_for_the_gpu(gpu, flags, version, tokens, seqs, utilization):
    # Not the default preset's model: its batch limits then give way to vLLM's (the preset's hardware is not used).
    args = build_parser().parse_args(["run", "--vllm", shlex.join(["vllm", "serve", "qwen2.5-7b", *flags]), "--gpu", gpu,
                                      "--num-requests", "5", *version])
    scenario = build_scenario(args, args.scenario)
    assert (scenario.engine.max_num_batched_tokens, scenario.engine.max_num_seqs) == (tokens, seqs)
    assert scenario.gpu_memory_utilization == utilization


def test_a_budget_below_the_default_sequence_limit_lowers_the_default():
    """`--max-num-batched-tokens 512` on an H100 (default max_num_seqs 1,024): vLLM defaults max_num_seqs to
    min(1024, 512) (`EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`, 0.33.0; 0.10.1.1 too)."""
    assert from_flags(["--gpu", "h100-sxm", "--max-num-batched-tokens", "512"]).engine.max_num_seqs == 512
    assert from_flags(["--gpu", "h100-sxm", "--max-num-batched-tokens", "512", "--max-num-seqs", "64"]).engine.max_num_seqs == 64
    with pytest.raises(ConfigError) as error:  # a limit given above the budget is still refused, as vLLM does
        from_flags(["--gpu", "h100-sxm", "--max-num-batched-tokens", "512", "--max-num-seqs", "600"])
    assert error.value.field == "--max-num-batched-tokens"


def test_the_default_memory_share_sizes_the_kv_cache():
    """0.92 of an H100, not 0.9: more KV blocks than the older default, as many as asking for 0.92."""
    default, older, asked = (from_flags(["--gpu", "h100-sxm", *extra]).engine.num_gpu_blocks
                             for extra in ([], ["--gpu-memory-utilization", "0.9"], ["--gpu-memory-utilization", "0.92"]))
    assert default == asked > older


def test_vllms_defaults_leave_the_scenario_they_were_given_as_it_was():
    preset = {"model": MODEL, "engine": {"max_num_seqs": 8}}
    filled = with_vllm_defaults(preset)
    assert preset == {"model": MODEL, "engine": {"max_num_seqs": 8}}
    assert filled["engine"]["async_scheduling"] is True and "gpu_memory_utilization" in filled
