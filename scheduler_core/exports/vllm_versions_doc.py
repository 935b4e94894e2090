"""docs/vllm-versions.md, written from `engine.releases.RELEASE_CHANGES` so the page cannot drift from
the table the simulation reads: `python -m scheduler_core.exports.vllm_versions_doc` rewrites it, and
a test fails while it is stale."""

from __future__ import annotations

import sys
from dataclasses import fields
from pathlib import Path

from ..engine.releases import (
    DEFAULT,
    MEMORY_PROFILE,
    NOT_MODELLED,
    NOT_MODELLED_FLAG,
    RELEASE_CHANGES,
    REMOVED,
    SWITCH,
    VLLM_RELEASES,
    VllmCompat,
    VllmRelease,
)

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "vllm-versions.md"

INTRO = """# vLLM releases: what `--vllm-version` selects

`--vllm-version X` (or `vllm_version = "X"` in a scenario file or a web request) simulates vLLM
release X: every scheduler rule, default and refusal below that X has. Any release on PyPI from
0.10.0 to 0.33.0 is accepted; another is refused with the list. Each row names the first release
whose source has the behaviour and where it is (file: function), as read in the released wheels;
where an issue or a post gave another release, the source decided. Switches given in a scenario's
`engine.compat` table win over the release's, so one rule can be flipped on its own. Without a
release named, a scenario is 0.33.0 (0.10.1.1 when every compat switch is off), and it keeps
servescope's V0 swap preemption, which no V1 release has.

This page is written from `scheduler_core/engine/releases.py` (`RELEASE_CHANGES`):
`python -m scheduler_core.exports.vllm_versions_doc` rewrites it, and a test fails while it is stale.
"""

KIND_HEADINGS = {
    SWITCH: ("Scheduler rules", "One `engine.compat` switch each (`VllmCompat`); on from its release."),
    DEFAULT: ("Defaults `vllm serve` fills in", "For the settings a scenario leaves open (`run`, `compare`, the "
                                                "dashboard, sweeps); lessons and replays pin theirs."),
    REMOVED: ("Flags a release no longer takes", "Refused, in argparse's words, for a scenario naming that release "
                                                 "or a later one."),
    NOT_MODELLED_FLAG: ("Opt-in flags servescope does not model", "Refused by name in a `--vllm` line (or a "
                                                                 "`speculative_config`) for a release that has them; "
                                                                 "as unknown for one that does not."),
    MEMORY_PROFILE: ("What the startup memory profile counts", "The bytes vLLM's profile run measures and takes out "
                                                               "of the KV cache's memory (`timing/profile_run.py`)."),
    NOT_MODELLED: ("Behaviours no switch models yet", "Listed with the release their source shows; those of "
                                                      "speculative decoding meeting prefix caching are issue 26, item 1."),
}


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def changes_table(kind: str) -> list[str]:
    title, note = KIND_HEADINGS[kind]
    lines = [f"## {title}", "", note, "", "| name | first release | where | what |", "|---|---|---|---|"]
    for change in RELEASE_CHANGES:
        if change.kind == kind:
            name = f"`{change.name}`" + (f" (`{change.flag}` in a `--vllm` line)" if change.flag else "")
            lines.append(f"| {name} | {change.release} | {cell(change.where)} | {cell(change.what)} |")
    return [*lines, ""]


def release_rows() -> list[str]:
    """One row per release: what it adds and the defaults a run takes from it."""
    switches = [f.name for f in fields(VllmCompat)]
    lines = ["## What each release selects", "",
             "| release | new in it | compat switches on | gpu_memory_utilization | async scheduling by default "
             "(EAGLE / n-gram) | `--swap-space` |", "|---|---|---|---|---|---|"]
    for version in VLLM_RELEASES:
        release = VllmRelease(version)
        new = ", ".join(f"`{c.name}`" for c in RELEASE_CHANGES if c.release == version) or "-"
        on = sum(release.has(name) for name in switches)
        if release.has("async_scheduling_by_default"):
            async_default = "on / " + ("on" if release.has("ngram_async_under_model_runner_v2") else "off")
        else:
            async_default = "off / off"
        swap = "refused" if release.has("--swap-space") else "taken"
        lines.append(f"| {version} | {new} | {on} of {len(switches)} | {release.gpu_memory_utilization} | "
                     f"{async_default} | {swap} |")
    return [*lines, ""]


def render() -> str:
    lines = [INTRO]
    for kind in KIND_HEADINGS:
        lines += changes_table(kind)
    lines += release_rows()
    return "\n".join(lines)


def main() -> int:
    DOC_PATH.write_text(render())
    print(f"wrote {DOC_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
