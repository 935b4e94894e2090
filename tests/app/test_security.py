"""What a stranger's request, or a hostile page in the lecturer's browser, must never get:
a file on the server, a session it did not make, or a server that stops answering."""

import json
import os
import time

import pytest
from fastapi.testclient import TestClient

from app import wire
from app.main import create_app
from app.settings import Settings

# The host name TestClient sends; every other name is still refused.
TEST_HOST = ("testserver",)


@pytest.fixture
def client():
    with TestClient(create_app(Settings(heartbeat_s=0.2, allowed_hosts=TEST_HOST))) as client:
        yield client


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "secret.csv"
    path.write_text("TOP-SECRET-FIRST-LINE,1,2\n")
    return path


@pytest.mark.parametrize("field", ["trace", "model", "gpu"])
def test_compare_set_b_cannot_name_a_file(client, secret_file, field):
    response = client.get("/compare", params={"scenario": "default", "set_b": f"{field}={secret_file}"})
    assert response.status_code == 422
    assert "TOP-SECRET" not in response.text
    assert str(secret_file) not in response.text  # not even echoed back as a value
    assert client.get("/api/sessions").json() == []


def test_compare_set_b_trace_at_a_fifo_is_refused_without_opening_it(client, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # Opening a FIFO with no writer blocks forever: answering at all proves it was never opened.
    response = client.get("/compare", params={"scenario": "default", "set_b": f"trace={fifo}"})
    assert response.status_code == 422


def page_create_bodies(response) -> list[dict]:
    """The bodies a page will POST to create its sessions."""
    import html
    import json
    import re

    return [json.loads(html.unescape(body)) for body in re.findall(r'data-create="([^"]*)"', response.text)]


def test_compare_set_b_still_changes_allowed_fields(client):
    response = client.get("/compare", params={"scenario": "default", "set_b": "max_num_seqs=8"})
    assert response.status_code == 200
    for body in page_create_bodies(response):
        assert client.post("/api/sessions", json=body).status_code == 201
    scenarios = [session["scenario"] for session in client.get("/api/sessions").json()]
    assert sorted(s["engine"]["max_num_seqs"] for s in scenarios) == [8, 64]


# -- DNS rebinding: a foreign Host or Origin gets nothing ------------------------------------
EVIL_HOST = {"host": "evil.example"}
EVIL_ORIGIN = {"origin": "http://evil.example"}


def created_session(client) -> dict:
    response = client.post("/api/sessions", json={"preset": "default"})
    assert response.status_code == 201, response.text
    return response.json()


def websocket_refusal(client, path: str, headers: dict) -> int:
    """The close code a websocket gets before any frame; fails if it is sent a frame instead."""
    from starlette.websockets import WebSocketDisconnect

    with client.websocket_connect(path, headers=headers) as ws:
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
    return closed.value.code


def test_a_foreign_host_cannot_list_sessions(client):
    created_session(client)
    response = client.get("/api/sessions", headers=EVIL_HOST)
    assert response.status_code == 400
    assert "evil.example" in response.json()["detail"] and "session_id" not in response.text


def test_a_foreign_host_cannot_create_a_session_or_get_a_control_url(client):
    response = client.post("/api/sessions", json={"preset": "default"}, headers=EVIL_HOST)
    assert response.status_code == 400 and "control_url" not in response.text
    assert client.get("/api/sessions").json() == []


@pytest.mark.parametrize("headers", [EVIL_HOST, EVIL_ORIGIN, {**EVIL_HOST, **EVIL_ORIGIN}, {"origin": "null"}],
                         ids=["host", "origin", "both", "null-origin"])
def test_a_foreign_websocket_is_closed_with_the_policy_code_before_any_frame(client, headers):
    created = created_session(client)
    assert websocket_refusal(client, f"/ws/{created['session_id']}", headers) == 1008


def test_a_valid_token_from_a_foreign_origin_cannot_control(client):
    created = created_session(client)
    token = {"x-control-token": created["control_token"]}
    response = client.delete(f"/api/sessions/{created['session_id']}", headers={**token, **EVIL_ORIGIN})
    assert response.status_code == 403
    assert client.get(f"/api/sessions/{created['session_id']}").status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8000", "localhost", "LOCALHOST:1", "[::1]:8765", "[::1]"])
def test_loopback_names_with_any_port_are_served_and_look_alikes_are_not(client, host):
    assert client.get("/healthz", headers={"host": host, "origin": f"http://{host}"}).status_code == 200
    look_alike = host.lower().replace("localhost", "localhost.evil.example").replace("127.0.0.1", "127.0.0.1.nip.io")
    look_alike = look_alike.replace("[::1]", "[::2]")
    assert client.get("/healthz", headers={"host": look_alike}).status_code == 400


def test_an_allowed_host_is_served_and_others_still_refused():
    settings = Settings(heartbeat_s=0.2, allowed_hosts=("lecture.example.org",))
    with TestClient(create_app(settings), base_url="http://lecture.example.org") as client:
        assert client.get("/healthz", headers={"origin": "https://lecture.example.org"}).status_code == 200
        assert client.get("/healthz", headers=EVIL_HOST).status_code == 400
        assert client.get("/healthz", headers=EVIL_ORIGIN).status_code == 403


def test_ip_address_hosts_are_served_only_by_a_public_server():
    for public, expected in ((False, 400), (True, 200)):
        with TestClient(create_app(Settings(heartbeat_s=0.2, public=public)), base_url="http://10.1.2.3:8000") as client:
            assert client.get("/healthz").status_code == expected


# The Origin is this server's own only with its scheme, name and port: another port on
# localhost is another program's page, another address of a public server another machine's.
SAME_ORIGIN = [("127.0.0.1:8000", "http://127.0.0.1:8000"), ("localhost", "http://localhost"),
               ("localhost", "http://localhost:80"), ("[::1]:8765", "http://[::1]:8765")]
OTHER_ORIGINS = [("127.0.0.1:8000", "http://127.0.0.1:8001"), ("localhost:8000", "http://localhost"),
                 ("localhost", "http://localhost:3000"), ("localhost:8000", "https://localhost:8000"),
                 ("localhost:8000", "http://127.0.0.1:8000"), ("[::1]:8765", "http://[::1]:8766"),
                 ("localhost:8000", "http://localhost:8000/path"), ("localhost:8000", "http://localhost:99999")]


@pytest.mark.parametrize("host, origin", SAME_ORIGIN)
def test_a_page_of_this_origin_is_served(client, host, origin):
    assert client.get("/healthz", headers={"host": host, "origin": origin}).status_code == 200


@pytest.mark.parametrize("host, origin", OTHER_ORIGINS)
def test_a_page_on_another_port_or_scheme_is_refused(client, host, origin):
    assert client.get("/healthz", headers={"host": host, "origin": origin}).status_code == 403
    assert client.post("/api/sessions", json={"preset": "default"}, headers={"host": host, "origin": origin}).status_code == 403
    assert client.get("/api/sessions").json() == []


@pytest.mark.parametrize("host, origin", OTHER_ORIGINS[:4])
def test_a_websocket_from_another_port_is_closed_with_the_policy_code(client, host, origin):
    created = created_session(client)
    assert websocket_refusal(client, f"/ws/{created['session_id']}", {"host": host, "origin": origin}) == 1008


def test_a_websocket_from_this_origin_is_served(client):
    created = created_session(client)
    with client.websocket_connect(f"/ws/{created['session_id']}", headers={"origin": "http://testserver"}) as ws:
        assert ws.receive()["type"] == "websocket.send"  # a frame, not a close


def test_a_public_server_refuses_pages_of_other_addresses_and_ports():
    with TestClient(create_app(Settings(heartbeat_s=0.2, public=True)), base_url="http://10.1.2.3:8000") as client:
        assert client.get("/healthz", headers={"origin": "http://10.1.2.3:8000"}).status_code == 200
        for origin in ("http://10.9.9.9:8000", "http://10.1.2.3:8080", "http://10.1.2.3", "http://192.168.0.7"):
            assert client.get("/healthz", headers={"origin": origin}).status_code == 403, origin
        created = created_session(client)
        assert websocket_refusal(client, f"/ws/{created['session_id']}", {"origin": "http://10.9.9.9:8000"}) == 1008


# -- bodies and tokens -----------------------------------------------------------------------
def test_a_body_over_the_limit_is_413_and_creates_nothing(client):
    name = "x" * (300 * 1024)
    response = client.post("/api/sessions", json={"scenario": {"name": name}})
    assert response.status_code == 413 and "256 KiB" in response.json()["detail"]
    assert client.get("/api/sessions").json() == []


def test_a_chunked_body_over_the_limit_is_413(client):
    def chunks():
        yield b'{"scenario": {"name": "'
        for _ in range(40):
            yield b"x" * 8192
        yield b'"}}'

    response = client.post("/api/sessions", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert client.get("/api/sessions").json() == []


def received(ws) -> dict:
    """The next message: state frames come binary (app/wire.py, protocol v2), the others as JSON text."""
    message = ws.receive()
    return wire.decode(message["bytes"]) if message.get("bytes") is not None else json.loads(message["text"])


def steps_taken_by(client, created: dict, url_suffix: str = "", auth: str | None = None) -> tuple[int, list[str]]:
    """(the step after asking for one step, error codes) on a websocket opened as given."""
    with client.websocket_connect(f"/ws/{created['session_id']}{url_suffix}") as ws:
        if auth is not None:
            ws.send_json({"type": "auth", "token": auth})
        ws.send_json({"type": "step", "n": 1})
        ws.send_json({"type": "ping"})
        codes = []
        while (frame := received(ws))["type"] != "pong":
            if frame["type"] == "error":
                codes.append(frame["code"])
    return client.get(f"/api/sessions/{created['session_id']}").json()["step"], codes


def test_a_token_in_the_websocket_url_gives_no_control(client):
    created = created_session(client)
    assert steps_taken_by(client, created, url_suffix=f"?token={created['control_token']}") == (0, ["read_only"])


def test_the_token_in_the_first_message_gives_control_and_a_wrong_one_does_not(client):
    created = created_session(client)
    assert steps_taken_by(client, created, auth="not-the-token") == (0, ["bad_token", "read_only"])
    assert steps_taken_by(client, created, auth=created["control_token"]) == (1, [])


def test_tokens_are_compared_in_constant_time(client, monkeypatch):
    import hmac

    compared = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    created = created_session(client)
    token = created["control_token"]
    steps_taken_by(client, created, auth=token)
    client.delete(f"/api/sessions/{created['session_id']}", headers={"x-control-token": token})
    assert [a for a, _ in compared].count(token.encode()) == 2


def test_no_url_the_server_emits_carries_the_token(client):
    created = created_session(client)
    urls = [value for key, value in created.items() if key.endswith("_url")]
    assert len(urls) == 3 and not any(created["control_token"] in url for url in urls)


# -- GET never creates state -----------------------------------------------------------------
@pytest.mark.parametrize("url", ["/", "/?scenario=default", "/?lesson=chunked-prefill", "/compare?scenario=default",
                                 "/compare?lesson=chunked-prefill", "/compare?scenario=default&set_b=max_num_seqs=8"])
def test_get_of_a_page_creates_no_session(client, url):
    for _ in range(3):
        assert client.get(url).status_code == 200
    assert client.get("/api/sessions").json() == []


# -- exports ---------------------------------------------------------------------------------
EXPORTS = ["metrics.json", "metrics.csv", "steps.jsonl", "trace.json"]


@pytest.mark.parametrize("name", EXPORTS)
@pytest.mark.parametrize("headers", [{}, {"x-control-token": "wrong"}], ids=["no-token", "wrong-token"])
def test_exports_without_the_token_are_refused(client, name, headers):
    created = created_session(client)
    response = client.get(f"/api/sessions/{created['session_id']}/export/{name}", headers=headers)
    assert response.status_code == 403 and "X-Control-Token" in response.json()["detail"]


def test_an_export_over_its_byte_budget_is_cut_off_and_its_worker_stopped():
    from app.workers import BudgetSpent

    app = create_app(Settings(heartbeat_s=0.2, allowed_hosts=TEST_HOST, max_export_bytes=20_000))
    with TestClient(app) as client:
        created = created_session(client)
        steps_taken_by(client, created, auth=created["control_token"])
        with client.websocket_connect(f"/ws/{created['session_id']}") as ws:
            ws.send_json({"type": "auth", "token": created["control_token"]})
            ws.send_json({"type": "seek", "step": 300})
            while received(ws).get("step") != 300:
                pass
        with pytest.raises(BudgetSpent):
            client.get(f"/api/sessions/{created['session_id']}/export/trace.json",
                       headers={"x-control-token": created["control_token"]})
        assert len(app.state.export_workers) == 0  # its slot is free again


# -- a legacy ?token= is never adopted, and nothing token-shaped is logged -------------------
@pytest.mark.slow
def test_a_token_pasted_into_any_url_never_reaches_the_servers_log(tmp_path):
    """uvicorn logs the request line before the app sees it: a real `servescope serve`, whose log
    must hold no token however it was sent (query, path, websocket URL, a failed auth)."""
    import asyncio

    from websockets.asyncio.client import connect

    from tests.app.test_serve_process import ServeProcess

    server = ServeProcess(tmp_path / "serve.log", "--log-level", "debug")
    try:
        created = server.http.post("/api/sessions", json={"preset": "default"}).json()
        token, sid = created["control_token"], created["session_id"]
        for path in (f"/s/{sid}/view?token={token}", f"/s/{sid}?theme=projector&token={token}", f"/?token={token}",
                     f"/api/sessions/{sid}?token={token}", f"/s/{token}/view", f"/api/sessions/{token}",
                     f"/static/js/{token}.js"):
            server.http.get(path)

        async def sockets():
            async with connect(f"{created['websocket_url']}?token={token}") as ws:
                await ws.send('{"type": "auth", "token": "' + token[::-1] + '"}')
                await asyncio.wait_for(ws.recv(), 10)

        asyncio.run(sockets())
        time.sleep(0.3)
    finally:
        server.stop()
    log = server.log_path.read_text()
    assert f"/s/{sid}/view" in log and "[redacted]" in log  # the access log is on, and redacts
    assert token not in log and token[::-1] not in log


def test_the_server_answers_a_legacy_query_token_without_echoing_it(client):
    created = created_session(client)
    page = client.get(f"/s/{created['session_id']}/view?token={created['control_token']}")
    assert page.status_code == 200 and created["control_token"] not in page.text
