"""A served session (`serve --openai`) on the dashboard: the clients' requests appear as they
arrive, run and finish, on a page that follows the wall clock rather than a presenter."""

import threading

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
