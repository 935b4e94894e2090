"""The release table: every vLLM release 0.10-0.33 is a profile, cut from one table of changes that
each cite their release; unknown versions are refused with the list."""

from dataclasses import fields

import pytest

from scheduler_core.cli.main import build_parser, main
from scheduler_core.cli.overrides import build_scenario
from scheduler_core.engine.config import vllm_default_batch_limits
from scheduler_core.engine.releases import (
    CHANGES_BY_NAME,
    RELEASE_CHANGES,
    SWITCH,
    VLLM_PROFILES,
    VLLM_RELEASES,
    VllmCompat,
    VllmRelease,
    release_key,
)
from scheduler_core.errors import ConfigError
from scheduler_core.exports.vllm_versions_doc import DOC_PATH, render
from scheduler_core.scenario.scenario import Scenario, apply_assignments

GIB = 1 << 30


def scenario_of(*flags):
    args = build_parser().parse_args(["run", "--num-requests", "5", *flags])
    return build_scenario(args, args.scenario)


def test_every_release_from_010_to_033_is_a_profile_in_release_order():
    assert VLLM_RELEASES[0] == "0.10.0" and VLLM_RELEASES[-1] == "0.33.0"
    assert list(VLLM_RELEASES) == sorted(VLLM_RELEASES, key=release_key)
    assert {v.rsplit(".", 1)[0] if v.count(".") == 2 else v[:4] for v in VLLM_RELEASES} >= {
        f"0.{minor}" for minor in range(10, 34)}
    assert list(VLLM_PROFILES) == list(VLLM_RELEASES)


@pytest.mark.parametrize("version", VLLM_RELEASES)
def test_every_release_is_accepted_on_the_command_line(version):
    scenario = scenario_of("--vllm-version", version)
    assert scenario.vllm_version == version
    assert scenario.engine.compat == VllmCompat.for_version(version)


def test_an_unknown_version_is_refused_with_the_list(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["run", "--vllm-version", "0.9.2", "--no-progress"])
    assert exited.value.code == 2
    assert "invalid choice: '0.9.2'" in capsys.readouterr().err
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict({"vllm_version": "0.34.0"})
    assert error.value.field == "vllm_version"
    assert "0.10.0, 0.10.1" in error.value.reason and "0.33.0" in error.value.reason


def test_a_scenario_file_naming_an_unknown_version_says_file_and_field(tmp_path, capsys):
    path = tmp_path / "old.toml"
    path.write_text('vllm_version = "0.8.5"\n')
    assert main(["run", str(path), "--no-progress"]) == 2
    assert f"{path}:vllm_version" in capsys.readouterr().err


def test_each_switch_has_exactly_one_row_and_every_row_cites_a_release_and_a_place():
    switch_rows = [c.name for c in RELEASE_CHANGES if c.kind == SWITCH]
    assert sorted(switch_rows) == sorted(f.name for f in fields(VllmCompat))
    assert len(CHANGES_BY_NAME) == len(RELEASE_CHANGES)
    for change in RELEASE_CHANGES:
        assert change.release in VLLM_RELEASES
        assert change.where.startswith("vllm/") and change.what


def test_the_two_recorded_profiles_are_all_off_and_all_on():
    """The 0.10.1.1 and 0.33.0 recordings replay under these (tests/oracle)."""
    assert not any(VllmCompat.for_version("0.10.1.1").__dict__.values())
    assert VllmCompat.for_version("0.33.0") == VllmCompat()


def test_priority_preemption_is_split_by_the_release_that_changed_each_part():
    """0.10.2 stopped the crash, 0.11.1 returned the victim's tokens, 0.28 fixed the scan index, 0.33 let
    a self-preempted request's successors try: one switch each."""
    on = {v: VllmCompat.for_version(v) for v in ("0.10.1.1", "0.10.2", "0.11.1", "0.28.0", "0.33.0")}
    assert [c.priority_victim_leaves_step for c in on.values()] == [False, True, True, True, True]
    assert [c.priority_victim_unscheduled for c in on.values()] == [False, False, True, True, True]
    assert [c.priority_victim_index_fixed for c in on.values()] == [False, False, False, True, True]
    assert [c.self_preempted_scan_continues for c in on.values()] == [False, False, False, False, True]


def test_0_19_1_has_full_prompt_admission_but_not_0_28s_free_block_order():
    compat = VllmCompat.for_version("0.19.1")
    assert compat.full_prompt_admission and compat.skipped_requests_keep_order and compat.unchunked_prompt_blocks_queue
    assert not compat.unhashed_blocks_reused_first and not compat.long_prefill_cap_lifted_when_alone


def test_the_memory_share_default_is_092_from_020():
    assert scenario_of("--vllm-version", "0.19.1").gpu_memory_utilization == 0.9
    assert scenario_of("--vllm-version", "0.20.0").gpu_memory_utilization == 0.92


def test_async_scheduling_is_on_by_default_from_014():
    assert scenario_of("--vllm-version", "0.13.0").engine.async_scheduling is False
    assert scenario_of("--vllm-version", "0.14.0").engine.async_scheduling is True


@pytest.mark.parametrize("method", ["ngram", "draft_model"])
def test_drafters_other_than_eagle_turn_default_async_scheduling_off_until_033(method):
    spec = f'{{"method": "{method}", "num_speculative_tokens": 2}}'
    assert scenario_of("--vllm-version", "0.32.0", "--speculative-config", spec).engine.async_scheduling is False
    assert scenario_of("--vllm-version", "0.33.0", "--speculative-config", spec).engine.async_scheduling is True
    eagle = '{"method": "eagle", "num_speculative_tokens": 2}'
    assert scenario_of("--vllm-version", "0.32.0", "--speculative-config", eagle).engine.async_scheduling is True


def test_16k_batch_defaults_on_a_160_gib_gpu_from_028():
    assert vllm_default_batch_limits({}, "B200", 180 * GIB, VllmRelease("0.27.1")) == {
        "max_num_batched_tokens": 8192, "max_num_seqs": 1024}
    assert vllm_default_batch_limits({}, "B200", 180 * GIB, VllmRelease("0.28.0")) == {
        "max_num_batched_tokens": 16384, "max_num_seqs": 1024}


def test_swap_space_is_refused_from_018_in_vllms_words():
    assert scenario_of("--vllm-version", "0.17.1", "--swap-space", "1").engine.num_cpu_blocks > 0
    with pytest.raises(ConfigError) as error:
        scenario_of("--vllm-version", "0.18.0", "--swap-space", "1")
    assert error.value.field == "swap_space"
    assert error.value.reason.startswith("unrecognized arguments: --swap-space")


def test_v0_swap_preemption_is_refused_from_011():
    with pytest.raises(ConfigError) as error:
        scenario_of("--vllm-version", "0.11.0", "--preemption-mode", "swap", "--num-cpu-blocks", "64")
    assert error.value.field == "engine.preemption_mode"


def test_a_scenario_naming_no_release_keeps_v0_swap_when_written_and_read_back():
    # What a Why? replay or an export does with a live session's scenario (the memory-pressure lesson's swap arm).
    scenario = scenario_of("--preemption-mode", "swap", "--num-cpu-blocks", "64", "--swap-space", "1")
    data = scenario.to_dict()
    assert "vllm_version" not in data
    assert Scenario.from_dict(data) == scenario


def test_an_opt_in_flag_is_refused_by_name_where_the_release_has_it_and_as_unknown_where_not():
    with pytest.raises(ConfigError) as error:
        scenario_of("--vllm", "vllm serve llama-3.1-8b --watermark 0.1", "--vllm-version", "0.24.0")
    assert error.value.field == "--watermark" and "not modelled" in error.value.reason
    with pytest.raises(ConfigError) as error:
        scenario_of("--vllm", "vllm serve llama-3.1-8b --watermark 0.1", "--vllm-version", "0.23.0")
    assert "unrecognized arguments: --watermark" in error.value.reason and "0.24.0" in error.value.reason


def test_dynamic_k_is_refused_by_name():
    spec = {"method": "eagle", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 8, 3]]}
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict({"vllm_version": "0.24.0", "engine": {"speculative_config": spec}})
    assert error.value.field.endswith("num_speculative_tokens_per_batch_size") and "not modelled" in error.value.reason


def test_a_release_named_with_one_switch_flipped_keeps_the_flip():
    scenario = Scenario.from_dict({"vllm_version": "0.19.1", "engine": {"compat": {"full_prompt_admission": False}}})
    assert scenario.engine.compat == VllmCompat(**{**VllmCompat.for_version("0.19.1").__dict__,
                                                   "full_prompt_admission": False})


def test_the_docs_page_is_written_from_the_table():
    assert DOC_PATH.read_text() == render(), "run: python -m scheduler_core.exports.vllm_versions_doc"


def test_a_sweep_or_compare_can_set_the_release():
    data = {"engine": {"num_gpu_blocks": 512}}
    apply_assignments(data, [("vllm_version", "0.19.1")])
    assert Scenario.from_dict(data).engine.compat == VllmCompat.for_version("0.19.1")


def test_vllms_own_flag_for_a_switch_sets_it_on_releases_that_have_it(capsys):
    line = "vllm serve llama-3.1-8b --no-scheduler-reserve-full-isl --port 8000"
    assert scenario_of("--vllm", line, "--vllm-version", "0.19.0").engine.compat.full_prompt_admission is False
    assert capsys.readouterr().err.count("ignored: --port 8000") == 1
    with pytest.raises(ConfigError) as error:
        scenario_of("--vllm", line, "--vllm-version", "0.18.1")
    assert error.value.field == "--no-scheduler-reserve-full-isl" and "0.19.0" in error.value.reason
