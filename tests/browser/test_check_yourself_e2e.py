"""Check yourself (issue 29, part 1, item 6), in a real browser at 1280x720 in the projector theme:
at a lesson's end beat the class answers questions about the run it watched, a right answer and a
wrong one get their verdicts (the wrong one a step to look at), and the presenter reveals the rest."""

from __future__ import annotations

from tests.browser.pages import NORMAL, PROJECTOR, SEEK_MS, axe_violations, check_layout, open_page, set_theme
from tests.browser.test_lesson_screen_e2e import open_lesson, seek

LESSON, ARM = "memory-pressure", "recompute"
DIALOG = "#check-dialog"
FITS = """() => {
  const dialog = document.querySelector('#check-dialog'), box = dialog.getBoundingClientRect();
  const close = dialog.querySelector('.slide-foot form button').getBoundingClientRect();
  return {overflow: dialog.scrollHeight - dialog.clientHeight, close: close.bottom, bottom: Math.min(box.bottom, innerHeight)};
}"""


def questions(page) -> list[dict]:
    detail = page.evaluate("name => fetch(`/api/lessons/${name}`).then((r) => r.json())", LESSON)
    return detail["questions"][ARM]


def check_fits(page, where: str, projector: bool) -> None:
    boxes = page.evaluate(FITS)
    assert boxes["overflow"] <= 1 and boxes["close"] <= boxes["bottom"], (where, boxes)
    check_layout(page, where, projector=projector, min_texts=10)  # a modal: only its own text is checked


def wrong_answer(question: dict) -> str:
    return "req-99999" if isinstance(question["answer"], str) else str(question["answer"] + 1)


def test_check_yourself_at_the_end_beat_checks_answers_and_reveals_them(server, new_page):
    page = open_lesson(server, new_page, f"{LESSON}&arm={ARM}")
    asked = questions(page)
    assert 2 <= len(asked) <= 3
    end = page.evaluate("window.servescope.narration.beats().at(-1)")
    assert end["event"] == "end"
    seek(page, end["step"])
    page.locator("#narration button[data-action=check]").click()
    dialog = page.locator(DIALOG)
    dialog.wait_for(state="visible")
    assert page.evaluate("document.activeElement.id") == "check-0"  # the first answer box, ready to type in
    # No answer is on the page before it is checked or revealed.
    assert all(result == "" for result in dialog.locator(".check-result").all_inner_texts())

    right, wrong = asked[0], asked[1]
    page.fill("#check-0", f"{right['answer']:,}" if isinstance(right["answer"], int) else right["answer"])
    dialog.locator("form.check").nth(0).get_by_role("button", name="Check").click()
    assert "Right" in page.locator("#check-0-result").inner_text()
    page.fill("#check-1", wrong_answer(wrong))
    page.press("#check-1", "Enter")
    verdict = page.locator("#check-1-result").inner_text()
    assert "Not quite" in verdict and f"Seek to step {wrong['step']:,}" in verdict, verdict
    assert page.locator("#check-1-result.wrong").count() == 1
    check_fits(page, "check yourself, answered, projector 1280x720", projector=True)
    assert axe_violations(page) == []

    dialog.get_by_role("button", name="Reveal answers").click()
    for i, question in enumerate(asked):
        shown = page.locator(f"#check-{i}-result").inner_text()
        answer = f"{question['answer']:,}" if isinstance(question["answer"], int) else question["answer"]
        assert shown.startswith("Answer:") and answer in shown, (i, shown)
    check_fits(page, "check yourself, revealed, projector 1280x720", projector=True)
    assert axe_violations(page) == []

    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    set_theme(page, "normal", NORMAL)
    page.keyboard.press("q")  # Q opens it again, at any step
    dialog.wait_for(state="visible")
    check_fits(page, "check yourself, normal 1920x1080", projector=False)
    assert page.errors == []


def test_a_wrong_answers_go_to_step_seeks_to_the_step_it_asks_about(server, new_page):
    page = open_page(new_page, f"{server.url}/?lesson={LESSON}&arm={ARM}", "projector", PROJECTOR)
    page.wait_for_function("window.servescope && window.servescope.narration.beats().length > 0", timeout=SEEK_MS)
    asked = questions(page)
    page.keyboard.press("q")
    page.locator(DIALOG).wait_for(state="visible")
    page.fill("#check-0", wrong_answer(asked[0]))
    page.press("#check-0", "Enter")
    page.locator("#check-0-result button[data-action=seek]").click()
    page.locator(DIALOG).wait_for(state="hidden")
    page.wait_for_function("step => window.servescope.store.step === step", arg=asked[0]["step"], timeout=SEEK_MS)


def test_a_viewer_checks_answers_but_cannot_reveal_them_or_seek(server, new_page):
    presenter = open_lesson(server, new_page, f"{LESSON}&arm={ARM}")
    viewer = open_page(new_page, presenter.url, "projector", PROJECTOR)  # a new tab holds no control token
    viewer.wait_for_function("window.servescope && window.servescope.narration.beats().length > 0", timeout=SEEK_MS)
    asked = questions(viewer)
    viewer.keyboard.press("q")
    viewer.locator(DIALOG).wait_for(state="visible")
    viewer.fill("#check-0", wrong_answer(asked[0]))
    viewer.press("#check-0", "Enter")
    assert "Not quite" in viewer.locator("#check-0-result").inner_text()
    assert viewer.locator(f"{DIALOG} button[data-action]").count() == 0  # neither Reveal answers nor Go to step
    assert viewer.errors == []
