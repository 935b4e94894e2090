"""Sweeps: a grid of scenario variations, each an independent run, locally or on Ray."""

from .grid import MAX_POINTS, Sweep, SweepPoint
from .runner import METRIC_COLUMNS, run_point, run_point_of, run_processes, run_serial, run_sweep
from .slo import cheapest_meeting_slo, format_choices

__all__ = ["MAX_POINTS", "METRIC_COLUMNS", "Sweep", "SweepPoint", "cheapest_meeting_slo", "format_choices",
           "run_point", "run_point_of", "run_processes", "run_serial", "run_sweep"]
