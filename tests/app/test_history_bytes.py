"""A session's chart points are bounded in bytes by construction, however long it plays: at most
`max_chart_points` + 1 points of seven numbers each, so with the default 3,000 points under
1 MiB (the figure docs/web-api.md states), outside the checkpoints' budget and never growing."""

import sys
import tracemalloc

from app.session import Session
from app.settings import Settings
from scheduler_core.scenario.scenario import Scenario
from tests.app.clients import default_scenario

# The largest a chart point can be: a list of 7 slots holding floats and ints (small ints are
# shared; an int below 2**60 and a float are at most 32 bytes each).
MAX_POINT_BYTES = sys.getsizeof([0.0] * 7) + 7 * 32


def test_a_chart_point_is_a_fixed_shape_within_its_figure():
    session = Session("h", Scenario.from_dict(default_scenario()), Settings())
    session.advance(50)
    for point in session.history.points():
        assert len(point) == 7 and all(isinstance(v, (int, float)) for v in point)
        assert sys.getsizeof(point) + sum(sys.getsizeof(v) for v in point) <= MAX_POINT_BYTES
    assert (Settings().max_chart_points + 1) * MAX_POINT_BYTES < 2**20


def test_the_chart_holds_at_most_its_cap_of_points_and_its_memory_stops_growing():
    settings = Settings(max_chart_points=200)
    session = Session("h", Scenario.from_dict(default_scenario()), settings)
    session.advance(1000)  # past the cap: thinned
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            session.history.append([0.5, 1, 2, 0.25, 3, 4, 0.001])  # as many points again as the cap, thrice
            for _ in range(settings.max_chart_points):
                session.history.append([0.5, 1, 2, 0.25, 3, 4, 0.001])
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(session.history.points()) <= settings.max_chart_points + 1
    assert grown <= (settings.max_chart_points + 1) * MAX_POINT_BYTES
