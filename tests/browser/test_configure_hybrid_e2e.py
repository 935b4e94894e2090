"""The configuration dialog with hybrid models: the settings the server derives from the model (the pool,
vLLM's KV cache groups, a Mamba hybrid's block size) follow a new model instead of carrying the old
session's, and prefix caching is left to the server unless the user ticks it, so Qwen3-Next starts from
the dialog with its startup lines saying why its prefix caching is off."""

from __future__ import annotations

import json
from urllib.parse import quote

from playwright.sync_api import Page

from tests.browser.pages import open_dashboard, wait_for_dashboard

GPT_OSS = {
    "name": "gpt-oss-small", "model": "gpt-oss-20b",
    "engine": {"num_gpu_blocks": 400, "max_model_len": 4096},
    "workload": {"num_requests": 20, "arrival_rate": 20.0, "prompt_len": 300, "output_len": 60},
}
MAMBA_NOTE = "prefix caching off for this Mamba hybrid"


def open_configure(page: Page) -> None:
    page.click("#configure")
    page.wait_for_function("document.querySelector('#cfg-startup')?.textContent.includes('GPU KV cache size')")


def choose(page: Page, selector: str, value: str) -> None:
    if page.locator(selector).evaluate("e => e.tagName") == "SELECT":
        page.select_option(selector, value)
    else:
        page.fill(selector, value)
        page.locator(selector).dispatch_event("change")


def wait_for_startup(page: Page, text: str) -> str:
    page.wait_for_function("t => document.querySelector('#cfg-startup')?.textContent.includes(t)", arg=text)
    return page.locator("#cfg-startup").text_content()


def start(page: Page) -> dict:
    """Start the dialog's session; the new page's scenario, as its session reports it (defaults left out).
    A validation the server's rate limit put off is retried after its Retry-After: time for that."""
    with page.expect_navigation(timeout=10_000):
        page.click("#cfg-submit")
    wait_for_dashboard(page)
    return page.evaluate("window.servescope.store.session.scenario")


def own_errors(page: Page) -> list[str]:
    """The page's errors but the browser's line for each refused validation (a setting on the way to
    another, Qwen3-Next at TP 1 say, is a 422 the dialog shows)."""
    return [e for e in page.errors if not e.startswith("Failed to load resource")]


def test_after_a_hybrid_session_a_new_model_gets_its_own_groups(server, new_page):
    page = open_dashboard(new_page(), server.url + "/?config=" + quote(json.dumps(GPT_OSS)))
    open_configure(page)
    assert page.input_value("#cfg-engine-kv_cache_groups") == "sliding_window:128,full_attention"
    choose(page, "#cfg-top-model", "llama-3.1-8b")
    lines = wait_for_startup(page, "Model loading took 14.99 GiB")
    assert "kv_cache_groups" not in lines
    # Emptied, the derived settings show what the server makes of the new model.
    assert [page.input_value(f"#cfg-engine-{n}") for n in ("num_gpu_blocks", "kv_cache_groups", "block_size")] == ["", "", ""]
    page.wait_for_function("document.querySelector('#cfg-engine-kv_cache_groups').placeholder === 'full_attention'")
    scenario = start(page)
    assert scenario["model"] == "llama-3.1-8b" and "kv_cache_groups" not in scenario["engine"]  # the default: one group
    assert page.evaluate("window.servescope.store.kvGroups") is None
    assert own_errors(page) == []


def test_qwen3_next_starts_from_the_dialog_with_prefix_caching_off_and_says_why(presenter):
    open_configure(presenter)
    assert presenter.is_checked("#cfg-engine-enable_prefix_caching")  # llama's session caches prefixes
    choose(presenter, "#cfg-top-model", "qwen3-next-80b-a3b")
    choose(presenter, "#cfg-top-tensor_parallel_size", "4")
    lines = wait_for_startup(presenter, MAMBA_NOTE)
    assert "Setting attention block size to 272 tokens" in lines and "mamba_cache_mode='align'" in lines
    # The server's decision, shown in the box it left unset.
    assert not presenter.is_checked("#cfg-engine-enable_prefix_caching")
    scenario = start(presenter)
    assert scenario["model"] == "qwen3-next-80b-a3b" and scenario["engine"]["enable_prefix_caching"] is False
    assert scenario["engine"]["block_size"] == 272
    assert len(presenter.evaluate("window.servescope.store.kvGroups")) == 4
    # Back to a dense model: the 272-token block size stays with Qwen3-Next, prefix caching comes back.
    open_configure(presenter)
    choose(presenter, "#cfg-top-model", "llama-3.1-8b")
    choose(presenter, "#cfg-top-tensor_parallel_size", "1")
    wait_for_startup(presenter, "Model loading took 14.99 GiB")
    presenter.wait_for_function("document.querySelector('#cfg-engine-block_size').placeholder === '16'")
    assert presenter.input_value("#cfg-engine-block_size") == ""
    assert presenter.is_checked("#cfg-engine-enable_prefix_caching")
    scenario = start(presenter)
    assert scenario["engine"].get("block_size", 16) == 16 and scenario["engine"].get("enable_prefix_caching", True)
    assert own_errors(presenter) == []


def test_prefix_caching_ticked_for_qwen3_next_is_refused_by_name(presenter):
    open_configure(presenter)
    choose(presenter, "#cfg-top-model", "qwen3-next-80b-a3b")
    choose(presenter, "#cfg-top-tensor_parallel_size", "4")
    wait_for_startup(presenter, MAMBA_NOTE)
    presenter.check("#cfg-engine-enable_prefix_caching")
    assert "mamba_cache_mode='align'" in wait_for_startup(presenter, "engine.enable_prefix_caching:")
