"""A served session (`serve --openai`) on the dashboard: the clients' requests appear as they
arrive, run and finish, on a page that follows the wall clock rather than a presenter."""

import threading

import httpx
import openai
import pytest

from tests.app.openai_server import MODEL, OpenAIServer
from tests.browser.pages import open_dashboard


@pytest.fixture(scope="module")
def served():
    with OpenAIServer() as server:
        yield server


def test_the_clients_requests_appear_run_and_finish_on_the_dashboard(served, new_page):
    page = open_dashboard(new_page(), f"{served.url}/s/{served.served.engine.live.session.session_id}/view")
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0)
    done = []

    def ask() -> None:
        response = client.completions.create(model=MODEL, prompt="watch me on the projector " * 20, max_tokens=400,
                                             extra_body={"ignore_eos": True})
        done.append(response.id.split("-", 1)[1])

    thread = threading.Thread(target=ask)
    thread.start()
    page.wait_for_function("() => document.querySelector('#queues .lane.running .chip') !== null")
    running = page.locator("#queues .lane.running .chip").first.get_attribute("data-id")
    thread.join(timeout=30)
    page.wait_for_function("id => document.querySelector(`#queues .lane.finished .chip[data-id='${id}']`) !== null",
                           arg=done[0])

    assert running == done[0]
    assert page.locator("#run-state").text_content() == "playing"
    assert page.errors == []


def test_a_client_that_goes_away_shows_its_request_aborted(served, new_page):
    """A stream closed mid-answer: the event log and the inspector say the request was aborted, not finished."""
    page = open_dashboard(new_page(), f"{served.url}/s/{served.served.engine.live.session.session_id}/view")
    with httpx.Client(base_url=served.url, timeout=10) as http:
        with http.stream("POST", "/v1/completions", json={"prompt": "leaving early " * 10, "max_tokens": 3000,
                                                          "ignore_eos": True, "stream": True}) as response:
            lines, num_events = response.iter_lines(), 0
            while num_events < 3:
                num_events += next(lines).startswith("data: ")
            request_id = next(iter(served.served.engine.streams))
    page.wait_for_function("id => [...document.querySelectorAll('#events .event.aborted')].some("
                           "e => e.dataset.request === id)", arg=request_id, timeout=15_000)
    page.locator(f"#queues .lane.finished .chip[data-id='{request_id}']").click()
    page.wait_for_function("() => document.querySelector('#inspector .pill')?.textContent === 'aborted (client disconnected)'")

    assert f"{request_id} aborted (client disconnected)" in page.locator("#events").text_content()
    assert page.errors == []
