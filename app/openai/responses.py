"""What the routes answer, in vLLM's shapes: a whole completion or chat completion, or its stream
of server-sent events (one `data:` event per engine step that produced tokens, as vLLM's
`stream_interval` 1 sends them; the usage event when `stream_options.include_usage`; `[DONE]`)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from scheduler_core.workload.standin_tokenizer import StandInTokenizer

from .engine import TokenStream
from .errors import OpenAIError
from .protocol import ServedRequest


def sse(data: dict) -> str:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"


DONE = "data: [DONE]\n\n"


@dataclass
class Completion:
    """One served request's answer being written: chat or text, with the parts every chunk repeats."""

    stream: TokenStream
    request: ServedRequest
    model: str
    chat: bool
    tokenizer: StandInTokenizer

    def __post_init__(self):
        self.id = f"{'chatcmpl' if self.chat else 'cmpl'}-{self.stream.request_id}"
        self.created = int(time.time())
        self.object = "chat.completion" if self.chat else "text_completion"

    def text(self, start: int, end: int) -> str:
        """The stand-in text of generated tokens [start, end): EOS, when it ends the request, has none."""
        stream, tokenizer = self.stream, self.tokenizer
        last = stream.output_len - 1 if stream.finish_reason == "stop" else stream.output_len
        return "".join(tokenizer.decode_token(tokenizer.output_token(stream.index, position))
                       for position in range(start, min(end, last)))

    def usage(self, completion_tokens: int) -> dict:
        prompt = self.stream.num_prompt_tokens
        return {"prompt_tokens": prompt, "total_tokens": prompt + completion_tokens, "completion_tokens": completion_tokens,
                "prompt_tokens_details": None}

    def head(self, kind: str | None = None) -> dict:
        return {"id": self.id, "object": kind or self.object, "created": self.created, "model": self.model}

    async def whole(self) -> dict:
        """The non-streaming answer, once the request has finished."""
        finished = False
        while not finished:
            _, finished = await self.stream.wait()
        stream, text = self.stream, self.text(0, self.stream.output_len)
        if self.chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text, "refusal": None, "annotations": None,
                                              "audio": None, "function_call": None, "tool_calls": [], "reasoning": None},
                      "logprobs": None, "finish_reason": stream.finish_reason, "stop_reason": None, "token_ids": None}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": stream.finish_reason, "stop_reason": None,
                      "prompt_logprobs": None, "prompt_token_ids": None}
        return {**self.head(), "choices": [choice], "service_tier": None, "system_fingerprint": None,
                "usage": self.usage(stream.output_len), "prompt_logprobs": None, "kv_transfer_params": None}

    def choice(self, text: str, finish_reason: str | None, role: str | None = None) -> dict:
        if self.chat:
            delta = {"role": role, "content": text} if role else {"content": text}
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason,
                    **({"stop_reason": None} if finish_reason else {})}
        return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason, "stop_reason": None}

    def chunk(self, choices: list[dict], usage: dict | None = None) -> str:
        kind = "chat.completion.chunk" if self.chat else "text_completion"
        return sse({**self.head(kind), "choices": choices, **({"usage": usage} if usage is not None else {})})

    async def events(self) -> AsyncIterator[str]:
        """The stream: for a chat, first the assistant's role (sent with the first token, when
        vLLM's first output comes), then an event per step's tokens, the last with its
        finish_reason; the usage event if asked; `[DONE]`."""
        sent, finished, request = 0, False, self.request
        try:
            while not finished:
                released, finished = await self.stream.wait()
                if released == sent and not finished:
                    continue
                if self.chat and sent == 0:
                    yield self.chunk([self.choice("", None, role="assistant")],
                                     self.usage(0) if request.continuous_usage else None)
                reason = self.stream.finish_reason if finished else None
                usage = self.usage(released) if request.continuous_usage else None
                yield self.chunk([self.choice(self.text(sent, released), reason)], usage)
                sent = released
            if request.include_usage:
                yield self.chunk([], self.usage(sent))
        except OpenAIError as e:
            yield sse(e.body())
        yield DONE
