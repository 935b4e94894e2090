"""vLLM's OpenAI-compatible routes over the served session: `/v1/completions`,
`/v1/chat/completions`, `/v1/models`, `/health`, `/version` (and `/metrics`, the dashboard's, for
the served session). Host, Origin and body size are checked before any of them (`app/guards.py`:
a client that is not a browser sends no Origin; a browser page of another site is refused)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..rate_limits import limit
from ..routes.api import client_of
from ..routes.metrics import session_series
from ..vllm_metrics import render_metrics
from .engine import TokenStream
from .errors import OpenAIError
from .protocol import ChatCompletionRequest, CompletionRequest, ServedRequest, parse
from .responses import Completion

router = APIRouter()
# Text longer than this is tokenized in a thread, so the event loop keeps pacing the streams.
THREAD_TOKENIZE_CHARS = 16_384


async def body_of(request: Request) -> object:
    try:
        return json.loads(await request.body())
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deeply, a number too long
        raise OpenAIError(400, "the body is not valid JSON", "body") from None


async def submit(served, model: type, data: object, client: str) -> tuple[TokenStream, ServedRequest]:
    """The one way into the served engine, for the API and the dashboard's class form
    (`class_requests.py`): `data` checked as vLLM checks it, tokenized and submitted for
    `client`'s quotas; OpenAIError naming the field when it cannot be served."""
    body = parse(model, data)
    wanted = ServedRequest.of(body)
    if wanted.model and wanted.model != served.model_name:
        raise OpenAIError(404, f"The model `{wanted.model}` does not exist. Valid aliases: {served.model_name}.",
                          "model", "NotFoundError")
    tokenizer = served.tokenizer
    if isinstance(body, ChatCompletionRequest):
        text = tokenizer.apply_chat_template([(m.role, m.text()) for m in body.messages])
    else:
        text = wanted.prompt_text
    if text is None:
        ids = wanted.prompt_token_ids
    elif len(text) > THREAD_TOKENIZE_CHARS:
        ids = await asyncio.to_thread(tokenizer.encode, text)
    else:
        ids = tokenizer.encode(text)
    stream = await served.engine.submit(ids, wanted.max_tokens, wanted.ignore_eos, client, wanted.max_tokens_param)
    return stream, wanted


async def serve(request: Request, model: type, chat: bool) -> Response:
    served = request.app.state.served
    try:
        stream, wanted = await submit(served, model, await body_of(request), client_of(request))
        completion = Completion(stream, wanted, served.model_name, chat, served.output_tokenizer)
        if wanted.stream:
            return StreamingResponse(events_until_closed(completion, served.engine), media_type="text/event-stream")
        answer = await unless_disconnected(request, completion.whole())
        if answer is None:
            served.engine.abort(stream.request_id)
            return Response(status_code=499)  # nobody reads it: the client has gone
        return JSONResponse(answer)
    except OpenAIError as e:
        return e.response()


async def events_until_closed(completion: Completion, engine) -> AsyncIterator[str]:
    """The stream's events. Closed or cancelled before its end (Starlette cancels it when the
    client goes away), the request is aborted, as vLLM's `generate` aborts on CancelledError."""
    ended = False
    try:
        async for event in completion.events():
            yield event
        ended = True
    finally:
        if not ended:
            engine.abort(completion.stream.request_id)


async def unless_disconnected(request: Request, answer: Awaitable[dict]) -> dict | None:
    """`answer`, or None if the client disconnects first (vLLM's `with_cancellation`: the body is
    read, so the next ASGI message is the disconnect; waiting for it costs nothing)."""
    answering = asyncio.ensure_future(answer)
    watching = asyncio.ensure_future(disconnected(request))
    try:
        await asyncio.wait((answering, watching), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        gone = not answering.done()
        answering.cancel()
    return None if gone else answering.result()


async def disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


@router.post("/v1/completions")
async def completions(request: Request) -> Response:
    return await serve(request, CompletionRequest, chat=False)


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    return await serve(request, ChatCompletionRequest, chat=True)


@router.get("/v1/models")
def models(request: Request) -> dict:
    served = request.app.state.served
    card = {"id": served.model_name, "object": "model", "created": served.created, "owned_by": "vllm",
            "root": served.model_name, "parent": None, "max_model_len": served.engine.sim.config.max_model_len,
            "permission": []}
    return {"object": "list", "data": [card]}


@router.get("/health")
def health() -> Response:
    return Response(status_code=200)


@router.get("/version")
def version(request: Request) -> dict:
    return {"version": request.app.state.served.vllm_version}


def served_metrics(request: Request) -> Response:
    """The served session's metrics, vLLM's whole set, labelled with the served model name as vLLM
    labels them (`--served-model-name`, else the model)."""
    limit(request, "metrics")
    served = request.app.state.served
    series = dataclasses.replace(session_series(served.engine.live.session), model_name=served.model_name)
    return Response(render_metrics([series]), media_type=CONTENT_TYPE_LATEST)
