"""The mixture-of-experts lesson quotes the simulation's own sizing: its parameter counts are the
model cards', its KV figures are the memory plan's, and its pool is the one the engine runs on."""

import pytest

from scheduler_core.lessons.catalog import LESSONS_BY_NAME
from scheduler_core.lessons.framework import evaluate
from scheduler_core.timing.model_summary import model_summary
from scheduler_core.timing.presets import GPUS, MODELS

LESSON = LESSONS_BY_NAME["moe-sliding-window"]


@pytest.fixture(scope="module")
def results():
    return LESSON.run()


@pytest.mark.parametrize(("model", "total_b", "active_b"), [("gpt-oss-120b", 116.83, 5.13), ("gpt-oss-20b", 20.91, 3.61)])
def test_parameter_counts_are_the_model_cards(model, total_b, active_b):
    """OpenAI's gpt-oss model card (arXiv:2508.10925, table 1): 116.83B total and 5.13B active
    parameters for gpt-oss-120b, 20.91B and 3.61B for gpt-oss-20b (active: the LM head counted, the
    input embedding not)."""
    summary = model_summary(MODELS[model], GPUS["h200"])
    assert round(summary["total_params"] / 1e9, 2) == total_b
    assert round(summary["active_params"] / 1e9, 2) == active_b


def test_every_claim_holds(results):
    assert all(holds for holds, _ in evaluate(LESSON, results))


def test_the_kv_figures_are_the_memory_plans_and_the_pool_the_engines(results):
    """Each arm's KV cache tokens and concurrency are what vLLM's startup arithmetic logs for it, and
    the engine runs on exactly the blocks that plan gives (nothing sized for the lesson alone)."""
    for arm in LESSON.arms:
        scenario = LESSON.scenario(arm)
        plan = scenario.memory_plan()
        assert results[arm].memory["kv_cache_size_tokens"] == plan.kv_cache_size_tokens
        assert scenario.build().config.num_gpu_blocks == plan.num_gpu_blocks


def test_sliding_window_blocks_come_back_mid_request(results):
    """What the lesson says the engine does: gpt-oss runs vLLM's two KV cache groups over vLLM's own
    pool, and a request's sliding-window group gives blocks back while it runs (BlocksLeftWindow), so
    at that step it holds a full table in the full-attention group and about a window's blocks (128
    tokens, plus the 2 x 8,192 that may be in flight, in 16-token blocks) in the other."""
    gpt_oss = results["gpt-oss-120b"]
    sim = LESSON.simulation("gpt-oss-120b")
    assert sim.config.kv_cache_groups == "sliding_window:128,full_attention"
    assert sim.config.num_gpu_blocks == gpt_oss.memory["profiled_num_gpu_blocks"]  # vLLM's num_blocks
    moment = gpt_oss.events["first_window_release"]
    assert moment["step"] < gpt_oss.events["first_finish"]["step"]
    for _ in sim.records(max_steps=moment["step"]):
        pass
    sliding, full = sim.kv_view().group_block_tables(moment["request"])
    assert len(full) == -(-moment["computed"] // 16) and 0 not in full
    assert sliding.count(0) == moment["blocks"] and 0 < len(sliding) - sliding.count(0) <= -(-(127 + 2 * 8192) // 16) + 1
    assert len(full) + len(sliding) - sliding.count(0) == moment["held"] < moment["every"] == 2 * len(full)
