"""How well the cost model predicts measured H200 steps it was not fitted on.

Three checks, each fitting the efficiencies without the steps it then predicts:
- leave-one-out: every measured step predicted by a fit on all the others, reported separately for
  pure steps (decode or prefill alone) and mixed steps (a prompt chunk riding with decodes), and
  for mixed steps also without the mixed-step term (the model before it: one query row per decode);
- leave-one-model-out: each model predicted by a fit on the other model only (a new shape);
- held-out grid: decodes at the largest context and the largest prefills held aside.
Also prints the in-sample error of the shipped defaults and a refit of them.

    python benchmarks/bench_cost_model.py [--quick | --smoke]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler_core.timing.calibration import fit, measured_steps, relative_errors, summarize  # noqa: E402
from scheduler_core.timing.cost_model import Efficiency  # noqa: E402


def line(label: str, errors: list[float]) -> str:
    s = summarize(errors)
    return f"{label:<52} n={len(errors):>3}  median {s['median']:6.1%}  p90 {s['p90']:6.1%}  max {s['max']:6.1%}"


def pure(steps):
    return [s for s in steps if s.kind != "mixed"]


def mixed(steps):
    return [s for s in steps if s.kind == "mixed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer optimiser iterations (rougher figures)")
    parser.add_argument("--smoke", action="store_true", help="a handful of iterations (figures meaningless): does it run")
    args = parser.parse_args()
    iterations = 8 if args.smoke else 400 if args.quick else 1500
    steps = measured_steps()
    start = time.perf_counter()

    for label, subset in (("pure", pure(steps)), ("mixed", mixed(steps))):
        print(line(f"shipped defaults, in sample, {label} steps", relative_errors(Efficiency(), subset)))
    refit = fit(steps, iterations=iterations)
    print(line("refit on all steps, in sample", relative_errors(refit, steps)))
    print("  refit parameters:", ", ".join(f"{v:.4g}" for v in refit.to_vector()))

    loo = [relative_errors(fit(steps[:i] + steps[i + 1 :], iterations=iterations), [step])[0] for i, step in enumerate(steps)]
    print(line("leave-one-out, pure steps", [e for e, s in zip(loo, steps) if s.kind != "mixed"]))
    print(line("leave-one-out, mixed steps", [e for e, s in zip(loo, steps) if s.kind == "mixed"]))
    no_term = Efficiency(mixed_decode_query_rows=1.0)
    loo_no_term = [relative_errors(fit(steps[:i] + steps[i + 1 :], start=no_term, iterations=iterations,
                                       fit_mixed_term=False), [step])[0]
                   for i, step in enumerate(steps) if step.kind == "mixed"]
    print(line("leave-one-out, mixed steps, without the term", loo_no_term))
    only_pure = fit(pure(steps), start=no_term, iterations=iterations, fit_mixed_term=False)
    print(line("mixed steps from a fit on pure steps only", relative_errors(only_pure, mixed(steps))))

    held = [s for s in steps if (s.kind == "decode" and s.context == 8192) or (s.kind == "prefill" and s.tokens >= 4096)]
    kept = [s for s in steps if s not in held]
    print(line("held-out grid (ctx 8192 decodes, >=4096 prefills)", relative_errors(fit(kept, iterations=iterations), held)))

    for name in sorted({s.model.name for s in steps}):
        others = [s for s in steps if s.model.name != name]
        mine = [s for s in steps if s.model.name == name]
        fitted = fit(others, iterations=iterations)
        print(line(f"leave-one-model-out: {name}, pure", relative_errors(fitted, pure(mine))))
        print(line(f"leave-one-model-out: {name}, mixed", relative_errors(fitted, mixed(mine))))
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
