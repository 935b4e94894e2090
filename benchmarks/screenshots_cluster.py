"""Screenshots of the fleet and sweep pages: docs/screenshot-fleet.png and docs/screenshot-sweep.png
(1920x1080, normal theme), and the same pages at 1280x720 in the projector theme for checking
(docs/screenshot-fleet-projector.png, docs/screenshot-sweep-projector.png).

The fleet page runs its default fleet (the default scenario over four replicas behind the
prefix-aware router) and is shown a third of the way through the run; the sweep page runs its
default sweep (replicas x arrival rate).

    python benchmarks/screenshots_cluster.py [--out docs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from screenshots import ROOT, chromium, serving  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    out = args.out.resolve()
    with serving() as base_url, chromium() as browser:
        for theme, width, height, suffix in SHOTS:
            shoot_fleet(browser, base_url, theme, width, height, out / f"screenshot-fleet{suffix}.png")
            shoot_sweep(browser, base_url, theme, width, height, out / f"screenshot-sweep{suffix}.png")


if __name__ == "__main__":
    main()
