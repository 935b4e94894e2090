"""The guided scenarios, in the order the dashboard lists them. Each lesson's numbers come from
running its arms; its claims are checks (`lessons.py`)."""

from __future__ import annotations

from .everything_on import EVERYTHING_ON_LESSONS
from .mechanisms import MECHANISM_LESSONS
from .todays_engine import TODAYS_ENGINE_LESSONS
from .todays_models import MOE_LESSONS

LESSONS = [*MECHANISM_LESSONS, *TODAYS_ENGINE_LESSONS, *EVERYTHING_ON_LESSONS, *MOE_LESSONS]

LESSONS_BY_NAME = {lesson.name: lesson for lesson in LESSONS}
