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


def test_the_window_counts_only_in_the_pool_size(results):
    """What the lesson says the engine does: the sliding-window layers make the pool larger than
    every layer keeping every token would (vLLM's planner), but a request still holds a block per
    16 tokens to its end (blocks out of the window are not given back while it runs)."""
    gpt_oss = results["gpt-oss-120b"]
    assert gpt_oss.memory["kv_cache_size_tokens"] > gpt_oss.model["kv_tokens_without_windows"]
    finish = gpt_oss.events["first_finish"]
    sim = LESSON.simulation("gpt-oss-120b")
    for _ in sim.records(max_steps=finish["step"] - 1):
        pass
    request = sim.request(finish["request"])
    assert len(sim.block_table(finish["request"])) == -(-request.num_tokens // sim.config.block_size) == finish["blocks"]
