"""What every request passes before it reaches a route: a Host this server answers to, an Origin
it trusts, and a body of bounded size.

DNS rebinding is a page on evil.example whose name later resolves to 127.0.0.1: the browser then
sends the lecturer's own server requests with `Host: evil.example` and lets that page read the
answers. Answering only to loopback names (and the names given with `--allowed-host`) stops it;
refusing a foreign `Origin` stops another site's page from driving a session with a token it
got hold of, websockets included (browsers do not apply the same-origin policy to them). The
Origin must be this server's own, scheme, name and port: another port on localhost is another
site (any local program can serve one), and so is another IP address of a public server.

Every response then carries the headers a browser enforces for us (`SECURITY_HEADERS`): a
Content-Security-Policy that runs only our own script files, so text from data that ever reached
the page as HTML still could not run; no framing by other sites (a framed dashboard makes a
session per frame); no sniffing, no Referer, and nothing of a page that holds a token cached.
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
DEFAULT_PORTS = {"http": 80, "https": 443}
# The connection's scheme, as the page that opened it names it.
PAGE_SCHEME = {"http": "http", "https": "https", "ws": "http", "wss": "https"}

# Script only from our own files (no inline script, no eval, no handler attributes); nothing
# framed, embedded or framing us; fetches and websockets back to this origin alone ('self' covers
# ws:// and wss:// of the same host in Chromium and Firefox). Styles only from our own style
# sheets too: markup carries classes, never a `style` attribute or a <style> element (CSS that
# reached the page from data could still restyle it: hide a warning, lay a button over another);
# figures that change (a bar's width) are set through the CSSOM (`element.style`), which it allows.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'none'", "script-src 'self'", "worker-src 'self'", "connect-src 'self'",
    "style-src 'self'", "img-src 'self' data:", "font-src 'self'",
    "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
])
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
# Pages and API answers may hold a token (the dashboard's tab, a new session's answer): never
# kept by a cache. Static files carry none and are cached as usual.
NO_STORE = (b"cache-control", b"no-store")
# WebSocket close code 1008: "policy violation".
POLICY_VIOLATION = 1008


def host_name(host: str) -> str:
    """The name in a Host header, without its port: `[::1]:8000` -> `::1`, `Example.org:80` -> `example.org`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else ""
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_port(host: str) -> int | None:
    """The port in a Host header, if it names one: `[::1]:8000` -> 8000, `localhost` -> None."""
    tail = host.strip().rsplit("]", 1)[-1] if host.strip().startswith("[") else host.strip()
    if tail.count(":") != 1:
        return None
    port = tail.rsplit(":", 1)[1]
    return int(port) if port.isdigit() and len(port) <= 5 else -1


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
        self.given_names = {host_name(name) for name in allowed_hosts}
        self.names = LOOPBACK_NAMES | self.given_names
        self.allow_ip_literals = allow_ip_literals

    def allows(self, name: str) -> bool:
        return name in self.names or (self.allow_ip_literals and is_ip_literal(name))

    def refusal(self, headers: dict[bytes, bytes], scheme: str = "http") -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None. `scheme` is the
        connection's (the ASGI scope's: http, https, ws or wss)."""
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.allows(host_name(host)):
            return 400, (f"this server does not answer to the host name {host_name(host)!r}; "
                         "start it with --allowed-host NAME to serve under that name")
        origin = headers.get(b"origin")
        if origin is not None and not self.same_origin(origin.decode("latin-1"), host, PAGE_SCHEME.get(scheme, "")):
            return 403, "requests from another site's pages are refused (Origin not allowed)"
        return None

    def same_origin(self, origin: str, host: str, scheme: str) -> bool:
        """Whether a page at `origin` is this server's own: the Host the request came with, on the
        connection's scheme. An --allowed-host name may also be reached over https, through a proxy
        that ends TLS in front of us (the proxy passes the Host on; the connection is plain http)."""
        parts = urlsplit(origin)
        try:
            origin_port = parts.port
        except ValueError:
            return False
        name = (parts.hostname or "").lower()
        schemes = {scheme} | ({"https"} if name in self.given_names else set())
        if parts.scheme not in schemes or name != host_name(host) or parts.path or parts.query:
            return False
        return (origin_port or DEFAULT_PORTS[parts.scheme]) == (host_port(host) or DEFAULT_PORTS[parts.scheme])


class RequestGuard:
    """ASGI middleware: Host and Origin checks on HTTP and websockets, the body size limit, and
    the security headers on every HTTP response (the guard's own refusals included)."""

    def __init__(self, app, policy: HostPolicy, max_body_bytes: int):
        self.app = app
        self.policy = policy
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if scope["type"] == "http":
            send = with_security_headers(send, no_store=not scope["path"].startswith("/static/"))
        headers = dict(scope["headers"])
        refusal = self.policy.refusal(headers, scope.get("scheme", "http"))
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


def with_security_headers(send, no_store: bool):
    """`send`, adding SECURITY_HEADERS (and no-store) to the response's start."""
    async def send_with_headers(message):
        if message["type"] == "http.response.start":
            added = SECURITY_HEADERS + ([NO_STORE] if no_store else [])
            names = {name for name, _ in added}
            kept = [(name, value) for name, value in message.get("headers", []) if name.lower() not in names]
            message = {**message, "headers": kept + added}
        await send(message)
    return send_with_headers


async def send_json(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
