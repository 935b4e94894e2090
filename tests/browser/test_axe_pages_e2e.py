"""axe-core on every page of the web app, in both themes (the normal one at 1920x1080, the
projector one at 1280x720): no critical or serious violation. The pages that need a server of
their own are checked beside their other tests: the class form's page (a served session,
test_class_requests_e2e.py) and the lab (`serve --policy-file`, test_lab_serve_e2e.py)."""

from __future__ import annotations

import pytest

from tests.browser.pages import NORMAL, PROJECTOR, SEEK_MS, axe_violations, open_page, wait_for_dashboard

RUN_MS = 180_000  # a fleet lesson or a sweep runs to the end on a shared machine


def dashboard(page, server) -> None:
    wait_for_dashboard(page)
    page.evaluate("window.servescope.send({type: 'step', n: 300})")
    page.wait_for_function("window.servescope.store.step === 300", timeout=SEEK_MS)


def lesson(page, server) -> None:
    dashboard(page, server)
    page.wait_for_function("window.servescope.narration.beats().length > 0", timeout=SEEK_MS)


def compare(page, server) -> None:
    page.wait_for_function("window.servescope && window.servescope.sides.every((s) => s.store.session)")
    page.evaluate("window.servescope.both({type: 'step', n: 300})")
    page.wait_for_function("window.servescope.sides.every((s) => s.store.step === 300)", timeout=SEEK_MS)


def viewer(page, server) -> None:
    wait_for_dashboard(page)
    page.goto(f"{server.url}/s/{page.evaluate('document.body.dataset.session')}/view")
    wait_for_dashboard(page)


def fleet(page, server) -> None:
    page.wait_for_selector(".replica canvas", timeout=RUN_MS)  # the page runs its fleet as it opens


def fleet_lesson(page, server) -> None:
    page.wait_for_function("window.servescope && window.servescope.story.beats().length > 0", timeout=RUN_MS)
    page.keyboard.press("n")
    page.keyboard.press("n")


def sweep_axes(page, replicas: str) -> None:
    page.fill("#num-requests", "20")
    page.locator(".axis-values").nth(0).fill(replicas)
    page.locator(".axis-values").nth(1).fill("4, 16")


def sweep_run(page, server) -> None:
    sweep_axes(page, "1, 2")
    page.click("#run")
    page.wait_for_selector("#table tbody tr", timeout=RUN_MS)


def sweep_error(page, server) -> None:
    sweep_axes(page, "1, 99")
    page.click("#run")
    page.wait_for_selector("#banner:not([hidden])")


PAGES = {
    "dashboard": ("/?scenario=default", dashboard),
    "lesson": ("/?lesson=priority", lesson),
    "compare": ("/compare?lesson=memory-pressure", compare),
    "viewer": ("/?scenario=default", viewer),
    "fleet": ("/fleet", fleet),
    "fleet-lesson": ("/fleet?lesson=disaggregation&arm=split", fleet_lesson),
    "sweep": ("/sweep", None),
    "sweep-run": ("/sweep", sweep_run),
    "sweep-error": ("/sweep", sweep_error),
    "ended": ("/s/no-such-session/view?scenario=default", None),
}


@pytest.mark.parametrize("theme", ["normal", "projector"])
@pytest.mark.parametrize("kind", list(PAGES))
def test_axe_finds_no_serious_violation(server, new_page, kind, theme):
    url, ready = PAGES[kind]
    page = open_page(new_page, server.url + url, theme, PROJECTOR if theme == "projector" else NORMAL)
    if ready:
        ready(page, server)
    page.wait_for_timeout(500)  # the next animation frames
    assert page.evaluate("document.documentElement.dataset.theme || 'normal'") == theme
    assert axe_violations(page) == []
