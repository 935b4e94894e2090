"""Screenshots of the fleet and sweep pages: docs/screenshot-fleet.png and docs/screenshot-sweep.png
(1920x1080, normal theme), and the same pages at 1280x720 in the projector theme for checking
(docs/screenshot-fleet-projector.png, docs/screenshot-sweep-projector.png); and every beat of each
fleet lesson's arms at 1280x720 in the projector theme: docs/lessons/NAME-ARM-K.png.

The fleet page runs its default fleet (the default scenario over four replicas behind the
prefix-aware router) and is shown a third of the way through the run; the sweep page runs its
default sweep (replicas x arrival rate).

    python benchmarks/screenshots_cluster.py [--out docs] [--lesson NAME ...] [--no-pages] [--normal DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from screenshots import ROOT, chromium, serving, wait_until  # noqa: E402

SHOTS = (("normal", 1920, 1080, ""), ("projector", 1280, 720, "-projector"))


def shoot_fleet(browser, base_url: str, theme: str, width: int, height: int, path: Path) -> None:
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(f"{base_url}/fleet?theme={theme}")
    page.wait_for_selector(".replica canvas", timeout=120_000)
    page.evaluate("""() => { const t = document.getElementById('time');
        t.value = Math.round(t.max / 3); t.dispatchEvent(new Event('input')); }""")
    page.screenshot(path=str(path))
    page.context.close()
    print(f"{path}: {theme} {width}x{height}")


def shoot_sweep(browser, base_url: str, theme: str, width: int, height: int, path: Path) -> None:
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(f"{base_url}/sweep?theme={theme}")
    page.click("#run")
    page.wait_for_selector("#table tbody tr", timeout=300_000)
    page.screenshot(path=str(path))
    page.context.close()
    print(f"{path}: {theme} {width}x{height}")


def shoot_fleet_lesson(browser, base_url: str, name: str, arm: str, theme: str, width: int, height: int,
                       out: Path) -> list[Path]:
    """Each beat of a fleet lesson's arm, the page moved to the beat's frame by its N key."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(180_000)
    context.add_init_script(f"localStorage.setItem('servescope-theme', '{theme}')")
    page = context.new_page()
    page.goto(f"{base_url}/fleet?lesson={name}&arm={arm}")
    wait_until(page, "window.servescope && window.servescope.story.beats().length > 0")
    beats = page.evaluate("window.servescope.story.beats()")
    paths = []
    for index, beat in enumerate(beats):
        if index:
            page.keyboard.press("n")
        wait_until(page, "frame => window.servescope.frame() === frame", arg=beat["frame"])
        page.wait_for_timeout(300)
        page.mouse.move(0, height - 1)
        path = out / f"{name}-{arm}-{index + 1}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path))
        paths.append(path)
        print(f"{path}: beat {index + 1} ({beat['event']}, {beat['t']:.3f} s) {beat['title']}")
    context.close()
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--lesson", action="append", help="only this fleet lesson's beats (repeatable); default: both")
    parser.add_argument("--no-pages", action="store_true", help="skip the fleet and sweep pages' pictures")
    parser.add_argument("--normal", type=Path, help="also shoot the beats at 1920x1080 in the normal theme, into this directory")
    args = parser.parse_args()
    out = args.out.resolve()
    from scheduler_core.lessons.fleet import FLEET_LESSONS_BY_NAME
    with serving() as base_url, chromium() as browser:
        if not args.no_pages:
            for theme, width, height, suffix in SHOTS:
                shoot_fleet(browser, base_url, theme, width, height, out / f"screenshot-fleet{suffix}.png")
                shoot_sweep(browser, base_url, theme, width, height, out / f"screenshot-sweep{suffix}.png")
        for name in args.lesson or FLEET_LESSONS_BY_NAME:
            for arm in FLEET_LESSONS_BY_NAME[name].arms:
                shoot_fleet_lesson(browser, base_url, name, arm, "projector", 1280, 720, out / "lessons")
                if args.normal:
                    shoot_fleet_lesson(browser, base_url, name, arm, "normal", 1920, 1080, args.normal.resolve())


if __name__ == "__main__":
    main()
