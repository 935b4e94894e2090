"""`serve --policy-file` in a real browser: a typical mistake (prefill before the running requests'
decodes, exercise 3) beside vLLM's at /lab. The marker sits at the first divergence's step on the
timeline, its words are on the page and on hover and focus, the marker takes both sides to that
step, the page says whose side is whose; it reads without clipping at 1280x720 in the projector
theme and at 1920x1080, and axe-core finds nothing serious."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.main import create_app
from app.policy_file import attach_policy, load_policy
from app.settings import Settings
from tests.browser.pages import (
    NORMAL,
    PROJECTOR,
    SEEK_MS,
    LiveServer,
    axe_violations,
    check_fit,
    check_layout,
    free_port,
    open_page,
)
from tests.paths import REPO

MISTAKE = REPO / "tests" / "lab" / "mistakes" / "prefill_first.py"
# Where to keep the screenshots, if anywhere (to look at them: SERVESCOPE_SHOTS=DIR).
SHOTS = os.environ.get("SERVESCOPE_SHOTS")


@pytest.fixture(scope="module")
def lab_server():
    policy = load_policy(str(MISTAKE), 3)
    live = LiveServer(attach_policy(create_app(Settings(max_sessions=100)), policy), free_port())
    live.start()
    live.policy = policy
    yield live
    live.stop()


def open_lab(new_page, server, theme: str, viewport: dict):
    page = open_page(new_page, f"{server.url}/lab?exercise=3", theme, viewport)
    page.wait_for_function("window.servescope && window.servescope.sides.every((s) => s.store.session)")
    return page


@pytest.mark.parametrize("viewport,theme", [(PROJECTOR, "projector"), (NORMAL, "normal")], ids=["projector", "normal"])
def test_the_marker_sits_at_the_first_divergence_with_its_words(lab_server, new_page, viewport, theme):
    d = lab_server.policy.divergence
    total = max(lab_server.policy.num_steps.values())
    page = open_lab(new_page, lab_server, theme, viewport)
    strip = page.locator("#lab-strip")
    assert "A is your scheduler (prefill_first.py), B is vLLM V1's scheduler (the reference)" in strip.inner_text()
    assert d.message in page.locator("#lab-words").inner_text()
    # The marker's middle is at the middle of its step's share of the track.
    track, marker = page.locator(".lab-track").bounding_box(), page.locator(".lab-marker").bounding_box()
    expected = track["x"] + track["width"] * (d.step - 0.5) / total  # step N: [N - 1, N) of the track
    assert abs(marker["x"] + marker["width"] / 2 - expected) < 2, (marker, track)
    assert page.locator(".lab-marker").get_attribute("aria-label").startswith(f"First divergence, step {d.step}: ")
    # Its words on focus (and hover: the same rule), over the panels below.
    tip = page.locator(".lab-tip")
    assert not tip.is_visible()
    page.locator(".lab-marker").focus()
    assert tip.is_visible() and tip.inner_text() == d.message
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"lab-{viewport['width']}x{viewport['height']}-{theme}-focused.png"))
    # The marker takes both sides to the state just after that step: the two batches that differ.
    page.locator(".lab-marker").click()
    page.wait_for_function("s => window.servescope.sides.every((side) => side.store.step === s)", arg=d.step,
                           timeout=SEEK_MS)
    page.mouse.move(0, viewport["height"] - 1)
    page.evaluate("document.activeElement.blur()")
    page.wait_for_timeout(500)
    # Both batch panels show that step (numbered alike everywhere), and the two batches differ.
    for side in page.locator(".compare-batch").all():
        assert side.inner_text().startswith(f"step {d.step} ·")
    records = page.evaluate("window.servescope.sides.map((s) => [s.store.lastRecord.step, s.store.lastRecord.scheduled])")
    assert records[0][0] == records[1][0] == d.step - 1 and records[0][1] != records[1][1]
    assert page.locator("#lab-words").inner_text() == f"First divergence ▼ at {d.message}"
    assert d.message.startswith(f"step {d.step}: ")
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"lab-{viewport['width']}x{viewport['height']}-{theme}.png"))
    check_layout(page, f"lab {theme}", projector=theme == "projector")
    assert page.errors == []


@pytest.mark.parametrize("viewport,theme", [(PROJECTOR, "projector"), (NORMAL, "normal")], ids=["projector", "normal"])
def test_the_lab_cuts_no_line_before_or_after_it_runs(lab_server, new_page, viewport, theme):
    """Under the strip the sides have less height: their KV summary and the empty batch's words
    still show every line, lanes show whole rows, the metrics table every row (issue 29)."""
    page = open_lab(new_page, lab_server, theme, viewport)
    page.wait_for_timeout(500)
    check_fit(page, f"lab {theme}, step 0")
    page.evaluate("window.servescope.both({type: 'step', n: 30})")
    page.wait_for_function("window.servescope.sides.every((s) => s.store.step === 30)", timeout=SEEK_MS)
    page.wait_for_timeout(500)
    check_fit(page, f"lab {theme}, step 30")
    check_layout(page, f"lab {theme}, step 30", projector=theme == "projector")


@pytest.mark.parametrize("theme", ["normal", "projector"])
def test_axe_finds_no_serious_violation_on_the_lab(lab_server, new_page, theme):
    page = open_lab(new_page, lab_server, theme, PROJECTOR if theme == "projector" else NORMAL)
    page.evaluate("window.servescope.both({type: 'step', n: 5})")
    page.wait_for_function("window.servescope.sides.every((s) => s.store.step === 5)", timeout=SEEK_MS)
    page.wait_for_timeout(500)
    assert axe_violations(page) == []
