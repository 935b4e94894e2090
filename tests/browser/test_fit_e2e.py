"""Nothing cut short on a lecturer's screen (issue 29, part 2), in a real browser at 1280x720 in
the projector theme and at 1920x1080: compare mode's sides, the Charts panel as one of three on
stage, the lanes at the capacity lesson's preemption. check_fit (tests/js/fit_check.js): no text
line cut by the box that clips it, every lane whole with whole chip rows, chart ticks apart and
inside their canvas, axis titles whole."""

from __future__ import annotations

import pytest

from tests.browser.pages import (
    NORMAL,
    PROJECTOR,
    SEEK_MS,
    check_fit,
    check_layout,
    open_lesson,
    open_page,
    seek,
)

SIZES = [(PROJECTOR, "projector"), (NORMAL, "normal")]
IDS = ["projector", "normal"]

# Each lane: the chips it shows, the "+N more" it says and the requests it counts.
LANES = """() => [...document.querySelectorAll('.lane')].filter((lane) => !lane.hidden).map((lane) => ({
  lane: lane.className, shown: [...lane.querySelectorAll('.chip')].filter((chip) => !chip.hidden).length,
  more: lane.querySelector('.more').hidden ? '' : lane.querySelector('.more').textContent,
  total: Number(lane.querySelector('header b').textContent.replace(/,/g, ''))}))"""


# Each batch box: whether it has more rows than it shows, its cue, and how far its drawn rows reach.
BATCH_BOXES = """() => [...document.querySelectorAll('.batch-rows')].filter((box) => box.getClientRects().length).map((box) => {
  const r = box.getBoundingClientRect(), rows = [...box.querySelectorAll('.batch-row')];
  return {more: box.scrollHeight > box.clientHeight + 1, cue: box.classList.contains('more-below'),
          gap: r.bottom - Math.max(r.top, ...rows.map((row) => row.getBoundingClientRect().bottom))};
})"""


def check_batch_rows(page, where: str) -> None:
    """The cue says when more rows are below, and the rows drawn fill the box (no blank below them)."""
    for box in page.evaluate(BATCH_BOXES):
        assert box["cue"] == box["more"], (where, box)
        assert not box["more"] or box["gap"] < 2, (where, box)


def check_lanes_count_what_they_hide(page, where: str) -> None:
    for lane in page.evaluate(LANES):
        hidden = lane["total"] - lane["shown"]
        assert lane["more"] == (f"+{hidden} more" if hidden else "none" if not lane["total"] else ""), (where, lane)


@pytest.mark.parametrize("viewport,theme", SIZES, ids=IDS)
def test_compare_shows_whole_lines_lanes_and_rows_before_and_after_it_runs(server, new_page, viewport, theme):
    page = open_page(new_page, f"{server.url}/compare?lesson=memory-pressure", theme, viewport)
    page.wait_for_function("window.servescope && window.servescope.sides.every((s) => s.store.session)")
    page.wait_for_timeout(500)
    check_fit(page, f"compare {theme}, step 0")  # the empty batch's words and the KV summary, whole
    page.evaluate("window.servescope.both({type: 'seek', step: 400})")  # both sides preempting
    page.wait_for_function("window.servescope.sides.every((s) => s.store.step === 400)", timeout=SEEK_MS)
    page.wait_for_timeout(500)
    check_fit(page, f"compare {theme}, step 400")
    check_layout(page, f"compare {theme}, step 400", projector=theme == "projector")
    check_lanes_count_what_they_hide(page, f"compare {theme}")
    check_batch_rows(page, f"compare {theme}")
    if theme == "projector":  # 11 rows on each side at step 400: more than the room under the KV cache
        assert all(box["more"] for box in page.evaluate(BATCH_BOXES))
    assert page.errors == []


THREE_ON_STAGE = [["queues", "batch", "charts"], ["kv", "charts", "batch"]]
# How many labels each axis of each plot shows.
TICK_COUNTS = """[...document.querySelectorAll('.chart .plot')].flatMap((box) => box.plot.axes.map(
  (a) => (a._values || []).filter((v) => v !== '' && v != null).length))"""


@pytest.mark.parametrize("panels", THREE_ON_STAGE, ids=["charts-last", "charts-middle"])
def test_the_charts_as_one_of_three_on_stage_keep_their_ticks_apart_and_titles_whole(server, new_page, panels):
    page = open_lesson(server, new_page, "chunked-prefill", "projector", PROJECTOR)
    seek(page, page.evaluate("window.servescope.narration.beats().at(-1).step"), settle_ms=500)  # the whole run's charts
    page.evaluate("panels => window.servescope.stage.follow(panels)", panels)
    page.wait_for_timeout(800)
    check_fit(page, f"charts on stage with {panels}")
    check_layout(page, f"charts on stage with {panels}", projector=True)
    # Every axis still has ticks to read: at least two labels on each.
    counts = page.evaluate(TICK_COUNTS)
    assert min(counts) >= 2, counts
    assert page.errors == []


@pytest.mark.parametrize("viewport,theme", SIZES, ids=IDS)
def test_at_the_capacity_lessons_preemption_every_lane_is_on_screen_in_whole_rows(server, new_page, viewport, theme):
    page = open_lesson(server, new_page, "capacity", theme, viewport)
    beat = page.evaluate("window.servescope.narration.beats()[2]")
    assert beat["event"] == "first_preemption"
    seek(page, beat["step"], settle_ms=500)
    check_fit(page, f"capacity beat 3, {theme}")
    check_layout(page, f"capacity beat 3, {theme}", projector=theme == "projector")
    check_lanes_count_what_they_hide(page, f"capacity beat 3, {theme}")
    check_batch_rows(page, f"capacity beat 3, {theme}")  # 39 decodes
    lanes = {lane["lane"].split()[1]: lane for lane in page.evaluate(LANES)}
    assert {"running", "preempted", "waiting", "finished"} <= lanes.keys()
    assert all(lane["shown"] > 0 for name, lane in lanes.items() if lane["total"]), lanes
    assert page.errors == []
