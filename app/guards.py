"""What every request passes before it reaches a route: a Host this server answers to, an Origin
it trusts, and a body of bounded size.

DNS rebinding is a page on evil.example whose name later resolves to 127.0.0.1: the browser then
sends the lecturer's own server requests with `Host: evil.example` and lets that page read the
answers. Answering only to loopback names (and the names given with `--allowed-host`) stops it;
refusing a foreign `Origin` stops another site's page from driving a session with a token it
got hold of, websockets included (browsers do not apply the same-origin policy to them).
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
# WebSocket close code 1008: "policy violation".
POLICY_VIOLATION = 1008


def host_name(host: str) -> str:
    """The name in a Host header, without its port: `[::1]:8000` -> `::1`, `Example.org:80` -> `example.org`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else ""
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostPolicy:
    """Which Host names this server answers to: loopback, the names it was given, and (on a
    public server) any IP address, which no attacker can point at another machine's DNS name."""

    def __init__(self, allowed_hosts: tuple[str, ...] = (), allow_ip_literals: bool = False):
        self.names = LOOPBACK_NAMES | {host_name(name) for name in allowed_hosts}
        self.allow_ip_literals = allow_ip_literals

    def allows(self, name: str) -> bool:
        return name in self.names or (self.allow_ip_literals and is_ip_literal(name))

    def refusal(self, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None."""
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.allows(host_name(host)):
            return 400, (f"this server does not answer to the host name {host_name(host)!r}; "
                         "start it with --allowed-host NAME to serve under that name")
        origin = headers.get(b"origin")
        if origin is not None:
            parts = urlsplit(origin.decode("latin-1"))
            if parts.scheme not in ("http", "https") or not self.allows((parts.hostname or "").lower()):
                return 403, "requests from another site's pages are refused (Origin not allowed)"
        return None


class RequestGuard:
    """ASGI middleware: Host and Origin checks on HTTP and websockets, and the body size limit."""

    def __init__(self, app, policy: HostPolicy, max_body_bytes: int):
        self.app = app
        self.policy = policy
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        refusal = self.policy.refusal(headers)
        if refusal is not None:
            status, reason = refusal
            if scope["type"] == "websocket":
                # Accept only to say why, with the policy-violation close code.
                await receive()  # websocket.connect
                await send({"type": "websocket.accept"})
                await send({"type": "websocket.close", "code": POLICY_VIOLATION, "reason": reason[:120]})
                return
            return await send_json(send, status, reason)
        if scope["type"] == "websocket":
            return await self.app(scope, receive, send)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            return await send_json(send, 413, self.too_large())
        return await self.limited(scope, receive, send)

    def too_large(self) -> str:
        return f"request bodies are limited to {self.max_body_bytes // 1024} KiB"

    async def limited(self, scope, receive, send):
        """Read the body first (it is small by definition), counting the bytes of one sent without
        a length (chunked) as they arrive; the app then reads it from memory."""
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                return await send_json(send, 413, self.too_large())
            more = message.get("more_body", False)
        body_sent = False

        async def replay():
            nonlocal body_sent
            if body_sent:
                return await receive()
            body_sent = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


async def send_json(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
