"""The seed's last question: "Name the 2026 vLLM v0.18.0 gotcha that bites teams enabling every
optimization at once". With EAGLE/MTP speculative decoding and prefix caching both on, vLLM drops
the last matched block of every prefix-cache hit so the drafter can compute its hidden states
(engine/eagle_hit_rule.py); with large blocks one block is a large part of every hit.

Placeholders in texts are `{arm:path:format}`; paths are ArmResult fields or `report.<metric>`.
"""

from __future__ import annotations

from .arms import TABLE_LATENCY, arm
from .framework import Beat, Claim, Lesson

# Requests that start with one of four 900-token system prompts and add about 100 tokens of their
# own: the traffic prefix caching is for. 900 is not a multiple of the block size, as a real system
# prompt's length is not, so its last full block is followed by a token of the prompt itself.
SHARED = {"num_requests": 200, "arrival_rate": 10.0, "lengths": "lognormal", "prompt_len": 100, "output_len": 64,
          "shared_prefix_len": 900, "num_shared_prefixes": 4, "seed": 11}
# 128-token blocks: vLLM 0.33 takes any positive --block-size and its FlashAttention backend any
# multiple of 16; a hybrid model's blocks (hundreds of tokens) are what #38182 saw. The same
# 131,072 KV tokens in both block sizes, so no arm evicts.
LARGE_BLOCKS = {"num_gpu_blocks": 1024, "block_size": 128, "max_num_batched_tokens": 4096}
SMALL_BLOCKS = {"num_gpu_blocks": 8192, "block_size": 16, "max_num_batched_tokens": 4096}
EAGLE = {"method": "eagle", "num_speculative_tokens": 3}


def released(version: str, engine: dict) -> dict:
    return {**arm(engine, SHARED), "vllm_version": version}


def eagle(version: str, engine: dict = LARGE_BLOCKS, spec: dict = EAGLE, **more) -> dict:
    return released(version, {**engine, "speculative_config": spec, **more})


def hit_rate(result) -> float:
    return result.report["prefix_cache_hit_rate"]


EVERYTHING_ON_LESSONS = [
    Lesson(
        name="everything-on",
        title="Everything on at once: speculative decoding meets prefix caching",
        summary="200 requests sharing four 900-token system prompts, in 128-token blocks on Llama-3.1-8B: prefix "
                "caching alone; with an EAGLE drafter (3 tokens) on vLLM 0.18.0, which drops the last matched block "
                "of every hit; on 0.30.0 with disable_eagle_block_drop; on 0.33.0, whose block hashes cover the token "
                "after each block; on 0.33.0 with a KV connector, where the drop returns; and on 0.18.0 with 16-token "
                "blocks.",
        arms={"eagle-0.18": eagle("0.18.0"),
              "cache-only": released("0.18.0", LARGE_BLOCKS),
              "eagle-0.30-opt-out": eagle("0.30.0", spec={**EAGLE, "disable_eagle_block_drop": True}),
              "eagle-0.33": eagle("0.33.0"),
              "eagle-0.33-connector": eagle("0.33.0", kv_connector=True),
              "eagle-0.18-small-blocks": eagle("0.18.0", SMALL_BLOCKS)},
        claims=[
            Claim("Prefix caching alone: {cache-only:report.prefix_cache_hit_rate:.1%} of prompt tokens come from the "
                  "cache. A 900-token system prompt fills 7 blocks of 128 tokens, and every request after the first "
                  "of its prompt hits all 7.",
                  lambda r: hit_rate(r["cache-only"]) > 0.8 and r["cache-only"].dropped_hit_blocks == 0
                  and r["cache-only"].events["first_hit"]["blocks"] == 7),
            Claim("Turn on EAGLE under vLLM 0.18.0 and the hit rate falls to {eagle-0.18:report.prefix_cache_hit_rate:.1%}: "
                  "{eagle-0.18:dropped_hit_blocks} admissions each gave up the last block of their hit, 128 tokens "
                  "computed again so the drafter has the hidden states there (vLLM issue #38182: Qwen3.5-35B-A3B "
                  "fell from 92% to 71% with MTP on).",
                  lambda r: hit_rate(r["eagle-0.18"]) < hit_rate(r["cache-only"]) - 0.08
                  and r["eagle-0.18"].dropped_hit_blocks == SHARED["num_requests"] - SHARED["num_shared_prefixes"]),
            Claim("Every hit pays for it before its first token: median TTFT {eagle-0.18:report.ttft_s.p50:.4f} s "
                  "against {eagle-0.33:report.ttft_s.p50:.4f} s with the same drafter on 0.33.0.",
                  lambda r: r["eagle-0.18"].report["ttft_s"]["p50"] > 1.1 * r["eagle-0.33"].report["ttft_s"]["p50"]),
            Claim("vLLM 0.33.0 hashes each block together with the token after it (RFC #50438), so a hit proves what "
                  "the drafter needs and nothing is dropped: {eagle-0.33:report.prefix_cache_hit_rate:.1%}, "
                  "{eagle-0.33:dropped_hit_blocks} blocks dropped, as without drafts.",
                  lambda r: abs(hit_rate(r["eagle-0.33"]) - hit_rate(r["cache-only"])) < 0.005
                  and r["eagle-0.33"].dropped_hit_blocks == 0),
            Claim("Before that, from 0.30.0, a user could opt out: with speculative_config.disable_eagle_block_drop "
                  "(PR #53388) hits are kept whole, {eagle-0.30-opt-out:report.prefix_cache_hit_rate:.1%}, "
                  "{eagle-0.30-opt-out:dropped_hit_blocks} blocks dropped.",
                  lambda r: abs(hit_rate(r["eagle-0.30-opt-out"]) - hit_rate(r["cache-only"])) < 0.005
                  and r["eagle-0.30-opt-out"].dropped_hit_blocks == 0),
            Claim("With a KV connector configured, 0.33.0 keeps the old hashes, and the drop comes back: "
                  "{eagle-0.33-connector:report.prefix_cache_hit_rate:.1%}, {eagle-0.33-connector:dropped_hit_blocks} "
                  "blocks dropped.",
                  lambda r: hit_rate(r["eagle-0.33-connector"]) == hit_rate(r["eagle-0.18"])
                  and r["eagle-0.33-connector"].dropped_hit_blocks == r["eagle-0.18"].dropped_hit_blocks),
            Claim("The block size makes the gotcha: with 16-token blocks the same drop costs 16 tokens a hit and the "
                  "hit rate only falls to {eagle-0.18-small-blocks:report.prefix_cache_hit_rate:.1%}.",
                  lambda r: hit_rate(r["cache-only"]) - hit_rate(r["eagle-0.18-small-blocks"])
                  < (hit_rate(r["cache-only"]) - hit_rate(r["eagle-0.18"])) / 4),
        ],
        beats=[
            Beat("opening", "Everything on", "vLLM 0.18.0 with prefix caching and an EAGLE drafter: {num_requests} "
                 "requests share four 900-token system prompts, in blocks of {block_size} tokens.", ("kv", "queues"),
                 arms=("eagle-0.18", "eagle-0.18-small-blocks")),
            Beat("opening", "With a KV connector", "vLLM 0.33.0 with prefix caching, an EAGLE drafter and a KV connector "
                 "(--kv-transfer-config), under which it keeps the block hashes of old: {num_requests} requests, blocks "
                 "of {block_size} tokens.", ("kv", "queues"), arms=("eagle-0.33-connector",)),
            Beat("opening", "Prefix caching alone", "{num_requests} requests share four 900-token system prompts, in "
                 "blocks of {block_size} tokens: the first request with a prompt computes it, the rest hit it.",
                 ("kv", "queues"), arms=("cache-only",)),
            Beat("opening", "Opting out", "vLLM 0.30.0 with prefix caching and an EAGLE drafter, started with "
                 "disable_eagle_block_drop: hits are kept whole. {num_requests} requests, blocks of {block_size} tokens.",
                 ("kv", "queues"), arms=("eagle-0.30-opt-out",)),
            Beat("opening", "Lookahead hashes", "vLLM 0.33.0 with prefix caching and an EAGLE drafter: each block's "
                 "hash also covers the token after it. {num_requests} requests, blocks of {block_size} tokens.",
                 ("kv", "queues"), arms=("eagle-0.33",)),
            Beat("first_admit", "Nothing cached yet", "Step {step}: {request} is admitted with nothing in the cache: it "
                 "computes its {prompt:,}-token prompt itself, and each full block it fills gets a hash another request "
                 "can hit.", ("kv", "batch")),
            Beat("first_draft", "Drafts", "Step {step}: {request}'s decode carries {drafts} drafts from the EAGLE head, "
                 "{tokens:plural:token} checked in one pass; {accepted} are kept. The head reads the target model's hidden "
                 "states, which is why it cares about the cache.", ("batch", "queues"),
                 arms=("eagle-0.18", "eagle-0.30-opt-out", "eagle-0.33", "eagle-0.33-connector", "eagle-0.18-small-blocks")),
            Beat("first_finish", "Cached, free", "Step {step}: {request} finished; its blocks are free but keep their "
                 "hashes, ready for the next request with its system prompt.", ("kv", "queues")),
            Beat("first_hit", "A hit", "Step {step}: {request} is admitted and {tokens:,} of its {prompt:,} prompt tokens "
                 "hit the cache: {blocks:plural:block} shared instead of computed.", ("kv", "batch"),
                 arms=("cache-only", "eagle-0.30-opt-out", "eagle-0.33")),
            Beat("first_hit_block_dropped", "The last block, computed again", "Step {step}: {request}'s prompt matched "
                 "{matched:plural:cached block}, but the drafter needs the hidden states of the last one, which a cache hit "
                 "does not keep: block {block} is dropped from the hit and {request} computes its {recomputed:plural:token} "
                 "again in block {fresh}, allocated fresh. {tokens:,} of its {prompt:,} prompt tokens hit instead of "
                 "{matched_tokens:,}.",
                 ("kv", "batch"), arms=("eagle-0.18", "eagle-0.33-connector", "eagle-0.18-small-blocks")),
            Beat("end", "Result", "Prefix hit rate: {cache-only:report.prefix_cache_hit_rate:.1%} with caching alone, "
                 "{eagle-0.18:report.prefix_cache_hit_rate:.1%} with EAGLE on 0.18.0 ({eagle-0.18:dropped_hit_blocks} "
                 "blocks dropped), {eagle-0.33:report.prefix_cache_hit_rate:.1%} on 0.33.0, "
                 "{eagle-0.33-connector:report.prefix_cache_hit_rate:.1%} on 0.33.0 with a KV connector. Median TTFT "
                 "{eagle-0.18:report.ttft_s.p50:.4f} s under the drop, {eagle-0.33:report.ttft_s.p50:.4f} s without.",
                 ("kv", "charts")),
        ],
        columns=[("prefix hit rate", "report.prefix_cache_hit_rate", ".1%"), ("hits cut by a block", "dropped_hit_blocks", ",d"),
                 ("TTFT p50 (s)", "report.ttft_s.p50", ".4f"), ("TTFT p99 (s)", "report.ttft_s.p99", ".4f"), TABLE_LATENCY[0]],
    ),
]
