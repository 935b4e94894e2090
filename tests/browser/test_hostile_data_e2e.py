"""Data is text: hostile strings in a results file, a breakpoint or a scenario show as their
characters and run nothing; and a page of another origin cannot frame the dashboard."""

from __future__ import annotations

import http.server
import json
import threading
from urllib.parse import quote

import httpx
import pytest

from tests.browser.pages import free_port, open_dashboard

# Each sets window.__pwned if it ever runs, by HTML parsing or as a URL.
PAYLOADS = ['<img src=x onerror="window.__pwned=1">', '"><svg onload="window.__pwned=1">',
            "javascript:window.__pwned=1", "</td><script>window.__pwned=1</script>"]


def assert_nothing_ran(page, where) -> None:
    assert page.evaluate("window.__pwned") is None
    assert where.locator("img, svg, script").count() == 0
    refused = [e for e in page.errors if "Content Security Policy" in e or "Refused to" in e]
    assert not refused, refused  # the CSP had nothing to stop: the text never became markup


def results_csv() -> bytes:
    header = "point,engine.policy,workload.rate,num_gpus,requests_per_s,ttft_s.p99,tpot_s.p99,goodput_requests_per_s"
    rows = [f'{i},"{p.replace(chr(34), chr(34) * 2)}",{i + 1},1,{i + 1}.5,0.1,0.01,1.0' for i, p in enumerate(PAYLOADS)]
    return "\n".join([header, *rows]).encode()


def results_jsonl() -> bytes:
    return "\n".join(json.dumps({"point": i, "engine.policy": p, "workload.rate": i + 1, "num_gpus": 1, "requests_per_s": i + 1.5,
                                 "ttft_s.p99": 0.1, "tpot_s.p99": 0.01, "goodput_requests_per_s": 1.0})
                     for i, p in enumerate(PAYLOADS)).encode()


@pytest.mark.parametrize("name, content", [("hostile.csv", results_csv), ("hostile.jsonl", results_jsonl)], ids=["csv", "jsonl"])
def test_a_hostile_results_file_shows_as_text_on_the_sweep_page(server, new_page, name, content):
    page = new_page()
    page.goto(server.url + "/sweep")
    page.set_input_files("#upload", files=[{"name": name, "mimeType": "text/plain", "buffer": content()}])
    page.wait_for_function("() => document.querySelectorAll('#table tbody tr').length === 4")
    table, legend = page.locator("#table"), page.locator("#legend")
    for payload in PAYLOADS:
        assert payload in table.inner_text() and payload in legend.inner_text()
    assert_nothing_ran(page, page.locator("main, body"))


def test_a_hostile_breakpoint_request_shows_as_text_when_breakpoints_reopen(presenter):
    for payload in PAYLOADS:
        presenter.click("#breakpoints-button")
        presenter.fill("dialog[open] input[data-kind=request]", payload)
        presenter.click("#bp-save")
        presenter.wait_for_function("() => document.getElementById('breakpoints-button').textContent === 'Breakpoints (1)'")
        presenter.click("#breakpoints-button")
        assert presenter.input_value("dialog[open] input[data-kind=request]") == payload
        assert_nothing_ran(presenter, presenter.locator("dialog[open]"))
        presenter.keyboard.press("Escape")


def test_a_hostile_scenario_name_shows_as_text(server, new_page):
    name = PAYLOADS[0] + PAYLOADS[1]
    page = open_dashboard(new_page(), f"{server.url}/?config={quote(json.dumps({'name': name}))}")
    assert name in page.locator("body").inner_text()
    assert_nothing_ran(page, page.locator("body"))


class FramingPage(http.server.BaseHTTPRequestHandler):
    """Another origin's page (another port) framing the dashboard eight times."""
    target = ""

    def do_GET(self):
        body = "".join(f'<iframe src="{self.target}/" width="300" height="200"></iframe>' for _ in range(8)).encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_another_origin_cannot_frame_the_dashboard_or_make_sessions_through_it(server, new_page):
    FramingPage.target = server.url
    other = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), FramingPage)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        before = len(httpx.get(server.url + "/api/sessions").json())
        page = new_page()
        page.goto(f"http://127.0.0.1:{other.server_address[1]}/")
        page.wait_for_timeout(1500)
        framed = [frame for frame in page.frames if frame is not page.main_frame]
        assert len(framed) == 8
        for frame in framed:  # blocked: an error page, never our document
            assert frame.evaluate("document.body ? document.body.dataset.create || '' : ''") == ""
        assert len(httpx.get(server.url + "/api/sessions").json()) == before
        assert any("frame-ancestors" in e or "Refused to display" in e for e in page.errors), page.errors
    finally:
        other.shutdown()
