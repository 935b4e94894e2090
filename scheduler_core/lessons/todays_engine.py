"""The lessons on the engine `vllm serve` runs today: speculative decoding alone and in a crowd,
what it takes to reach a published throughput at vLLM's defaults, and async scheduling.

Placeholders in texts are `{arm:path:format}`; paths are ArmResult fields or `report.<metric>`.
"""

from __future__ import annotations

from ..timing.host_time import HostTime
from .arms import TABLE_LATENCY, arm
from .framework import Beat, Claim, Lesson

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
# Ten requests per client: with fewer (this lesson once ran 200), the ramp-up, when every client's
# first prompt is computed at once, and the drain, when the last few run alone, dominate the run.
CAPACITY = {"num_requests": 1280, "concurrency": 128, "lengths": "sharegpt", "seed": 21}
# Short chat requests (Alpaca's lengths): 128 of them fit one H100's fp8 cache many times over.
SHORT_REQUESTS = {**CAPACITY, "lengths": "alpaca"}
# vLLM's OpenAI-server defaults on an H100 or H200; 2,048 tokens of context, since at vLLM's default
# memory share one H100 cannot hold even one 8,192-token request of this model.
CAPACITY_ENGINE = {"max_num_batched_tokens": 8192, "max_num_seqs": 1024, "max_model_len": 2048}
# At vLLM's defaults, its engine loop included: 0.33 schedules asynchronously.
LLAMA_70B_FP8 = {"model": "llama-3.3-70b-fp8", "engine": {**CAPACITY_ENGINE, "async_scheduling": True}, "workload": CAPACITY}
H100_FP8_KV = {**LLAMA_70B_FP8, "gpu": "h100-sxm", "kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.95}


TODAYS_ENGINE_LESSONS = [
    Lesson(
        name="speculative-decoding",
        title="Speculative decoding: faster alone, slower in a crowd",
        summary="Sixty ShareGPT conversations at 4 requests/s on Llama-3.1-8B, with three draft tokens per step from an "
                "EAGLE head, from n-gram lookup in the prompt, and without drafts; then the same three with 512 "
                "clients at once, served as vLLM 0.33 serves them: with async scheduling, n-gram drafts included (0.33.0 "
                "is the first release that keeps it on for them).",
        # The crowd arms take vLLM 0.33's own choice of loop, async for every drafter (n-gram's since 0.33.0,
        # engine/releases.py): with hundreds of requests a step, the host's work the async loop hides is a sixth
        # of the step, and the comparison would otherwise be of loops, not drafts.
        arms={"eagle-3": drafted("eagle"), "ngram-3": drafted("ngram"), "no-drafts": arm(CHAT_ENGINE, CHAT),
              "eagle-3-crowd": drafted("eagle", {**CROWD_ENGINE, "async_scheduling": True}, CROWD),
              "ngram-3-crowd": drafted("ngram", {**CROWD_ENGINE, "async_scheduling": True}, CROWD),
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
            Claim("n-gram drafts, kept less often, now cost throughput even with their CPU lookup hidden behind the "
                  "GPU's step by async scheduling: {ngram-3-crowd:report.output_tokens_per_s:,.0f} "
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
        summary="The claim 'Llama 3.3 70B FP8 on one H100 SXM at 128 concurrent: 2,200-2,400 tok/s', run with ten "
                "ShareGPT conversations per client at vLLM's defaults (bf16 KV cache, 0.92 of memory), with an fp8 KV "
                "cache at 0.95 of memory, with --max-num-seqs 128 besides, with short (Alpaca) requests, and on an H200.",
        arms={"h100-defaults": {**LLAMA_70B_FP8, "gpu": "h100-sxm"},
              "h100-fp8-kv": H100_FP8_KV,
              "h100-fp8-kv-128-seqs": {**H100_FP8_KV, "engine": {**H100_FP8_KV["engine"], "max_num_seqs": 128}},
              "h100-fp8-kv-alpaca": {**H100_FP8_KV, "workload": SHORT_REQUESTS},
              "h200-defaults": {**LLAMA_70B_FP8, "gpu": "h200"}},
        claims=[
            Claim("At vLLM's defaults the 67.7 GiB of weights leave one H100 a KV cache of "
                  "{h100-defaults:memory.kv_cache_size_tokens:,} tokens: room for {h100-defaults:memory.max_concurrency:.2f} "
                  "requests of 2,048 tokens, so at most {h100-defaults:peak_running} of the 128 clients run at once.",
                  lambda r: r["h100-defaults"].peak_running < 64),
            Claim("The rest is preemption: {h100-defaults:preemptions:,} of them, {h100-defaults:recomputed_tokens:,} tokens "
                  "computed again, and {h100-defaults:report.output_tokens_per_s:,.0f} output tokens/s.",
                  lambda r: r["h100-defaults"].preemptions > 100
                  and r["h100-defaults"].report["output_tokens_per_s"] < 500),
            Claim("An fp8 KV cache (half the bytes per token) at 0.95 of memory gives "
                  "{h100-fp8-kv:memory.kv_cache_size_tokens:,} tokens: all {h100-fp8-kv:peak_running} clients run at "
                  "once and output rises to {h100-fp8-kv:report.output_tokens_per_s:,.0f} tokens/s.",
                  lambda r: r["h100-fp8-kv"].memory["kv_cache_size_tokens"]
                  > 3 * r["h100-defaults"].memory["kv_cache_size_tokens"]
                  and r["h100-fp8-kv"].peak_running == 128
                  and r["h100-fp8-kv"].report["output_tokens_per_s"] > 1.5 * r["h100-defaults"].report["output_tokens_per_s"]),
            Claim("Why ShareGPT cannot reach the band on one H100: 128 conversations of ShareGPT's mean "
                  "{h100-fp8-kv:capacity.mean_context:,.0f} tokens (prompt and answer) need "
                  "{h100-fp8-kv:capacity.demand_tokens:,} KV tokens, and the cache beside the weights holds "
                  "{h100-fp8-kv:memory.kv_cache_size_tokens:,}. The conversations that outgrow it are preempted, "
                  "{h100-fp8-kv:preemptions:,} times, and output stays at {h100-fp8-kv:report.output_tokens_per_s:,.0f} "
                  "tokens/s, little more than half the claim.",
                  lambda r: r["h100-fp8-kv"].capacity["exceeded"] and r["h100-fp8-kv"].preemptions > 0
                  and r["h100-fp8-kv"].report["output_tokens_per_s"] < 0.7 * 2200),
            Claim("--max-num-seqs 128, no more seats than clients, has vLLM capture CUDA graphs for batches up to 128 "
                  "only; the memory they free makes the cache {h100-fp8-kv-128-seqs:memory.kv_cache_size_tokens:,} "
                  "tokens. Still short of {h100-fp8-kv-128-seqs:capacity.demand_tokens:,}: "
                  "{h100-fp8-kv-128-seqs:preemptions:,} preemptions, "
                  "{h100-fp8-kv-128-seqs:report.output_tokens_per_s:,.0f} tokens/s.",
                  lambda r: r["h100-fp8-kv-128-seqs"].memory["kv_cache_size_tokens"]
                  > r["h100-fp8-kv"].memory["kv_cache_size_tokens"]
                  and r["h100-fp8-kv-128-seqs"].capacity["exceeded"] and r["h100-fp8-kv-128-seqs"].preemptions > 0
                  and r["h100-fp8-kv-128-seqs"].report["output_tokens_per_s"] < 0.7 * 2200),
            Claim("The half of the claim that holds: with short chat requests (Alpaca's lengths, a mean of "
                  "{h100-fp8-kv-alpaca:capacity.mean_context:,.0f} tokens) the 128 conversations need "
                  "{h100-fp8-kv-alpaca:capacity.demand_tokens:,} tokens, nothing is preempted "
                  "({h100-fp8-kv-alpaca:preemptions:,}) and the same H100 serves "
                  "{h100-fp8-kv-alpaca:report.output_tokens_per_s:,.0f} tokens/s: at the band's lower edge.",
                  lambda r: not r["h100-fp8-kv-alpaca"].capacity["exceeded"] and r["h100-fp8-kv-alpaca"].preemptions == 0
                  and 0.97 * 2200 < r["h100-fp8-kv-alpaca"].report["output_tokens_per_s"] < 2400),
            Claim("It is the fit that matters, not the lengths: an H200 at vLLM's defaults holds "
                  "{h200-defaults:memory.kv_cache_size_tokens:,} tokens, room for the ShareGPT conversations' "
                  "{h200-defaults:capacity.demand_tokens:,}; nothing is preempted ({h200-defaults:preemptions:,}) and it "
                  "serves {h200-defaults:report.output_tokens_per_s:,.0f} tokens/s, at the band's top, with each "
                  "request waiting {h200-defaults:report.tpot_s.p50:.3f} s per token (median).",
                  lambda r: not r["h200-defaults"].capacity["exceeded"] and r["h200-defaults"].preemptions == 0
                  and 2200 < r["h200-defaults"].report["output_tokens_per_s"] < 1.05 * 2400),
        ],
        beats=[
            Beat("opening", "Weights first", "Llama-3.3-70B in fp8 takes 67.7 GiB of the H100's 79.2 GiB; at vLLM's default "
                 "0.92 share, activations and CUDA graphs take most of the rest: {num_gpu_blocks} KV blocks of {block_size} "
                 "tokens for 128 clients. Watch the KV gauge.", ("kv", "queues"), arms=("h100-defaults",)),
            Beat("opening", "fp8 KV, more memory", "The same model with its KV cache in fp8 and 0.95 of memory: "
                 "{num_gpu_blocks:,} blocks of {block_size} tokens.", ("kv", "queues"), arms=("h100-fp8-kv",)),
            Beat("opening", "Seats for the clients only", "As the fp8 arm, with --max-num-seqs 128: CUDA graphs for "
                 "batches up to 128, and {num_gpu_blocks:,} blocks of {block_size} tokens.", ("kv", "queues"),
                 arms=("h100-fp8-kv-128-seqs",)),
            Beat("opening", "Short requests", "The fp8 arm's H100 ({num_gpu_blocks:,} blocks of {block_size} tokens) "
                 "with Alpaca's short prompts and answers: 128 conversations fill a fraction of it.", ("kv", "queues"),
                 arms=("h100-fp8-kv-alpaca",)),
            Beat("opening", "More memory", "An H200 has 140 GiB: after the same 67.7 GiB of weights, {num_gpu_blocks:,} blocks "
                 "of {block_size} tokens.", ("kv", "queues"), arms=("h200-defaults",)),
            Beat("kv_high", "Full already", "Step {step}: KV usage is {kv}% with only {running:plural:request} running and "
                 "{waiting} waiting.", ("kv", "queues"), arms=("h100-defaults",)),
            Beat("kv_high", "Growing", "Step {step}: all {running} requests run and KV usage reaches {kv}%: each decode adds "
                 "a token to every conversation.", ("kv", "queues"), arms=("h100-fp8-kv", "h100-fp8-kv-128-seqs")),
            Beat("first_preemption", "Preemption", "Step {step}: blocks ran out; {request}, the newest running request, is "
                 "preempted: {fate}.", ("queues", "kv")),
            Beat("first_resume", "Computed again", "Step {step}: {request} resumes and computes its context again.",
                 ("queues", "batch")),
            Beat("peak_running", "How many run", "Step {step}: {running} requests run at once, the most in this run; {waiting} "
                 "wait.", ("queues", "kv")),
            Beat("end", "Result", "H100 at defaults: {h100-defaults:report.output_tokens_per_s:,.0f} tokens/s, "
                 "{h100-defaults:preemptions:,} preemptions. fp8 KV at 0.95: {h100-fp8-kv:report.output_tokens_per_s:,.0f} "
                 "tokens/s, {h100-fp8-kv:preemptions:,} preemptions. Alpaca's short requests on it: "
                 "{h100-fp8-kv-alpaca:report.output_tokens_per_s:,.0f} tokens/s, none. H200: "
                 "{h200-defaults:report.output_tokens_per_s:,.0f} tokens/s, none.", ("queues", "charts")),
        ],
        columns=[("KV cache (tokens)", "memory.kv_cache_size_tokens", ",d"),
                 ("clients x mean context (tokens)", "capacity.demand_tokens", ",d"), ("peak running", "peak_running", ",d"),
                 ("preemptions", "preemptions", ",d"), *TABLE_LATENCY[:3]],
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
                 "Running with its {blocks:plural:block}.", ("queues", "kv"), arms=("async",)),
            Beat("late_release", "One more schedule", "Step {step}: this pass chose its batch while {request}'s "
                 "last token was in flight, its {blocks} blocks still taken; then the token came back, {request} "
                 "finished and its blocks returned to the pool.", ("kv", "batch"), arms=("async",)),
            Beat("first_finish", "Finished in its step", "Step {step}: {request}'s last token comes back in the step that "
                 "computed it; it finishes after {output:plural:token} and its {blocks} blocks are free for the next "
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
