"""Two guided comparisons of fleets, checked on simulated numbers like the single-engine lessons:
routing with prefix caches, and disaggregated prefill and decode.

Their arms are fleets, so they run headless (`servescope lesson NAME`) and open in the fleet view
(`/fleet?lesson=NAME&arm=ARM`), where their beats (`fleet_story`) tell each arm's run moment by
moment. Claims and table columns use the lessons' `{arm:path:format}` placeholders over the fleet's
report: `report.ttft_s.p50`, `report.replicas.0.prefix_cache_hit_rate`, `busiest_share`, ...
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..cluster.fleet_metrics import fleet_report
from ..cluster.scenario import ClusterScenario
from .fleet_moments import FleetMoments
from .fleet_questions import fleet_check_yourself
from .fleet_story import FleetBeat, fleet_story
from .fleet_timeline import fleet_timeline
from .framework import Claim, claims_slide, value_at


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
    beats: list[FleetBeat]  # every arm's story: an opening, its moments, the end

    @property
    def link(self) -> str:
        """The fleet view of its first arm."""
        return f"/fleet?lesson={self.name}"

    def scenario(self, arm: str) -> ClusterScenario:
        """The arm's fleet, its replicas without API servers, as the single-engine lessons run (`Lesson.scenario`)."""
        return ClusterScenario.from_dict({"entrypoint": "offline", **copy.deepcopy(self.arms[arm])}, name=f"{self.name}:{arm}")

    def run(self) -> dict[str, FleetArmResult]:
        results = {}
        for label in self.arms:
            fleet = self.scenario(label).build()
            fleet.run()
            results[label] = FleetArmResult(label, fleet_report(fleet))
        return results

    def timeline(self, arm: str) -> dict:
        """The arm's run for the fleet view, with a frame pinned at each of its moments, its story
        and its questions to check yourself with; the other arms run too, for the closing beat's results."""
        fleet = self.scenario(arm).build()
        moments = FleetMoments(fleet)
        timeline = fleet_timeline(fleet, moments=moments)
        results = {label: FleetArmResult(label, timeline["report"]) if label == arm else None for label in self.arms}
        for label in results:
            if results[label] is None:
                other = self.scenario(label).build()
                other.run()
                results[label] = FleetArmResult(label, fleet_report(other))
        story = fleet_story(self.beats, arm, self.scenario(arm), moments.finish(), results, timeline["frames"])
        return {**timeline, "lesson": {"name": self.name, "title": self.title, "summary": self.summary, "arm": arm,
                                       "arms": list(self.arms), "beats": story,
                                       "questions": fleet_check_yourself(story, timeline["report"]),
                                       **claims_slide(self, results)}}


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

RR, PA = ("round-robin",), ("prefix-aware",)
# Both arms' opening: the workload and the room for system prompts on each replica.
ROUTING_SETUP = ("{num_requests} requests at {rate:g}/s, each one of {num_shared_prefixes} system prompts of "
                 "{shared_prefix_len:,} tokens ({prompt_blocks} blocks) and {prompt_len:g} tokens of its own, over "
                 "{replicas} replicas of {num_gpu_blocks} KV blocks: room for about {prompts_fit} system prompts each. ")
ROUTING_BEATS = [
    FleetBeat("opening", "Shared system prompts", ROUTING_SETUP + "Round-robin sends the requests in turn.", arms=RR),
    FleetBeat("opening", "Shared system prompts",
              ROUTING_SETUP + "Prefix-aware routing sends a request where its prompt's blocks are cached.", arms=PA),
    FleetBeat("first_route", "The first request", "{t:.3f} s: {request} arrives with system prompt {system_prompt}; the "
              "router sends it to {replica} ({reason}), which computes all {prompt:,} prompt tokens."),
    FleetBeat("cold_follower", "Sent to a cold cache", "{t:.3f} s: {request} brings system prompt {system_prompt} again, whose "
              "{blocks:plural:block} {warm} holds since {first}. Round-robin sends it to {replica}, which holds none and "
              "computes those {shared:,} tokens again; prefix-aware routing would have sent it to {warm}."),
    FleetBeat("first_hit", "The first hit, by chance", "{t:.3f} s: the fleet's first prefix-cache hit, only now: "
              "round-robin's turn sends {request} (system prompt {system_prompt}) to {replica}, which happens to hold it "
              "(cached there by {by}): it reuses {hit:,} tokens and computes {computed} of {prompt:,}.", arms=RR),
    FleetBeat("first_hit", "Sent to the cached prompt", "{t:.3f} s: {request} brings system prompt {system_prompt} again; "
              "the router sends it to {replica} ({reason}, cached there by {by}), which reuses {hit:,} tokens and computes "
              "only {computed} of {prompt:,}.", arms=PA),
    FleetBeat("first_eviction", "Evicting prompts", "{t:.3f} s: {replica} evicts cached blocks for the first time, "
              "{blocks} of them, with {kv:.1f}% of its KV in use: its grid has no empty cell left, its free blocks hold "
              "cached prompts. Round-robin sends every replica every prompt, in room for about ten.", arms=RR),
    FleetBeat("first_eviction", "The first eviction", "{t:.3f} s: {replica} evicts cached blocks for the first time, "
              "only now: {blocks} of them, with {kv:.1f}% of its KV in use.", arms=PA),
    FleetBeat("all_prompts", "Every prompt, everywhere", "{t:.3f} s: with {request}, all {count} system prompts "
              "have arrived. Round-robin has sent different prompts to each replica: {per_replica}; {placements} copies "
              "of {count} prompts to compute and cache.", arms=RR),
    FleetBeat("all_prompts", "Every prompt, once", "{t:.3f} s: with {request}, all {count} system prompts have "
              "arrived. The router has sent different prompts to each replica: {per_replica}; {placements} copies of "
              "{count} prompts to compute and cache.", arms=PA),
    FleetBeat("worst_imbalance", "Even by construction", "{t:.3f} s: the fleet at its most uneven when the router "
              "sends a request: {replica} holds {busiest_n:plural:request} (running and waiting), {idlest} holds {idlest_n}.",
              arms=RR),
    FleetBeat("worst_imbalance", "The price: balance", "{t:.3f} s: the router sends {request} to {replica} ({reason}), "
              "which now holds {busiest_n:plural:request} (running and waiting) while {idlest} holds {idlest_n}: following "
              "the cache piles work on one replica.", arms=PA),
    FleetBeat("end", "Result", "Prefix-aware routing hits the prefix cache for "
              "{prefix-aware:report.prefix_cache_hit_rate:.0%} of prompt tokens (its replicas "
              "{prefix-aware:lowest_replica_hit_rate:.0%}-{prefix-aware:highest_replica_hit_rate:.0%}) against "
              "{round-robin:report.prefix_cache_hit_rate:.0%} ({round-robin:lowest_replica_hit_rate:.0%}-"
              "{round-robin:highest_replica_hit_rate:.0%}) under round-robin; TTFT p50 {prefix-aware:report.ttft_s.p50:.4f} s "
              "against {round-robin:report.ttft_s.p50:.4f} s. The price is balance: its busiest replica took "
              "{prefix-aware:busiest_share:.0%} of the requests, round-robin's {round-robin:busiest_share:.0%}."),
]

CO, SPLIT = ("colocated",), ("split",)
DISAGGREGATION_BEATS = [
    FleetBeat("opening", "Colocated", "{num_requests} requests at {rate:g}/s, {prompt_len:,.0f}-token prompts and "
              "{output_len:.0f} output tokens each, on {num_gpus} {gpu}s. Colocated: each replica prefills and decodes, "
              "chunked prefill putting up to {budget:,} prompt tokens in a step beside the decodes.", arms=CO),
    FleetBeat("opening", "Split", "{num_requests} requests at {rate:g}/s, {prompt_len:,.0f}-token prompts and "
              "{output_len:.0f} output tokens each, on {num_gpus} {gpu}s: {prefill_replicas} prefill, "
              "{decode_replicas} decode, joined by {link_title} ({link_gb_s:.0f} GB/s per GPU). A request's KV moves from one "
              "pool to the other.", arms=SPLIT),
    FleetBeat("first_route", "The first request", "{t:.3f} s: {request} arrives; the router sends it to {replica} "
              "({reason}).", arms=CO),
    FleetBeat("first_route", "The first request", "{t:.3f} s: {request} arrives; the router sends it to {replica} "
              "({reason}) to prefill, with max_tokens=1.", arms=SPLIT),
    FleetBeat("first_token", "The first token", "{t:.3f} s: {replica} computes the last chunk of {request}'s prompt "
              "(chunks of {chunks} tokens) and samples its first token: TTFT {ttft_ms:.1f} ms, no transfer.", arms=CO),
    FleetBeat("first_transfer", "The KV transfer", "{t:.3f} s: {request}'s prefill is done, {prefill_ms:.1f} ms after it "
              "arrived (chunks of {chunks} tokens); its {blocks} KV blocks ({mb:.1f} MB) start over {link_title} to {decode}: "
              "{transfer_ms:.3f} ms.", arms=SPLIT),
    FleetBeat("first_token", "Landed: the first decode", "{t:.3f} s: the KV has landed on {replica}; its step computes "
              "{request}'s last prompt token and samples its first token. TTFT {ttft_ms:.1f} ms = {parts}.", arms=SPLIT),
    FleetBeat("mixed_step", "A prompt chunk among the decodes", "{t:.3f} s: {request}'s {tokens:,}-token prompt chunk "
              "shares {replica}'s step with {decode_words}: the step takes {step_ms:.1f} ms, where decodes alone took "
              "{decode_only_ms:.1f} ms. Every running request waits that long for its next token.", arms=CO),
    FleetBeat("slowest_decode_step", "The slowest decode step", "{t:.3f} s: the slowest step with decodes in it: "
              "{replica} runs {decodes:plural:decode} beside {prompt_tokens:,} prompt tokens in {step_ms:.1f} ms.", arms=CO),
    FleetBeat("slowest_decode_step", "Decodes undisturbed", "{t:.3f} s: the decode pool's slowest step: {replica} runs "
              "{decodes:plural:decode} in {step_ms:.1f} ms. No prompt chunk shares a decode step here: at most "
              "{largest_chunk_in_run} prompt token per request, the last one of a request whose KV has just landed.",
              arms=SPLIT),
    FleetBeat("end", "Result: where each wins", "Colocated wins the first token: TTFT p50 "
              "{colocated:report.ttft_s.p50:.4f} s against {split:report.ttft_s.p50:.4f} s split. Split wins every token "
              "after it: inter-token latency p99 {split:report.itl_s.p99:.4f} s against {colocated:report.itl_s.p99:.4f} s, "
              "TPOT p99 {split:report.tpot_s.p99:.4f} s against {colocated:report.tpot_s.p99:.4f} s. Output: "
              "{colocated:report.output_tokens_per_s:,.0f} and {split:report.output_tokens_per_s:,.0f} tokens/s."),
]

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
        beats=ROUTING_BEATS,
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
        beats=DISAGGREGATION_BEATS,
    ),
]
FLEET_LESSONS_BY_NAME = {lesson.name: lesson for lesson in FLEET_LESSONS}
