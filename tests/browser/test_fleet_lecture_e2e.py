"""The fleet lessons in a real browser: each arm's caption bar tells its story beat by beat. N, P,
Home and the numbered buttons move the fleet's time to a beat's instant; the clock shows that
instant, the caption its text (names unbroken), and the cards and the event list the moment it names. Every beat
reads at 1280x720 in the projector theme (at least 16 px, nothing clipped or overlapping) and at
1920x1080 in the normal one; axe-core finds no serious violation."""

from __future__ import annotations

import pytest

from scheduler_core.lessons.fleet import FLEET_LESSONS, FLEET_LESSONS_BY_NAME
from tests.browser.pages import NORMAL, PROJECTOR, axe_violations, check_layout, open_page, set_theme

ARMS = [(lesson.name, arm) for lesson in FLEET_LESSONS for arm in lesson.arms]
RUN_MS = 180_000  # a lesson's arm runs every arm of the lesson, on a shared machine


def open_lesson(new_page, url: str, theme: str, viewport: dict):
    page = open_page(new_page, url, theme, viewport)
    page.wait_for_function("window.servescope && window.servescope.story.beats().length > 0", timeout=RUN_MS)
    return page


def at_frame(page, frame: int) -> None:
    page.wait_for_function("frame => window.servescope.frame() === frame", arg=frame)
    page.wait_for_timeout(200)


def card(page, replica: str):
    return page.locator(".replica", has=page.locator("h3", has_text=replica))


def check_moment(page, beat: dict, where: str) -> None:
    """What the caption names is on screen: the time, the event on top of the list, the cards' numbers."""
    facts, kind = beat["facts"], beat["event"]
    assert page.locator("#clock").inner_text() == f"{beat['t']:.3f} s", where
    caption = page.locator("#lesson .beat-text").inner_text()
    assert beat["title"] in caption and beat["text"] in caption and "now at" not in caption, where
    # Request and replica names never break at their hyphen ("req-" / "00004").
    assert page.evaluate("[...document.querySelectorAll('#lesson .beat-text .id')].every((s) => s.getClientRects().length === 1)")
    newest = page.locator("#events li").first.inner_text() if kind not in ("opening",) else ""
    if kind in ("first_route", "cold_follower", "all_prompts", "worst_imbalance"):
        assert f"route {facts['request']} → {facts['replica']}" in newest, where
    if kind == "first_transfer":
        assert f"transfer {facts['request']} → {facts['decode']}" in newest, where
    if kind == "first_token" and "transfer_ms" in facts:
        assert f"landed {facts['request']} → {facts['replica']}" in newest, where
    if kind == "worst_imbalance":
        for replica, count in ((facts["replica"], facts["busiest_n"]), (facts["idlest"], facts["idlest_n"])):
            shown = card(page, replica)
            assert int(shown.locator(".running-n").inner_text()) + int(shown.locator(".waiting-n").inner_text()) == count, where
    if kind == "first_eviction":
        assert card(page, facts["replica"]).locator(".kv-n").inner_text() == f"{facts['kv']:.1f}%", where
    if kind == "opening":
        assert page.locator("#clock").inner_text() == "0.000 s" and page.locator("#events li").count() == 0, where
    if kind == "end":
        assert page.evaluate("window.servescope.frame() === window.servescope.run().frames.length - 1"), where


@pytest.mark.parametrize("name, arm", ARMS, ids=[f"{name}:{arm}" for name, arm in ARMS])
def test_every_beat_of_a_fleet_lesson_moves_the_fleet_to_its_moment(server, new_page, name, arm):
    page = open_lesson(new_page, f"{server.url}/fleet?lesson={name}&arm={arm}", "projector", PROJECTOR)
    beats = page.evaluate("window.servescope.story.beats()")
    assert beats[0]["event"] == "opening" and beats[-1]["event"] == "end" and len(beats) >= 5
    at_frame(page, 0)  # a lesson opens on its opening beat
    for index, beat in enumerate(beats):
        where = f"{name}:{arm} beat {index + 1} ({beat['event']}, {beat['t']:.3f} s)"
        if index:
            page.keyboard.press("n")
        at_frame(page, beat["frame"])
        set_theme(page, "projector", PROJECTOR)
        check_moment(page, beat, where)
        assert page.locator("#lesson button.beat.on").inner_text() == str(index + 1), where
        check_layout(page, f"{where}, projector 1280x720", projector=True)
        set_theme(page, "normal", NORMAL)
        check_layout(page, f"{where}, normal 1920x1080", projector=False)
    # Between beats the caption stays on the last one and says where the fleet is.
    page.keyboard.press("Home")
    at_frame(page, 0)
    page.keyboard.press("ArrowRight")
    at_frame(page, 1)
    if beats[1]["frame"] > 1:
        caption = page.locator("#lesson .beat-text").inner_text()
        assert caption.startswith(f"1/{len(beats)} ") and f"(now at {page.locator('#clock').inner_text()})" in caption
    # P goes back a beat; a numbered button jumps to its beat.
    page.locator("#lesson button.beat").nth(len(beats) - 2).click()
    at_frame(page, beats[-2]["frame"])
    page.keyboard.press("p")
    at_frame(page, beats[-3]["frame"])
    assert page.evaluate("document.activeElement === document.body")  # keys go back to the page
    assert page.errors == []


@pytest.mark.parametrize("name", list(FLEET_LESSONS_BY_NAME))
def test_w_opens_what_a_fleet_lesson_proves_at_its_title(server, new_page, name):
    """As in the dashboard: the claims, each checked (all hold), and the table of every arm, as a
    slide that opens at its title and reads at 1280x720 in the projector theme."""
    lesson = FLEET_LESSONS_BY_NAME[name]
    page = open_lesson(new_page, f"{server.url}/fleet?lesson={name}", "projector", PROJECTOR)
    page.keyboard.press("w")
    page.locator("#claims-dialog").wait_for(state="visible")
    claims = page.locator("#claims-dialog li").all_inner_texts()
    assert len(claims) == len(lesson.claims) and all(text.startswith("✔") for text in claims), claims
    assert page.locator("#claims-dialog thead th").all_inner_texts() == ["measure", *lesson.arms]
    assert page.evaluate("document.activeElement.id") == "claims-title"
    check_layout(page, f"{name}: what it proves", projector=True)
    page.keyboard.press("Escape")
    page.locator("#claims-dialog").wait_for(state="hidden")
    assert page.errors == []


@pytest.mark.parametrize("theme", ["normal", "projector"])
def test_axe_finds_no_serious_violation_in_a_fleet_lesson(server, new_page, theme):
    viewport = PROJECTOR if theme == "projector" else NORMAL
    page = open_lesson(new_page, f"{server.url}/fleet?lesson=disaggregation&arm=split", theme, viewport)
    page.keyboard.press("n")
    page.keyboard.press("n")
    page.wait_for_timeout(300)
    assert axe_violations(page) == []
