"""Screenshots of the dashboard: docs/screenshot-normal.png and docs/screenshot-projector.png, and
every lesson's beats at 1280x720 in the projector theme: docs/lessons/NAME-K.png.

A real server and Debian's headless Chromium (/usr/bin/chromium), 1920x1080. The default scenario
is stepped to just after its first preemptions (step 2932): the KV cache is nearly full, requests
wait, one was preempted in the step shown, and the charts hold 19 simulated seconds. The oldest
running request is selected, so the inspector and the KV summary's block table show it.

    python benchmarks/screenshots.py [--step 2932] [--out docs]

`serving()` and `chromium()` are also what bench_ui.py starts its server and browser with.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import uvicorn  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402

from app.main import create_app, uvicorn_options  # noqa: E402
from app.settings import Settings  # noqa: E402
from tests.browser import pages  # noqa: E402

# As long as the pages' own default timeout below: the benchmarks wait for long plays.
WAIT_MS = 20_000


def wait_until(page: Page, expression: str, arg=None, timeout: float = WAIT_MS):
    """page.wait_for_function, under the pages' CSP (tests/browser/pages.py says why)."""
    return pages.wait_until(page, expression, arg, timeout)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
THEMES = ("normal", "projector")


@contextmanager
def serving():
    """The dashboard on a free loopback port, served by uvicorn from a thread; yields its base URL."""
    settings = Settings()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(create_app(settings), log_level="warning", **uvicorn_options(settings))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


@contextmanager
def chromium():
    """Debian's Chromium, headless, through Playwright (never a downloaded browser)."""
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} is missing: apt-get install chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def wait_for_dashboard(page: Page) -> None:
    wait_until(page, "window.servescope && window.servescope.store.session !== null")


def shoot(browser, base_url: str, theme: str, step: int, path: Path) -> None:
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.goto(base_url + "/?scenario=default")
    if theme == "projector":
        page.goto(page.url + "&theme=projector")
    wait_for_dashboard(page)
    if theme == "projector":  # on stage: the requests, the KV cache and the inspector
        page.evaluate("window.servescope.stage.follow(['queues', 'kv', 'side'])")
    page.evaluate("n => window.servescope.send({type: 'step', n})", step)
    wait_until(page, "n => window.servescope.store.step === n", arg=step)
    chip = page.locator(".lane.running .chip").first
    request_id = chip.get_attribute("data-id")
    chip.click()
    page.locator("#inspector h3").filter(has_text=request_id).wait_for()
    page.mouse.move(0, 1079)  # no hover highlight in the picture
    page.wait_for_timeout(500)  # the charts' and the canvas' next animation frames
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    context.close()
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {theme}, step {step}, "
          f"{request_id} selected, {path.stat().st_size / 1024:.0f} KB")


def lesson_beats(page: Page) -> list[dict]:
    """The beats of the lesson the page shows, once its story has loaded."""
    wait_until(page, "window.servescope.narration.beats().length > 0")
    return page.evaluate("window.servescope.narration.beats()")


def go_to_step(page: Page, step: int) -> None:
    page.evaluate("step => window.servescope.send({type: 'seek', step})", step)
    wait_until(page, "step => window.servescope.store.step === step", arg=step, timeout=60_000)
    page.wait_for_timeout(600)  # the charts' and the canvas' next animation frames


def shoot_lesson(browser, base_url: str, name: str, out: Path) -> list[Path]:
    """Each beat of a lesson's story at 1280x720 in the projector theme: docs/lessons/NAME-K.png."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.set_default_timeout(30_000)
    context.add_init_script("localStorage.setItem('servescope-theme', 'projector')")
    page = context.new_page()
    page.goto(f"{base_url}/?lesson={name}")
    wait_for_dashboard(page)
    paths = []
    for index, beat in enumerate(lesson_beats(page)):
        go_to_step(page, beat["step"])
        page.mouse.move(0, 719)
        path = out / "lessons" / f"{name}-{index + 1}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path))
        paths.append(path)
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: beat {index + 1} "
              f"({beat['event']}, step {beat['step']}) {beat['title']}")
    context.close()
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, default=2932, help="step to show (default: just after a preemption)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="directory for the PNGs")
    parser.add_argument("--lesson", action="append", help="only this lesson's beats (repeatable); default: every lesson")
    parser.add_argument("--no-dashboard", action="store_true", help="skip the two dashboard pictures")
    args = parser.parse_args()
    from scheduler_core.lessons.catalog import LESSONS_BY_NAME
    with serving() as base_url, chromium() as browser:
        if not args.no_dashboard:
            for theme in THEMES:
                shoot(browser, base_url, theme, args.step, args.out.resolve() / f"screenshot-{theme}.png")
        for name in args.lesson or LESSONS_BY_NAME:
            shoot_lesson(browser, base_url, name, args.out.resolve())


if __name__ == "__main__":
    main()
