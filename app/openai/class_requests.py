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
The prompt's text is tokenized and dropped, as the API's is, so no screen, the projector's
included, can show a stranger's words; unless the lecturer opts in when starting the server
(`show_class_prompts`): then the form's prompts (their first SHOWN_PROMPT_CHARS) are kept and any
page's inspector shows them, as text, and the form tells the class so.
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
# What the projector shows of a prompt when the lecturer opted in: a line, not an essay.
SHOWN_PROMPT_CHARS = 200


class ClassRequest(BaseModel):
    """What the form POSTs (JSON): the prompt, its output length and the browser's sender key."""

    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    max_tokens: int = Field(ge=1, le=MAX_OUTPUT_TOKENS)
    sender: str = Field(pattern=SENDER_PATTERN)


class ClassDesk:
    """The class form's server side: its limit per address, all the senders behind one address
    together (a room of 100 may send one each at once, the burst, then 5 a second; the engine's
    quotas hold per sender and for the server), and the prompts kept when the lecturer opted in."""

    def __init__(self, show_prompts: bool = False, max_prompts: int = 20_000, per_address_per_s: float = 5.0,
                 burst: float = 100.0, per_server_per_s: float = 20.0):
        self.rate = RateLimit("requests from the class form", per_address_per_s, per_server_per_s, burst)
        self.show_prompts = show_prompts
        self.max_prompts = max_prompts  # the session's request budget: each at most SHOWN_PROMPT_CHARS
        self.prompts: dict[str, str] = {}
        # What the page's form states and the template needs.
        self.form = {"max_prompt_chars": MAX_PROMPT_CHARS, "max_output_tokens": MAX_OUTPUT_TOKENS,
                     "shows_prompts": show_prompts, "shown_prompt_chars": SHOWN_PROMPT_CHARS}

    def keep_prompt(self, request_id: str, prompt: str) -> None:
        if self.show_prompts and len(self.prompts) < self.max_prompts:
            self.prompts[request_id] = prompt[:SHOWN_PROMPT_CHARS]


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
    desk = request.app.state.class_desk
    desk.rate.check(address)
    data = {"prompt": body.prompt, "max_tokens": body.max_tokens, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    try:
        stream, wanted = await submit(served, CompletionRequest, data, f"{address}/{body.sender}")
    except OpenAIError as e:
        return JSONResponse({"detail": e.message, "field": e.param}, status_code=e.status, headers=e.headers)
    desk.keep_prompt(stream.request_id, body.prompt)
    completion = Completion(stream, wanted, served.model_name, False, served.output_tokenizer)
    return StreamingResponse(completion.events(), media_type="text/event-stream",
                             headers={"X-Request-Id": stream.request_id})


@router.get("/s/{session_id}/requests/{request_id}/prompt", include_in_schema=False)
def shown_prompt(request: Request, session_id: str, request_id: str) -> dict:
    """A class form's prompt, for the inspector, when the lecturer opted in; else a 404."""
    served_session(request, session_id)
    prompt = request.app.state.class_desk.prompts.get(request_id)
    if prompt is None:
        raise HTTPException(404, "no prompt to show: this server shows none, or that request was not sent from the class form")
    return {"request_id": request_id, "prompt": prompt}
