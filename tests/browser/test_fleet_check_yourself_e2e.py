"""Check yourself in the fleet view (issue 29, part 1, item 6): at a fleet lesson's end beat the
class answers questions about the arm's run in the same dialog as the dashboard's, a wrong answer
names the instant to go to (and goes there), and only the presenter's page reveals the answers; a
class's copy (`&view=1`) checks them. At 1280x720 in the projector theme and 1920x1080."""

from __future__ import annotations

from tests.browser.pages import NORMAL, PROJECTOR, axe_violations, check_layout, set_theme
from tests.browser.test_check_yourself_e2e import DIALOG, FITS, wrong_answer
from tests.browser.test_fleet_lecture_e2e import at_frame, open_lesson

LESSON, ARM = "routing-with-prefix-caches", "prefix-aware"


def check_fits(page, where: str, projector: bool) -> None:
    boxes = page.evaluate(FITS)
    assert boxes["overflow"] <= 1 and boxes["close"] <= boxes["bottom"], (where, boxes)
    check_layout(page, where, projector=projector, min_texts=10)  # a modal: only its own text is checked


def shown(answer) -> str:
    return f"{answer:,}" if isinstance(answer, int) else answer


def test_fleet_check_yourself_checks_reveals_and_goes_to_the_instant(server, new_page):
    page = open_lesson(new_page, f"{server.url}/fleet?lesson={LESSON}&arm={ARM}", "projector", PROJECTOR)
    asked = page.evaluate("window.servescope.run().lesson.questions")
    assert 2 <= len(asked) <= 3
    end = page.evaluate("window.servescope.story.beats().at(-1)")
    assert end["event"] == "end"
    page.locator("#lesson button[data-action=beat]").last.click()
    at_frame(page, end["frame"])
    page.locator("#lesson button[data-action=check]").click()
    dialog = page.locator(DIALOG)
    dialog.wait_for(state="visible")
    assert page.evaluate("document.activeElement.id") == "check-0"
    assert all(result == "" for result in dialog.locator(".check-result").all_inner_texts())
    assert ARM in dialog.locator("h2").inner_text()

    page.fill("#check-0", shown(asked[0]["answer"]))
    page.press("#check-0", "Enter")
    assert "Right" in page.locator("#check-0-result").inner_text()
    page.fill("#check-1", wrong_answer(asked[1]))
    page.press("#check-1", "Enter")
    verdict = page.locator("#check-1-result").inner_text()
    assert "Not quite" in verdict and asked[1]["at"] in verdict, verdict
    check_fits(page, "fleet check yourself, answered, projector 1280x720", projector=True)
    assert axe_violations(page) == []

    dialog.get_by_role("button", name="Reveal answers").click()
    for i, question in enumerate(asked):
        text = page.locator(f"#check-{i}-result").inner_text()
        assert text.startswith("Answer:") and shown(question["answer"]) in text and question["at"] in text, (i, text, page.errors)
    check_fits(page, "fleet check yourself, revealed, projector 1280x720", projector=True)
    assert axe_violations(page) == []

    # Go to: the dialog closes and the fleet's time moves to the instant the question names.
    page.locator("#check-1-result").evaluate("el => el.textContent = ''")  # revealed; answer again to get the button
    page.fill("#check-1", wrong_answer(asked[1]))
    page.press("#check-1", "Enter")
    page.locator("#check-1-result button[data-action=seek]").click()
    dialog.wait_for(state="hidden")
    at_frame(page, asked[1]["frame"])
    assert page.locator("#clock").inner_text() == asked[1]["at"]

    set_theme(page, "normal", NORMAL)
    page.keyboard.press("q")  # Q opens it at any instant
    dialog.wait_for(state="visible")
    check_fits(page, "fleet check yourself, normal 1920x1080", projector=False)
    assert axe_violations(page) == []
    assert page.errors == []


def test_a_class_copy_of_the_fleet_lesson_checks_answers_but_cannot_reveal_them(server, new_page):
    page = open_lesson(new_page, f"{server.url}/fleet?lesson={LESSON}&arm={ARM}&view=1", "projector", PROJECTOR)
    asked = page.evaluate("window.servescope.run().lesson.questions")
    page.keyboard.press("q")
    page.locator(DIALOG).wait_for(state="visible")
    page.fill("#check-0", wrong_answer(asked[0]))
    page.press("#check-0", "Enter")
    assert "Not quite" in page.locator("#check-0-result").inner_text()
    assert page.locator(f"{DIALOG} button[data-action=reveal]").count() == 0
    assert page.errors == []
