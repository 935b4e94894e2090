"""The "Everything on at once" lesson in a real browser: at the step its story stops at, "Why?" says
which block the drafter's rule dropped from the request's hit and what it costs, the inspector's
block table shows the block allocated fresh where the cached one was, the KV panel's prefix hit
rate moves; and the Configure dialog switches the release, under which the same hit is whole."""

from __future__ import annotations

import pytest

from scheduler_core.lessons.catalog import LESSONS_BY_NAME
from scheduler_core.lessons.framework import story
from tests.browser.pages import NORMAL, SEEK_MS, WAIT_MS, axe_violations, open_page, wait_for_dashboard

LESSON = LESSONS_BY_NAME["everything-on"]


@pytest.fixture(scope="module")
def drop():
    """The facts of the story's moment on the first arm (vLLM 0.18.0): request, blocks, rule."""
    beats = story(LESSON, "eagle-0.18", LESSON.run())
    return next(b for b in beats if b["event"] == "first_hit_block_dropped")


def seek(page, step: int) -> None:
    page.evaluate("step => window.servescope.send({type: 'seek', step})", step)
    page.wait_for_function("step => window.servescope.store.step === step", arg=step, timeout=SEEK_MS)


def hit_rate(page) -> str:
    page.wait_for_function("document.querySelector('#kv-summary .hit-rate') !== null")
    return page.locator("#kv-summary .hit-rate b").inner_text()


def test_why_and_the_block_table_show_the_dropped_block_allocated_fresh(server, new_page, drop):
    facts = drop["facts"]
    page = open_page(new_page, f"{server.url}/?lesson=everything-on", "normal", NORMAL)
    wait_for_dashboard(page)
    seek(page, drop["step"] - 1)
    before = hit_rate(page)
    seek(page, drop["step"])
    page.wait_for_function("r => document.querySelector('#kv-summary .hit-rate b')?.textContent !== r", arg=before)
    assert float(hit_rate(page).rstrip("%")) < 100 * 7 / 8  # a hit of 6 of the 7 matched blocks moved it

    page.evaluate("rid => { const s = window.servescope.store; s.selected = rid; s.dirty.add('selection'); }", facts["request"])
    page.locator("#tab-why").click()
    evidence = page.locator("#why .why-request")
    page.wait_for_function("document.querySelector('#why .why-request .dropped-hit') !== null", timeout=SEEK_MS)
    text = " ".join(evidence.inner_text().split())
    assert "Hit cut by one block: its prompt matched 7 blocks in the prefix cache" in text
    assert "(rule eagle_block_drop)" in text and "disable_eagle_block_drop opts out from 0.30.0" in text
    assert (f"Cached block {facts['block']} was dropped from the hit and stays cached; its 128 tokens are computed "
            f"again in block {facts['fresh']}, allocated fresh") in text
    diff = page.locator("#why .why-diff").inner_text()
    assert f"cached block {facts['block']} left out (eagle_block_drop); new block {facts['fresh']} in its place" in diff

    page.locator("#tab-inspector").click()
    row = page.locator("#inspector .vrow.dropped-hit")
    row.wait_for(timeout=SEEK_MS)
    cells = row.locator("span").all_inner_texts()
    assert cells == [str(facts["kept"]), str(facts["fresh"]), "128/128", f"new, not {facts['block']}"]
    assert axe_violations(page) == []
    assert page.errors == []


def test_the_configure_dialog_switches_the_release_and_the_hit_is_whole(server, new_page, drop):
    """From the lesson's 0.18.0 arm, Configure picks vLLM 0.33.0: the new session keeps the drafter,
    the blocks and the workload, and the same request's hit keeps all 7 blocks (lookahead hashes)."""
    facts = drop["facts"]
    page = open_page(new_page, f"{server.url}/?lesson=everything-on", "normal", NORMAL)
    wait_for_dashboard(page)
    page.click("#configure")
    page.wait_for_function("document.querySelector('#cfg-top-vllm_version') !== null")
    select = page.locator("#cfg-top-vllm_version")
    assert select.input_value() == "0.18.0"
    options = select.locator("option").all_inner_texts()
    assert options[0] == "(default)" and "0.10.0" in options and "0.30.0" in options and options[-1] == "0.33.0"
    select.select_option("0.33.0")
    page.wait_for_timeout(300)
    assert page.locator("#cfg-engine-num_gpu_blocks").input_value() == "1024"  # a release keeps the pool
    page.click("#cfg-submit")
    page.wait_for_url("**/?config=*", timeout=WAIT_MS)
    wait_for_dashboard(page)
    scenario = page.evaluate("window.servescope.store.session.scenario")
    assert scenario["vllm_version"] == "0.33.0" and scenario["engine"]["speculative_config"]["method"] == "eagle"
    seek(page, drop["step"])
    record = page.evaluate("window.servescope.store.lastRecord")
    assert facts["request"] in record["admitted"] and record["cached_tokens"][facts["request"]] == 7 * 128
    assert page.errors == []
