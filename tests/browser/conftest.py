"""The browser tests' fixtures: one live server for the whole run, Debian's headless Chromium
driven by Playwright, pages in fresh contexts (so the theme kept in localStorage does not leak
between tests). Every test here is marked `browser` (`make test-fast` leaves them out)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from app.main import create_app
from app.settings import Settings
from tests.browser.pages import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, LiveServer, free_port, open_dashboard, wait_until

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    # A conftest's hook sees every collected test, not only its folder's.
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def server():
    # Every test opens sessions of its own and none is deleted: room for all of them.
    live = LiveServer(create_app(Settings(max_sessions=1_000)), free_port())
    live.start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def browser():
    # Module, not session, scope: while Playwright's sync API is open, the main thread counts as
    # running its event loop, and later modules' asyncio.run() would fail.
    if not CHROMIUM.exists():
        pytest.skip(f"browser tests need Debian's chromium at {CHROMIUM} (CI installs it)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def new_page(browser):
    """Pages in fresh contexts; each records its console errors and uncaught exceptions."""
    contexts = []

    def open_page(width: int = 1920, height: int = 1080, scale: float = 1) -> Page:
        context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=scale)
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        page = context.new_page()
        page.errors = []

        def on_console(message) -> None:
            if message.type == "error":
                page.errors.append(message.text)

        page.on("console", on_console)
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        page.wait_for_function = functools.partial(wait_until, page)
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def presenter(server, new_page) -> Page:
    """The presenter's page of a new session of the default scenario, at step 0."""
    return open_dashboard(new_page(), server.url + "/")
