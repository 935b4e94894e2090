"""What the browser tests share besides their fixtures (tests/browser/conftest.py): the live
server they load pages from, Chromium's path, and the helpers that wait on a page or check how it
reads (layout, fonts, accessibility)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import uvicorn
from playwright.sync_api import Page

from app.main import uvicorn_options
from tests.paths import TESTS

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
WAIT_MS = 5_000


def wait_until(page: Page, expression: str, arg=None, timeout: float | None = None, polling=None):
    """page.wait_for_function that works under the pages' CSP (no 'unsafe-eval'): this Playwright
    compiles the predicate once per poll inside the page, which the CSP refuses (fixed upstream in
    microsoft/playwright#36986). Each poll here is one page.evaluate, which the CSP lets through."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    deadline = time.monotonic() + (timeout if timeout is not None else WAIT_MS) / 1000
    function = expression if "=>" in expression or expression.lstrip().startswith("function") else f"() => ({expression})"
    while True:
        if value := page.evaluate(function, arg):
            return value
        if time.monotonic() > deadline:
            raise PlaywrightTimeout(f"wait_for_function timed out: {expression[:200]}")
        page.wait_for_timeout(polling if isinstance(polling, (int, float)) else 30)
# A lesson's seek replays its run: a shared machine may take long.
SEEK_MS = 90_000
PROJECTOR = {"width": 1280, "height": 720}
NORMAL = {"width": 1920, "height": 1080}
LAYOUT_CHECK = (TESTS / "js" / "layout_check.js").read_text()
FIT_CHECK = (TESTS / "js" / "fit_check.js").read_text()
AXE = TESTS / "vendor" / "axe-core" / "axe.min.js"
AXE_SOURCE = AXE.read_text() if AXE.exists() else ""


# -- the server ----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LiveServer:
    """uvicorn serving `app` on a loopback port from a thread; it can stop and start again."""

    def __init__(self, app, port: int, lifespan: str = "on"):
        self.app, self.port, self.lifespan = app, port, lifespan
        self.url = f"http://127.0.0.1:{port}"
        self.server: uvicorn.Server | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan=self.lifespan,
                                **uvicorn_options(self.app.state.settings))
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        assert not self.thread.is_alive(), "uvicorn did not stop"


# -- waiting on the dashboard --------------------------------------------------------------
def wait_for_dashboard(page: Page) -> None:
    """Until the first snapshot has arrived."""
    page.wait_for_function("window.servescope && window.servescope.store.session !== null")


def open_dashboard(page: Page, url: str) -> Page:
    page.goto(url)
    wait_for_dashboard(page)
    return page


def seek(page: Page, step: int, settle_ms: int = 300) -> None:
    """Seek the session to `step`, then wait `settle_ms` for the panels' next frames."""
    page.evaluate("step => window.servescope.send({type: 'seek', step})", step)
    page.wait_for_function("step => window.servescope.store.step === step", arg=step, timeout=SEEK_MS)
    page.wait_for_timeout(settle_ms)


def wait_for_step(page: Page, step: int) -> None:
    page.wait_for_function("n => document.getElementById('step-counter').value.replace(/,/g, '') === String(n)",
                           arg=step)


# -- how a page reads ----------------------------------------------------------------------
def open_page(new_page, url: str, theme: str, viewport: dict) -> Page:
    """A page of `new_page` at `url`, in `theme` from its first frame."""
    page = new_page(viewport["width"], viewport["height"])
    page.context.add_init_script(f"localStorage.setItem('servescope-theme', '{theme}')")
    page.goto(url, timeout=SEEK_MS)  # a shared machine may be slow to build the session
    return page


def open_lesson(server, new_page, query: str, theme: str = "projector", viewport: dict = PROJECTOR) -> Page:
    """The dashboard on the lesson `query` ("name" or "name&arm=arm"), once its beats have come."""
    page = open_page(new_page, f"{server.url}/?lesson={query}", theme, viewport)
    wait_for_dashboard(page)
    page.wait_for_function("window.servescope.narration.beats().length > 0", timeout=SEEK_MS)
    return page


def set_theme(page: Page, theme: str, viewport: dict) -> None:
    page.set_viewport_size(viewport)
    if page.evaluate("document.documentElement.dataset.theme") != theme:
        page.keyboard.press("t")
        page.wait_for_function("t => document.documentElement.dataset.theme === t", arg=theme)
    page.wait_for_timeout(400)  # the resize observers' and the next animation frames


def check_layout(page: Page, where: str, projector: bool, min_texts: int = 21) -> None:
    """No text spills out of its panel or overlaps other text; projector text is at least 16 px.
    `min_texts`: the pieces of text there must be at least, so an empty screen does not pass."""
    result = page.evaluate(LAYOUT_CHECK)
    assert result["count"] >= min_texts, (where, result["count"])
    assert result["problems"] == [], f"{where}: {result['problems'][:8]}"
    if projector:
        assert result["smallest"] >= 16, f"{where}: smallest font {result['smallest']} px"


def check_fit(page: Page, where: str) -> None:
    """Nothing cut short: no text line cut by the edge of a box that clips it (scroll areas show
    whole lines), every lane whole on screen with whole chip rows, chart ticks apart and inside
    their canvas with their axis titles."""
    problems = page.evaluate(FIT_CHECK)
    assert problems == [], f"{where}: {problems[:8]}"


def axe_violations(page: Page) -> list[str]:
    """axe-core's critical and serious violations on the page, one line each, with the first
    nodes' failure summaries (a contrast failure's colours and ratio)."""
    # Evaluated, not added as a <script>: the pages' CSP refuses inline script, which is the point.
    page.evaluate(AXE_SOURCE + "\n;void 0")
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [f"{v['id']} ({v['impact']}): {v['help']} at "
            f"{[(n['target'], n.get('failureSummary', '')[-160:]) for n in v['nodes'][:3]]}"
            for v in result["violations"] if v["impact"] in ("critical", "serious")]
