"""The class as the workload: on a served session's page a student sends a request from the
"send a request" form, with the keyboard alone; its answer streams back with its TTFT and ITL,
and its request reads "yours" in that browser's lanes and batch, while another student's page
shows the same request as an ordinary one. The page with the form reads well on a projector."""

import os
from pathlib import Path

import pytest

from tests.app.openai_server import OpenAIServer
from tests.app.test_class_requests import long_answers
from tests.browser.pages import NORMAL, PROJECTOR, axe_violations, check_layout, open_dashboard, open_page, wait_until

# Where the screenshots go, when asked for (SERVESCOPE_SCREENSHOTS=DIR): to look at, never committed.
SHOTS = os.environ.get("SERVESCOPE_SCREENSHOTS")


@pytest.fixture(scope="module")
def served():
    with OpenAIServer(long_answers()) as server:
        yield server


def view_url(served) -> str:
    return f"{served.url}/s/{served.served.engine.live.session.session_id}/view"


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def send_with_the_keyboard(page, prompt: str, max_tokens: int) -> None:
    page.focus("#class-prompt")
    page.keyboard.type(prompt)
    page.keyboard.press("Tab")
    page.keyboard.press("Control+a")
    page.keyboard.type(str(max_tokens))
    page.keyboard.press("Enter")


def test_the_sender_sees_their_answer_and_their_request_marked_yours_and_nobody_else_does(served, new_page):
    mine = open_dashboard(new_page(), view_url(served))
    other = open_dashboard(new_page(), view_url(served))
    send_with_the_keyboard(mine, "Why does my request wait?", 200)
    request_id = wait_until(mine, "() => [...window.servescope.store.mine][0]")
    # While it runs: the sender's batch row and chip say so.
    wait_until(mine, "id => document.querySelector(`#batch .batch-row.mine[data-id='${id}']`)", request_id)
    shot(mine, "sender-running-1920x1080")
    chip = f".chip[data-id='{request_id}']"
    wait_until(mine, "() => document.getElementById('class-timing').textContent.includes(', length')", timeout=20_000)
    wait_until(other, f"() => document.querySelector(\"#queues .lane.finished {chip}\")")
    wait_until(mine, f"() => document.querySelector(\"#queues .lane.finished {chip}\")")
    shot(mine, "sender-finished-1920x1080")
    shot(other, "other-viewer-1920x1080")

    timing = mine.locator("#class-timing").text_content()
    assert "(yours): 200 tokens, TTFT " in timing and ", ITL " in timing
    assert len(mine.locator("#class-output").text_content().split()) == 200
    assert mine.locator(f"#queues {chip} .mine").is_visible()
    assert "yours" in mine.locator(f"#queues {chip}").get_attribute("aria-label")
    assert not other.locator(f"#queues {chip} .mine").is_visible()
    assert "yours" not in other.locator(f"#queues {chip}").get_attribute("aria-label")
    assert other.evaluate("window.servescope.store.mine.size") == 0
    # ... and so does its inspector, for the sender alone.
    mine.click(f"#queues {chip}")
    wait_until(mine, "() => document.querySelector('#inspector h3 .pill.mine')")
    shot(mine, "sender-inspector-1920x1080")
    other.click(f"#queues {chip}")
    wait_until(other, "() => document.querySelector('#inspector h3')")
    assert other.locator("#inspector h3 .pill.mine").count() == 0
    # The prompt's text is on the sender's own form alone: no other screen has it.
    assert "Why does my request wait?" not in other.content()
    assert mine.errors == [] and other.errors == []


@pytest.mark.parametrize("theme, viewport", [("projector", PROJECTOR), ("normal", NORMAL)],
                         ids=["projector-1280x720", "1920x1080"])
def test_the_page_with_the_form_reads_well_and_is_accessible(served, new_page, theme, viewport):
    page = open_page(new_page, view_url(served), theme, viewport)
    wait_until(page, "window.servescope && window.servescope.store.session !== null")
    send_with_the_keyboard(page, "A question from the back row", 24)
    wait_until(page, "() => document.getElementById('class-timing').textContent.includes(', length')", timeout=20_000)
    page.wait_for_timeout(300)
    shot(page, f"form-{theme}-{viewport['width']}x{viewport['height']}")

    check_layout(page, f"class form, {theme}", projector=theme == "projector")
    assert axe_violations(page) == []
    assert page.errors == []


def test_with_the_lecturers_opt_in_the_projector_shows_a_prompt_as_text(new_page):
    """Text from a stranger, markup included, is shown as the characters sent: nothing of it runs or renders."""
    with OpenAIServer(long_answers(), show_class_prompts=True) as served:
        student = open_dashboard(new_page(), view_url(served))
        projector = open_page(new_page, view_url(served), "projector", PROJECTOR)
        wait_until(projector, "window.servescope && window.servescope.store.session !== null")
        hostile = '<img src=x id=injected onerror="window.pwned=1">is this <b>bold</b>?'
        send_with_the_keyboard(student, hostile, 8)
        request_id = wait_until(student, "() => [...window.servescope.store.mine][0]")
        wait_until(projector, f"() => document.querySelector(\"#queues .chip[data-id='{request_id}']\")")
        projector.click(f"#queues .chip[data-id='{request_id}']")
        wait_until(projector, "() => document.querySelector('#inspector .prompt-text')")
        shot(projector, "projector-prompt-opted-in-1280x720")

        assert projector.locator("#inspector .prompt-text").text_content() == hostile
        assert projector.locator("#injected").count() == 0 and projector.locator("#inspector b").count() == 0
        assert not projector.evaluate("window.pwned")
        assert projector.locator(".class-public").is_visible()
        assert student.errors == [] and projector.errors == []
