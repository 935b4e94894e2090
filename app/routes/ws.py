"""The websocket of a session: a snapshot on connect, then deltas, events, status and errors.

The presenter proves it holds the control token with its first message, `{"type": "auth",
"token": ...}`, never in the URL: URLs end up in access logs and browser history."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from ..frames import PROTOCOL_VERSION
from ..viewer import Viewer, error_frame

router = APIRouter()
# Close code of a websocket refused for the viewer caps (4000-4999: the application's own).
TOO_MANY_VIEWERS = 4429
# ... and of a viewer dropped for not reading what it was sent (app.viewer_bytes).
NOT_READING = 4408
# How long a dropped viewer's close frame may wait behind what it did not read.
CLOSE_WAIT_S = 0.5


@router.websocket("/ws/{session_id}")
async def session_socket(websocket: WebSocket, session_id: str) -> None:
    manager = websocket.app.state.manager
    live = manager.get(session_id)
    await websocket.accept()
    if live is None:
        await websocket.send_json({"v": PROTOCOL_VERSION, "type": "error", "code": "no_session",
                                   "message": f"no session {session_id!r}"})
        await websocket.close(code=4404)
        return
    settings = manager.settings
    refusal = viewer_refusal(manager, live, websocket.client.host if websocket.client else "")
    if refusal is not None:
        await websocket.send_text(error_frame("too_many_viewers", refusal))
        await websocket.close(code=TOO_MANY_VIEWERS)
        return
    viewer = Viewer(websocket, False, settings.event_backlog, websocket.app.state.viewer_bytes)
    live.viewers.add(viewer)
    live.viewers_changed()
    sender = asyncio.create_task(viewer.send_loop(live, settings.heartbeat_s, settings.viewer_stall_s))
    receive = asyncio.create_task(websocket.receive())
    try:
        while True:
            done, _ = await asyncio.wait({receive, sender}, return_when=asyncio.FIRST_COMPLETED)
            if sender in done or gone(receive):  # the connection broke while sending, or closed
                break
            message = receive.result()
            # Read the next message while this one is handled, so a disconnect is seen at once.
            receive = asyncio.create_task(websocket.receive())
            if message.get("text") is None:
                viewer.reply(error_frame("bad_message", "send JSON text frames, not binary ones"))
                continue
            handling = asyncio.create_task(live.handle(viewer, message["text"]))
            while not handling.done():
                watched = {handling, sender} if receive.done() else {handling, sender, receive}
                await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
                if sender.done() or gone(receive):
                    # The presenter left mid-command: a long step or seek stops now.
                    handling.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await handling
                    return
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        receive.cancel()
        live.viewers.discard(viewer)
        sender.cancel()
        with contextlib.suppress(BaseException):
            await sender
        live.viewers_changed()
        if viewer.dropped:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_WAIT_S):
                    await websocket.close(code=NOT_READING, reason=viewer.dropped[:120])


def viewer_refusal(manager, live, client: str) -> str | None:
    """Why one more websocket from `client` to `live` is refused, if it is: each one holds up to
    a snapshot in its send buffer (megabytes for a large pool) until it reads or is dropped."""
    settings = manager.settings
    if len(live.viewers) >= settings.max_viewers_per_session:
        return f"this session has {len(live.viewers)} viewers, the most it takes"
    quota = settings.max_viewers_per_client
    if quota and sum(viewer.client == client for other in manager.sessions.values() for viewer in other.viewers) >= quota:
        return f"each client may have {quota} viewers open on this server; close one first"
    return None


def gone(receive: asyncio.Task) -> bool:
    """Whether this read of the socket says the client is gone."""
    if not receive.done():
        return False
    if receive.cancelled() or receive.exception() is not None:
        return True
    return receive.result()["type"] == "websocket.disconnect"
