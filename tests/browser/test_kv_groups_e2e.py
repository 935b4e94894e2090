"""A hybrid model's KV cache groups in the dashboard, on gpt-oss-20b with a small pool and short prompts (its
layers make two groups, in vLLM's order: sliding window 128, then full attention): the legend names the groups
as vLLM does, each block carries its group's band, the block table has a row per group with the null slots
where the window gave blocks back, and the inspector says which blocks left the window and where they went;
every number checked against the same run computed here. A single-group engine shows none of it."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from playwright.sync_api import Page

from app.routes.api import scenario_from
from app.schemas import SessionCreate
from tests.browser.pages import (
    NORMAL,
    PROJECTOR,
    axe_violations,
    check_layout,
    open_dashboard,
    open_page,
    set_theme,
    wait_for_dashboard,
    wait_for_step,
)

HYBRID = {
    "name": "hybrid-gpt-oss",
    "model": "gpt-oss-20b",
    "engine": {"num_gpu_blocks": 400, "max_num_seqs": 16, "max_num_batched_tokens": 512, "max_model_len": 4096},
    "workload": {"num_requests": 30, "arrival_rate": 20.0, "lengths": "lognormal", "prompt_len": 500, "output_len": 200,
                 "sigma": 0.5, "shared_prefix_len": 64, "num_shared_prefixes": 2, "seed": 3},
}
URL = "/?config=" + quote(json.dumps(HYBRID))
STEPS = 40
SLIDING, FULL = 0, 1  # the groups' order in vLLM's KVCacheConfig


def fmt(n: int) -> str:
    return f"{n:,}"


def simulation(trace: bool = False):
    """The run the page's session makes of HYBRID (vLLM's defaults applied as for the page)."""
    sim = scenario_from(SessionCreate.model_validate({"scenario": HYBRID})).build(keep_finished=True)
    if trace:
        sim.scheduler.enable_decision_trace()
    return sim


@pytest.fixture(scope="module")
def after_steps():
    sim = simulation()
    for _ in range(STEPS):
        sim.step()
    return sim


@pytest.fixture(scope="module")
def window_step():
    """The first step in which a sliding window gave blocks back from a request still running after it."""
    sim = simulation(trace=True)
    while True:
        record = sim.step()
        running = {r.request_id for r in sim.scheduler.running}
        for entry in record.decisions.get("left_window", []):
            if entry["request"] in running:
                return record, entry


def hybrid_page(server, new_page, steps: int, viewport: dict = NORMAL, theme: str = "normal") -> Page:
    page = open_page(new_page, server.url + URL, theme, viewport)
    wait_for_dashboard(page)
    page.evaluate("n => window.servescope.send({type: 'step', n})", steps)
    wait_for_step(page, steps)
    return page


def select(page: Page, request_id: str) -> None:
    page.locator(f".chip[data-id='{request_id}']").first.click()
    page.wait_for_function("id => window.servescope.store.selected === id", arg=request_id)


def leading_nulls(table) -> int:
    return next((i for i, block in enumerate(table) if block), len(table))


def test_the_legend_names_each_group_in_vllms_words(server, new_page):
    page = hybrid_page(server, new_page, 5)
    legend = page.locator("#kv-legend").inner_text()
    assert "full attention" in legend and "sliding window 128" in legend


def test_the_block_table_has_a_row_per_group_with_the_windows_null_slots(server, new_page, after_steps):
    kv = after_steps.kv_view()
    request_id = max((r.request_id for r in after_steps.scheduler.running),
                     key=lambda rid: leading_nulls(kv.group_block_tables(rid)[SLIDING]))
    window, full = kv.group_block_tables(request_id)
    gone = leading_nulls(window)
    assert gone > 0 and 0 not in full
    page = hybrid_page(server, new_page, STEPS)
    select(page, request_id)
    # The summary is drawn on the next frame after the selection, not within the click.
    page.wait_for_function("() => document.querySelectorAll('#kv-summary .group-row').length === 2")
    rows = page.locator("#kv-summary .group-row")
    span = f"0–{gone - 1}" if gone > 1 else "0"
    assert rows.nth(SLIDING).inner_text().startswith(f"sliding window 128: {span}→null {gone}")
    assert rows.nth(FULL).inner_text().startswith("full attention: 0") and "null" not in rows.nth(FULL).inner_text()
    # Every null slot of every table, counted in the summary: blocks the window gave back.
    nulls = sum(table.count(0) for rid in kv.block_tables for table in kv.group_block_tables(rid))
    assert f"null slots {fmt(nulls)}" in page.locator("#kv-summary").inner_text()
    # The inspector lists the same tables, a heading row per group, "null" where the window gave a block back.
    page.click("#tab-inspector")
    heading = page.locator("#inspector h4").first
    heading.wait_for()
    assert "in 2 KV cache groups" in heading.inner_text()
    # The sliding window's table comes first, its null rows at its top: no scrolling needed.
    page.wait_for_function("() => document.querySelector('#inspector .vlist.table').innerText.includes('sliding window 128')")
    listed = page.locator("#inspector .vlist.table").inner_text()
    assert "left the window" in listed  # a null row of the sliding window's table


def test_after_deltas_the_page_holds_each_table_per_group_and_each_blocks_group(server, new_page, after_steps):
    page = hybrid_page(server, new_page, STEPS)  # the steps came as one delta on top of the first snapshot
    kv = after_steps.kv_view()
    tables = page.evaluate("Object.fromEntries(window.servescope.store.groupTables)")
    assert tables == {rid: [list(table) for table in kv.group_block_tables(rid)] for rid in kv.block_tables}
    groups = page.evaluate("Array.from(window.servescope.store.blocks.group)")
    expected = [255] * kv.num_blocks
    for rid in kv.block_tables:
        for group_id, table in enumerate(kv.group_block_tables(rid)):
            for block in table:
                if block:
                    expected[block] = group_id
    assert groups == expected


def test_each_block_carries_its_groups_band(server, new_page, after_steps):
    page = hybrid_page(server, new_page, STEPS)
    # The top row of pixels of a block's cell, against the group colours of the palette.
    found = page.evaluate("""() => {
        const { store } = window.servescope;
        const canvas = document.getElementById('kv-canvas');
        const cell = Number(canvas.dataset.cell), cols = Math.floor(canvas.parentElement.clientWidth / cell);
        const dpr = window.devicePixelRatio || 1, ctx = canvas.getContext('2d');
        const rgb = (css) => { const probe = document.createElement('i'); probe.style.color = css; document.body.append(probe);
          const value = getComputedStyle(probe).color.match(/\\d+/g).slice(0, 3).map(Number); probe.remove(); return value; };
        const style = getComputedStyle(document.documentElement);
        const wanted = [0, 1].map((g) => rgb(style.getPropertyValue(`--group-${g}`).trim()));
        const result = {};
        for (let block = 1; block < store.blocks.n; block++) {
          const group = store.blocks.group[block];
          if (group === 255 || group in result) continue;
          const x = (block % cols) * cell + Math.floor(cell / 2), y = Math.floor(block / cols) * cell;
          const pixel = Array.from(ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr) + 1, 1, 1).data).slice(0, 3);
          result[group] = pixel.every((v, i) => Math.abs(v - wanted[group][i]) <= 2);
        }
        return result;
    }""")
    assert found == {"0": True, "1": True}


def test_the_inspector_says_which_blocks_left_the_window_and_where_they_went(server, new_page, window_step):
    record, entry = window_step
    page = hybrid_page(server, new_page, record.step + 1)
    select(page, entry["request"])
    page.click("#tab-inspector")
    why = page.locator("#inspector .why-request")
    why.wait_for()
    text = " ".join(why.inner_text().split())
    first, count, block_size = entry["first_index"], entry["blocks"], 16
    blocks = f"{fmt(count)} block{'s' if count > 1 else ''}"
    logical = f"{fmt(first)}" if count == 1 else f"{fmt(first)}–{fmt(first + count - 1)}"
    assert (f"sliding window 128 gave back {blocks}: tokens {fmt(first * block_size)}–{fmt((first + count) * block_size - 1)} "
            f"(logical block{'s' if count > 1 else ''} {logical} of that group's table) fell out of the last 128 tokens it "
            f"attends to, so the table points at the null block there.") in text
    cached = len(entry["to_tail_cached"])
    assert cached  # prefix caching is on: full blocks leaving the window keep their cached prefix
    assert f"{fmt(cached)} block{'s' if cached > 1 else ''} to the tail, still holding a cached prefix" in text
    page.click("#tab-why")
    step = page.locator("#why .why-step")
    step.wait_for()
    assert "Sliding windows:" in step.inner_text()


@pytest.mark.parametrize("theme, viewport", [("normal", NORMAL), ("projector", PROJECTOR)])
def test_the_hybrid_dashboard_reads_and_passes_axe(server, new_page, after_steps, theme, viewport):
    page = hybrid_page(server, new_page, STEPS, viewport, theme)
    set_theme(page, theme, viewport)
    select(page, after_steps.scheduler.running[0].request_id)
    page.locator("#kv-summary .group-row").first.wait_for()
    # The layout with the event log beside the grid: the inspector's history list, scrolled to its
    # end under its sticky header, reads to layout_check as overlapping text (the header covers it).
    page.click("#tab-events")
    page.wait_for_timeout(400)
    check_layout(page, f"hybrid dashboard, {theme}", projector=theme == "projector")
    page.click("#tab-why")  # the step's window sentences and the block diff
    page.locator("#why .why-step").wait_for()
    check_layout(page, f"hybrid dashboard's Why? tab, {theme}", projector=theme == "projector")
    page.click("#tab-inspector")
    page.locator("#inspector h4").first.wait_for()
    assert axe_violations(page) == []
    assert page.errors == []


def test_a_single_group_engine_shows_no_groups(presenter):
    presenter.evaluate("n => window.servescope.send({type: 'step', n})", 30)
    wait_for_step(presenter, 30)
    chip = presenter.locator(".lane.running .chip").first
    chip.click()
    presenter.locator("#kv-summary .block-table").wait_for()
    assert presenter.locator("#kv-summary .group-row").count() == 0
    assert "full attention" not in presenter.locator("#kv-legend").inner_text()
    assert presenter.evaluate("window.servescope.store.kvGroups") is None


def test_the_page_holds_the_groups_the_snapshot_named(server, new_page):
    page = open_dashboard(new_page(), server.url + URL)
    groups = page.evaluate("window.servescope.store.kvGroups")
    assert groups == [{"kind": "sliding_window", "window": 128, "label": "sliding window 128"},
                      {"kind": "full_attention", "window": 0, "label": "full attention"}]
