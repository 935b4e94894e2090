"""The lessons on the mechanisms vLLM is built on: paged KV memory against contiguous reservations,
continuous batching against static batches, chunked prefill, preemption under memory pressure,
prefix caching, vLLM 0.10's admission thrashing, and priority scheduling.

Placeholders in texts are `{arm:path:format}`; paths are ArmResult fields or `report.<metric>`.
"""

from __future__ import annotations

from ..timing.eager import EagerLaunch
from .arms import TABLE_LATENCY, arm, recorded_arm
from .framework import Beat, Claim, Lesson

SHAREGPT_BURST = {"num_requests": 160, "arrival_rate": 40.0, "lengths": "sharegpt", "seed": 3}
PAGED = arm({"num_gpu_blocks": 2048, "max_num_seqs": 256, "max_num_batched_tokens": 2048, "max_model_len": 2048,
             "enable_prefix_caching": False}, SHAREGPT_BURST)
CONTIGUOUS = arm({**PAGED["engine"], "kv_allocator": "contiguous"}, SHAREGPT_BURST)
# The same burst with short chat requests (Alpaca's lengths): a few blocks per request, the last one part empty.
ALPACA_BURST = {**SHAREGPT_BURST, "lengths": "alpaca"}

# The naive PyTorch loop the seed's "3-4x" is measured against (policies/naive.py), on ShareGPT's
# lengths and on fixed ones, where a static batch's members finish together.
NAIVE = {**PAGED["engine"], "policy": "naive", "kv_allocator": "contiguous", "max_num_seqs": 32}
FIXED_BURST = {**SHAREGPT_BURST, "lengths": "fixed", "prompt_len": 512, "output_len": 256}
EAGER_MS = EagerLaunch().seconds(32) * 1e3  # Llama-3.1-8B's 32 layers

MIXED = {"num_requests": 120, "arrival_rate": 12.0, "lengths": "azure-conversation", "seed": 5}
PREFILL_FIRST = arm({"policy": "vllm-v0", "enable_chunked_prefill": False, "num_gpu_blocks": 8192,
                     "max_num_batched_tokens": 8192, "max_model_len": 8192}, MIXED)
CHUNKED = {budget: arm({"num_gpu_blocks": 8192, "max_num_batched_tokens": budget, "max_model_len": 8192}, MIXED)
           for budget in (256, 512, 2048)}
# Azure's code-completion lengths (long prompts, short answers), embedded like the conversations'.
CODE = {**MIXED, "lengths": "azure-code"}

PRESSURE = {"num_requests": 80, "arrival_rate": 50.0, "lengths": "fixed", "prompt_len": 600, "output_len": 700, "seed": 7}
PRESSURE_ENGINE = {"num_gpu_blocks": 700, "max_num_seqs": 64, "max_num_batched_tokens": 1024, "enable_prefix_caching": False}

SHARED = {"num_requests": 200, "arrival_rate": 20.0, "lengths": "lognormal", "prompt_len": 160, "output_len": 120,
          "shared_prefix_len": 1024, "num_shared_prefixes": 4, "seed": 11}

PRIORITY = {"num_requests": 150, "arrival_rate": 25.0, "lengths": "fixed", "prompt_len": 400, "output_len": 500,
            "high_priority_fraction": 0.15, "seed": 13}
PRIORITY_ENGINE = {"num_gpu_blocks": 600, "max_num_seqs": 48, "max_num_batched_tokens": 1024, "enable_prefix_caching": False}


MECHANISM_LESSONS = [
    Lesson(
        name="paged-vs-contiguous",
        title="PagedAttention: paged blocks against reserving the maximum length",
        summary="The same burst of ShareGPT requests, with KV memory handed out in 16-token blocks as "
                "sequences grow, or reserved whole (max_model_len per request) the way systems before vLLM did; "
                "then paged blocks under short (Alpaca) requests.",
        arms={"paged": PAGED, "contiguous": CONTIGUOUS, "paged-alpaca": arm(PAGED["engine"], ALPACA_BURST)},
        claims=[
            Claim("Paged allocation wastes {paged:report.fragmentation:.1%} of the memory it hands out "
                  "(only the unfilled tail of each last block): under the 4% the PagedAttention paper reports, for "
                  "ShareGPT's long conversations, {paged:capacity.mean_context:,.0f} tokens (prompt and answer) on average.",
                  lambda r: r["paged"].report["fragmentation"] < 0.04),
            Claim("Under 4% only when contexts are long: Alpaca's short requests, {paged-alpaca:capacity.mean_context:,.0f} "
                  "tokens on average, fill a few 16-token blocks each, and the last one's empty tail is a larger share: "
                  "{paged-alpaca:report.fragmentation:.1%} wasted.",
                  lambda r: r["paged-alpaca"].report["fragmentation"] > 0.04 > r["paged"].report["fragmentation"]),
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
            Beat("opening", "Blocks as needed", "{num_requests} ShareGPT requests arrive, {arrival_rate:.0f} a second, at a "
                 "pool of {num_gpu_blocks:,} blocks of {block_size} tokens. Step (→) and watch the KV grid: each request gets "
                 "only the blocks its tokens fill.",
                 ("kv", "queues"), arms=("paged",)),
            Beat("opening", "Reserving the maximum", "{num_requests} ShareGPT requests arrive, {arrival_rate:.0f} a second, at "
                 "a pool of {num_gpu_blocks:,} blocks of {block_size} tokens, and each one admitted reserves max_model_len: "
                 "{max_model_len:,} tokens, {reserve_blocks} blocks, the way systems before vLLM did. Step (→) and watch the "
                 "KV grid: a long run of blocks per request, most of it never written.",
                 ("kv", "queues"), arms=("contiguous",)),
            Beat("first_admit", "The first blocks", "Step {step}: {request} is admitted with a {prompt}-token prompt and holds "
                 "{table} blocks, no more; reserving max_model_len would set {max_model_len:,} tokens aside for it.",
                 ("kv", "batch"), arms=("paged", "paged-alpaca")),
            Beat("first_admit", "A whole reservation", "Step {step}: {request} is admitted with a {prompt}-token prompt that "
                 "fills {blocks:plural:block}, and holds {table}: the rest is set aside for tokens it may never write.",
                 ("kv", "batch"), arms=("contiguous",)),
            Beat("first_finish", "Blocks come back", "Step {step}: {request} finished after "
                 "{output:plural:output token}; its blocks "
                 "go back to the free pool at once, for the next request.", ("kv", "queues"), arms=("paged", "paged-alpaca")),
            Beat("first_finish", "A reservation comes back", "Step {step}: {request} finished after "
                 "{output:plural:output token}, "
                 "having filled {blocks} of its {reserve_blocks} blocks; the whole reservation goes back to the free pool, "
                 "for the next request.", ("kv", "queues"), arms=("contiguous",)),
            Beat("peak_running", "How many fit", "Step {step}: {running} requests run at once in {used_blocks:,} blocks "
                 "({kv}% used). Reserving {max_model_len:,} tokens each, only {reserve_fit} would fit: click 'Reserve max'.",
                 ("kv", "queues"), arms=("paged",)),
            Beat("peak_running", "How many fit", "Step {step}: reserving {max_model_len:,} tokens each, {running} requests hold "
                 "{used_blocks:,} blocks ({kv}% of the pool) and no more fit; most of what they hold is reserved but unused.",
                 ("kv", "queues"), arms=("contiguous",)),
            Beat("opening", "Short requests", "{num_requests} Alpaca requests, a few blocks of {block_size} tokens each: "
                 "watch how much of each request's last block stays empty.", ("kv", "queues"), arms=("paged-alpaca",)),
            Beat("end", "Result", "Paged: {paged:report.fragmentation:.1%} of allocated memory unused, {paged:peak_running} "
                 "requests at once, {paged:report.output_tokens_per_s:,.0f} output tokens/s. Reserving max_model_len: "
                 "{contiguous:report.fragmentation:.0%} unused, {contiguous:peak_running} at once, "
                 "{contiguous:report.output_tokens_per_s:,.0f} tokens/s. Paged under Alpaca's short requests: "
                 "{paged-alpaca:report.fragmentation:.1%} unused.", ("kv", "charts")),
        ],
        columns=[("waste of allocated memory", "report.fragmentation", ".1%"), ("peak running requests", "peak_running", ",d"),
                 *TABLE_LATENCY[:3]],
    ),
    Lesson(
        name="static-vs-continuous",
        title="Continuous batching: iteration-level scheduling against static batches",
        summary="The same requests through a static batcher (fill a batch, run it until its last member "
                "finishes) and through vLLM's iteration-level scheduler; then the naive PyTorch loop the claim "
                "'3-4x a naive loop' means (static batches, max_model_len reserved per sequence, no prefix caching, "
                "no CUDA graphs), on ShareGPT's lengths and on fixed ones.",
        arms={"static": arm({**PAGED["engine"], "policy": "static", "max_num_seqs": 32}, SHAREGPT_BURST),
              "continuous": arm({**PAGED["engine"], "max_num_seqs": 32}, SHAREGPT_BURST),
              "naive": arm(NAIVE, SHAREGPT_BURST),
              "naive-fixed": arm(NAIVE, FIXED_BURST),
              "continuous-fixed": arm({**PAGED["engine"], "max_num_seqs": 32}, FIXED_BURST)},
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
            Claim("The static arm is still vLLM's engine (paged blocks, CUDA graphs). A naive PyTorch loop reserves "
                  "max_model_len contiguously for each sequence, so only {naive:peak_running} of 32 seats fill, and "
                  f"launches every layer's kernels each step ({EAGER_MS:.1f} ms a step without CUDA graphs, as vLLM "
                  "PR #1440 measured): {naive:report.output_tokens_per_s:,.0f} output tokens/s on ShareGPT. Continuous "
                  "batching serves {continuous/naive:report.output_tokens_per_s:.1f}x that: more than the claim's 3-4x.",
                  lambda r: r["continuous"].report["output_tokens_per_s"] > 4 * r["naive"].report["output_tokens_per_s"]
                  and r["naive"].peak_running < r["continuous"].peak_running),
            Claim("On fixed lengths (512-token prompts, 256-token answers) a static batch's members finish together and "
                  "a reservation wastes less: the naive loop serves {naive-fixed:report.output_tokens_per_s:,.0f} tokens/s, "
                  "continuous batching {continuous-fixed/naive-fixed:report.output_tokens_per_s:.1f}x that, below 3-4x. "
                  "The claim's 3-4x lies between the two: how much of it holds depends on how much the lengths vary.",
                  lambda r: 1.5 < r["continuous-fixed"].report["output_tokens_per_s"]
                  / r["naive-fixed"].report["output_tokens_per_s"] < 3
                  < r["continuous"].report["output_tokens_per_s"] / r["naive"].report["output_tokens_per_s"]),
        ],
        beats=[
            Beat("opening", "Static batches", "A static batcher admits a batch (up to {max_num_seqs} requests) and admits "
                 "nobody more until every member has finished. Watch the Running and Waiting lanes.", ("queues", "batch"),
                 arms=("static",)),
            Beat("opening", "A naive loop", "Static batches of up to {max_num_seqs} requests, each reserving "
                 "{max_model_len:,} tokens of contiguous KV ({reserve_fit} fit in {num_gpu_blocks:,} blocks), and every "
                 "step's kernels launched one by one, without CUDA graphs.", ("queues", "kv"),
                 arms=("naive", "naive-fixed")),
            Beat("opening", "Continuous batching", "The scheduler decides every step: a finished request's seat goes to the "
                 "next waiting request at once. Up to {max_num_seqs} run together.", ("queues", "batch"),
                 arms=("continuous", "continuous-fixed")),
            Beat("batch_full", "The batch is full", "Step {step}: {running} requests run, every seat taken; {waiting} wait.",
                 ("queues", "batch"), arms=("continuous",)),
            Beat("seat_left_empty", "A seat frees", "Step {step}: {request} finished after {output:plural:token}; "
                 "{running} others "
                 "run on and {waiting} wait, but its seat stays empty: a static batch admits no one until its last member is "
                 "done.", ("queues", "batch"), arms=("static", "naive", "naive-fixed")),
            Beat("seats_empty", "Seats go empty", "Step {step}: only {running} of {max_num_seqs} seats are busy while {waiting} "
                 "requests wait: {empty} empty seats.", ("queues", "charts"), arms=("static", "naive", "naive-fixed")),
            Beat("refill", "The next batch", "Step {step}: the last member finished; {admitted} requests are admitted at once "
                 "as the next batch.", ("queues", "batch"), arms=("static", "naive", "naive-fixed")),
            Beat("first_finish", "A seat frees", "Step {step}: {request} finished after {output:plural:token} and "
                 "leaves the batch "
                 "at once; {running} others run on, and its seat goes to the next request as soon as one waits, not when the "
                 "whole batch is done.", ("queues", "batch"), arms=("continuous",)),
            Beat("queue_drained", "Queue drained", "Step {step}: nobody waits any more; the {running} running requests finish.",
                 ("queues", "charts"), arms=("continuous",)),
            Beat("end", "Result", "Continuous batching: {continuous:report.output_tokens_per_s:,.0f} output tokens/s, TTFT p50 "
                 "{continuous:report.ttft_s.p50:.2f} s; static batches: {static:report.output_tokens_per_s:,.0f} tokens/s, "
                 "{static:report.ttft_s.p50:.2f} s, and {static:drained_steps:,} steps with empty seats while requests waited. "
                 "The naive loop: {naive:report.output_tokens_per_s:,.0f} tokens/s on ShareGPT, continuous batching "
                 "{continuous/naive:report.output_tokens_per_s:.1f}x that; {naive-fixed:report.output_tokens_per_s:,.0f} on "
                 "fixed lengths, {continuous-fixed/naive-fixed:report.output_tokens_per_s:.1f}x.", ("queues", "charts")),
        ],
        columns=[("steps with idle seats", "drained_steps", ",d"), ("peak running", "peak_running", ",d"), *TABLE_LATENCY[:3]],
    ),
    Lesson(
        name="chunked-prefill",
        title="Chunked prefill: long prompts without stalling the decodes",
        summary="Long Azure-conversation prompts arriving among running decodes: prefill-first (vLLM V0's "
                "default, whole prompts) against decode-first chunked prefill under token budgets of 256, 512 and 2,048; "
                "then both on Azure's code-completion lengths, longer prompts still.",
        arms={"chunked-512": CHUNKED[512], "prefill-first": PREFILL_FIRST, "chunked-256": CHUNKED[256],
              "chunked-2048": CHUNKED[2048], "prefill-first-code": {**PREFILL_FIRST, "workload": CODE},
              "chunked-512-code": {**CHUNKED[512], "workload": CODE}},
        claims=[
            Claim("Decodes stall behind whole prompts: inter-token latency p99 is {prefill-first:report.itl_s.p99:.3f} s "
                  "prefill-first against {chunked-512:report.itl_s.p99:.3f} s chunked at 512 tokens.",
                  lambda r: r["chunked-512"].report["itl_s"]["p99"] < r["prefill-first"].report["itl_s"]["p99"]),
            Claim("A smaller budget protects decodes more: ITL p99 {chunked-256:report.itl_s.p99:.4f} s at 256 tokens, "
                  "{chunked-2048:report.itl_s.p99:.4f} s at 2,048.",
                  lambda r: r["chunked-256"].report["itl_s"]["p99"] < r["chunked-2048"].report["itl_s"]["p99"]),
            Claim("...and costs time to first token: TTFT p50 {chunked-256:report.ttft_s.p50:.3f} s at 256 tokens, "
                  "{chunked-2048:report.ttft_s.p50:.3f} s at 2,048.",
                  lambda r: r["chunked-256"].report["ttft_s"]["p50"] > r["chunked-2048"].report["ttft_s"]["p50"]),
            Claim("Throughput hardly moves: {chunked-512:report.output_tokens_per_s:,.0f} against "
                  "{prefill-first:report.output_tokens_per_s:,.0f} output tokens/s.",
                  lambda r: abs(r["chunked-512"].report["output_tokens_per_s"]
                                / r["prefill-first"].report["output_tokens_per_s"] - 1) < 0.1),
            Claim("So the tail chunked prefill protects is the decodes', not time to first token. On Azure's code "
                  "prompts it cuts ITL p99 from {prefill-first-code:report.itl_s.p99:.3f} s to "
                  "{chunked-512-code:report.itl_s.p99:.3f} s, while TTFT p99 goes from "
                  "{prefill-first-code:report.ttft_s.p99:.2f} s to {chunked-512-code:report.ttft_s.p99:.2f} s (and "
                  "from {prefill-first:report.ttft_s.p99:.2f} s to {chunked-512:report.ttft_s.p99:.2f} s on the "
                  "conversations): a prompt cut into chunks reaches its first token over several steps.",
                  lambda r: all(r[f"chunked-512{w}"].report["itl_s"]["p99"] < 0.2 * r[f"prefill-first{w}"].report["itl_s"]["p99"]
                                and r[f"chunked-512{w}"].report["ttft_s"]["p99"] >= r[f"prefill-first{w}"].report["ttft_s"]["p99"]
                                for w in ("", "-code"))),
        ],
        beats=[
            Beat("opening", "The token budget", "Each step spends at most {max_num_batched_tokens:,} tokens: the running "
                 "requests' decodes first, then chunks of waiting prompts. {num_requests} Azure-conversation requests with long "
                 "prompts.", ("batch", "queues"), arms=("chunked-256", "chunked-512", "chunked-2048", "chunked-512-code")),
            Beat("opening", "Prefill first", "vLLM V0's default: a step runs whole waiting prompts, up to "
                 "{max_num_batched_tokens:,} tokens, and the decodes wait for it.", ("batch", "queues"),
                 arms=("prefill-first", "prefill-first-code")),
            Beat("mixed_chunk", "A prompt is sliced", "Step {step}: {request}'s {prompt:,}-token prompt gets a chunk of {tokens} "
                 "tokens (orange, P) in the same step as the running decodes (blue, D: {decodes}); {rest:,} prompt tokens wait "
                 "for later steps.", ("batch", "queues")),
            Beat("next_chunk", "The next slice", "Step {step}: {request} gets its next chunk, {tokens:plural:token} from token "
                 "{start}; the decodes (D: {decodes}) run in the same step again.", ("batch", "queues")),
            Beat("budget_full", "A busy step", "Step {step}: {decodes} decodes run first, one token each, and prompt chunks "
                 "fill the rest of the {budget:,}-token budget.", ("batch", "charts")),
            Beat("end", "Result", "ITL p99: {prefill-first:report.itl_s.p99:.3f} s prefill-first, "
                 "{chunked-512:report.itl_s.p99:.3f} s chunked at 512 tokens, {chunked-256:report.itl_s.p99:.4f} s at 256; "
                 "TTFT p50 {chunked-256:report.ttft_s.p50:.3f} s at 256 against {chunked-2048:report.ttft_s.p50:.3f} s "
                 "at 2,048.", ("charts", "batch")),
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
            Claim("Both engines run out of blocks: {recompute:preemptions:,} preemptions with recompute, "
                  "{swap:preemptions:,} with swap.",
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
            Beat("kv_high", "Almost full", "Step {step}: KV usage is {kv}% with {running:plural:request} running and "
                 "{waiting} waiting.",
                 ("kv", "queues")),
            Beat("first_preemption", "Preemption", "Step {step}: blocks ran out; {request}, the newest running request, is "
                 "preempted: {fate}.", ("queues", "kv")),
            Beat("first_swap", "Swapped out", "Step {step}: {request}'s {blocks} blocks move to CPU memory over PCIe; they come "
                 "back when blocks free up.", ("queues", "kv"), arms=("swap",)),
            Beat("first_resume", "Computed again", "Step {step}: {request} resumes; its whole context is computed again as a "
                 "prefill (orange in the batch).", ("queues", "batch"), arms=("recompute",)),
            Beat("queue_drained", "Drained", "Step {step}: nobody waits any more; {running} requests run to the end.",
                 ("queues", "kv")),
            Beat("end", "Result", "Recompute: {recompute:preemptions:,} preemptions, {recompute:recomputed_tokens:,} tokens "
                 "computed again. Swap: {swap:preemptions:,} preemptions, nothing computed twice, {swap:swapped_blocks:,} blocks "
                 "moved over PCIe ({swap:swap_s:.3f} s).", ("queues", "charts")),
        ],
        columns=[("preemptions", "preemptions", ",d"), ("recomputed tokens", "recomputed_tokens", ",d"),
                 ("blocks swapped", "swapped_blocks", ",d"), *TABLE_LATENCY[:3]],
    ),
    Lesson(
        name="prefix-caching",
        title="Prefix caching: shared system prompts computed once",
        summary="Requests that start with one of four 1,024-token system prompts, with prefix caching on and off, "
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
                 "prompts (64 blocks). The first request with a prompt computes it; its full blocks get hashed.",
                 ("kv", "queues"), arms=("cache-on", "cache-on-small")),
            Beat("opening", "No prefix caching", "{num_requests} requests each start with one of four 1,024-token system "
                 "prompts (64 blocks), with prefix caching off: every request computes its whole prompt, the shared part "
                 "included, and its blocks keep nothing for the next one.", ("kv", "queues"), arms=("cache-off",)),
            Beat("first_admit", "Nothing cached yet", "Step {step}: {request} is admitted with {hit:plural:token} "
                 "from the cache: it "
                 "computes its {prompt:,}-token prompt itself.", ("kv", "batch"), arms=("cache-on", "cache-on-small")),
            Beat("first_admit", "Computed in full", "Step {step}: {request} is admitted and computes its {prompt:,}-token "
                 "prompt itself, as every request here will, though most of it is a system prompt others share.",
                 ("kv", "batch"), arms=("cache-off",)),
            Beat("first_hit", "A hit", "Step {step}: {request} is admitted and {tokens:,} of its {prompt:,} prompt tokens "
                 "hit the cache: {blocks:plural:block} shared (dot) instead of computed.", ("kv", "batch")),
            Beat("first_finish", "Cached, free", "Step {step}: {request} finished; its blocks are free but keep their hashes "
                 "(corner mark), ready for the next hit.", ("kv", "side"), arms=("cache-on", "cache-on-small")),
            Beat("first_finish", "Free, forgotten", "Step {step}: {request} finished; its {blocks} blocks go back to the free "
                 "pool as plain free blocks: the next request with the same system prompt computes it again.",
                 ("kv", "side"), arms=("cache-off",)),
            Beat("first_eviction", "Evicted", "Step {step}: short of free blocks, the cache evicts {blocks:plural:cached block}, "
                 "least recently used first.", ("kv", "side")),
            Beat("end", "Result", "With caching {cache-on:report.prefix_cache_hit_rate:.0%} of prompt tokens came from the cache "
                 "and TTFT p50 fell from {cache-off:report.ttft_s.p50:.3f} s to {cache-on:report.ttft_s.p50:.3f} s; with 600 "
                 "blocks {cache-on-small:evicted_blocks:,} blocks were evicted and the hit rate held at "
                 "{cache-on-small:report.prefix_cache_hit_rate:.0%}.", ("kv", "charts")),
        ],
        columns=[("prefix hit rate", "report.prefix_cache_hit_rate", ".0%"), ("peak shared blocks", "peak_shared_blocks", ",d"),
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
            Claim("Under vLLM 0.10's rule: {vllm-0.10:preemptions:,} preemptions, one request preempted "
                  "{vllm-0.10:max_preemptions_of_one_request} times (vLLM's own recording: 210 and 57).",
                  lambda r: r["vllm-0.10"].preemptions == 210 and r["vllm-0.10"].max_preemptions_of_one_request == 57),
            Claim("The thrash computes {vllm-0.10:work_ratio:.1f}x the tokens the requests need.",
                  lambda r: r["vllm-0.10"].work_ratio > 7),
            Claim("vLLM 0.33 preempts {vllm-0.33:preemptions:plural:time}; turning on only full_prompt_admission in 0.10 "
                  "gives {0.10+full-prompt:preemptions:,}.",
                  lambda r: r["vllm-0.33"].preemptions == 1 and r["0.10+full-prompt"].preemptions <= 2),
        ],
        beats=[
            Beat("opening", "Tight memory", "vLLM's recorded scenario b: {num_gpu_blocks} blocks, chunked prefill at "
                 "{max_num_batched_tokens} tokens. Watch the KV gauge: when blocks run out, a Preempted lane opens among the "
                 "requests.", ("kv", "queues")),
            Beat("first_chunk", "Admitted on a chunk", "Step {step}: {request} runs a chunk of {tokens} of its {prompt:,} prompt "
                 "tokens; {rest:,} remain for later steps.", ("batch", "kv")),
            Beat("first_preemption", "Out of blocks", "Step {step}: no block for the next chunk; {request}, the newest running "
                 "request, is preempted and restarts from token 0: it waits in the Preempted lane.", ("queues", "side")),
            Beat("repeat_preemption", "Again", "Step {step}: {request} is preempted a second time; each time its work is thrown "
                 "away.", ("queues", "side")),
            Beat("end", "Result", "vLLM 0.10: {vllm-0.10:preemptions:,} preemptions, one request "
                 "{vllm-0.10:max_preemptions_of_one_request} times, {vllm-0.10:work_ratio:.1f}x the tokens needed. "
                 "vLLM 0.33: {vllm-0.33:preemptions:,}.", ("queues", "side")),
        ],
        columns=[("preemptions", "preemptions", ",d"),
                 ("most preemptions of one request", "max_preemptions_of_one_request", ",d"),
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
            Claim("Under priority scheduling {priority:victim_priorities.1} of {priority:preemptions:,} preemptions hit "
                  "low-priority requests; a high-priority one was the victim only when no low-priority request was running.",
                  lambda r: r["priority"].victim_priorities[1] > r["priority"].victim_priorities[0]
                  and r["priority"].victims_were_lowest_priority),
            Claim("Under first-come-first-served the newest request is the victim, whatever its priority: "
                  "{fcfs:victim_priorities.0} high-priority preemptions against {priority:victim_priorities.0}.",
                  lambda r: r["fcfs"].victims_were_newest
                  and r["fcfs"].victim_priorities[0] > r["priority"].victim_priorities[0]),
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
            Beat("opening", "First come, first served", "15% of {num_requests} requests are urgent (priority 0, chips marked "
                 "P0), but the queue ignores it: arrival order only.", ("queues", "kv"), arms=("fcfs",)),
            Beat("first_urgent", "Urgent first", "Step {step}: {request} (priority 0) is admitted; {waiting:plural:request}, "
                 "preempted ones included, still wait.",
                 ("queues", "batch")),
            Beat("kv_high", "Almost full", "Step {step}: KV usage is {kv}% with "
                 "{running:plural:request} running.", ("kv", "queues")),
            Beat("first_priority_victim", "A low-priority victim", "Step {step}: blocks ran out; {request} (priority {priority}) "
                 "gives its blocks up while {urgent} (priority 0) runs on.", ("queues", "side"), arms=("priority",)),
            Beat("first_preemption", "The newest goes", "Step {step}: blocks ran out; {request} (priority {priority}), the "
                 "newest running request, is preempted whatever its priority.", ("queues", "side"), arms=("fcfs",)),
            Beat("end", "Result", "Priority scheduling: urgent requests' median TTFT {priority:ttft_by_priority.0:.3f} s against "
                 "{priority:ttft_by_priority.1:.3f} s for the rest; {priority:victim_priorities.1} of {priority:preemptions:,} "
                 "victims low-priority. FCFS: urgent median TTFT {fcfs:ttft_by_priority.0:.3f} s.", ("queues", "charts")),
        ],
        columns=[("preemptions", "preemptions", ",d"), *TABLE_LATENCY[:3]],
    ),
]
