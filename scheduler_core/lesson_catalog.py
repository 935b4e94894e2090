"""The guided scenarios. Each lesson's numbers come from running its arms; its claims are checks.

Placeholders in texts are `{arm:path:format}`; paths are ArmResult fields or `report.<metric>`.
"""

from __future__ import annotations

from dataclasses import asdict
from importlib import resources

from .config import VllmCompat
from .host_time import HostTime
from .lessons import Beat, Claim, Lesson
from .replay import load_trace

LLAMA_H200 = {"model": "llama-3.1-8b", "gpu": "h200"}


def arm(engine: dict, workload: dict, **top) -> dict:
    return {**LLAMA_H200, **top, "engine": engine, "workload": workload}


def recorded_arm(trace_name: str, vllm_version: str, **switches: bool) -> dict:
    """A recorded vLLM trace (shipped in scheduler_core/data) under one vLLM profile."""
    path = str(resources.files("scheduler_core").joinpath(f"data/{trace_name}"))
    config = dict(load_trace(path)["config"])
    config["scheduling_order"] = config.pop("policy", "fcfs")
    compat = {**asdict(VllmCompat.for_version(vllm_version)), **switches}
    return {**LLAMA_H200, "trace": path, "engine": {**config, "compat": compat}}



SHAREGPT_BURST = {"num_requests": 160, "arrival_rate": 40.0, "lengths": "sharegpt", "seed": 3}
PAGED = arm({"num_gpu_blocks": 2048, "max_num_seqs": 256, "max_num_batched_tokens": 2048, "max_model_len": 2048,
             "enable_prefix_caching": False}, SHAREGPT_BURST)
CONTIGUOUS = arm({**PAGED["engine"], "kv_allocator": "contiguous"}, SHAREGPT_BURST)

MIXED = {"num_requests": 120, "arrival_rate": 12.0, "lengths": "azure-conversation", "seed": 5}
PREFILL_FIRST = arm({"policy": "vllm-v0", "enable_chunked_prefill": False, "num_gpu_blocks": 8192,
                     "max_num_batched_tokens": 8192, "max_model_len": 8192}, MIXED)
CHUNKED = {budget: arm({"num_gpu_blocks": 8192, "max_num_batched_tokens": budget, "max_model_len": 8192}, MIXED)
           for budget in (256, 512, 2048)}

PRESSURE = {"num_requests": 80, "arrival_rate": 50.0, "lengths": "fixed", "prompt_len": 600, "output_len": 700, "seed": 7}
PRESSURE_ENGINE = {"num_gpu_blocks": 700, "max_num_seqs": 64, "max_num_batched_tokens": 1024, "enable_prefix_caching": False}

SHARED = {"num_requests": 200, "arrival_rate": 20.0, "lengths": "lognormal", "prompt_len": 160, "output_len": 120,
          "shared_prefix_len": 1024, "num_shared_prefixes": 4, "seed": 11}

PRIORITY = {"num_requests": 150, "arrival_rate": 25.0, "lengths": "fixed", "prompt_len": 400, "output_len": 500,
            "high_priority_fraction": 0.15, "seed": 13}
PRIORITY_ENGINE = {"num_gpu_blocks": 600, "max_num_seqs": 48, "max_num_batched_tokens": 1024, "enable_prefix_caching": False}

# A light load (a few requests at a time): where speculative decoding shortens every token's wait.
CHAT = {"num_requests": 60, "arrival_rate": 4.0, "lengths": "sharegpt", "seed": 17}
CHAT_ENGINE = {"num_gpu_blocks": 8192, "max_num_seqs": 64, "max_num_batched_tokens": 2048}


# A crowd: 512 clients at once, each sending its next conversation when its last one finishes, so
# every verification shares its step with hundreds of others.
CROWD = {"num_requests": 1024, "concurrency": 512, "lengths": "sharegpt", "seed": 17}
CROWD_ENGINE = {"num_gpu_blocks": 32768, "max_num_seqs": 512, "max_num_batched_tokens": 8192}


def drafted(method: str, engine: dict = CHAT_ENGINE, workload: dict = CHAT) -> dict:
    return arm({**engine, "speculative_config": {"method": method, "num_speculative_tokens": 3}}, workload)


# The seed's headline: "Llama 3.3 70B FP8 on one H100 SXM5 at 128 concurrent: 2,200-2,400 tok/s".
CAPACITY = {"num_requests": 200, "concurrency": 128, "lengths": "sharegpt", "seed": 21}
# vLLM's OpenAI-server defaults on an H100 or H200; 2,048 tokens of context, since at vLLM's default
# memory share one H100 cannot hold even one 8,192-token request of this model.
CAPACITY_ENGINE = {"max_num_batched_tokens": 8192, "max_num_seqs": 1024, "max_model_len": 2048}
# At vLLM's defaults, its engine loop included: 0.33 schedules asynchronously.
LLAMA_70B_FP8 = {"model": "llama-3.3-70b-fp8", "engine": {**CAPACITY_ENGINE, "async_scheduling": True}, "workload": CAPACITY}

TABLE_LATENCY = [
    ("throughput (output tok/s)", "report.output_tokens_per_s", ",.0f"),
    ("TTFT p50 (s)", "report.ttft_s.p50", ".3f"),
    ("TTFT p99 (s)", "report.ttft_s.p99", ".3f"),
    ("ITL p99 (ms)", "report.itl_s.p99", ".4f"),
    ("preemptions", "preemptions", "d"),
]

LESSONS = [
    Lesson(
        name="paged-vs-contiguous",
        title="PagedAttention: paged blocks against reserving the maximum length",
        summary="The same burst of ShareGPT requests, with KV memory handed out in 16-token blocks as "
                "sequences grow, or reserved whole (max_model_len per request) the way systems before vLLM did.",
        arms={"paged": PAGED, "contiguous": CONTIGUOUS},
        claims=[
            Claim("Paged allocation wastes {paged:report.fragmentation:.1%} of the memory it hands out "
                  "(only the unfilled tail of each last block): under the 4% the PagedAttention paper reports.",
                  lambda r: r["paged"].report["fragmentation"] < 0.04),
            Claim("Reserving max_model_len per request wastes {contiguous:report.fragmentation:.0%} of what it "
                  "reserves, in the 60-80% range the paper reports for such systems.",
                  lambda r: 0.6 <= r["contiguous"].report["fragmentation"] <= 0.8),
            Claim("Paged memory fits {paged:peak_running} requests at once against {contiguous:peak_running}.",
                  lambda r: r["paged"].peak_running >= 3 * r["contiguous"].peak_running),
            Claim("So the paged engine serves {paged:report.output_tokens_per_s:,.0f} output tokens/s against "
                  "{contiguous:report.output_tokens_per_s:,.0f}.",
                  lambda r: r["paged"].report["output_tokens_per_s"] > 1.5 * r["contiguous"].report["output_tokens_per_s"]),
        ],
        beats=[
            Beat("opening", "Blocks as needed", "{num_requests} ShareGPT requests arrive in a burst at a pool of {num_gpu_blocks:,} "
                 "blocks of {block_size} tokens. Step (→) and watch the KV grid: each request gets only the blocks its tokens fill.",
                 ("kv", "queues")),
            Beat("first_admit", "The first blocks", "Step {step}: {request} is admitted with a {prompt}-token prompt and holds "
                 "{blocks} blocks, no more; reserving max_model_len would set {max_model_len:,} tokens aside for it.",
                 ("kv", "batch")),
            Beat("first_finish", "Blocks come back", "Step {step}: {request} finished after {output} output tokens; its blocks "
                 "go back to the free pool at once, for the next request.", ("kv", "queues")),
            Beat("peak_running", "How many fit", "Step {step}: {running} requests run at once in {used_blocks:,} blocks "
                 "({kv}% used). Reserving {max_model_len:,} tokens each, only {reserve_fit} would fit: click 'Reserve max'.",
                 ("kv", "queues"), arms=("paged",)),
            Beat("peak_running", "How many fit", "Step {step}: reserving {max_model_len:,} tokens each, only {running} requests "
                 "run at once while {waiting} wait; most of the pool is reserved but unused.", ("kv", "queues"), arms=("contiguous",)),
            Beat("end", "Result", "Paged: {paged:report.fragmentation:.1%} of allocated memory unused, {paged:peak_running} "
                 "requests at once, {paged:report.output_tokens_per_s:,.0f} output tokens/s. Reserving max_model_len: "
                 "{contiguous:report.fragmentation:.0%} unused, {contiguous:peak_running} at once, "
                 "{contiguous:report.output_tokens_per_s:,.0f} tokens/s.", ("kv", "charts")),
        ],
        columns=[("waste of allocated memory", "report.fragmentation", ".1%"), ("peak running requests", "peak_running", "d"),
                 *TABLE_LATENCY[:3]],
    ),
    Lesson(
        name="static-vs-continuous",
        title="Continuous batching: iteration-level scheduling against static batches",
        summary="The same requests through a static batcher (fill a batch, run it until its last member "
                "finishes) and through vLLM's iteration-level scheduler.",
        arms={"static": arm({**PAGED["engine"], "policy": "static", "max_num_seqs": 32}, SHAREGPT_BURST),
              "continuous": arm({**PAGED["engine"], "max_num_seqs": 32}, SHAREGPT_BURST)},
        claims=[
            Claim("Continuous batching serves {continuous:report.output_tokens_per_s:,.0f} output tokens/s against "
                  "{static:report.output_tokens_per_s:,.0f} for static batches.",
                  lambda r: r["continuous"].report["output_tokens_per_s"] > 1.3 * r["static"].report["output_tokens_per_s"]),
            Claim("The static batch drains: in {static:drained_steps} steps requests waited while seats in the "
                  "batch stood empty; continuous batching had {continuous:drained_steps}.",
                  lambda r: r["static"].drained_steps > 10 * max(1, r["continuous"].drained_steps)),
            Claim("Median time to first token: {static:report.ttft_s.p50:.2f} s static, "
                  "{continuous:report.ttft_s.p50:.2f} s continuous.",
                  lambda r: r["continuous"].report["ttft_s"]["p50"] < r["static"].report["ttft_s"]["p50"]),
        ],
        beats=[
            Beat("opening", "Static batches", "A static batcher admits a batch (up to {max_num_seqs} requests) and admits "
                 "nobody more until every member has finished. Watch the Running and Waiting lanes.", ("queues", "batch"), arms=("static",)),
            Beat("opening", "Continuous batching", "The scheduler decides every step: a finished request's seat goes to the "
                 "next waiting request at once. Up to {max_num_seqs} run together.", ("queues", "batch"), arms=("continuous",)),
            Beat("batch_full", "The batch is full", "Step {step}: {running} requests run, every seat taken; {waiting} wait.",
                 ("queues", "batch"), arms=("continuous",)),
            Beat("seat_left_empty", "A seat frees", "Step {step}: {request} finished after {output} tokens; {running} others "
                 "run on and {waiting} wait, but its seat stays empty: a static batch admits no one until its last member is "
                 "done.", ("queues", "batch"), arms=("static",)),
            Beat("seats_empty", "Seats go empty", "Step {step}: only {running} of {max_num_seqs} seats are busy while {waiting} "
                 "requests wait: {empty} empty seats.", ("queues", "charts"), arms=("static",)),
            Beat("refill", "The next batch", "Step {step}: the last member finished; {admitted} requests are admitted at once "
                 "as the next batch.", ("queues", "batch"), arms=("static",)),
            Beat("first_finish", "A seat frees", "Step {step}: {request} finished after {output} tokens; the next waiting "
                 "request takes its seat in the following step.", ("queues", "batch"), arms=("continuous",)),
            Beat("queue_drained", "Queue drained", "Step {step}: nobody waits any more; the {running} running requests finish.",
                 ("queues", "charts"), arms=("continuous",)),
            Beat("end", "Result", "Continuous batching: {continuous:report.output_tokens_per_s:,.0f} output tokens/s, TTFT p50 "
                 "{continuous:report.ttft_s.p50:.2f} s; static batches: {static:report.output_tokens_per_s:,.0f} tokens/s, "
                 "{static:report.ttft_s.p50:.2f} s, and {static:drained_steps:,} steps with empty seats while requests waited.",
                 ("queues", "charts")),
        ],
        columns=[("steps with idle seats", "drained_steps", "d"), ("peak running", "peak_running", "d"), *TABLE_LATENCY[:3]],
    ),
    Lesson(
        name="chunked-prefill",
        title="Chunked prefill: long prompts without stalling the decodes",
        summary="Long Azure-conversation prompts arriving among running decodes: prefill-first (vLLM V0's "
                "default, whole prompts) against decode-first chunked prefill under token budgets of 256, 512 and 2048.",
        arms={"chunked-512": CHUNKED[512], "prefill-first": PREFILL_FIRST, "chunked-256": CHUNKED[256],
              "chunked-2048": CHUNKED[2048]},
        claims=[
            Claim("Decodes stall behind whole prompts: inter-token latency p99 is {prefill-first:report.itl_s.p99:.3f} s "
                  "prefill-first against {chunked-512:report.itl_s.p99:.3f} s chunked at 512 tokens.",
                  lambda r: r["chunked-512"].report["itl_s"]["p99"] < r["prefill-first"].report["itl_s"]["p99"]),
            Claim("A smaller budget protects decodes more: ITL p99 {chunked-256:report.itl_s.p99:.4f} s at 256 tokens, "
                  "{chunked-2048:report.itl_s.p99:.4f} s at 2048.",
                  lambda r: r["chunked-256"].report["itl_s"]["p99"] < r["chunked-2048"].report["itl_s"]["p99"]),
            Claim("...and costs time to first token: TTFT p50 {chunked-256:report.ttft_s.p50:.3f} s at 256 tokens, "
                  "{chunked-2048:report.ttft_s.p50:.3f} s at 2048.",
                  lambda r: r["chunked-256"].report["ttft_s"]["p50"] > r["chunked-2048"].report["ttft_s"]["p50"]),
            Claim("Throughput hardly moves: {chunked-512:report.output_tokens_per_s:,.0f} against "
                  "{prefill-first:report.output_tokens_per_s:,.0f} output tokens/s.",
                  lambda r: abs(r["chunked-512"].report["output_tokens_per_s"] / r["prefill-first"].report["output_tokens_per_s"] - 1) < 0.1),
        ],
        beats=[
            Beat("opening", "The token budget", "Each step spends at most {max_num_batched_tokens:,} tokens: the running "
                 "requests' decodes first, then chunks of waiting prompts. {num_requests} Azure-conversation requests with long "
                 "prompts.", ("batch", "queues"), arms=("chunked-256", "chunked-512", "chunked-2048")),
            Beat("opening", "Prefill first", "vLLM V0's default: a step runs whole waiting prompts, up to {max_num_batched_tokens:,} "
                 "tokens, and the decodes wait for it.", ("batch", "queues"), arms=("prefill-first",)),
            Beat("mixed_chunk", "A prompt is sliced", "Step {step}: {request}'s {prompt:,}-token prompt gets a chunk of {tokens} "
                 "tokens (orange, P) in the same step as the running decodes (blue, D: {decodes}); {rest:,} prompt tokens wait "
                 "for later steps.", ("batch", "queues")),
            Beat("next_chunk", "The next slice", "Step {step}: {request} gets its next chunk, {tokens} tokens from token {start}; "
                 "the decodes (D: {decodes}) run in the same step again.", ("batch", "queues")),
            Beat("budget_full", "A busy step", "Step {step}: {decodes} decodes run first, one token each, and prompt chunks "
                 "fill the rest of the {budget:,}-token budget.", ("batch", "charts")),
            Beat("end", "Result", "ITL p99: {prefill-first:report.itl_s.p99:.3f} s prefill-first, {chunked-512:report.itl_s.p99:.3f} s "
                 "chunked at 512 tokens, {chunked-256:report.itl_s.p99:.4f} s at 256; TTFT p50 {chunked-256:report.ttft_s.p50:.3f} s "
                 "at 256 against {chunked-2048:report.ttft_s.p50:.3f} s at 2048.", ("charts", "batch")),
        ],
        columns=TABLE_LATENCY[:4],
    ),
    Lesson(
        name="memory-pressure",
        title="Memory pressure: preemption by recompute and by swap",
        summary="More demand than KV blocks: when running requests cannot grow, the newest is preempted, either "
                "freeing its blocks to recompute them later (vLLM V1) or swapping them to CPU memory (V0's option).",
        arms={"recompute": arm(PRESSURE_ENGINE, PRESSURE),
              "swap": arm({**PRESSURE_ENGINE, "preemption_mode": "swap", "num_cpu_blocks": 4096}, PRESSURE)},
        claims=[
            Claim("Both engines run out of blocks: {recompute:preemptions} preemptions with recompute, {swap:preemptions} with swap.",
                  lambda r: r["recompute"].preemptions > 0 and r["swap"].preemptions > 0),
            Claim("Recompute pays in compute: {recompute:recomputed_tokens:,} tokens computed again.",
                  lambda r: r["recompute"].recomputed_tokens > 0),
            Claim("Swap computes nothing twice ({swap:recomputed_tokens} tokens) but moves {swap:swapped_blocks:,} "
                  "blocks over PCIe ({swap:swap_s:.3f} s of transfers).",
                  lambda r: r["swap"].recomputed_tokens == 0 and r["swap"].swap_s > 0),
            Claim("Every victim was the most recently admitted running request (vLLM's FCFS choice).",
                  lambda r: r["recompute"].victims_were_newest),
        ],
        beats=[
            Beat("opening", "Filling up", "{num_requests} requests of 600 prompt and 700 output tokens into {num_gpu_blocks} "
                 "blocks of {block_size} tokens: every running request grows by one token per step. Watch KV usage.",
                 ("kv", "queues")),
            Beat("kv_high", "Almost full", "Step {step}: KV usage is {kv}% with {running} requests running and {waiting} waiting.",
                 ("kv", "queues")),
            Beat("first_preemption", "Preemption", "Step {step}: blocks ran out; {request}, the newest running request, is "
                 "preempted: {fate}.", ("queues", "kv")),
            Beat("first_swap", "Swapped out", "Step {step}: {request}'s {blocks} blocks move to CPU memory over PCIe; they come "
                 "back when blocks free up.", ("queues", "kv"), arms=("swap",)),
            Beat("first_resume", "Computed again", "Step {step}: {request} resumes; its whole context is computed again as a "
                 "prefill (orange in the batch).", ("queues", "batch"), arms=("recompute",)),
            Beat("queue_drained", "Drained", "Step {step}: nobody waits any more; {running} requests run to the end.",
                 ("queues", "kv")),
            Beat("end", "Result", "Recompute: {recompute:preemptions} preemptions, {recompute:recomputed_tokens:,} tokens "
                 "computed again. Swap: {swap:preemptions} preemptions, nothing computed twice, {swap:swapped_blocks:,} blocks "
                 "moved over PCIe ({swap:swap_s:.3f} s).", ("queues", "charts")),
        ],
        columns=[("preemptions", "preemptions", "d"), ("recomputed tokens", "recomputed_tokens", ",d"),
                 ("blocks swapped", "swapped_blocks", ",d"), *TABLE_LATENCY[:3]],
    ),
    Lesson(
        name="prefix-caching",
        title="Prefix caching: shared system prompts computed once",
        summary="Requests that start with one of four 1024-token system prompts, with prefix caching on and off, "
                "and on with a pool too small to keep every prefix.",
        arms={"cache-on": arm({"num_gpu_blocks": 4096, "max_num_batched_tokens": 2048}, SHARED),
              "cache-off": arm({"num_gpu_blocks": 4096, "enable_prefix_caching": False, "max_num_batched_tokens": 2048}, SHARED),
              "cache-on-small": arm({"num_gpu_blocks": 600, "max_num_batched_tokens": 2048}, SHARED)},
        claims=[
            Claim("With caching, {cache-on:report.prefix_cache_hit_rate:.0%} of prompt tokens come from the cache.",
                  lambda r: r["cache-on"].report["prefix_cache_hit_rate"] > 0.6),
            Claim("Up to {cache-on:peak_shared_blocks} blocks are shared by several requests at once.",
                  lambda r: r["cache-on"].peak_shared_blocks > 0),
            Claim("Time to first token p50 falls from {cache-off:report.ttft_s.p50:.3f} s to {cache-on:report.ttft_s.p50:.3f} s.",
                  lambda r: r["cache-on"].report["ttft_s"]["p50"] < r["cache-off"].report["ttft_s"]["p50"]),
            Claim("Short of memory, {cache-on-small:evicted_blocks:,} cached blocks are evicted, least recently used "
                  "first: the finished requests' own tails go, the hot system prompts stay, and the hit rate holds at "
                  "{cache-on-small:report.prefix_cache_hit_rate:.0%}.",
                  lambda r: r["cache-on-small"].evicted_blocks > 0
                  and r["cache-on-small"].report["prefix_cache_hit_rate"] > r["cache-on"].report["prefix_cache_hit_rate"] - 0.05),
        ],
        beats=[
            Beat("opening", "Shared system prompts", "{num_requests} requests each start with one of four 1,024-token system "
                 "prompts (64 blocks). The first request with a prompt computes it; its full blocks get hashed.", ("kv", "queues")),
            Beat("first_admit", "Nothing cached yet", "Step {step}: {request} is admitted with {hit} tokens from the cache: it "
                 "computes its {prompt:,}-token prompt itself.", ("kv", "batch")),
            Beat("first_hit", "A hit", "Step {step}: {request} is admitted and {tokens:,} of its {prompt:,} prompt tokens hit the "
                 "cache: {blocks} blocks shared (dot) instead of computed.", ("kv", "batch")),
            Beat("first_finish", "Cached, free", "Step {step}: {request} finished; its blocks are free but keep their hashes "
                 "(corner mark), ready for the next hit.", ("kv", "side")),
            Beat("first_eviction", "Evicted", "Step {step}: short of free blocks, {blocks} cached blocks are evicted, least "
                 "recently used first.", ("kv", "side")),
            Beat("end", "Result", "With caching {cache-on:report.prefix_cache_hit_rate:.0%} of prompt tokens came from the cache "
                 "and TTFT p50 fell from {cache-off:report.ttft_s.p50:.3f} s to {cache-on:report.ttft_s.p50:.3f} s; with 600 "
                 "blocks {cache-on-small:evicted_blocks:,} blocks were evicted and the hit rate held at "
                 "{cache-on-small:report.prefix_cache_hit_rate:.0%}.", ("kv", "charts")),
        ],
        columns=[("prefix hit rate", "report.prefix_cache_hit_rate", ".0%"), ("peak shared blocks", "peak_shared_blocks", "d"),
                 ("evicted blocks", "evicted_blocks", ",d"), *TABLE_LATENCY[:2]],
    ),
    Lesson(
        name="admission-thrash",
        title="Everything on at once, and how it bites: vLLM 0.10's admission rule",
        summary="vLLM's recorded scenario b (chunked prefill, 160 blocks): vLLM 0.10 admits a request when its first "
                "chunk fits; it then cannot get blocks for the next chunk, the newest running request (itself) is "
                "the victim, and it restarts from token 0. vLLM 0.33 admits only what fits whole.",
        arms={"vllm-0.10": recorded_arm("trace_b_tight_preempt.json.gz", "0.10.1.1"),
              "0.10+full-prompt": recorded_arm("trace_b_tight_preempt.json.gz", "0.10.1.1", full_prompt_admission=True),
              "vllm-0.33": recorded_arm("trace_b_tight_preempt.json.gz", "0.33.0")},
        claims=[
            Claim("Under vLLM 0.10's rule: {vllm-0.10:preemptions} preemptions, one request preempted "
                  "{vllm-0.10:max_preemptions_of_one_request} times (vLLM's own recording: 210 and 57).",
                  lambda r: r["vllm-0.10"].preemptions == 210 and r["vllm-0.10"].max_preemptions_of_one_request == 57),
            Claim("The thrash computes {vllm-0.10:work_ratio:.1f}x the tokens the requests need.",
                  lambda r: r["vllm-0.10"].work_ratio > 7),
            Claim("vLLM 0.33 preempts {vllm-0.33:preemptions} time(s); turning on only full_prompt_admission in 0.10 "
                  "gives {0.10+full-prompt:preemptions}.",
                  lambda r: r["vllm-0.33"].preemptions == 1 and r["0.10+full-prompt"].preemptions <= 2),
        ],
        beats=[
            Beat("opening", "Tight memory", "vLLM's recorded scenario b: {num_gpu_blocks} blocks, chunked prefill at "
                 "{max_num_batched_tokens} tokens. Watch the KV gauge and the preempted lane.", ("kv", "queues")),
            Beat("first_chunk", "Admitted on a chunk", "Step {step}: {request} runs a chunk of {tokens} of its {prompt:,} prompt "
                 "tokens; {rest:,} remain for later steps.", ("batch", "kv")),
            Beat("first_preemption", "Out of blocks", "Step {step}: no block for the next chunk; {request}, the newest running "
                 "request, is preempted and restarts from token 0.", ("queues", "side")),
            Beat("repeat_preemption", "Again", "Step {step}: {request} is preempted a second time; each time its work is thrown "
                 "away.", ("queues", "side")),
            Beat("end", "Result", "vLLM 0.10: {vllm-0.10:preemptions} preemptions, one request {vllm-0.10:max_preemptions_of_one_request} "
                 "times, {vllm-0.10:work_ratio:.1f}x the tokens needed. vLLM 0.33: {vllm-0.33:preemptions}.", ("queues", "side")),
        ],
        columns=[("preemptions", "preemptions", "d"), ("most preemptions of one request", "max_preemptions_of_one_request", "d"),
                 ("tokens computed / needed", "work_ratio", ".1f"), ("steps", "num_steps", ",d")],
    ),
    Lesson(
        name="priority",
        title="Priority scheduling: urgent requests first, low-priority work preempted",
        summary="15% of requests at high priority (0) into an engine short of memory, scheduled by priority "
                "against first-come-first-served.",
        arms={"priority": arm({**PRIORITY_ENGINE, "scheduling_order": "priority"}, PRIORITY),
              "fcfs": arm(PRIORITY_ENGINE, PRIORITY)},
        claims=[
            Claim("Under priority scheduling {priority:victim_priorities.1} of {priority:preemptions} preemptions hit "
                  "low-priority requests; a high-priority one was the victim only when no low-priority request was running.",
                  lambda r: r["priority"].victim_priorities[1] > r["priority"].victim_priorities[0]
                  and r["priority"].victims_were_lowest_priority),
            Claim("Under first-come-first-served the newest request is the victim, whatever its priority: "
                  "{fcfs:victim_priorities.0} high-priority preemptions against {priority:victim_priorities.0}.",
                  lambda r: r["fcfs"].victims_were_newest and r["fcfs"].victim_priorities[0] > r["priority"].victim_priorities[0]),
            Claim("High-priority requests get their first token in {priority:ttft_by_priority.0:.3f} s (median) "
                  "against {priority:ttft_by_priority.1:.3f} s for the rest.",
                  lambda r: r["priority"].ttft_by_priority[0] < r["priority"].ttft_by_priority[1]),
            Claim("First-come-first-served ignores priority: high-priority median TTFT {fcfs:ttft_by_priority.0:.3f} s.",
                  lambda r: r["fcfs"].ttft_by_priority[0] > r["priority"].ttft_by_priority[0]),
        ],
        beats=[
            Beat("opening", "Priorities", "15% of {num_requests} requests are urgent (priority 0, chips marked P0) in a pool of "
                 "{num_gpu_blocks} blocks. The waiting queue is ordered by priority, then arrival.", ("queues", "kv"),
                 arms=("priority",)),
            Beat("opening", "First come, first served", "15% of {num_requests} requests are urgent (priority 0, chips marked P0), "
                 "but the queue ignores it: arrival order only.", ("queues", "kv"), arms=("fcfs",)),
            Beat("first_urgent", "Urgent first", "Step {step}: {request} (priority 0) is admitted; {waiting} requests, preempted ones included, "
                 "still wait.",
                 ("queues", "batch")),
            Beat("kv_high", "Almost full", "Step {step}: KV usage is {kv}% with {running} requests running.", ("kv", "queues")),
            Beat("first_priority_victim", "A low-priority victim", "Step {step}: blocks ran out; {request} (priority {priority}) "
                 "gives its blocks up while {urgent} (priority 0) runs on.", ("queues", "side"), arms=("priority",)),
            Beat("first_preemption", "The newest goes", "Step {step}: blocks ran out; {request} (priority {priority}), the "
                 "newest running request, is preempted whatever its priority.", ("queues", "side"), arms=("fcfs",)),
            Beat("end", "Result", "Priority scheduling: urgent requests' median TTFT {priority:ttft_by_priority.0:.3f} s against "
                 "{priority:ttft_by_priority.1:.3f} s for the rest; {priority:victim_priorities.1} of {priority:preemptions} "
                 "victims low-priority. FCFS: urgent median TTFT {fcfs:ttft_by_priority.0:.3f} s.", ("queues", "charts")),
        ],
        columns=[("preemptions", "preemptions", "d"), *TABLE_LATENCY[:3]],
    ),
    Lesson(
        name="speculative-decoding",
        title="Speculative decoding: faster alone, slower in a crowd",
        summary="Sixty ShareGPT conversations at 4 requests/s on Llama-3.1-8B, with three draft tokens per step from an "
                "EAGLE head, from n-gram lookup in the prompt, and without drafts; then the same three with 512 "
                "clients at once, served as vLLM 0.33 serves them: with async scheduling, which it turns off for "
                "n-gram drafts.",
        # The crowd arms take vLLM 0.33's own choice of loop: with hundreds of requests a step, the host's work
        # the async loop hides is a sixth of the step, and the comparison would otherwise be of loops, not drafts.
        arms={"eagle-3": drafted("eagle"), "ngram-3": drafted("ngram"), "no-drafts": arm(CHAT_ENGINE, CHAT),
              "eagle-3-crowd": drafted("eagle", {**CROWD_ENGINE, "async_scheduling": True}, CROWD),
              "ngram-3-crowd": drafted("ngram", CROWD_ENGINE, CROWD),
              "no-drafts-crowd": arm({**CROWD_ENGINE, "async_scheduling": True}, CROWD)},
        claims=[
            Claim("A verification keeps {eagle-3:report.spec_decode_mean_acceptance_length:.2f} tokens on average with EAGLE "
                  "drafts (the accepted drafts and the model's own token), where a decode without drafts yields one.",
                  lambda r: 2 < r["eagle-3"].report["spec_decode_mean_acceptance_length"] < 4),
            Claim("Time per output token (median) falls from {no-drafts:report.tpot_s.p50:.4f} s to "
                  "{eagle-3:report.tpot_s.p50:.4f} s.",
                  lambda r: r["eagle-3"].report["tpot_s"]["p50"] < 0.7 * r["no-drafts"].report["tpot_s"]["p50"]),
            Claim("n-gram drafts, copied from the prompt, are kept less often: "
                  "{ngram-3:report.spec_decode_mean_acceptance_length:.2f} tokens per verification, "
                  "{ngram-3:report.tpot_s.p50:.4f} s per token.",
                  lambda r: r["ngram-3"].report["spec_decode_mean_acceptance_length"]
                  < r["eagle-3"].report["spec_decode_mean_acceptance_length"]
                  and r["eagle-3"].report["tpot_s"]["p50"] < r["ngram-3"].report["tpot_s"]["p50"]
                  < r["no-drafts"].report["tpot_s"]["p50"]),
            Claim("Drafts are batch tokens: the EAGLE run computes {eagle-3:scheduled_tokens:,} tokens in "
                  "{eagle-3:num_steps:,} steps, against {no-drafts:scheduled_tokens:,} in {no-drafts:num_steps:,} "
                  "without drafts; the rejected ones are work thrown away.",
                  lambda r: r["eagle-3"].scheduled_tokens > r["no-drafts"].scheduled_tokens
                  and r["eagle-3"].num_steps < r["no-drafts"].num_steps),
            Claim("In a crowd of 512 clients the drafts no longer shorten each token's wait: the median time per output "
                  "token is {no-drafts-crowd:report.tpot_s.p50:.4f} s without drafts, {eagle-3-crowd:report.tpot_s.p50:.4f} s "
                  "with EAGLE and {ngram-3-crowd:report.tpot_s.p50:.4f} s with n-gram drafts. Every draft is a token of a "
                  "step that hundreds of requests wait on.",
                  lambda r: r["eagle-3-crowd"].report["tpot_s"]["p50"] > r["no-drafts-crowd"].report["tpot_s"]["p50"]
                  and r["ngram-3-crowd"].report["tpot_s"]["p50"] > 1.2 * r["no-drafts-crowd"].report["tpot_s"]["p50"]),
            Claim("n-gram drafts, kept less often and drafted on the CPU between steps (vLLM runs them without async "
                  "scheduling), now cost throughput: {ngram-3-crowd:report.output_tokens_per_s:,.0f} "
                  "output tokens/s against {no-drafts-crowd:report.output_tokens_per_s:,.0f} without drafts. EAGLE's, kept "
                  "more often, still gain: {eagle-3-crowd:report.output_tokens_per_s:,.0f} tokens/s.",
                  lambda r: r["ngram-3-crowd"].report["output_tokens_per_s"] < r["no-drafts-crowd"].report["output_tokens_per_s"]
                  < r["eagle-3-crowd"].report["output_tokens_per_s"]),
        ],
        beats=[
            Beat("opening", "Drafts", "{num_requests} conversations, a few running at a time. After every step a small EAGLE "
                 "head proposes 3 tokens for each running request; the next step checks them together.", ("queues", "batch"),
                 arms=("eagle-3",)),
            Beat("opening", "Drafts from the prompt", "{num_requests} conversations; after every step, 3 draft tokens copied "
                 "from where the recent tokens last appeared in the prompt.", ("queues", "batch"), arms=("ngram-3",)),
            Beat("opening", "One token a step", "{num_requests} conversations without drafts: every decode computes one "
                 "token.", ("queues", "batch"), arms=("no-drafts",)),
            Beat("opening", "Drafts in a crowd", "{num_requests} conversations from 512 clients at once: hundreds of requests "
                 "run together, and each brings 3 EAGLE drafts to every step.", ("queues", "batch"), arms=("eagle-3-crowd",)),
            Beat("opening", "Prompt drafts in a crowd", "{num_requests} conversations from 512 clients at once, each decode "
                 "with 3 draft tokens copied from its prompt.", ("queues", "batch"), arms=("ngram-3-crowd",)),
            Beat("opening", "A crowd without drafts", "{num_requests} conversations from 512 clients at once: hundreds of "
                 "decodes a step, one token each.", ("queues", "batch"), arms=("no-drafts-crowd",)),
            Beat("first_draft", "A decode of four tokens", "Step {step}: {request}'s decode carries {drafts} drafts: {tokens} "
                 "tokens of the batch for one request (its row reads D 1+{drafts}). Checked in the same pass, {accepted} "
                 "are kept.", ("batch", "queues"), arms=("eagle-3", "ngram-3")),
            Beat("first_full_accept", "All accepted", "Step {step}: every one of {request}'s {drafts} drafts matches what "
                 "the model would have produced: with its own token, {gained} tokens in one step.", ("batch", "charts"),
                 arms=("eagle-3", "ngram-3")),
            Beat("first_rejection", "Rolled back", "Step {step}: {request} keeps {accepted} of its {drafts} drafts; those "
                 "after the first mismatch are rolled back and their KV slots written again. The model's own token "
                 "still counts.", ("batch", "kv"), arms=("eagle-3", "ngram-3")),
            Beat("end", "Result", "Median time per token: {eagle-3:report.tpot_s.p50:.4f} s with EAGLE "
                 "({eagle-3:report.spec_decode_mean_acceptance_length:.2f} tokens per verification), "
                 "{ngram-3:report.tpot_s.p50:.4f} s with n-gram ({ngram-3:report.spec_decode_mean_acceptance_length:.2f}), "
                 "{no-drafts:report.tpot_s.p50:.4f} s without drafts.", ("batch", "charts"),
                 arms=("eagle-3", "ngram-3", "no-drafts")),
            Beat("end", "Result in a crowd", "With 512 clients, median time per token: {eagle-3-crowd:report.tpot_s.p50:.4f} s "
                 "with EAGLE, {ngram-3-crowd:report.tpot_s.p50:.4f} s with n-gram, {no-drafts-crowd:report.tpot_s.p50:.4f} s "
                 "without drafts; output {eagle-3-crowd:report.output_tokens_per_s:,.0f}, "
                 "{ngram-3-crowd:report.output_tokens_per_s:,.0f} and {no-drafts-crowd:report.output_tokens_per_s:,.0f} "
                 "tokens/s.", ("batch", "charts"), arms=("eagle-3-crowd", "ngram-3-crowd", "no-drafts-crowd")),
        ],
        columns=[("TPOT p50 (s)", "report.tpot_s.p50", ".4f"), ("steps", "num_steps", ",d"),
                 ("scheduled tokens", "scheduled_tokens", ",d"), *TABLE_LATENCY[:2]],
    ),
    Lesson(
        name="capacity",
        title="What it takes to reach a published number: Llama-3.3-70B FP8 at 128 concurrent clients",
        summary="The claim 'Llama 3.3 70B FP8 on one H100 SXM at 128 concurrent: 2,200-2,400 tok/s', run at vLLM's "
                "defaults (bf16 KV cache, 0.92 of memory), with an fp8 KV cache at 0.95 of memory, and on an H200.",
        arms={"h100-defaults": {**LLAMA_70B_FP8, "gpu": "h100-sxm"},
              "h100-fp8-kv": {**LLAMA_70B_FP8, "gpu": "h100-sxm", "kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.95},
              "h200-defaults": {**LLAMA_70B_FP8, "gpu": "h200"}},
        claims=[
            Claim("At vLLM's defaults the 67.7 GiB of weights leave one H100 a KV cache of "
                  "{h100-defaults:memory.kv_cache_size_tokens:,} tokens: room for {h100-defaults:memory.max_concurrency:.2f} "
                  "requests of 2,048 tokens, so at most {h100-defaults:peak_running} of the 128 clients run at once.",
                  lambda r: r["h100-defaults"].peak_running < 64),
            Claim("The rest is preemption: {h100-defaults:preemptions} of them, {h100-defaults:recomputed_tokens:,} tokens "
                  "computed again, and {h100-defaults:report.output_tokens_per_s:,.0f} output tokens/s.",
                  lambda r: r["h100-defaults"].preemptions > 100
                  and r["h100-defaults"].report["output_tokens_per_s"] < 500),
            Claim("An fp8 KV cache (half the bytes per token) at 0.95 of memory gives "
                  "{h100-fp8-kv:memory.kv_cache_size_tokens:,} tokens: all {h100-fp8-kv:peak_running} clients run at "
                  "once and output rises to {h100-fp8-kv:report.output_tokens_per_s:,.0f} tokens/s.",
                  lambda r: r["h100-fp8-kv"].memory["kv_cache_size_tokens"] > 3 * r["h100-defaults"].memory["kv_cache_size_tokens"]
                  and r["h100-fp8-kv"].peak_running == 128
                  and r["h100-fp8-kv"].report["output_tokens_per_s"] > 1.5 * r["h100-defaults"].report["output_tokens_per_s"]),
            Claim("It is still short of memory: 128 conversations growing to ShareGPT's long answers outgrow "
                  "{h100-fp8-kv:memory.kv_cache_size_tokens:,} tokens, and {h100-fp8-kv:preemptions} preemptions remain.",
                  lambda r: r["h100-fp8-kv"].preemptions > 0),
            Claim("An H200 at vLLM's defaults holds {h200-defaults:memory.kv_cache_size_tokens:,} tokens: no preemption "
                  "({h200-defaults:preemptions}), {h200-defaults:report.output_tokens_per_s:,.0f} output tokens/s.",
                  lambda r: r["h200-defaults"].preemptions == 0
                  and r["h200-defaults"].report["output_tokens_per_s"] > r["h100-fp8-kv"].report["output_tokens_per_s"]),
            Claim("Memory alone does not reach the published 2,200-2,400 tokens/s here: with every client running and "
                  "nothing preempted, each request still waits {h200-defaults:report.tpot_s.p50:.3f} s per token "
                  "(median), and each new client's prompt shares the steps with the decodes. The claim needs shorter "
                  "prompts and answers than ShareGPT's, or faster steps than the simulation's.",
                  lambda r: r["h200-defaults"].report["output_tokens_per_s"] < 2200),
        ],
        beats=[
            Beat("opening", "Weights first", "Llama-3.3-70B in fp8 takes 67.7 GiB of the H100's 79.2 GiB; at vLLM's default "
                 "0.92 share, activations and CUDA graphs take most of the rest: {num_gpu_blocks} KV blocks of {block_size} "
                 "tokens for 128 clients. Watch the KV gauge.", ("kv", "queues"), arms=("h100-defaults",)),
            Beat("opening", "fp8 KV, more memory", "The same model with its KV cache in fp8 and 0.95 of memory: "
                 "{num_gpu_blocks:,} blocks of {block_size} tokens.", ("kv", "queues"), arms=("h100-fp8-kv",)),
            Beat("opening", "More memory", "An H200 has 140 GiB: after the same 67.7 GiB of weights, {num_gpu_blocks:,} blocks "
                 "of {block_size} tokens.", ("kv", "queues"), arms=("h200-defaults",)),
            Beat("kv_high", "Full already", "Step {step}: KV usage is {kv}% with only {running} requests running and "
                 "{waiting} waiting.", ("kv", "queues"), arms=("h100-defaults",)),
            Beat("kv_high", "Growing", "Step {step}: all {running} requests run and KV usage reaches {kv}%: each decode adds "
                 "a token to every conversation.", ("kv", "queues"), arms=("h100-fp8-kv",)),
            Beat("first_preemption", "Preemption", "Step {step}: blocks ran out; {request}, the newest running request, is "
                 "preempted: {fate}.", ("queues", "kv")),
            Beat("first_resume", "Computed again", "Step {step}: {request} resumes and computes its context again.",
                 ("queues", "batch")),
            Beat("peak_running", "How many run", "Step {step}: {running} requests run at once, the most in this run; {waiting} "
                 "wait.", ("queues", "kv")),
            Beat("end", "Result", "H100 at defaults: {h100-defaults:report.output_tokens_per_s:,.0f} tokens/s, "
                 "{h100-defaults:preemptions} preemptions. fp8 KV at 0.95: {h100-fp8-kv:report.output_tokens_per_s:,.0f} "
                 "tokens/s, {h100-fp8-kv:preemptions} preemptions. H200: {h200-defaults:report.output_tokens_per_s:,.0f} "
                 "tokens/s, none.", ("queues", "charts")),
        ],
        columns=[("KV cache (tokens)", "memory.kv_cache_size_tokens", ",d"), ("peak running", "peak_running", "d"),
                 ("preemptions", "preemptions", "d"), *TABLE_LATENCY[:3]],
    ),
    Lesson(
        name="async-scheduling",
        title="Async scheduling: what the overlap buys and the extra step it costs",
        summary="ShareGPT conversations on Llama-3.1-8B, with vLLM 0.33's default async scheduling (each step "
                "scheduled while the one before runs on the GPU) and with --no-async-scheduling: sixty at 4 "
                "requests/s, then 512 clients at once.",
        arms={"async": arm({**CHAT_ENGINE, "async_scheduling": True}, CHAT),
              "sync": arm({**CHAT_ENGINE, "async_scheduling": False}, CHAT),
              "async-crowd": arm({**CROWD_ENGINE, "async_scheduling": True}, CROWD),
              "sync-crowd": arm({**CROWD_ENGINE, "async_scheduling": False}, CROWD)},
        claims=[
            Claim("The overlap hides the host's work per step (scheduling, input preparation, output processing: "
                  f"{HostTime().per_request_s * 1e6:.1f} us per scheduled request, measured in vLLM PR #23914) "
                  "behind the GPU. At 4 requests/s a step holds a few requests, {sync:host_ms_per_step:.3f} ms of "
                  "host work against a GPU step of about {async:report.tpot_s.p50:.4f} s, so it buys little: the "
                  "median time per output token is {async:report.tpot_s.p50:.5f} s with async scheduling and "
                  "{sync:report.tpot_s.p50:.5f} s without.",
                  lambda r: r["async"].report["tpot_s"]["p50"] < r["sync"].report["tpot_s"]["p50"]
                  < 1.03 * r["async"].report["tpot_s"]["p50"]),
            Claim("With 512 clients, a step holds hundreds of requests and the host's work grows with them, to "
                  "{sync-crowd:host_ms_max:.2f} ms a step at {sync-crowd:peak_running} requests, which the GPU waits "
                  "for without async scheduling. The overlap takes it off every step: median time per output token "
                  "{async-crowd:report.tpot_s.p50:.4f} s against {sync-crowd:report.tpot_s.p50:.4f} s, output "
                  "{async-crowd:report.output_tokens_per_s:,.0f} against {sync-crowd:report.output_tokens_per_s:,.0f} "
                  "tokens/s.",
                  lambda r: r["async-crowd"].report["output_tokens_per_s"]
                  > 1.1 * r["sync-crowd"].report["output_tokens_per_s"]
                  and r["async-crowd"].report["tpot_s"]["p50"] < 0.9 * r["sync-crowd"].report["tpot_s"]["p50"]),
            Claim("Its price: the scheduler learns of every result a step late. Each of the "
                  "{async:report.num_requests} requests finishes one pass after its last token is scheduled and "
                  "keeps its blocks through one more schedule: {async:late_releases} such finishes, "
                  "{async:late_release_blocks:,} blocks held in all. Without async scheduling: {sync:late_releases}.",
                  lambda r: r["async"].late_releases == r["async"].report["num_requests"] and r["sync"].late_releases == 0
                  and r["async"].late_release_blocks > r["async"].report["num_requests"]),
            Claim("A request that arrives while a batch runs misses the next batch, already chosen: the median time to "
                  "first token is {async:report.ttft_s.p50:.4f} s against {sync:report.ttft_s.p50:.4f} s, about one "
                  "decode step ({sync:report.tpot_s.p50:.4f} s) more.",
                  lambda r: 0.5 < (r["async"].report["ttft_s"]["p50"] - r["sync"].report["ttft_s"]["p50"])
                  / r["sync"].report["tpot_s"]["p50"] < 1.5),
        ],
        beats=[
            Beat("opening", "Scheduling ahead", "vLLM 0.33's default: each pass of the engine schedules the next batch "
                 "while the one before still runs on the GPU, counting on placeholders for the tokens not yet back. "
                 "{num_requests} ShareGPT conversations at 4/s.", ("queues", "batch"), arms=("async",)),
            Beat("opening", "One step at a time", "--no-async-scheduling: each step is scheduled only after the one "
                 "before has come back with its tokens. {num_requests} ShareGPT conversations at 4/s.",
                 ("queues", "batch"), arms=("sync",)),
            Beat("scheduled_ahead", "Scheduled ahead", "Step {step}: {request}'s first decode was put in this batch {ahead_ms} "
                 "ms before its prompt's step came back with the token it continues from: a placeholder stood in for "
                 "that token.", ("batch", "queues"), arms=("async",)),
            Beat("missed_batch", "A batch too late", "Step {step}: {request} arrived {chosen_ms} ms after the "
                 "previous batch was chosen and {started_ms} ms before it started on the GPU. Its {prompt}-token prompt "
                 "waits for this step's batch: a step later.", ("batch", "queues"),
                 arms=("async",)),
            Beat("last_token_in_flight", "Last token in flight", "Step {step}: {request}'s last token ({output} of {output}) "
                 "is in this batch; {back} are back. The next pass schedules before it returns, so {request} stays in "
                 "Running with its {blocks} blocks.", ("queues", "kv"), arms=("async",)),
            Beat("late_release", "One more schedule", "Step {step}: this pass chose its batch while {request}'s "
                 "last token was in flight, its {blocks} blocks still taken; then the token came back, {request} "
                 "finished and its blocks returned to the pool.", ("kv", "batch"), arms=("async",)),
            Beat("first_finish", "Finished in its step", "Step {step}: {request}'s last token comes back in the step that "
                 "computed it; it finishes after {output} tokens and its {blocks} blocks are free for the next "
                 "schedule.", ("kv", "queues"), arms=("sync",)),
            Beat("opening", "A crowd, scheduled ahead", "{num_requests} conversations from 512 clients at once: "
                 "hundreds of requests a step, and the host's work for each is done while the batch before runs "
                 "on the GPU.", ("queues", "batch"), arms=("async-crowd",)),
            Beat("opening", "A crowd, one step at a time", "{num_requests} conversations from 512 clients at once, "
                 "with --no-async-scheduling: every step the GPU waits while the host schedules hundreds of "
                 "requests and processes their tokens.", ("queues", "batch"), arms=("sync-crowd",)),
            Beat("end", "Result", "At 4 requests/s: median time per token {async:report.tpot_s.p50:.5f} s with async "
                 "scheduling, {sync:report.tpot_s.p50:.5f} s without (little host work to hide); median TTFT "
                 "{async:report.ttft_s.p50:.4f} s against {sync:report.ttft_s.p50:.4f} s: a step later.",
                 ("queues", "charts"), arms=("async", "sync")),
            Beat("end", "Result in a crowd", "With 512 clients: median time per token "
                 "{async-crowd:report.tpot_s.p50:.4f} s with async scheduling, {sync-crowd:report.tpot_s.p50:.4f} s "
                 "without; output {async-crowd:report.output_tokens_per_s:,.0f} against "
                 "{sync-crowd:report.output_tokens_per_s:,.0f} tokens/s.", ("batch", "charts"),
                 arms=("async-crowd", "sync-crowd")),
        ],
        columns=[("TPOT p50 (s)", "report.tpot_s.p50", ".5f"), ("host work per step (ms)", "host_ms_per_step", ".3f"),
                 ("steps (engine passes)", "num_steps", ",d"), ("late releases", "late_releases", ",d"),
                 *TABLE_LATENCY[:3]],
    ),
]

LESSONS_BY_NAME = {lesson.name: lesson for lesson in LESSONS}
