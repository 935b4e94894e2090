"""Two guided comparisons of fleets, checked on simulated numbers like the single-engine lessons:
routing with prefix caches, and disaggregated prefill and decode.

Their arms are fleets, so they run headless (`servescope lesson NAME`) and open in the fleet view
(`/fleet?lesson=NAME&arm=ARM`), not in the single-engine dashboard's story mode. Claims and table columns use the
lessons' `{arm:path:format}` placeholders over the fleet's report: `report.ttft_s.p50`,
`report.replicas.0.prefix_cache_hit_rate`, `busiest_share`, ...
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..lessons import Claim, value_at
from .fleet_metrics import fleet_report
from .scenario import ClusterScenario


@dataclass
class FleetArmResult:
    """One arm's fleet report and the measures the claims talk about."""

    label: str
    report: dict

    @property
    def busiest_share(self) -> float:
        """The busiest replica's share of the requests the router sent."""
        decisions = self.report["router"]["decisions"]
        return max(decisions.values()) / sum(decisions.values())

    @property
    def lowest_replica_hit_rate(self) -> float:
        return min(r["prefix_cache_hit_rate"] for r in self.report["replicas"])

    @property
    def highest_replica_hit_rate(self) -> float:
        return max(r["prefix_cache_hit_rate"] for r in self.report["replicas"])

    def get(self, path: str):
        return value_at(self, path)


@dataclass(frozen=True)
class FleetLesson:
    name: str
    title: str
    summary: str
    arms: dict[str, dict]  # label -> fleet scenario data
    claims: list[Claim]
    columns: list[tuple[str, str, str]]

    @property
    def link(self) -> str:
        """The fleet view of its first arm."""
        return f"/fleet?lesson={self.name}"

    def scenario(self, arm: str) -> ClusterScenario:
        return ClusterScenario.from_dict(copy.deepcopy(self.arms[arm]), name=f"{self.name}:{arm}")

    def run(self) -> dict[str, FleetArmResult]:
        results = {}
        for label in self.arms:
            fleet = self.scenario(label).build()
            fleet.run()
            results[label] = FleetArmResult(label, fleet_report(fleet))
        return results


# Sixteen system prompts of 1,024 tokens (64 blocks each) over four replicas whose KV caches hold
# about ten of them: sent anywhere, every replica must cache all sixteen and keeps evicting them.
SYSTEM_PROMPTS = {"model": "llama-3.1-8b", "gpu": "h200",
                  "engine": {"num_gpu_blocks": 700, "max_num_batched_tokens": 2048, "max_num_seqs": 64},
                  "workload": {"num_requests": 400, "arrival_rate": 30.0, "lengths": "fixed", "prompt_len": 128,
                               "output_len": 64, "shared_prefix_len": 1024, "num_shared_prefixes": 16, "seed": 7}}

# Long prompts and a steady stream of output at 16 requests/s, on four H200s either way.
LONG_PROMPTS = {"model": "llama-3.1-8b", "gpu": "h200",
                "engine": {"num_gpu_blocks": 4000, "max_num_batched_tokens": 2048, "max_num_seqs": 128},
                "workload": {"num_requests": 240, "arrival_rate": 16.0, "lengths": "fixed", "prompt_len": 3000,
                             "output_len": 200, "seed": 2}}

per_replica = [(f"replica-{i} {what}", f"report.replicas.{i}.{path}", fmt)
               for i in range(4) for what, path, fmt in (("hit rate", "prefix_cache_hit_rate", ".0%"),
                                                         ("TTFT p50 s", "ttft_s.p50", ".4f"))]

FLEET_LESSONS = [
    FleetLesson(
        name="routing-with-prefix-caches",
        title="Routing with prefix caches",
        summary="Four replicas, sixteen shared system prompts. Round-robin sends every prompt everywhere, so each "
                "replica caches all sixteen in room for ten and keeps evicting them; prefix-aware routing (llm-d's "
                "KV-cache-aware scheduling) sends a prompt where its blocks already are.",
        arms={"round-robin": {**SYSTEM_PROMPTS, "cluster": {"replicas": 4, "router": "round-robin"}},
              "prefix-aware": {**SYSTEM_PROMPTS, "cluster": {"replicas": 4, "router": "prefix-aware"}}},
        claims=[
            Claim("Prefix-aware routing hits the prefix cache for {prefix-aware:report.prefix_cache_hit_rate:.0%} of "
                  "prompt tokens against {round-robin:report.prefix_cache_hit_rate:.0%} with round-robin.",
                  lambda r: r["prefix-aware"].report["prefix_cache_hit_rate"]
                  > r["round-robin"].report["prefix_cache_hit_rate"] + 0.2),
            Claim("Every replica gains: the worst prefix-aware replica hits {prefix-aware:lowest_replica_hit_rate:.0%}, "
                  "the best round-robin one {round-robin:highest_replica_hit_rate:.0%}.",
                  lambda r: r["prefix-aware"].lowest_replica_hit_rate > r["round-robin"].highest_replica_hit_rate),
            Claim("Fewer tokens to prefill: median TTFT {prefix-aware:report.ttft_s.p50:.4f} s against "
                  "{round-robin:report.ttft_s.p50:.4f} s.",
                  lambda r: r["prefix-aware"].report["ttft_s"]["p50"] < r["round-robin"].report["ttft_s"]["p50"]),
            Claim("The price is balance: the busiest prefix-aware replica took {prefix-aware:busiest_share:.0%} of the "
                  "requests, round-robin's {round-robin:busiest_share:.0%}.",
                  lambda r: r["prefix-aware"].busiest_share > r["round-robin"].busiest_share),
        ],
        columns=[("prefix cache hit rate", "report.prefix_cache_hit_rate", ".0%"),
                 ("TTFT p50 s", "report.ttft_s.p50", ".4f"), ("TTFT p99 s", "report.ttft_s.p99", ".4f"),
                 ("busiest replica's share", "busiest_share", ".0%"), *per_replica],
    ),
    FleetLesson(
        name="disaggregation",
        title="Disaggregated prefill and decode",
        summary="The same four H200s, colocated (every replica prefills and decodes, chunked prefill mixing both in "
                "a step) or split into two prefill and two decode replicas joined by InfiniBand. Splitting takes "
                "prefill chunks out of the decode steps; it pays with a KV transfer and half the GPUs for prompts.",
        arms={"colocated": {**LONG_PROMPTS, "cluster": {"replicas": 4, "router": "least-requests"}},
              "split": {**LONG_PROMPTS, "cluster": {"router": "least-requests", "link": "infiniband",
                                                    "prefill": {"replicas": 2}, "decode": {"replicas": 2}}}},
        claims=[
            Claim("Split decodes run undisturbed: p99 inter-token latency {split:report.itl_s.p99:.4f} s against "
                  "{colocated:report.itl_s.p99:.4f} s colocated, where a 2,048-token prefill chunk shares the step.",
                  lambda r: r["split"].report["itl_s"]["p99"] * 3 < r["colocated"].report["itl_s"]["p99"]),
            Claim("And TPOT follows: p99 {split:report.tpot_s.p99:.4f} s split, {colocated:report.tpot_s.p99:.4f} s "
                  "colocated.",
                  lambda r: r["split"].report["tpot_s"]["p99"] < r["colocated"].report["tpot_s"]["p99"]),
            Claim("Colocated wins the first token: TTFT p50 {colocated:report.ttft_s.p50:.4f} s against "
                  "{split:report.ttft_s.p50:.4f} s, which waits for two prefill GPUs instead of four and for the "
                  "transfer ({split:report.kv_transfer.seconds_mean:.4f} s per request).",
                  lambda r: r["colocated"].report["ttft_s"]["p50"] < r["split"].report["ttft_s"]["p50"]),
            Claim("Both keep up with the load: {colocated:report.output_tokens_per_s:,.0f} and "
                  "{split:report.output_tokens_per_s:,.0f} output tokens/s.",
                  lambda r: abs(r["split"].report["output_tokens_per_s"] / r["colocated"].report["output_tokens_per_s"] - 1)
                  < 0.05),
        ],
        columns=[("TTFT p50 s", "report.ttft_s.p50", ".4f"), ("TTFT p99 s", "report.ttft_s.p99", ".4f"),
                 ("TPOT p99 s", "report.tpot_s.p99", ".4f"), ("ITL p99 s", "report.itl_s.p99", ".4f"),
                 ("output tokens/s", "report.output_tokens_per_s", ",.0f")],
    ),
]
FLEET_LESSONS_BY_NAME = {lesson.name: lesson for lesson in FLEET_LESSONS}
