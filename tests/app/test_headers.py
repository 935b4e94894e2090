"""Every response carries the headers a browser enforces: a strict Content-Security-Policy, no
framing, no sniffing, no Referer, and no caching of anything but static files."""

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

TEST_HOST = ("testserver",)


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(heartbeat_s=0.2, allowed_hosts=TEST_HOST))) as client:
        yield client


def policy(response) -> dict[str, str]:
    """The CSP as {directive: sources}."""
    directives = [part.strip().split(" ", 1) for part in response.headers["content-security-policy"].split(";")]
    return {d[0]: d[1] if len(d) > 1 else "" for d in directives}


ANSWERS = {
    "dashboard": ("GET", "/", {}),
    "compare": ("GET", "/compare?scenario=default", {}),
    "fleet": ("GET", "/fleet", {}),
    "sweep": ("GET", "/sweep", {}),
    "ended session page": ("GET", "/s/nosuchsession/view", {}),
    "API": ("GET", "/api/sessions", {}),
    "healthz": ("GET", "/healthz", {}),
    "static file": ("GET", "/static/js/main.js", {}),
    "missing static file": ("GET", "/static/js/nothing.js", {}),
    "404": ("GET", "/no/such/page", {}),
    "422": ("POST", "/api/sessions", {"json": {"preset": "no-such-preset"}}),
    "guard's 400 (foreign host)": ("GET", "/", {"headers": {"host": "evil.example"}}),
    "guard's 403 (foreign origin)": ("GET", "/api/sessions", {"headers": {"origin": "http://evil.example"}}),
    "guard's 413 (body too large)": ("POST", "/api/sessions", {"content": b"x" * (2 * 1024 * 1024),
                                                               "headers": {"content-type": "application/json"}}),
}


@pytest.mark.parametrize("method, url, options", ANSWERS.values(), ids=ANSWERS.keys())
def test_every_answer_carries_the_security_headers(client, method, url, options):
    response = client.request(method, url, **options)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "no-referrer"
    csp = policy(response)
    assert csp["script-src"] == "'self'" and csp["object-src"] == "'none'" and csp["base-uri"] == "'none'"
    assert csp["frame-ancestors"] == "'none'" and csp["connect-src"] == "'self'" and csp["default-src"] == "'none'"


def test_the_policy_allows_no_inline_or_evaluated_script(client):
    csp = policy(client.get("/"))
    for directive in ("script-src", "worker-src", "default-src"):
        assert not {"'unsafe-inline'", "'unsafe-eval'", "data:", "blob:", "*"} & set(csp[directive].split())


def test_the_policy_allows_nothing_inline_anywhere(client):
    """Styles too: style-src is 'self' alone, so markup from data cannot restyle the page."""
    header = client.get("/").headers["content-security-policy"]
    assert "'unsafe-inline'" not in header and "'unsafe-eval'" not in header and "'unsafe-hashes'" not in header
    assert policy(client.get("/"))["style-src"] == "'self'"


STYLE_IN_MARKUP = r"""\sstyle\s*=|<style[\s>]"""


def test_no_template_or_page_writes_a_style_attribute(client):
    """The CSP refuses style attributes and <style> elements in parsed markup (a page would lose
    those styles): templates, the pages they render and the markup the scripts write carry
    classes; figures go through element.style (the CSSOM, which the CSP allows)."""
    import re

    from tests.paths import REPO

    for path in (REPO / "templates").glob("*.html"):
        assert not re.search(STYLE_IN_MARKUP, path.read_text(), re.IGNORECASE), path
    for url in ("/", "/compare?scenario=default", "/fleet", "/sweep", "/s/nosuchsession/view"):
        assert not re.search(STYLE_IN_MARKUP, client.get(url).text, re.IGNORECASE), url
    for path in (REPO / "static" / "js").rglob("*.js"):  # markup in html`...`: `style="` (a variable `style =` is fine)
        assert not re.search(r"""\sstyle=["'$]|<style[\s>]""", path.read_text()), path


@pytest.mark.parametrize("url", ["/", "/s/nosuchsession/view", "/api/sessions", "/fleet"])
def test_pages_and_api_answers_are_never_cached(client, url):
    assert client.get(url).headers["cache-control"] == "no-store"


def test_a_new_sessions_answer_holding_its_token_is_never_cached(client):
    response = client.post("/api/sessions", json={"preset": "default"})
    assert response.status_code == 201 and response.headers["cache-control"] == "no-store"


def test_static_files_stay_cacheable(client):
    assert "no-store" not in client.get("/static/css/dashboard.css").headers.get("cache-control", "")


def test_no_page_holds_inline_script_or_handler_attributes(client):
    import re

    for url in ("/", "/compare?scenario=default", "/fleet", "/sweep", "/s/nosuchsession/view"):
        html = client.get(url).text
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), url
        assert not re.search(r"\son[a-z]+\s*=", html), url
        assert "javascript:" not in html.lower(), url


def test_no_browser_module_but_dom_js_writes_html():
    """static/js/dom.js is the one place markup is parsed, and the one that escapes: every other
    module writes html`...` fragments (the why-sentences and the lesson slides included) or
    elements, never markup it assembled as a string."""
    import re

    from tests.paths import REPO

    writes_markup = re.compile(r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function")
    dom = (REPO / "static" / "js" / "dom.js").read_text()
    assert "export function esc" not in dom and "fromEscaped" not in dom  # no door for a string of markup
    for path in (REPO / "static" / "js").rglob("*.js"):
        code = path.read_text()
        if path.name != "dom.js":
            assert not writes_markup.search(code), path
            assert not re.search(r"\besc\(|fromEscaped", code), path
