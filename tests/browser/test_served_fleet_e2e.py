"""The served replicas (`serve --openai --replicas 2`) on the fleet page: a card per replica, live,
whose requests and KV grid follow what its own port was sent, and which opens its session."""

import threading

import pytest

from tests.app.openai_server import MODEL, ReplicaServers


@pytest.fixture(scope="module")
def fleet():
    with ReplicaServers() as fleet:
        yield fleet


def test_each_replica_is_a_live_card_that_counts_its_own_requests(fleet, new_page):
    page = new_page()
    page.goto(f"{fleet.urls[0]}/fleet")
    page.wait_for_selector("#served-grid .replica canvas")
    assert page.locator("#served-grid .replica").count() == 2

    def ask() -> None:
        fleet.client(1).completions.create(model=MODEL, prompt="seen on the fleet page " * 10, max_tokens=300,
                                           extra_body={"ignore_eos": True})

    thread = threading.Thread(target=ask)
    thread.start()
    page.wait_for_function("() => document.querySelector('#served-grid [data-replica=\"1\"] .running-n')"
                           ".textContent === '1'")
    kv = page.locator("#served-grid [data-replica='1'] .kv-n").text_content()
    thread.join(timeout=30)
    page.wait_for_function("() => document.querySelector('#served-grid [data-replica=\"1\"] .finished')"
                           ".textContent === '1'")

    assert page.locator("#served-grid [data-replica='0'] .requests").text_content() == "0"
    assert kv != "0.0%"
    session_id = fleet.app.state.served_fleet.served[1].engine.live.session.session_id
    assert page.locator("#served-grid [data-replica='1']").get_attribute("href") == f"/s/{session_id}/view"
    assert page.errors == []
