"""Data is text: hostile strings in every input a user, a link or a file can put on screen (a
results file, a breakpoint, a scenario name, the fleet and compare pages' query, a lesson's name,
a 422 that quotes the value back, the theme, the fragment) show as their characters and run
nothing; and a page of another origin cannot frame the dashboard.

Request and trace ids cannot come from data: the server names every request `req-NNNNN` (a web
scenario has no request list, and a trace, CLI only, is read as arrival and lengths), so the
panels that show ids (queues, batch, inspector, events, the KV block table) are covered by the
payloads that do reach them: a breakpoint's request value and the scenario name."""

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
    assert not getattr(page, "dialogs", []), page.dialogs  # pages made by watched()
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


def test_a_hostile_breakpoint_request_shows_as_text_in_its_refusal(presenter):
    """No request has such an id: the server's refusal quotes it, and the dialog shows it as text."""
    for payload in PAYLOADS:
        presenter.click("#breakpoints-button")
        presenter.fill("dialog[open] input[data-kind=request]", payload)
        presenter.click("#bp-save")
        error = presenter.locator("dialog[open] .bp-error")
        error.filter(has_text="in this workload").wait_for()
        assert payload in error.inner_text()
        assert presenter.input_value("dialog[open] input[data-kind=request]") == payload
        assert_nothing_ran(presenter, presenter.locator("dialog[open]"))
        presenter.keyboard.press("Escape")


def test_a_hostile_scenario_name_shows_as_text(server, new_page):
    name = PAYLOADS[0] + PAYLOADS[1]
    page = open_dashboard(new_page(), f"{server.url}/?config={quote(json.dumps({'name': name}))}")
    assert name in page.locator("body").inner_text()
    assert_nothing_ran(page, page.locator("body"))


def watched(page):
    """`page`, recording the dialogs (alert, confirm) anything opens, and dismissing them."""
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    return page


def test_a_hostile_value_a_422_quotes_back_shows_as_text_in_the_config_form(presenter):
    """The workload's `lengths` is the form's one free-text field; the server's 422 names the
    value it refused, and the form shows that message as it is."""
    watched(presenter)
    presenter.click("#configure")
    presenter.wait_for_function("() => document.querySelector('#config-dialog[open] #cfg-workload-lengths') !== null")
    for payload in PAYLOADS:
        presenter.fill("#cfg-workload-lengths", payload)
        presenter.click("#cfg-submit")
        presenter.wait_for_function("p => document.querySelector('#config-dialog .form-error').textContent.includes(p)",
                                    arg=payload)
        presenter.wait_for_function("p => document.getElementById('cfg-startup').textContent.includes(p)", arg=payload)
        assert_nothing_ran(presenter, presenter.locator("#config-dialog"))


def test_a_hostile_lesson_name_in_the_url_is_refused_as_text(server, new_page):
    page = watched(new_page())
    for url in (f"/?lesson={quote(PAYLOADS[0])}", f"/compare?lesson={quote(PAYLOADS[1])}",
                f"/compare?lesson=priority&a={quote(PAYLOADS[0])}&b={quote(PAYLOADS[3])}"):
        response = page.goto(server.url + url)
        assert response.status in (404, 422) and response.headers["content-type"].startswith("application/json"), url
        page.wait_for_timeout(200)
        assert_nothing_ran(page, page.locator("body"))


def test_hostile_query_and_fragment_values_on_the_dashboard_run_nothing(server, new_page):
    """The theme (kept in the address bar), unknown parameters, a `#token=` fragment the page
    adopts (refused by the server as a bad token), and an ended session's link, which echoes its
    query into a "start again" link."""
    page = watched(new_page())
    hostile = "&".join(f"{name}={quote(PAYLOADS[i % len(PAYLOADS)])}" for i, name in enumerate(["theme", "step", "seed2", "x"]))
    open_dashboard(page, f"{server.url}/?{hostile}")
    page.wait_for_timeout(500)
    assert page.evaluate("document.documentElement.dataset.theme") != PAYLOADS[0]
    assert_nothing_ran(page, page.locator("body"))
    session = page.evaluate("window.servescope.store.session.session_id")
    page = watched(new_page())
    page.goto(f"{server.url}/s/{session}/view#token={quote(PAYLOADS[0])}")
    page.wait_for_timeout(1500)  # the server refuses the token; the page forgets it and reloads, view only
    page.wait_for_function("() => document.getElementById('role') && document.getElementById('role').textContent === 'view only'")
    assert_nothing_ran(page, page.locator("body"))
    page.goto(f"{server.url}/s/nosuchsession/view?{hostile}")
    link = page.locator("main a")
    assert link.get_attribute("href").startswith("/?") and "<" not in link.get_attribute("href")
    assert_nothing_ran(page, page.locator("main"))


def test_hostile_values_on_the_fleet_page_show_as_text(server, new_page):
    """Every control the fleet page fills from its query (a value no option has leaves the
    control at its default, so Run still works), and a lesson arm the server refuses with a 422
    quoting it, shown in the banner."""
    page = watched(new_page())
    keys = ["scenario", "router", "replicas", "layout", "rate", "requests", "theme", "arm"]
    query = "&".join(f"{key}={quote(PAYLOADS[i % len(PAYLOADS)])}" for i, key in enumerate(keys))
    page.goto(f"{server.url}/fleet?{query}")
    page.wait_for_timeout(500)
    assert_nothing_ran(page, page.locator("body"))
    assert page.evaluate("['preset', 'router', 'layout'].every(id => document.getElementById(id).value !== '')")
    lesson = next(iter(json.loads(page.evaluate("document.body.dataset.lessons"))))
    page.goto(f"{server.url}/fleet?lesson={quote(lesson)}&arm={quote(PAYLOADS[0])}")
    choice = f"lesson:{lesson}:{PAYLOADS[0]}"
    # The page names the arm the link asked for; with no such option, the test adds one, as a
    # tampered page could.
    page.evaluate("""value => { const o = document.createElement('option'), preset = document.getElementById('preset');
                                o.value = value; o.textContent = 'hostile'; preset.append(o); preset.value = value; }""", choice)
    # The page's opening run (its default preset: the arm asked for is none of its options) ends
    # first; on a loaded machine it takes longer than a click waits.
    page.wait_for_function("!document.getElementById('run').disabled", timeout=60_000)
    page.click("#run")
    banner = "p => { const b = document.getElementById('banner'); return !b.hidden && b.textContent.includes(p); }"
    page.wait_for_function(banner, arg="should match pattern")  # the server's 422: an arm is a plain name
    assert_nothing_ran(page, page.locator("body"))
    # That message names the rule, not the value: a message that quotes it (as the scenario's
    # do), answered here in the server's place, shows as text too.
    detail = [{"loc": ["body", "arm"], "msg": f"unknown arm {PAYLOADS[0]}{PAYLOADS[1]}"}]
    page.route("**/api/fleet", lambda route: route.fulfill(status=422, content_type="application/json",
                                                           body=json.dumps({"detail": detail})))
    page.click("#run")
    page.wait_for_function(banner, arg=PAYLOADS[0] + PAYLOADS[1])
    assert_nothing_ran(page, page.locator("body"))


def test_hostile_assignments_on_the_compare_page_are_refused_as_text(server, new_page):
    """B's changes come from the URL (`set_b`); a value the schema refuses is a 422 naming it."""
    page = watched(new_page())
    for assignment in (f"workload.lengths={PAYLOADS[0]}", f"{PAYLOADS[1]}=1", PAYLOADS[3]):
        response = page.goto(f"{server.url}/compare?scenario=default&set_b={quote(assignment)}")
        assert response.status == 422 and response.headers["content-type"].startswith("application/json"), assignment
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
