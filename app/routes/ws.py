"""The websocket of a session: a snapshot on connect, then deltas, events, status and errors."""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from ..frames import PROTOCOL_VERSION
from ..live import Viewer, error_frame

router = APIRouter()


@router.websocket("/ws/{session_id}")
async def session_socket(websocket: WebSocket, session_id: str, token: str = "") -> None:
    manager = websocket.app.state.manager
    live = manager.get(session_id)
    await websocket.accept()
    if live is None:
        await websocket.send_json({"v": PROTOCOL_VERSION, "type": "error", "code": "no_session", "message": f"no session {session_id!r}"})
        await websocket.close(code=4404)
        return
    can_control = bool(token) and secrets.compare_digest(token, live.session.control_token)
    settings = manager.settings
    viewer = Viewer(websocket, can_control, settings.event_backlog)
    live.viewers.add(viewer)
    live.publish_status()
    sender = asyncio.create_task(viewer.send_loop(live, settings.heartbeat_s))
    try:
        while True:
            receive = asyncio.create_task(websocket.receive())
            done, _ = await asyncio.wait({receive, sender}, return_when=asyncio.FIRST_COMPLETED)
            if sender in done:  # the connection broke while sending
                receive.cancel()
                break
            message = receive.result()
            if message["type"] == "websocket.disconnect":
                break
            if message.get("text") is None:
                viewer.reply(error_frame("bad_message", "send JSON text frames, not binary ones"))
                continue
            await live.handle(viewer, message["text"])
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        live.viewers.discard(viewer)
        sender.cancel()
        with contextlib.suppress(BaseException):
            await sender
        live.publish_status()
