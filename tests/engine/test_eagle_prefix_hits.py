"""EAGLE/MTP drafts meet prefix caching, release by release (eagle_hit_rule.py), with the figures
vLLM 0.33.0's own KVCacheManager gives (16-token blocks): a prompt sharing a 512-token prefix hits
512 tokens without drafts and 496 with EAGLE under either rule; a resent 549-token prompt hits 544
without drafts or with 0.33's lookahead hashes, 528 under the drop."""

import pytest

from scheduler_core.engine.config import EngineConfig, VllmCompat
from scheduler_core.engine.eagle_hit_rule import RULE_EAGLE_DROP, RULE_EAGLE_DROP_CONNECTOR, eagle_hit_rule
from scheduler_core.engine.kv_events import HitBlockDropped
from scheduler_core.engine.policies import make_scheduler
from scheduler_core.engine.request import Request
from scheduler_core.engine.spec_decode import SpeculativeConfig
from scheduler_core.errors import ConfigError

SHARED = list(range(1000, 1512))  # a 512-token prefix: 32 blocks of 16


def eagle(**switches) -> SpeculativeConfig:
    return SpeculativeConfig(method="eagle", num_speculative_tokens=3, **switches)


def hit_of_second(first: list[int], second: list[int], spec=None, version: str = "0.33.0", **engine) -> int:
    """Run `first` until it has decoded a few tokens, then return the tokens `second` finds cached."""
    config = EngineConfig(num_gpu_blocks=512, max_num_batched_tokens=2048, speculative_config=spec,
                          compat=VllmCompat.for_version(version), **engine)
    scheduler = make_scheduler(config)
    scheduler.add_request(Request("a", first, max_tokens=8))
    for _ in range(3):
        scheduler.update_from_output(scheduler.schedule(), 0.0)
    _, num_hit = scheduler.kv_cache_manager.get_computed_blocks(Request("b", second, max_tokens=8))
    return num_hit


SHARED_PREFIX = (SHARED + list(range(5000, 5037)), SHARED + list(range(6000, 6037)))
RESENT = (SHARED + list(range(5000, 5037)),) * 2  # 549 tokens, sent twice


@pytest.mark.parametrize("prompts, spec, version, expected", [
    (SHARED_PREFIX, None, "0.33.0", 512),
    (SHARED_PREFIX, eagle(), "0.33.0", 496),  # lookahead hashes: block 31's hash covers token 512, which differs
    (SHARED_PREFIX, eagle(disable_lookahead_block_hashes=True), "0.33.0", 496),  # the drop
    (SHARED_PREFIX, eagle(), "0.10.1.1", 496),  # the drop, before any switch existed
    (RESENT, None, "0.33.0", 544),
    (RESENT, eagle(), "0.33.0", 544),
    (RESENT, eagle(disable_lookahead_block_hashes=True), "0.33.0", 528),
    (RESENT, eagle(), "0.10.1.1", 528),
    (RESENT, eagle(disable_eagle_block_drop=True, disable_lookahead_block_hashes=True), "0.33.0", 544),
])
def test_the_hit_vllm_0_33_measures(prompts, spec, version, expected):
    assert hit_of_second(*prompts, spec=spec, version=version) == expected


def test_a_kv_connector_brings_the_drop_back_in_0_33():
    assert hit_of_second(*RESENT, spec=eagle(), kv_connector=True) == 528
    assert eagle_hit_rule(EngineConfig(speculative_config=eagle(), kv_connector=True)).drop_rule == RULE_EAGLE_DROP_CONNECTOR


def test_disable_eagle_block_drop_is_honoured_from_0_30_only():
    opted_out = eagle(disable_eagle_block_drop=True)
    assert not eagle_hit_rule(EngineConfig(speculative_config=opted_out, kv_connector=True)).drops_last_block
    old = EngineConfig(speculative_config=opted_out, compat=VllmCompat.for_version("0.10.1.1"))
    assert eagle_hit_rule(old).drop_rule == RULE_EAGLE_DROP


def test_ngram_drafts_and_no_prefix_caching_keep_the_whole_hit():
    ngram = SpeculativeConfig(method="ngram", num_speculative_tokens=3)
    assert hit_of_second(*RESENT, spec=ngram, version="0.10.1.1") == 544
    assert not eagle_hit_rule(EngineConfig(speculative_config=eagle(), enable_prefix_caching=False)).drops_last_block


def test_the_dropped_block_is_a_kv_event_and_in_the_decision_trace():
    config = EngineConfig(num_gpu_blocks=512, max_num_batched_tokens=2048, speculative_config=eagle(),
                          compat=VllmCompat.for_version("0.10.1.1"))
    scheduler = make_scheduler(config)
    scheduler.add_request(Request("a", RESENT[0], max_tokens=8))
    scheduler.update_from_output(scheduler.schedule(), 0.0)
    trace = scheduler.enable_decision_trace()
    scheduler.add_request(Request("b", RESENT[1], max_tokens=8))
    trace.start_step(scheduler)
    output = scheduler.schedule()
    assert output.num_cached_tokens["b"] == 528
    events = scheduler.kv_cache_manager.take_events()
    dropped = [e for e in events if isinstance(e, HitBlockDropped)]
    assert [(e.request_id, e.rule) for e in dropped] == [("b", RULE_EAGLE_DROP)]
    decisions = trace.end_step(output.preempted_reqs, events)
    assert decisions["dropped_hit_blocks"] == {"b": {"block": dropped[0].block_id, "rule": RULE_EAGLE_DROP}}


def test_eagle_with_prefix_caching_over_several_groups_is_refused():
    with pytest.raises(ConfigError, match="speculative_config"):
        EngineConfig(speculative_config=eagle(), kv_cache_groups="full_attention,sliding_window:64")
