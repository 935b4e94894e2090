"""The configuration form warns, under vLLM's startup lines, when the clients' conversations would
outgrow the KV cache (sim/capacity.py's rule, sent by /api/scenarios/validate), readably on a
1280 x 720 projector, and drops the warning once they fit."""

from __future__ import annotations

import pytest

from tests.browser.pages import WAIT_MS, open_dashboard

pytestmark = pytest.mark.browser

WARNING = "document.querySelector('#cfg-capacity')"


def set_field(page, selector: str, value: str) -> None:
    page.fill(selector, value)
    page.locator(selector).dispatch_event("change")


def test_config_form_warns_when_clients_times_context_exceed_the_kv_cache(server, new_page):
    page = open_dashboard(new_page(1280, 720), server.url + "/")
    page.click("#configure")
    page.wait_for_function("document.querySelector('#cfg-startup')?.textContent.includes('GPU KV cache size')",
                           timeout=WAIT_MS)
    # The default preset's arrivals come at a rate: nothing to warn about.
    assert page.evaluate(f"{WARNING}.hidden")
    set_field(page, "#cfg-engine-num_gpu_blocks", "200")
    set_field(page, "#cfg-workload-concurrency", "64")
    page.wait_for_function(f"!{WARNING}.hidden", timeout=WAIT_MS)
    text = page.locator("#cfg-capacity").text_content()
    assert text.startswith("capacity warning: 64 clients x ") and "more than the 3,200 the cache holds" in text
    page.locator("#cfg-capacity").scroll_into_view_if_needed()
    assert page.locator("#cfg-capacity").is_visible()
    # Readable from the back of a room: a 12 px font or more, every line inside its box, nothing clipped.
    assert page.evaluate(f"parseFloat(getComputedStyle({WARNING}).fontSize)") >= 12
    assert page.evaluate(f"{WARNING}.scrollWidth <= {WARNING}.clientWidth + 1")
    set_field(page, "#cfg-engine-num_gpu_blocks", "8192")
    page.wait_for_function(f"{WARNING}.hidden", timeout=WAIT_MS)
    assert page.errors == []
