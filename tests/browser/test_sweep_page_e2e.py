"""The sweep page on a projector (1280x720): the whole form is on the screen, with or without the
error banner above it, and the empty page says what will fill it."""

from __future__ import annotations

from tests.browser.pages import PROJECTOR, check_layout, open_page
from tests.browser.test_axe_pages_e2e import RUN_MS, sweep_axes

# How far the form runs past its own box, and where its last controls end against the screen.
FORM_FIT = """() => {
  const form = document.getElementById('sweep-form');
  const bottom = (id) => document.getElementById(id).getBoundingClientRect().bottom;
  return {overflow: form.scrollHeight - form.clientHeight, run: bottom('run'), upload: bottom('upload'),
          formBottom: form.getBoundingClientRect().bottom};
}"""


def test_the_sweep_form_fits_a_projector_screen_with_the_error_banner_shown(server, new_page):
    page = open_page(new_page, f"{server.url}/sweep", "projector", PROJECTOR)
    assert page.locator("#no-sweep").is_visible()
    sweep_axes(page, "1, 99")
    page.wait_for_selector("#banner:not([hidden])")  # the form is checked as it changes
    fit = page.evaluate(FORM_FIT)
    assert fit["overflow"] <= 1, fit
    assert fit["run"] <= fit["formBottom"] and fit["upload"] <= fit["formBottom"] <= PROJECTOR["height"], fit
    check_layout(page, "sweep form with its banner", projector=True, min_texts=10)


def test_the_empty_sweep_note_gives_way_to_the_points_once_a_sweep_has_run(server, new_page):
    page = open_page(new_page, f"{server.url}/sweep", "projector", PROJECTOR)
    sweep_axes(page, "1, 2")
    page.click("#run")
    page.wait_for_selector("#table tbody tr", timeout=RUN_MS)
    assert not page.locator("#no-sweep").is_visible()
