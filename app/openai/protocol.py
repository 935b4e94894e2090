"""The requests `/v1/completions` and `/v1/chat/completions` accept: vLLM's fields that change
what a stand-in serves, each bounded, and vLLM's own checks on them (`ServedRequest.of`).

Fields that only shape sampling (temperature, top_p, seed, logprobs, repetition_penalty, ...) are
accepted and ignored: the stand-in's tokens are fixed, and clients such as `vllm bench serve`
send them on every request. Everything arrives through `parse`, which returns the validated
request or an `OpenAIError` naming the field, as vLLM's 400 does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import OpenAIError

# Bounds that keep one request's parsing and memory small (the body is at most Settings.max_body_bytes too).
MAX_MESSAGES = 1024
MAX_NAME_CHARS = 256


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    include_usage: bool | None = False
    continuous_usage_stats: bool | None = False


class GenerationFields(BaseModel):
    """What both routes share."""

    model_config = ConfigDict(extra="ignore")
    model: str | None = Field(None, max_length=MAX_NAME_CHARS)
    max_tokens: int | None = Field(None, ge=-(2**31), lt=2**31)
    n: int | None = Field(1, ge=-(2**31), lt=2**31)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    ignore_eos: bool = False


class CompletionRequest(GenerationFields):
    prompt: str | list[int] | list[str] | list[list[int]]


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class ChatCompletionRequest(GenerationFields):
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    max_completion_tokens: int | None = Field(None, ge=-(2**31), lt=2**31)


@dataclass(frozen=True)
class ServedRequest:
    """A request as the stand-in serves it: its prompt (text or ids), output budget and streaming."""

    prompt_text: str | None
    prompt_token_ids: list[int] | None
    max_tokens: int | None
    max_tokens_param: str
    ignore_eos: bool
    stream: bool
    include_usage: bool
    continuous_usage: bool
    model: str | None

    @classmethod
    def of(cls, body: GenerationFields) -> "ServedRequest":
        """vLLM's checks that need no tokenizer: one choice, stream options only with a stream."""
        if body.n not in (None, 1):
            raise OpenAIError(400, "this stand-in serves n=1 only", "n")
        if body.stream_options is not None and not body.stream:
            raise OpenAIError(400, "Stream options can only be defined when `stream=True`.", "stream_options")
        options = body.stream_options or StreamOptions()
        include_usage = bool(options.include_usage)
        if isinstance(body, ChatCompletionRequest):
            text, ids = None, None
            max_tokens, param = ((body.max_completion_tokens, "max_completion_tokens") if body.max_completion_tokens is not None
                                 else (body.max_tokens, "max_tokens"))
        else:
            prompt = body.prompt
            if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int):
                if len(prompt) != 1:
                    raise OpenAIError(400, "this stand-in serves one prompt per request", "prompt")
                prompt = prompt[0]
            if isinstance(prompt, list) and not all(0 <= token < 2**31 for token in prompt):
                raise OpenAIError(400, "token ids must be integers from 0 to 2**31 - 1", "prompt")
            text, ids = (prompt, None) if isinstance(prompt, str) else (None, prompt)
            max_tokens, param = body.max_tokens, "max_tokens"
        if max_tokens is not None and max_tokens < 1:
            raise OpenAIError(400, f"{param} must be at least 1, got {max_tokens}.", param)
        return cls(text, ids, max_tokens, param, body.ignore_eos, bool(body.stream), include_usage,
                   include_usage and bool(options.continuous_usage_stats), body.model)


def is_type_name(part: object) -> bool:
    """A part of pydantic's location that names a union's branch (`str`, `list[int]`), not a field."""
    return isinstance(part, str) and (part in ("str", "int", "bool", "list", "dict", "none") or "[" in part)


def parse(model: type[GenerationFields], data: object) -> GenerationFields:
    """`data` (the body's JSON) as `model`, or an OpenAIError naming the first field at fault; the
    value sent is never echoed (it may be what made the request bad)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        errors = e.errors(include_input=False, include_url=False)
        first = errors[0]
        loc = ".".join(str(part) for part in ("body", *first["loc"]) if not is_type_name(part))
        label = "error" if len(errors) == 1 else "errors"
        return_text = f"{len(errors)} validation {label}: {loc}: {first['msg']}"
        raise OpenAIError(400, return_text, loc, "Bad Request") from None
