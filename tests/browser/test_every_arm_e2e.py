"""Every beat of every arm of every lesson, at 1280x720 in the projector theme: the caption says
what the screen shows. At each beat the facts the caption claims (tests/lessons/caption_facts.py:
the step, the requests it names and what happened to them, their blocks, the counts, the lanes and
panels it points at) are checked against the dashboard's own copy of the step on screen
(window.servescope.store) and the DOM; then a step past the beat and a short play check that
"(now at step N)" is the step on screen. One page per lesson; each beat is a seek, not a replay."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from scheduler_core.lessons.catalog import LESSONS
from tests.browser.pages import PROJECTOR, SEEK_MS
from tests.lessons.caption_facts import mismatches, named, read_caption

# What the caption's facts are checked against, gathered in one call so that nothing moves between
# its parts: the store's step and record, the requests and blocks the caption names, and what the
# lanes, panels and buttons show.
SCREEN = """([ids, blocks]) => {
  const s = window.servescope.store;
  const onScreen = (el) => {
    if (!el || !el.checkVisibility()) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth;
  };
  const lanes = {}, laneCounts = {}, lanesVisible = {};
  for (const lane of document.querySelectorAll('.panel.queues .lane')) {
    const key = lane.classList[1];
    lanes[key] = [...lane.querySelectorAll('.chip')].map((c) => c.dataset.id);
    laneCounts[key] = Number(lane.querySelector('header b').textContent.replace(/,/g, ''));
    lanesVisible[key] = onScreen(lane) && lane.querySelector('header span').textContent.toLowerCase().startsWith(key);
  }
  const requests = {}, tables = {}, groupTables = {}, cached = {};
  for (const id of ids) {
    if (s.requests.has(id)) requests[id] = s.requests.get(id);
    if (s.tables.has(id)) tables[id] = s.tables.get(id);
    if (s.groupTables.has(id)) groupTables[id] = s.groupTables.get(id);
  }
  for (const id of Object.values(tables).flat().concat(blocks)) cached[id] = s.blocks.cached[id];
  let used = 0;
  for (let b = 0; b < s.blocks.n; b++) if (s.blocks.ref[b] > 0) used += 1;
  const panel = (selector) => onScreen(document.querySelector(selector));
  return {
    step: s.step, record: s.lastRecord, session: s.session, requests, tables, group_tables: groupTables, cached,
    used_blocks: used, lanes, lane_counts: laneCounts, lanes_visible: lanesVisible,
    panels_visible: {'KV grid': panel('#kv-canvas'), 'KV usage': panel('#kv-gauge'), 'KV gauge': panel('#kv-gauge'),
                     'the batch': panel('.panel.batch'), 'row': panel('.panel.batch')},
    buttons_visible: [...document.querySelectorAll('button')].filter(onScreen).map((b) => b.textContent.trim()),
    caption: document.querySelector('#narration .beat-text').innerText,
    beat: window.servescope.narration.current(), beats: window.servescope.narration.beats().length,
    beat_title: window.servescope.narration.beats()[window.servescope.narration.current()]?.title,
    beat_step: window.servescope.narration.beats()[window.servescope.narration.current()]?.step,
  };
}"""
PLAY_STEPS_PER_S = 250


def seek(page, step: int, index: int, count: int) -> None:
    page.evaluate("step => window.servescope.send({type: 'seek', step})", step)
    page.wait_for_function("step => window.servescope.store.step === step", arg=step, timeout=SEEK_MS)
    page.wait_for_function("p => document.querySelector('#narration .beat-text')?.innerText.startsWith(p)",
                           arg=f"{index + 1}/{count} ")


def screen_of(page, caption) -> dict:
    ids, blocks = named(caption)
    return page.evaluate(SCREEN, [ids, blocks])


def check_away(page, where: str, wrong: list) -> int:
    """The caption and the step on screen, read in one call: "(now at step N)" names that step
    (unless the step is a beat's own, which the walk checks at that beat)."""
    shown = page.evaluate(SCREEN, [[], []])
    if shown["beat_step"] != shown["step"]:
        caption = read_caption(shown["caption"])
        wrong += [f"{where} at step {shown['step']}: {m}" for m in mismatches(caption, shown, at_beat=False)]
    return shown["step"]


def step_once(page, where: str, wrong: list) -> None:
    step = page.evaluate("window.servescope.store.step")
    page.evaluate("window.servescope.send({type: 'step', n: 1})")
    page.wait_for_function("s => window.servescope.store.step === s", arg=step + 1, timeout=SEEK_MS)
    check_away(page, where, wrong)


def play_briefly(page, where: str, wrong: list) -> None:
    """A short play at speed, the caption read while it plays and once paused."""
    start = page.evaluate("window.servescope.store.step")
    page.evaluate("s => window.servescope.send({type: 'speed', steps_per_s: s})", PLAY_STEPS_PER_S)
    page.evaluate("window.servescope.send({type: 'play'})")
    page.wait_for_function("window.servescope.store.status.playing === true")
    seen = []
    for _ in range(3):
        page.wait_for_timeout(50)
        seen.append(check_away(page, f"{where}, playing", wrong))
    page.evaluate("window.servescope.send({type: 'pause'})")
    page.wait_for_function("window.servescope.store.status.playing === false")
    seen.append(check_away(page, f"{where}, paused", wrong))
    assert max(seen) > start + 1, f"{where}: the play did not move ({start} -> {seen})"


def walk_arm(page, url: str, lesson: str, arm: str, wrong: list) -> None:
    """Every beat of one arm, a step past each, and a short play before the end."""
    page.goto(url, timeout=SEEK_MS)
    page.wait_for_function("window.servescope && window.servescope.store.session !== null", timeout=SEEK_MS)
    assert page.evaluate("window.servescope.store.session.lesson.arm") == arm
    page.wait_for_function("window.servescope.narration.beats().length > 0", timeout=SEEK_MS)
    beats = page.evaluate("window.servescope.narration.beats()")
    assert beats[0]["event"] == "opening" and beats[-1]["event"] == "end", f"{lesson}:{arm}"
    for index, beat in enumerate(beats):
        where = f"{lesson}:{arm} beat {index + 1} ({beat['event']}, step {beat['step']})"
        if beat["event"] == "end":
            play_briefly(page, where, wrong)  # from a step past the last moment
        seek(page, beat["step"], index, len(beats))
        text = page.locator("#narration .beat-text").inner_text()
        assert beat["text"] in text.replace("\u00a0", " "), where
        caption = read_caption(text, closing=beat["event"] == "end")
        assert caption.unread == [], f"{where}: the checker reads no rule for {caption.unread}: {beat['text']}"
        wrong += [f"{where}: {m}" for m in mismatches(caption, screen_of(page, caption))]
        if beat["event"] == "end":
            assert page.evaluate("window.servescope.store.done"), where
        else:
            step_once(page, f"{where}, a step on", wrong)


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_every_beat_of_every_arm_says_what_the_screen_shows(server, new_page, lesson):
    page = new_page(PROJECTOR["width"], PROJECTOR["height"])
    page.context.add_init_script("localStorage.setItem('servescope-theme', 'projector')")
    wrong: list[str] = []
    for arm in lesson.arms:
        walk_arm(page, f"{server.url}/?lesson={quote(lesson.name)}&arm={quote(arm)}", lesson.name, arm, wrong)
    assert not wrong, "\n".join(wrong)
    assert page.errors == []
