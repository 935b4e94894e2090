"""The prefix-cache hit rate as vLLM counts it, release by release (prefix_cache_stats.py): since
0.12 a preempted request's re-admission is counted apart; since 0.27 each admission counts once,
where before every lookup did."""

import dataclasses

from scheduler_core.engine.config import EngineConfig, VllmCompat
from scheduler_core.engine.policies import make_scheduler
from scheduler_core.engine.prefix_cache_stats import PrefixCacheStats
from scheduler_core.engine.request import Request

PREFIX = list(range(100, 164))  # 4 blocks of 16


def test_a_preempted_requests_readmission_is_counted_apart():
    stats = PrefixCacheStats()
    stats.record(80, 64, preempted=False)
    stats.record(90, 80, preempted=True)
    assert (stats.requests, stats.queries, stats.hits) == (1, 80, 64)
    assert (stats.preempted_requests, stats.preempted_queries, stats.preempted_hits) == (1, 90, 80)
    before_0_12 = PrefixCacheStats(exclude_preempted=False)
    before_0_12.record(80, 64, preempted=False)
    before_0_12.record(90, 80, preempted=True)
    assert (before_0_12.queries, before_0_12.hits) == (170, 144)


def blocked_head_lookups(compat: VllmCompat) -> PrefixCacheStats:
    """`a` holds most of a small pool; `b` shares its prefix but does not fit for three steps, then
    is admitted once `a` finishes."""
    config = EngineConfig(num_gpu_blocks=9, max_num_batched_tokens=256, max_model_len=256, compat=compat)
    scheduler = make_scheduler(config)
    scheduler.add_request(Request("a", PREFIX + list(range(500, 520)), max_tokens=4))
    scheduler.update_from_output(scheduler.schedule(), 0.0)
    scheduler.add_request(Request("b", PREFIX + list(range(600, 660)), max_tokens=2))
    for _ in range(20):
        scheduler.update_from_output(scheduler.schedule(), 0.0)
    assert not scheduler.has_unfinished_requests()
    return scheduler.prefix_cache_stats


def test_since_0_27_each_admission_counts_once_before_every_lookup_did():
    now = blocked_head_lookups(VllmCompat())
    assert (now.requests, now.queries, now.hits) == (2, 84 + 124, 64)
    per_lookup = blocked_head_lookups(dataclasses.replace(VllmCompat(), prefix_stats_per_admission=False))
    assert per_lookup.requests > 2 and per_lookup.hits == 64 * (per_lookup.requests - 1)
    assert per_lookup.hit_rate > now.hit_rate
