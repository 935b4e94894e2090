"""A websocket spoken by hand over a raw socket, for viewers no client library would play: one
that completes the handshake and never reads again (test_live_server.py, test_classroom.py)."""

import base64
import os
import socket


def masked_text_frame(text: str) -> bytes:
    """One client-to-server websocket text frame (clients must mask their payload)."""
    payload = text.encode()
    mask = os.urandom(4)
    header = bytearray([0x81])
    if len(payload) < 126:
        header.append(0x80 | len(payload))
    else:
        header.append(0x80 | 126)
        header += len(payload).to_bytes(2, "big")
    return bytes(header) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def open_stalled_viewer(port: int, session_id: str) -> socket.socket:
    """A raw websocket with a tiny receive buffer that completes the handshake and never reads again."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /ws/{session_id} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    response = b""
    while not response.endswith(b"\r\n\r\n") and len(response) < 4096:
        response += sock.recv(1)
    assert response.startswith(b"HTTP/1.1 101"), response
    return sock
