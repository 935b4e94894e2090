"""How close servescope lands to real vLLM: published measurements, each rerun in the simulation.

Every row is one published figure (a vLLM benchmark run someone reported with its model, GPU,
vLLM version, request lengths and load) and the scenario that reproduces its setup. The script runs
each scenario, prints predicted against published with the error, and with `--readme` rewrites the
table in README.md's "How close to real vLLM" section.

    python benchmarks/validate_published.py [--readme]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scheduler_core.config import vllm_default_batch_limits  # noqa: E402
from scheduler_core.presets import GPUS  # noqa: E402
from scheduler_core.scenario import Scenario  # noqa: E402


def served_on(gpu: str, max_model_len: int) -> dict:
    """The engine settings of `vllm serve --max-model-len N` on this GPU: vLLM's batch limits for it."""
    engine = {"max_model_len": max_model_len}
    return {**engine, **vllm_default_batch_limits(engine, gpu, GPUS[gpu].mem_bytes)}


# Sources, each stating model, GPU, vLLM version (where given), lengths and load.
NIGHTLY_A100 = ("vLLM's performance-benchmark suite (serving tests: 200 ShareGPT prompts, Poisson arrivals) run "
                "on Azure Standard_NC96ads_A100_v4, gist.github.com/surajssd/eef8ebf83cadd690f6fb4ee87b30fe1a")
MUSGRAVE = ("J. Musgrave, 'vLLM throughput-latency sweep on NVIDIA A100', johnmusgrave.com/p/"
            "vllm-throughput-latency-sweep-on (vllm bench serve, random 1024 in / 128 out, --ignore-eos)")
INFERENCEBENCH = ("InferenceBench concurrency-sweep recipe, yobitelcomm.github.io/bench/recipes/concurrency-sweep "
                  "(H100-80GB-HBM3, vLLM 0.21.0, fp16, llm.inference.chatbot-short, 2026-05-16)")


@dataclass(frozen=True)
class Row:
    """One published figure and the scenario that reproduces its setup."""

    label: str
    source: str
    vllm_version: str
    metric: str  # a key of the metrics report: output_tokens_per_s, or ttft_s / tpot_s with .mean / .p50
    published: float  # in the metric's unit: tok/s, or milliseconds for latencies
    scenario: dict
    assumptions: str
    unit: str = field(default="ms")

    def predict(self) -> float:
        sim = Scenario.from_dict(self.scenario, name=self.label).build(keep_finished=False)
        for _ in sim.records():
            pass
        report = sim.metrics.report()
        name, _, stat = self.metric.partition(".")
        value = report[name][stat] if stat else report[name]
        return value * 1e3 if self.unit == "ms" else value


def nightly_70b_tp4(qps: float) -> dict:
    return {
        "model": "llama-3.3-70b", "gpu": "a100-80g-pcie", "tensor_parallel_size": 4, "gpu_memory_utilization": 0.9,
        "engine": served_on("a100-80g-pcie", 8192),
        # 200 requests; mean lengths from the published figures: 198.5 output tok/s at 0.928 req/s is 214
        # output tokens a request, and (396.4 - 198.5) / 0.928 = 213 prompt tokens.
        "workload": {"num_requests": 200, "arrival_rate": qps, "lengths": "lognormal", "prompt_len": 213,
                     "output_len": 214, "sigma": 1.0, "seed": 0},
    }


NIGHTLY_ASSUMPTIONS = ("vLLM version not stated (2025 suite); ShareGPT lengths as lognormal (sigma 1.0) with the "
                       "means the published throughputs imply (213 in / 214 out); PCIe between the 4 GPUs (no NVLink), "
                       "so vLLM all-reduces with NCCL; vLLM's A100 defaults (2048-token budget, 256 seqs), utilization 0.9")


def musgrave(concurrency: int) -> dict:
    return {
        "model": "llama-3.1-8b", "gpu": "a100-40g", "gpu_memory_utilization": 0.9,
        "engine": served_on("a100-40g", 8192),
        "workload": {"num_requests": 20 * concurrency, "concurrency": concurrency, "lengths": "fixed",
                     "prompt_len": 1024, "output_len": 128, "seed": 0},
    }


def inferencebench(concurrency: int) -> dict:
    return {
        "model": "llama-3.1-8b", "gpu": "h100-sxm", "gpu_memory_utilization": 0.9,
        "engine": served_on("h100-sxm", 8192),
        "workload": {"num_requests": max(50, 10 * concurrency), "concurrency": concurrency, "lengths": "lognormal",
                     "prompt_len": 256, "output_len": 128, "sigma": 0.6, "seed": 0},
    }


INFERENCEBENCH_ASSUMPTIONS = ("'chatbot-short' lengths are not published: assumed lognormal, mean 256 in / 128 out; "
                              "vLLM's H100 defaults (8192-token budget, 1024 seqs)")

ROWS = [
    Row("70B TP4 A100-PCIe, 1 req/s: output tok/s", NIGHTLY_A100, "n/a", "output_tokens_per_s", 198.508,
        nightly_70b_tp4(1.0), NIGHTLY_ASSUMPTIONS, unit="tok/s"),
    Row("70B TP4 A100-PCIe, 1 req/s: mean TPOT", NIGHTLY_A100, "n/a", "tpot_s.mean", 44.9394,
        nightly_70b_tp4(1.0), NIGHTLY_ASSUMPTIONS),
    Row("70B TP4 A100-PCIe, 1 req/s: mean TTFT", NIGHTLY_A100, "n/a", "ttft_s.mean", 154.771,
        nightly_70b_tp4(1.0), NIGHTLY_ASSUMPTIONS),
    Row("70B TP4 A100-PCIe, 4 req/s: output tok/s", NIGHTLY_A100, "n/a", "output_tokens_per_s", 532.931,
        nightly_70b_tp4(4.0), NIGHTLY_ASSUMPTIONS, unit="tok/s"),
    Row("70B TP4 A100-PCIe, 4 req/s: mean TPOT", NIGHTLY_A100, "n/a", "tpot_s.mean", 73.9558,
        nightly_70b_tp4(4.0), NIGHTLY_ASSUMPTIONS),
    Row("70B TP4 A100-PCIe, 4 req/s: mean TTFT", NIGHTLY_A100, "n/a", "ttft_s.mean", 246.338,
        nightly_70b_tp4(4.0), NIGHTLY_ASSUMPTIONS),
    Row("8B A100-40GB, 1 client: TPOT", MUSGRAVE, "0.23.0", "tpot_s.mean", 1000 / 75, musgrave(1),
        "published as 'about 75 tokens/sec' decode at one request: TPOT 13.3 ms; vLLM's A100 defaults"),
    Row("8B H100, 1 client: median TPOT", INFERENCEBENCH, "0.21.0", "tpot_s.p50", 6.48, inferencebench(1),
        INFERENCEBENCH_ASSUMPTIONS),
    Row("8B H100, 4 clients: median TPOT", INFERENCEBENCH, "0.21.0", "tpot_s.p50", 6.59, inferencebench(4),
        INFERENCEBENCH_ASSUMPTIONS),
    Row("8B H100, 16 clients: median TPOT", INFERENCEBENCH, "0.21.0", "tpot_s.p50", 10.94, inferencebench(16),
        INFERENCEBENCH_ASSUMPTIONS),
    Row("8B H100, 16 clients: output tok/s", INFERENCEBENCH, "0.21.0", "output_tokens_per_s", 1384.2,
        inferencebench(16), INFERENCEBENCH_ASSUMPTIONS, unit="tok/s"),
]


def table(results: list[tuple[Row, float]]) -> str:
    lines = ["| # | setup (model, GPUs, load): figure | vLLM | published | servescope | error |",
             "| --- | --- | --- | --- | --- | --- |"]
    for i, (row, predicted) in enumerate(results, 1):
        error = predicted / row.published - 1
        lines.append(f"| {i} | {row.label} | {row.vllm_version} | {row.published:,.1f} {row.unit} | "
                     f"{predicted:,.1f} {row.unit} | {error:+.0%} |")
    errors = sorted(abs(p / r.published - 1) for r, p in results)
    lines.append("")
    lines.append(f"Median absolute error {errors[len(errors) // 2]:.0%}, worst {errors[-1]:.0%} over {len(errors)} figures.")
    lines.append("")
    sources = []
    for row, _ in results:
        if (row.source, row.assumptions) not in sources:
            sources.append((row.source, row.assumptions))
    for source, assumptions in sources:
        rows = ", ".join(str(i) for i, (r, _) in enumerate(results, 1) if (r.source, r.assumptions) == (source, assumptions))
        lines.append(f"- Rows {rows}: {source}. Assumptions: {assumptions}.")
    return "\n".join(lines)


def rewrite_readme(text: str) -> None:
    readme = ROOT / "README.md"
    content = readme.read_text()
    pattern = re.compile(r"(<!-- validate_published:start -->\n).*?(<!-- validate_published:end -->)", re.S)
    if not pattern.search(content):
        raise SystemExit("README.md has no validate_published markers")
    readme.write_text(pattern.sub(lambda m: m.group(1) + text + "\n" + m.group(2), content))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", action="store_true", help="rewrite README.md's table with these results")
    args = parser.parse_args()
    start = time.perf_counter()
    results = []
    for row in ROWS:
        results.append((row, row.predict()))
    text = table(results)
    print(text)
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if args.readme:
        rewrite_readme(text)


if __name__ == "__main__":
    main()
