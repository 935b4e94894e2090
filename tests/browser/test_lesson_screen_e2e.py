"""Lessons that say what the screen shows (issue 29, part 2), in a real browser at 1280x720 in
the projector theme: the caption follows every step, the claims slide fits the screen, and the
panels' words match the arm on screen."""

from __future__ import annotations

import re

import pytest

from scheduler_core.lessons.catalog import LESSONS
from scheduler_core.lessons.fleet import FLEET_LESSONS
from tests.browser.pages import (
    NORMAL,
    PROJECTOR,
    SEEK_MS,
    check_layout,
    open_lesson,
    open_page,
    seek,
    set_theme,
    wait_for_dashboard,
)

# Where the slide's parts end, against the dialog's own visible box and the screen.
SLIDE_BOXES = """() => {
  const dialog = document.getElementById('claims-dialog'), box = dialog.getBoundingClientRect();
  const bottom = (el) => el.getBoundingClientRect().bottom;
  const heads = [...dialog.querySelectorAll('thead th')];
  const lines = (th) => th.getBoundingClientRect().height / parseFloat(getComputedStyle(th).lineHeight);
  return {overflow: dialog.scrollHeight - dialog.clientHeight, bottom: Math.min(box.bottom, innerHeight),
          close: bottom(dialog.querySelector('form button')),
          claims: Math.max(...[...dialog.querySelectorAll('ul.claims li')].map(bottom)),
          heads: heads.filter((th) => lines(th) > 1.6).map((th) => th.textContent)};
}"""


def shown_now(page) -> str:
    """The caption's "(now at step N)", or "" when the step on screen is the beat's own."""
    match = re.search(r"\(now at step [\d,]+\)", page.locator("#narration .beat-text").inner_text())
    return match.group(0) if match else ""


def expected_now(page) -> str:
    step = page.evaluate("window.servescope.store.step")
    beat = page.evaluate("window.servescope.narration.beats()[window.servescope.narration.current()]")
    return "" if beat["step"] == step else f"(now at step {step:,})"


def test_the_caption_says_the_step_on_screen_after_every_step_and_after_fast_play(server, new_page):
    page = open_lesson(server, new_page, "chunked-prefill")
    beats = page.evaluate("window.servescope.narration.beats()")
    start = beats[-2]["step"]  # a long stretch before the end
    seek(page, start, settle_ms=200)
    assert shown_now(page) == ""
    for n in (1, 2, 3):
        page.evaluate("window.servescope.send({type: 'step', n: 1})")
        page.wait_for_function("s => window.servescope.store.step === s", arg=start + n)
        page.wait_for_timeout(100)
        assert shown_now(page) == f"(now at step {start + n:,})"
    page.evaluate("window.servescope.send({type: 'speed', steps_per_s: 250})")
    page.evaluate("window.servescope.send({type: 'play'})")
    page.wait_for_function("s => window.servescope.store.step > s + 40", arg=start, timeout=SEEK_MS)
    page.evaluate("window.servescope.send({type: 'pause'})")
    page.wait_for_function("window.servescope.store.status.playing === false")
    page.wait_for_timeout(300)
    assert shown_now(page) == expected_now(page) != ""


def test_a_contiguous_arm_names_its_allocator_and_its_captions_tell_its_story(server, new_page):
    page = open_lesson(server, new_page, "paged-vs-contiguous&arm=contiguous")
    assert page.locator("#view-paged").inner_text() == "Reserve max"
    assert page.locator("#view-contiguous").is_hidden()
    assert "reserves max_model_len" in page.locator("#narration .beat-text").inner_text()
    admit = next(b for b in page.evaluate("window.servescope.narration.beats()") if b["event"] == "first_admit")
    seek(page, admit["step"], settle_ms=200)
    request = admit["facts"]["request"]
    held = page.evaluate("id => window.servescope.store.tables.get(id).length", request)
    assert f"holds {held}" in page.locator("#narration .beat-text").inner_text()
    page = open_lesson(server, new_page, "paged-vs-contiguous&arm=paged")
    assert page.locator("#view-paged").inner_text() == "Paged" and page.locator("#view-contiguous").is_visible()


# What the "Reserve max" view reserves, from the store alone: max_model_len of blocks per running
# request, in admission order, for as many as fit beside the null block.
RESERVED_PERCENT = """() => {
  const {session, blocks, queues} = window.servescope.store;
  const region = Math.ceil(session.max_model_len / session.block_size), usable = blocks.n - 1;
  const fitted = Math.min(queues.running.length, Math.floor(usable / region));
  return ((fitted * region / usable) * 100).toFixed(1);
}"""


def test_the_gauge_reads_the_view_shown_the_reserve_max_views_reservations_or_the_pool(server, new_page):
    page = open_lesson(server, new_page, "paged-vs-contiguous&arm=paged")
    seek(page, 300, settle_ms=200)
    gauge = page.locator("#kv-gauge")
    used = f"{page.evaluate('window.servescope.store.lastRecord.kv_usage') * 100:.1f}"
    assert gauge.inner_text() == f"{used}% used" and gauge.get_attribute("aria-label") == "KV usage"
    page.click("#view-contiguous")
    reserved = page.evaluate(RESERVED_PERCENT)
    page.wait_for_function("t => document.getElementById('kv-gauge').textContent === t", arg=f"{reserved}% reserved")
    assert reserved != used and gauge.get_attribute("aria-valuenow") == reserved
    assert gauge.get_attribute("aria-label") == "KV blocks reserved in the Reserve max view"
    check_layout(page, "Reserve max view, projector 1280x720", projector=True)
    set_theme(page, "normal", NORMAL)
    check_layout(page, "Reserve max view, normal 1920x1080", projector=False)
    page.click("#view-paged")
    page.wait_for_function("t => document.getElementById('kv-gauge').textContent === t", arg=f"{used}% used")
    assert page.errors == []


def check_slide_fits(page, where: str, projector: bool = True) -> None:
    """W: the Close button and every claim inside the slide on screen, nothing of the slide below
    it (only the table's own box may scroll), and no arm's name broken across lines."""
    page.keyboard.press("w")
    page.locator("#claims-dialog").wait_for(state="visible")
    page.wait_for_timeout(200)
    boxes = page.evaluate(SLIDE_BOXES)
    assert boxes["overflow"] <= 1, (where, boxes)
    assert boxes["close"] <= boxes["bottom"] and boxes["claims"] <= boxes["bottom"], (where, boxes)
    assert boxes["heads"] == [], (where, boxes)
    check_layout(page, f"{where}: what it proves", projector=projector)
    page.keyboard.press("Escape")
    page.locator("#claims-dialog").wait_for(state="hidden")


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_what_it_proves_fits_a_projector_screen(server, new_page, lesson):
    page = open_lesson(server, new_page, lesson.name)
    check_slide_fits(page, lesson.name)
    set_theme(page, "normal", NORMAL)
    check_slide_fits(page, f"{lesson.name}, normal 1920x1080", projector=False)


@pytest.mark.parametrize("lesson", FLEET_LESSONS, ids=[lesson.name for lesson in FLEET_LESSONS])
def test_what_a_fleet_lesson_proves_fits_a_projector_screen(server, new_page, lesson):
    page = open_page(new_page, f"{server.url}/fleet?lesson={lesson.name}", "projector", PROJECTOR)
    page.wait_for_function("window.servescope && window.servescope.story.beats().length > 0", timeout=180_000)
    check_slide_fits(page, lesson.name)


def test_a_static_batch_is_not_measured_against_a_token_budget(server, new_page):
    page = open_lesson(server, new_page, "static-vs-continuous&arm=static")
    assert "at most" not in page.locator("#batch").inner_text()
    refill = next(b for b in page.evaluate("window.servescope.narration.beats()") if b["event"] == "refill")
    seek(page, refill["step"], settle_ms=200)  # a new batch: every member's whole prompt in one step
    used = page.evaluate("window.servescope.store.lastRecord.scheduled.reduce((a, s) => a + s[1], 0)")
    budget = page.evaluate("window.servescope.store.session.max_num_batched_tokens")
    header = page.locator("#batch .budget").inner_text()
    assert used > budget and f"{used:,} tokens, no token budget" in header and f"of {budget:,}" not in header
    page = open_lesson(server, new_page, "static-vs-continuous&arm=continuous")
    seek(page, 1, settle_ms=200)
    assert f"of {budget:,} tokens" in page.locator("#batch .budget").inner_text()


def test_compare_plays_on_after_one_side_finishes_and_shows_the_step_still_running(server, new_page):
    page = open_page(new_page, f"{server.url}/compare?lesson=memory-pressure", "projector", PROJECTOR)
    page.wait_for_function("window.servescope && window.servescope.sides.every((s) => s.store.session)")
    page.evaluate("window.servescope.both({type: 'seek', step: 5340})")  # swap, side B, ends at step 5,346
    page.wait_for_function("window.servescope.sides.every((s) => s.store.step === 5340)", timeout=SEEK_MS)
    page.select_option("#speed", "250")
    page.keyboard.press(" ")
    page.wait_for_function("window.servescope.sides[1].store.done")
    page.wait_for_function("window.servescope.sides[0].store.step > 5370", timeout=20_000)
    page.keyboard.press(" ")
    page.wait_for_timeout(300)
    steps = page.evaluate("window.servescope.sides.map((s) => s.store.step)")
    assert page.locator("#step-counter").inner_text() == f"{max(steps):,}"


# -- the configuration form ----------------------------------------------------------------
def open_configure(page) -> None:
    page.click("#configure")
    page.wait_for_function("document.querySelector('#cfg-startup')?.textContent.includes('GPU KV cache size')")


@pytest.mark.parametrize("typed", ["1e400", "12e"])
def test_a_number_the_form_cannot_read_is_named_not_replaced_by_a_default(server, new_page, typed):
    page = open_page(new_page, f"{server.url}/?scenario=default", "normal", NORMAL)
    wait_for_dashboard(page)
    url = page.url
    open_configure(page)
    field = page.locator("#cfg-workload-num_requests")
    field.fill("")
    field.press_sequentially(typed)
    page.click("#cfg-submit")
    page.wait_for_function("document.querySelector('#config-dialog .form-error').textContent.includes('num_requests')")
    assert "num_requests: not a finite number" in page.locator("#config-dialog .form-error").inner_text()
    page.wait_for_timeout(500)
    assert page.url == url and page.locator("#config-dialog").is_visible()


def test_esc_asks_before_discarding_edits(server, new_page):
    page = open_page(new_page, f"{server.url}/?scenario=default", "normal", NORMAL)
    wait_for_dashboard(page)
    open_configure(page)
    field = page.locator("#cfg-workload-num_requests")
    field.fill("")
    field.press_sequentially("12")  # typed: a user activation, which Chromium needs to let a dialog's cancel be refused
    page.keyboard.press("Escape")
    assert page.locator("#config-dialog").is_visible()
    assert "press Esc again" in page.locator("#config-dialog .form-error").inner_text()
    page.keyboard.press("Escape")
    page.locator("#config-dialog").wait_for(state="hidden")
    open_configure(page)  # opened again without edits, Esc closes at once
    page.keyboard.press("Escape")
    page.locator("#config-dialog").wait_for(state="hidden")


def test_a_pasted_vllm_serve_line_fills_the_form(server, new_page):
    page = open_page(new_page, f"{server.url}/?scenario=default", "normal", NORMAL)
    wait_for_dashboard(page)
    open_configure(page)
    page.fill("#cfg-vllm-line", "vllm serve --max-num-seqs 96 --block-size 32 --port 8001")
    page.click("#cfg-vllm-apply")
    page.wait_for_function("document.querySelector('#cfg-engine-max_num_seqs').value === '96'")
    assert page.locator("#cfg-engine-block_size").input_value() == "32"
    assert "--port 8001" in page.locator("#cfg-vllm-note").inner_text()
    page.fill("#cfg-vllm-line", "vllm serve --block-size 7")
    page.locator("#cfg-vllm-line").press("Enter")
    page.wait_for_function("document.querySelector('#config-dialog .form-error').textContent.includes('block_size')")
    assert page.locator("#config-dialog").is_visible()
    assert [e for e in page.errors if "status of 422" not in e] == []  # the refused line's own 422 aside


# -- the room's screen ---------------------------------------------------------------------
PICKER_FITS = """() => {
  const select = document.getElementById('scenario-picker'), style = getComputedStyle(select);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const text = select.selectedOptions[0].textContent;
  return {text, needed: ctx.measureText(text).width + parseFloat(style.paddingLeft) + 20, width: select.clientWidth};
}"""


@pytest.mark.parametrize("name", ["memory-pressure", "static-vs-continuous", "speculative-decoding"])
def test_the_scenario_picker_shows_the_whole_lesson_name(server, new_page, name):
    page = open_lesson(server, new_page, name)
    picker = page.evaluate(PICKER_FITS)
    assert picker["text"] == name and picker["needed"] <= picker["width"], picker


def test_n_and_p_leave_the_legends_uncovered(server, new_page):
    """The caption bar says where N went; no toast covers the KV and chart legends for two seconds."""
    page = open_lesson(server, new_page, "chunked-prefill")
    page.keyboard.press("n")
    page.wait_for_function("window.servescope.narration.current() === 1", timeout=SEEK_MS)
    assert page.locator("#toast").is_hidden()
