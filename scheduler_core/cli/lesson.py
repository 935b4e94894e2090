"""`servescope lesson`: a guided scenario, its arms side by side and each claim checked."""

from __future__ import annotations

import argparse

from ..errors import ConfigError
from ..lessons.catalog import LESSONS, LESSONS_BY_NAME
from ..lessons.fleet import FLEET_LESSONS, FLEET_LESSONS_BY_NAME
from ..lessons.framework import comparison_table, evaluate


def cmd_lesson(args: argparse.Namespace) -> int:
    """A guided scenario: its arms side by side and each narrated claim, checked on the numbers."""
    if not args.name:
        for lesson in LESSONS:
            print(f"{lesson.name:<22} {lesson.title}")
        for lesson in FLEET_LESSONS:
            print(f"{lesson.name:<22} {lesson.title} (a fleet: {lesson.link})")
        return 0
    lesson = LESSONS_BY_NAME.get(args.name) or FLEET_LESSONS_BY_NAME.get(args.name)
    if lesson is None:
        names = [*LESSONS_BY_NAME, *FLEET_LESSONS_BY_NAME]
        raise ConfigError("lesson", f"unknown lesson {args.name!r}; expected one of {', '.join(names)}")
    results = lesson.run()
    print(f"{lesson.title}\n{lesson.summary}\n")
    print(comparison_table(lesson, results))
    print()
    verdicts = evaluate(lesson, results)
    for holds, text in verdicts:
        print(f"  {'holds' if holds else 'FAILS'}: {text}")
    return 0 if all(holds for holds, _ in verdicts) else 1


def add_lesson_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("lesson", help="run a guided scenario and check what it claims (no name: list them)")
    p.add_argument("name", nargs="?")
    p.set_defaults(func=cmd_lesson)
    return p
