"""The lecture hall in a real browser: every lesson at its opening, at each beat and at the end, at
1280x720 in the projector theme and at 1920x1080 in the normal one, and compare mode: no text
spills out of its panel or overlaps other text, projector text is at least 16 px, KV cells at
least 8 px, and each caption's moment is in the record of the step shown. axe-core on every
page: test_axe_pages_e2e.py."""

from __future__ import annotations

import pytest

from scheduler_core.lessons.catalog import LESSONS, LESSONS_BY_NAME
from scheduler_core.lessons.events import event_holds
from tests.browser.pages import NORMAL, PROJECTOR, SEEK_MS, check_layout, open_page, seek, set_theme, wait_for_dashboard


def check_kv_cells(page, where: str) -> None:
    if page.locator(".panel.kv").is_visible():
        cell = float(page.evaluate("document.getElementById('kv-canvas').dataset.cell"))
        assert cell >= 8, f"{where}: KV cells of {cell} px"


def check_claim(page, beat: dict, where: str) -> None:
    """The caption's moment is in the record of the step on screen (the dashboard's own copy)."""
    if beat["event"] == "opening":
        assert page.evaluate("window.servescope.store.step") == 0
        return
    if beat["event"] == "end":
        assert page.evaluate("window.servescope.store.done"), where
        return
    record = page.evaluate("window.servescope.store.lastRecord")
    assert event_holds(beat["event"], beat["facts"], record), f"{where}: {beat['text']}"
    caption = page.locator("#narration .beat-text").inner_text()
    assert beat["title"] in caption and f"Step {beat['step']:,}" in caption, where


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_every_beat_of_the_lesson_reads_at_both_sizes_and_says_what_is_shown(server, new_page, lesson):
    page = open_page(new_page, f"{server.url}/?lesson={lesson.name}", "projector", PROJECTOR)
    wait_for_dashboard(page)
    assert page.evaluate("window.servescope.store.session.lesson.arm") == next(iter(lesson.arms))  # the story's arm
    page.wait_for_function("window.servescope.narration.beats().length > 0", timeout=SEEK_MS)
    beats = page.evaluate("window.servescope.narration.beats()")
    assert beats[0]["event"] == "opening" and beats[-1]["event"] == "end" and len(beats) >= 5
    for index, beat in enumerate(beats):
        where = f"{lesson.name} beat {index + 1} ({beat['event']}, step {beat['step']})"
        seek(page, beat["step"])
        set_theme(page, "projector", PROJECTOR)
        on_stage = page.evaluate("window.servescope.stage.panels()")
        assert on_stage == beat["stage"], where
        check_claim(page, beat, where)
        check_layout(page, f"{where}, projector 1280x720", projector=True)
        check_kv_cells(page, where)
        set_theme(page, "normal", NORMAL)
        check_layout(page, f"{where}, normal 1920x1080", projector=False)
        check_kv_cells(page, where)
    assert page.errors == []


@pytest.mark.parametrize("name", ["chunked-prefill", "async-scheduling"])
def test_the_claims_open_as_a_slide_and_leave_the_panels_alone(server, new_page, name):
    """'What it proves' is a modal of its own: the panels keep their size behind it, and it opens
    at its title even when its claims run past the screen (async-scheduling's, at 1280x720)."""
    page = open_page(new_page, f"{server.url}/?lesson={name}", "projector", PROJECTOR)
    wait_for_dashboard(page)
    page.wait_for_function("window.servescope.narration.beats().length > 0", timeout=SEEK_MS)
    before = page.locator(".panel.batch").bounding_box()
    page.keyboard.press("w")
    page.locator("#claims-dialog").wait_for(state="visible")
    assert page.locator("#claims-dialog li").count() == len(LESSONS_BY_NAME[name].claims)
    assert page.locator(".panel.batch").bounding_box() == before
    assert page.evaluate("document.querySelector('#claims-dialog').scrollTop") == 0
    assert page.evaluate("document.activeElement.id") == "claims-title"
    check_layout(page, "claims slide", projector=True)


@pytest.mark.parametrize("viewport,theme", [(PROJECTOR, "projector"), (NORMAL, "normal")], ids=["projector", "normal"])
def test_compare_mode_reads_without_clipping(server, new_page, viewport, theme):
    page = open_page(new_page, f"{server.url}/compare?lesson=memory-pressure", theme, viewport)
    page.wait_for_function("window.servescope && window.servescope.sides.every((s) => s.store.session)")
    page.evaluate("window.servescope.both({type: 'seek', step: 400})")
    page.wait_for_function("window.servescope.sides.every((s) => s.store.step === 400)", timeout=SEEK_MS)
    page.wait_for_timeout(500)
    check_layout(page, f"compare {theme}", projector=theme == "projector")
    for cell in page.evaluate("[...document.querySelectorAll('canvas[data-role=canvas]')].map((c) => Number(c.dataset.cell))"):
        assert cell >= 8


# -- keyboard ------------------------------------------------------------------------------
def test_space_plays_after_picking_a_speed_and_b_without_breakpoints_says_so(server, new_page):
    page = open_page(new_page, f"{server.url}/?scenario=default", "normal", NORMAL)
    wait_for_dashboard(page)
    page.select_option("#speed", "50")
    page.keyboard.press("b")
    assert "no breakpoint" in page.locator("#toast").inner_text()
    page.keyboard.press(" ")
    page.wait_for_function("window.servescope.store.status.playing === true")
    assert page.evaluate("document.activeElement === document.body")
    page.keyboard.press(" ")
    page.wait_for_function("window.servescope.store.status.playing === false")


# -- panels for a room ---------------------------------------------------------------------
def test_evictions_coalesce_into_one_line_per_burst_with_right_plurals(server, new_page):
    page = open_page(new_page, f"{server.url}/?lesson=prefix-caching&arm=cache-on-small", "normal", NORMAL)
    wait_for_dashboard(page)
    seek(page, 700)
    events = page.evaluate("window.servescope.store.events.filter((e) => e.kind === 'evicted').length")
    page.locator("#tab-events").click()
    lines = page.locator("#events .event.evicted").all_inner_texts()
    assert events > 10 and 0 < len(lines) < events / 3
    assert all(("cached blocks evicted" in t or "1 cached block evicted" in t) and "step" in t for t in lines)
    assert any("steps " in t for t in lines)  # a run of steps, "steps A–B"
    assert page.locator("#events .event.finished").count() > 0


def test_the_first_page_names_the_budget_and_priority_shows_on_chips(server, new_page):
    page = open_page(new_page, f"{server.url}/?scenario=default", "normal", NORMAL)
    wait_for_dashboard(page)
    budget = page.evaluate("window.servescope.store.session.max_num_batched_tokens")
    assert f"at most {budget:,} tokens" in page.locator("#batch").inner_text()
    page = open_page(new_page, f"{server.url}/?lesson=priority", "normal", NORMAL)
    wait_for_dashboard(page)
    seek(page, 60)
    chips = page.locator(".lane.running .chip").all_inner_texts()
    assert chips and all(" P0" in c or " P1" in c for c in chips)


def test_a_long_waiting_queue_shows_its_head_as_chips_and_counts_the_rest(server, new_page):
    # Offline: the burst reaches the engine at once (served, vLLM's API server admits it one request at a time).
    config = '{"entrypoint":"offline","engine":{"num_gpu_blocks":600},"workload":{"num_requests":600,"arrival_rate":1000000}}'
    page = open_page(new_page, f"{server.url}/?config={config}", "normal", NORMAL)
    wait_for_dashboard(page)
    page.evaluate("window.servescope.send({type: 'step', n: 3})")
    page.wait_for_function("window.servescope.store.step === 3")
    page.wait_for_timeout(300)
    waiting = page.evaluate("window.servescope.store.queues.num_waiting - 0")
    assert waiting > 200
    # The chips of the lane's whole rows (lane_fit.js), and the rest counted.
    chips = page.locator(".lane.waiting .chip:not([hidden])").count()
    more = page.locator(".lane.waiting .more").inner_text()
    assert 7 <= chips <= 32 and more == f"+{waiting - chips} more"


def test_clicking_a_chip_or_a_tab_gives_the_keyboard_back_to_the_page(server, new_page):
    page = open_page(new_page, f"{server.url}/?scenario=default", "normal", NORMAL)
    wait_for_dashboard(page)
    page.evaluate("window.servescope.send({type: 'step', n: 50})")
    page.wait_for_function("window.servescope.store.step === 50")
    page.locator(".lane.running .chip").first.click()
    page.locator("#tab-events").click()
    assert page.evaluate("document.activeElement === document.body")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("window.servescope.store.step === 51")
    assert "step +1" in page.locator("#toast").inner_text()
