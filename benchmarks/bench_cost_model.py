"""How well the cost model predicts measured H200 steps it was not fitted on.

Three checks, each fitting the efficiencies without the steps it then predicts:
- leave-one-out: every measured step predicted by a fit on all the others;
- leave-one-model-out: each model predicted by a fit on the other model only (a new shape);
- held-out grid: decodes at the largest context and the largest prefills held aside.
Also prints the in-sample error of the shipped defaults and a refit of them.

    python benchmarks/bench_cost_model.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler_core.calibration import fit, measured_steps, relative_errors, summarize  # noqa: E402
from scheduler_core.cost_model import Efficiency  # noqa: E402


def line(label: str, errors: list[float]) -> str:
    s = summarize(errors)
    return f"{label:<44} n={len(errors):>3}  median {s['median']:6.1%}  p90 {s['p90']:6.1%}  max {s['max']:6.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer optimiser iterations (rougher figures)")
    args = parser.parse_args()
    iterations = 400 if args.quick else 1500
    steps = measured_steps()
    start = time.perf_counter()

    print(line("shipped defaults, in sample", relative_errors(Efficiency(), steps)))
    refit = fit(steps, iterations=iterations)
    print(line("refit on all steps, in sample", relative_errors(refit, steps)))
    print("  refit parameters:", ", ".join(f"{v:.4g}" for v in refit.to_vector()))

    loo = []
    for i, step in enumerate(steps):
        loo += relative_errors(fit(steps[:i] + steps[i + 1 :], iterations=iterations), [step])
    print(line("leave-one-out (held-out steps)", loo))

    held = [s for s in steps if (s.kind == "decode" and s.context == 8192) or (s.kind == "prefill" and s.tokens >= 4096)]
    kept = [s for s in steps if s not in held]
    print(line("held-out grid (ctx 8192 decodes, >=4096 prefills)", relative_errors(fit(kept, iterations=iterations), held)))

    for name in sorted({s.model.name for s in steps}):
        others = [s for s in steps if s.model.name != name]
        mine = [s for s in steps if s.model.name == name]
        print(line(f"leave-one-model-out: {name}", relative_errors(fit(others, iterations=iterations), mine)))
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
