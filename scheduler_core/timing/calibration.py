"""Fitting the cost model's efficiencies to measured step times, and checking it on held-out steps.

The fit minimises squared log error (relative error counts the same for a 5 ms decode and a
600 ms prefill) with Nelder-Mead, keeping every parameter physical: efficiencies in (0.05, 1.6],
sharpness >= 1, latencies >= 0.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from .cost_model import CostModel, Efficiency, ModelSpec
from .kernel_rates import CALIBRATION_KERNELS
from .presets import GPUS, load_calibration, model_from_config

# The H200 as the calibration run measured it: PyTorch's attention (SDPA), not the FlashAttention 3 that
# vLLM runs on the same GPU (GPUS["h200"]). The fit and every check against its steps price them so.
CALIBRATION_GPU = dataclasses.replace(GPUS["h200"], attention=CALIBRATION_KERNELS)


@dataclass(frozen=True)
class MeasuredStep:
    """One measured step: pure decode, pure prefill, or mixed (one prompt chunk riding with decodes)."""

    model: ModelSpec
    kind: str  # "decode", "prefill" or "mixed"
    batch: int  # decoding sequences
    tokens: int  # the prompt chunk's new tokens (1 for a pure decode)
    context: int  # cached tokens before the step: of each decode, or of the chunk's own prompt
    seconds: float
    decode_context: int = 0  # mixed steps: cached tokens of each decode

    def predict(self, cost_model: CostModel) -> float:
        if self.kind == "decode":
            return cost_model.decode_time(self.batch, self.context)
        if self.kind == "mixed":
            chunks = [(self.tokens, self.context)] + [(1, self.decode_context)] * self.batch
            return cost_model.step_time(chunks, 1 + self.batch)[0]
        return cost_model.prefill_time(self.tokens, self.context)


def measured_steps(include_mixed: bool = True) -> list[MeasuredStep]:
    """The shipped H200 measurements: pure steps, then (calibration_h200_mixed.json) mixed ones."""
    steps = []
    models = {}
    for name, entry in load_calibration()["models"].items():
        model = models[name] = model_from_config(name, entry["config"])
        for d in entry["decode"]:
            steps.append(MeasuredStep(model, "decode", d["batch"], 1, d["ctx"], d["ms"] / 1e3))
        for p in entry["prefill"]:
            steps.append(MeasuredStep(model, "prefill", 1, p["tokens"], 0, p["ms"] / 1e3))
    if include_mixed:
        for name, rows in load_calibration("data/calibration_h200_mixed.json")["models"].items():
            for r in rows:
                steps.append(MeasuredStep(models[name], "mixed", r["decodes"], r["chunk"], r["cached"], r["ms"] / 1e3,
                                          decode_context=r["decode_ctx"]))
    return steps


def relative_errors(efficiency: Efficiency, steps: list[MeasuredStep]) -> list[float]:
    models: dict[str, CostModel] = {}
    errors = []
    for step in steps:
        cost_model = models.get(step.model.name) or models.setdefault(
            step.model.name, CostModel(step.model, CALIBRATION_GPU, efficiency=efficiency)
        )
        errors.append(abs(step.predict(cost_model) / step.seconds - 1))
    return errors


def _is_physical(v: list[float]) -> bool:
    # A decode fills between one query row and a 256-row tile (v[8] is rows / 100).
    return all(0.05 < x <= 1.6 for x in v[:4]) and 1.0 <= v[4] <= 20 and min(v[5:8]) >= 0 and 0.01 <= v[8] <= 2.56


def _loss(v: list[float], steps: list[MeasuredStep]) -> float:
    if not _is_physical(v):
        return math.inf
    efficiency = Efficiency.from_vector(v)
    models: dict[str, CostModel] = {}
    total = 0.0
    for step in steps:
        cost_model = models.get(step.model.name) or models.setdefault(
            step.model.name, CostModel(step.model, CALIBRATION_GPU, efficiency=efficiency)
        )
        total += math.log(step.predict(cost_model) / step.seconds) ** 2
    return total


def nelder_mead(f: Callable[[list[float]], float], x0: list[float], iterations: int) -> list[float]:
    """Minimise f from x0 (the standard reflect / expand / contract / shrink simplex)."""
    n = len(x0)
    simplex = [list(x0)] + [[x * 1.2 if i == j and x else (0.1 if i == j else x) for j, x in enumerate(x0)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst)]
        f_reflected = f(reflected)
        if f_reflected < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            f_expanded = f(expanded)
            simplex[-1], values[-1] = (expanded, f_expanded) if f_expanded < f_reflected else (reflected, f_reflected)
        elif f_reflected < values[-2]:
            simplex[-1], values[-1] = reflected, f_reflected
        else:
            contracted = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            f_contracted = f(contracted)
            if f_contracted < values[-1]:
                simplex[-1], values[-1] = contracted, f_contracted
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (x - b) for b, x in zip(best, point)] for point in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def fit(steps: list[MeasuredStep], start: Efficiency | None = None, restarts: int = 4, iterations: int = 1500,
        fit_mixed_term: bool = True) -> Efficiency:
    """Restarted Nelder-Mead from `start` (default: the shipped efficiencies): each restart rebuilds
    the simplex around the best point so far. Without `fit_mixed_term` the mixed-step term stays at
    the start's value (1 row: no term)."""
    start = Efficiency() if start is None else start
    vector, fixed_rows = start.to_vector(), start.to_vector()[8:]
    if not fit_mixed_term:
        loss = lambda v: _loss(v + fixed_rows, steps)  # noqa: E731
        vector = vector[:8]
    else:
        loss = lambda v: _loss(v, steps)  # noqa: E731
    for _ in range(restarts):
        vector = nelder_mead(loss, vector, iterations)
    return Efficiency.from_vector(vector if fit_mixed_term else vector + fixed_rows)


def summarize(errors: list[float]) -> dict[str, float]:
    ordered = sorted(errors)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)],
        "max": ordered[-1],
    }
