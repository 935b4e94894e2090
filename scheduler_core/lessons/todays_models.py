"""The lesson on the models of today: a mixture of experts with sliding-window layers (gpt-oss-120b)
beside dense models of similar weight bytes (Llama-3.3-70B in FP8) and of similar active size
(Llama-3.1-8B), on one H200 at the same memory share.

The engine runs gpt-oss with vLLM 0.33's two KV cache groups (sliding_window:128, then
full_attention, 18 layers each: scenario/kv_cache_wiring.py) over vLLM's own pool of num_blocks,
each block id a 16-token page in the 18 layers of a group. A request holds a table in each group,
and its sliding-window group gives back the blocks no later token attends to as it runs
(SlidingWindowManager.remove_skipped_blocks, the BlocksLeftWindow event): the lesson shows that
moment and claims its numbers.
"""

from __future__ import annotations

from ..timing.cost_model import CostModel
from ..timing.memory import GIB
from ..timing.model_summary import model_summary
from ..timing.presets import GPUS, MODELS
from .arms import TABLE_LATENCY
from .framework import Beat, Claim, Lesson

# 128 clients with long prompts (documents, retrieved passages): about 6,300 tokens a conversation.
LONG_PROMPTS = {"num_requests": 256, "concurrency": 128, "lengths": "lognormal", "prompt_len": 6000, "output_len": 300,
                "sigma": 0.5, "seed": 21}
# vLLM's defaults on an H200 and its own async loop; 32,768 tokens of context, as gpt-oss is often served.
MAX_MODEL_LEN = 32768
ENGINE = {"max_num_batched_tokens": 8192, "max_num_seqs": 1024, "max_model_len": MAX_MODEL_LEN, "async_scheduling": True}
GPT_OSS = "gpt-oss-120b"


def on_h200(model: str) -> dict:
    return {"model": model, "gpu": "h200", "engine": dict(ENGINE), "workload": dict(LONG_PROMPTS)}


def decode_step_ms(model: str, batch: int, context: int = 6000, part: str = "") -> float:
    """The simulation's cost of one decode step of `batch` requests (timing/cost_model.py), or of one
    part of it ("linear": the weights read and their matmuls)."""
    total, breakdown = CostModel(MODELS[model], GPUS["h200"]).step_time([(1, context)] * batch, batch)
    return 1e3 * (breakdown[part] if part else total)


MOE = MODELS[GPT_OSS].arch.moe
# What a step reads of the experts: a lone decode its k experts per layer, a full batch nearly all.
STEP_MS = {(m, b): decode_step_ms(m, b) for m in (GPT_OSS, "llama-3.1-8b") for b in (1, 128)}
# At 128 decodes the weights cost gpt-oss more than the 8B; its windowed layers read less KV.
WEIGHTS_MS = {m: decode_step_ms(m, 128, part="linear") for m in (GPT_OSS, "llama-3.1-8b")}
# A prompt chunk of the whole token budget: compute on the active parameters, every expert read once.
CHUNK_MS = {m: 1e3 * CostModel(MODELS[m], GPUS["h200"]).prefill_time(ENGINE["max_num_batched_tokens"])
            for m in (GPT_OSS, "llama-3.1-8b")}
EXPERTS_AT_128 = MOE.expected_distinct_experts(128)
# The openings quote each model's size as the configuration panel shows it.
SIZE = {m: model_summary(MODELS[m], GPUS["h200"]) for m in (GPT_OSS, "llama-3.3-70b-fp8", "llama-3.1-8b")}


def size_words(model: str) -> str:
    size = SIZE[model]
    return (f"{size['total_params'] / 1e9:.1f}B parameters in {size['weights_bytes_per_gpu'] / GIB:.1f} GiB, "
            f"{size['active_params'] / 1e9:.2f}B active per token, {size['kv_bytes_per_token_all_layers']:,} KV bytes a token")

MOE_LESSONS = [
    Lesson(
        name="moe-sliding-window",
        title="Mixture of experts and sliding windows: why gpt-oss fits more requests than its size suggests",
        summary="128 clients with prompts of about 6,000 tokens on one H200 at vLLM's defaults (0.92 of memory, "
                f"--max-model-len {MAX_MODEL_LEN:,}): gpt-oss-120b (128 experts, 4 a token, MXFP4; sliding window "
                "128 on half its layers) beside Llama-3.3-70B in FP8 (similar weight bytes) and Llama-3.1-8B (similar "
                "active parameters).",
        arms={GPT_OSS: on_h200(GPT_OSS), "dense-70b-fp8": on_h200("llama-3.3-70b-fp8"),
              "dense-8b": on_h200("llama-3.1-8b")},
        claims=[
            Claim("gpt-oss-120b holds {gpt-oss-120b:model.total_params_b:.1f}B parameters in "
                  "{gpt-oss-120b:model.weights_gib:.1f} GiB (its experts in MXFP4, 4.25 bits a weight): less memory "
                  "than Llama-3.3-70B's {dense-70b-fp8:model.total_params_b:.1f}B in FP8, "
                  "{dense-70b-fp8:model.weights_gib:.1f} GiB.",
                  lambda r: r[GPT_OSS].model["total_params"] > 1.5 * r["dense-70b-fp8"].model["total_params"]
                  and r[GPT_OSS].model["weights_bytes_per_gpu"] < r["dense-70b-fp8"].model["weights_bytes_per_gpu"]),
            Claim("Each token multiplies through {gpt-oss-120b:model.active_params_b:.2f}B of them (4 of 128 experts a "
                  "layer): fewer than the dense 8B's {dense-8b:model.active_params_b:.2f}B.",
                  lambda r: r[GPT_OSS].model["active_params"] < r["dense-8b"].model["active_params"]),
            Claim("A token's K and V take {gpt-oss-120b:model.kv_bytes_per_token_all_layers:,} bytes over gpt-oss's 36 "
                  "layers (8 KV heads of 64), against {dense-8b:model.kv_bytes_per_token_all_layers:,} over the 8B's 32 "
                  "and {dense-70b-fp8:model.kv_bytes_per_token_all_layers:,} over the 70B's 80 (8 KV heads of 128).",
                  lambda r: r[GPT_OSS].model["kv_bytes_per_token_all_layers"]
                  < r["dense-8b"].model["kv_bytes_per_token_all_layers"]
                  < r["dense-70b-fp8"].model["kv_bytes_per_token_all_layers"]),
            Claim("Half of gpt-oss's layers attend to the last 128 tokens only. vLLM's planner counts their blocks for "
                  f"a {MAX_MODEL_LEN:,}-token request as the window plus the "
                  f"2 x {ENGINE['max_num_batched_tokens']:,} tokens that may be in flight, "
                  "so the KV cache holds {gpt-oss-120b:memory.kv_cache_size_tokens:,} tokens where, every layer keeping "
                  "every token, it would hold {gpt-oss-120b:model.kv_tokens_without_windows:,}.",
                  lambda r: r[GPT_OSS].memory["kv_cache_size_tokens"] > 1.2 * r[GPT_OSS].model["kv_tokens_without_windows"]),
            Claim("Those blocks come back while a request runs: at step {gpt-oss-120b:events.first_window_release.step}, "
                  "{gpt-oss-120b:events.first_window_release.request}'s sliding-window group gives back "
                  "{gpt-oss-120b:events.first_window_release.blocks} blocks, and for its "
                  "{gpt-oss-120b:events.first_window_release.computed:,} tokens it holds "
                  "{gpt-oss-120b:events.first_window_release.held} blocks over the two groups, where keeping every "
                  "block would take {gpt-oss-120b:events.first_window_release.every}.",
                  lambda r: r[GPT_OSS].events["first_window_release"]["step"] < r[GPT_OSS].events["first_finish"]["step"]
                  and r[GPT_OSS].events["first_window_release"]["held"]
                  < 0.6 * r[GPT_OSS].events["first_window_release"]["every"]),
            Claim("vLLM would log a maximum concurrency of {gpt-oss-120b:memory.max_concurrency:.2f}x for "
                  f"{MAX_MODEL_LEN:,}-token requests, against {{dense-8b:memory.max_concurrency:.2f}}x for the dense 8B "
                  "and {dense-70b-fp8:memory.max_concurrency:.2f}x for the dense 70B: the 117B-parameter model fits "
                  "more requests than the 8B.",
                  lambda r: r[GPT_OSS].memory["max_concurrency"] > r["dense-8b"].memory["max_concurrency"]
                  > r["dense-70b-fp8"].memory["max_concurrency"]),
            Claim("All {gpt-oss-120b:peak_running} clients run at once on gpt-oss-120b, with "
                  "{gpt-oss-120b:preemptions:,} preemptions; on the dense 70B at most {dense-70b-fp8:peak_running} run "
                  "at once, with {dense-70b-fp8:preemptions:,} preemptions.",
                  lambda r: r[GPT_OSS].peak_running == 128 and r[GPT_OSS].preemptions == 0
                  and r["dense-70b-fp8"].peak_running < 64 and r["dense-70b-fp8"].preemptions > 0),
            Claim("Output: {gpt-oss-120b:report.output_tokens_per_s:,.0f} tokens/s on gpt-oss-120b against "
                  "{dense-70b-fp8:report.output_tokens_per_s:,.0f} on the dense 70B; median time to first token "
                  "{gpt-oss-120b:report.ttft_s.p50:.2f} s against {dense-70b-fp8:report.ttft_s.p50:.1f} s.",
                  lambda r: r[GPT_OSS].report["output_tokens_per_s"] > 3 * r["dense-70b-fp8"].report["output_tokens_per_s"]
                  and r[GPT_OSS].report["ttft_s"]["p50"] < r["dense-70b-fp8"].report["ttft_s"]["p50"]),
            Claim(f"Active size is not the whole cost: a lone decode reads {MOE.experts_per_token} experts a layer and "
                  f"takes {STEP_MS[GPT_OSS, 1]:.2f} ms against the dense 8B's {STEP_MS['llama-3.1-8b', 1]:.2f} ms, but "
                  f"128 decodes route to about {EXPERTS_AT_128:.0f} of the 128 experts a layer, so a step reads nearly "
                  f"every weight: {WEIGHTS_MS[GPT_OSS]:.1f} ms of weights and matmuls against the 8B's "
                  f"{WEIGHTS_MS['llama-3.1-8b']:.1f} ms (the whole step {STEP_MS[GPT_OSS, 128]:.1f} ms against "
                  f"{STEP_MS['llama-3.1-8b', 128]:.1f}: half of gpt-oss's layers read a 128-token window of KV). Nor "
                  "are the long prompts cheaper: an 8,192-token chunk, though computed on the active parameters, takes "
                  f"{CHUNK_MS[GPT_OSS]:.0f} ms against {CHUNK_MS['llama-3.1-8b']:.0f} ms, because each expert's "
                  "matmul gets only its share of the chunk's tokens and vLLM's fused-MoE kernel runs it far below the "
                  "tensor cores' rate; the output is {gpt-oss-120b:report.output_tokens_per_s:,.0f} against "
                  "{dense-8b:report.output_tokens_per_s:,.0f} tokens/s.",
                  lambda r: STEP_MS[GPT_OSS, 1] < STEP_MS["llama-3.1-8b", 1] and EXPERTS_AT_128 > 0.9 * MOE.num_experts
                  and WEIGHTS_MS[GPT_OSS] > 2 * WEIGHTS_MS["llama-3.1-8b"]
                  and CHUNK_MS[GPT_OSS] > CHUNK_MS["llama-3.1-8b"]
                  and r[GPT_OSS].report["output_tokens_per_s"] < r["dense-8b"].report["output_tokens_per_s"]),
        ],
        beats=[
            Beat("opening", "More parameters, less memory", f"gpt-oss-120b: {size_words(GPT_OSS)}. After the weights, "
                 "{num_gpu_blocks:,} KV blocks, each a page of {block_size} tokens in 18 layers: vLLM's two KV cache groups "
                 "(18 sliding-window layers, 18 full) each hold a table of them per request, and the sliding-window "
                 "one only the last 128 tokens' worth. 128 clients, prompts of about 6,000 tokens.",
                 ("kv", "queues"), arms=(GPT_OSS,)),
            Beat("opening", "A dense 70B", f"Llama-3.3-70B in FP8: {size_words('llama-3.3-70b-fp8')}, every layer full "
                 "attention: {num_gpu_blocks:,} KV blocks of {block_size} tokens for 128 clients. Watch the KV gauge.",
                 ("kv", "queues"), arms=("dense-70b-fp8",)),
            Beat("opening", "A dense 8B", f"Llama-3.1-8B: {size_words('llama-3.1-8b')}: {{num_gpu_blocks:,}} KV blocks "
                 "of {block_size} tokens.", ("kv", "queues"), arms=("dense-8b",)),
            Beat("first_chunk", "Long prompts", "Step {step}: {request}'s {prompt}-token prompt is computed in chunks: "
                 "{tokens:plural:token} now, {rest} left. Prompt tokens cost compute on the 5.1B active parameters only.",
                 ("batch", "queues"), arms=(GPT_OSS,)),
            Beat("kv_high", "Full already", "Step {step}: KV usage is {kv}% with {running:plural:request} running and "
                 "{waiting} waiting.", ("kv", "queues"), arms=("dense-70b-fp8",)),
            Beat("first_preemption", "Preemption", "Step {step}: blocks ran out; {request}, the newest running request, "
                 "is preempted: {fate}.", ("queues", "kv"), arms=("dense-70b-fp8",)),
            Beat("first_window_release", "Out of the window", "Step {step}: {request} has computed {computed:,} tokens; "
                 "its sliding-window group gives back {blocks:plural:block} that no later token attends to, keeping the null "
                 "block in their slots. It holds {held} blocks over its two groups, not {every}.", ("kv", "batch"),
                 arms=(GPT_OSS,)),
            Beat("peak_running", "Everyone runs", "Step {step}: {running} requests run at once, the most in this run; "
                 "{waiting} wait. A decode step of 128 touches nearly every expert: it reads about all the weights.",
                 ("queues", "kv"), arms=(GPT_OSS,)),
            Beat("peak_running", "How many run", "Step {step}: {running} requests run at once, the most in this run; "
                 "{waiting} wait.", ("queues", "kv"), arms=("dense-70b-fp8", "dense-8b")),
            Beat("first_finish", "Blocks back", "Step {step}: {request} finishes after {output:plural:token}: its "
                 "full-attention group's {blocks} blocks return to the pool, with the few its sliding-window group "
                 "still held.", ("kv", "queues"), arms=(GPT_OSS,)),
            Beat("end", "Result", "gpt-oss-120b: {gpt-oss-120b:memory.kv_cache_size_tokens:,} KV tokens, "
                 "{gpt-oss-120b:peak_running} running at once, {gpt-oss-120b:report.output_tokens_per_s:,.0f} tokens/s. "
                 "Dense 70B FP8: {dense-70b-fp8:memory.kv_cache_size_tokens:,} tokens, {dense-70b-fp8:peak_running} at "
                 "once, {dense-70b-fp8:report.output_tokens_per_s:,.0f} tokens/s. Dense 8B: "
                 "{dense-8b:memory.kv_cache_size_tokens:,} tokens, {dense-8b:report.output_tokens_per_s:,.0f} tokens/s.",
                 ("queues", "charts")),
        ],
        columns=[("weights per GPU (GiB)", "model.weights_gib", ".1f"), ("parameters (B)", "model.total_params_b", ".1f"),
                 ("active per token (B)", "model.active_params_b", ".2f"),
                 ("KV bytes per token", "model.kv_bytes_per_token_all_layers", ",d"),
                 ("KV cache (tokens)", "memory.kv_cache_size_tokens", ",d"),
                 ("max concurrency", "memory.max_concurrency", ".2f"), ("peak running", "peak_running", ",d"),
                 *TABLE_LATENCY[:2], ("preemptions", "preemptions", ",d")],
    ),
]
