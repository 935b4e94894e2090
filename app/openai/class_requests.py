"""The class as the workload: the served session's dashboard page has a "send a request" form,
and what a student sends there is served like any client's (`routes.submit`, the one way in:
vLLM's checks, the stand-in tokenizer, the engine's per-client quotas).

Telling students apart. A class often sits behind one NAT, so an address is a room, not a
student. Each browser makes itself a random sender key (128 bits, kept in its localStorage) and
sends it with every request: the engine's per-client quotas (`ServeLimits`: unfinished requests
and new requests a second) count per address *and* key. A key costs nothing to make, so all the
keys behind one address together also share CLASS_LIMITS' bucket, which lets a whole room press
Send at once but keeps one machine that makes keys in a loop to a share of the server.

Whose request is whose is never broadcast: the answer to the POST (its `X-Request-Id` header and
the stream's ids) tells the sender alone, and the page marks that request "yours" for itself.
The prompt's text is tokenized and dropped, as the API's is: no screen, the projector's included,
can show it.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..rate_limits import RateLimit
from ..routes.api import client_of
from .errors import OpenAIError
from .protocol import CompletionRequest
from .responses import Completion
from .routes import submit

router = APIRouter()

# What the form accepts: a question's worth of text and a short answer, so a class's requests
# stay readable as they run (the API takes up to max_model_len).
MAX_PROMPT_CHARS = 2_000
MAX_OUTPUT_TOKENS = 256
SENDER_PATTERN = r"^[0-9a-f]{32}$"
FORM_BOUNDS = {"max_prompt_chars": MAX_PROMPT_CHARS, "max_output_tokens": MAX_OUTPUT_TOKENS}  # the page's form states them


class ClassRequest(BaseModel):
    """What the form POSTs (JSON): the prompt, its output length and the browser's sender key."""

    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    max_tokens: int = Field(ge=1, le=MAX_OUTPUT_TOKENS)
    sender: str = Field(pattern=SENDER_PATTERN)


class ClassLimits:
    """All the senders behind one address together: a room of 100 may send one each at once
    (the burst), then 5 a second; the server's bucket is the engine's own (ServeLimits)."""

    def __init__(self, per_address_per_s: float = 5.0, burst: float = 100.0, per_server_per_s: float = 20.0):
        self.rate = RateLimit("requests from the class form", per_address_per_s, per_server_per_s, burst)


def served_session(request: Request, session_id: str):
    served = getattr(request.app.state, "served", None)
    if served is None or served.engine.live.session.session_id != session_id:
        raise HTTPException(404, f"session {session_id!r} is not a served session: it takes no requests")
    return served


@router.post("/s/{session_id}/requests", include_in_schema=False)
async def send_request(request: Request, session_id: str, body: ClassRequest) -> Response:
    """One request from the class form, streamed back to its sender as vLLM's server-sent events
    (with the usage after every step's tokens, so the page can time them)."""
    served = served_session(request, session_id)
    address = client_of(request)
    request.app.state.class_limits.rate.check(address)
    data = {"prompt": body.prompt, "max_tokens": body.max_tokens, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    try:
        stream, wanted = await submit(served, CompletionRequest, data, f"{address}/{body.sender}")
    except OpenAIError as e:
        return JSONResponse({"detail": e.message, "field": e.param}, status_code=e.status, headers=e.headers)
    completion = Completion(stream, wanted, served.model_name, False, served.output_tokenizer)
    return StreamingResponse(completion.events(), media_type="text/event-stream",
                             headers={"X-Request-Id": stream.request_id})
