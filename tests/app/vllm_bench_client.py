"""A client that speaks `vllm bench serve`'s protocol (vLLM 0.33's
`vllm/benchmarks/lib/endpoint_request_func.py`, read, not copied; vLLM itself needs torch):
aiohttp, the same payloads (`repetition_penalty`, `logprobs: null`, `stream_options.include_usage`,
`ignore_eos` when asked), the same SSE splitting on blank lines, the same rules for what counts as a
token event and how TTFT and ITL are timed (`time.perf_counter` at each event that carries output;
the usage event gives `completion_tokens`). It also keeps each event's time, for the pacing test."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import aiohttp


@dataclass
class BenchOutput:
    success: bool = False
    error: str = ""
    ttft: float = 0.0
    itl: list[float] = field(default_factory=list)
    latency: float = 0.0
    output_tokens: int | None = None
    prompt_len: int | None = None
    generated_text: str = ""
    start_time: float = 0.0
    response_id: str = ""
    event_texts: list[str] = field(default_factory=list)  # each token event's text, in order


def split_events(buffer: str) -> tuple[list[str], str]:
    """Complete SSE messages in `buffer` (split on a blank line) and what is left of it."""
    messages = []
    while "\n\n" in buffer:
        message, buffer = buffer.split("\n\n", 1)
        if message.strip():
            messages.append(message.strip())
    return messages, buffer


def has_streamed_output(choice: dict) -> bool:
    """vLLM's rule for a chat event: it carries output, or is an empty token event without a role."""
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return False
    if delta.get("content") or delta.get("reasoning") or delta.get("tool_calls") or delta.get("function_call"):
        return True
    return delta.get("content") == "" and "role" not in delta


async def bench_request(session: aiohttp.ClientSession, base_url: str, model: str, prompt: str, output_len: int,
                        chat: bool = False, ignore_eos: bool = False) -> BenchOutput:
    if chat:
        url = f"{base_url}/v1/chat/completions"
        payload = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_completion_tokens": output_len,
                   "stream": True, "stream_options": {"include_usage": True}}
    else:
        url = f"{base_url}/v1/completions"
        payload = {"model": model, "prompt": prompt, "repetition_penalty": 1.0, "max_tokens": output_len, "logprobs": None,
                   "stream": True, "stream_options": {"include_usage": True}}
    if ignore_eos:
        payload["ignore_eos"] = True
    output = BenchOutput()
    start = most_recent = output.start_time = time.perf_counter()
    async with session.post(url=url, json=payload, headers={"Content-Type": "application/json"} if chat else {}) as response:
        if response.status != 200:
            output.error = response.reason or ""
            return output
        buffer, first = "", True
        async for chunk_bytes in response.content.iter_any():
            messages, buffer = split_events(buffer + chunk_bytes.decode())
            for message in messages:
                if message.startswith(":"):
                    continue
                data_text = message.removeprefix("data: ")
                if data_text == "[DONE]":
                    continue
                timestamp = time.perf_counter()
                data = json.loads(data_text)
                output.response_id = data.get("id", output.response_id)
                choices = data.get("choices")
                if choices and (not chat or has_streamed_output(choices[0])):
                    text = (choices[0]["delta"].get("content") if chat else choices[0].get("text")) or ""
                    if first:
                        output.ttft, first = timestamp - start, False
                    else:
                        output.itl.append(timestamp - most_recent)
                    most_recent = timestamp
                    output.generated_text += text
                    output.event_texts.append(text)
                elif usage := data.get("usage"):
                    output.output_tokens = usage.get("completion_tokens")
                    output.prompt_len = usage.get("prompt_tokens")
        output.success = not first
        output.latency = most_recent - start
    return output
