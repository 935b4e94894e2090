"""Breakpoints the server refuses, said on the page; the keyboard's way through the chips and the KV
grid; where /fleet and the default scenario open."""

from __future__ import annotations

import re

from tests.browser.pages import NORMAL, PROJECTOR, axe_violations, check_layout, open_dashboard, set_theme, wait_for_step

# Five short requests in a large pool: KV usage never reaches 100%.
SMALL = ('{"entrypoint":"offline","engine":{"num_gpu_blocks":2048},'
         '"workload":{"num_requests":5,"arrival_rate":50,"lengths":"fixed","prompt_len":64,"output_len":16}}')


def advance(page, steps: int) -> None:
    target = page.evaluate("window.servescope.store.step") + steps
    page.evaluate("n => window.servescope.send({type: 'step', n})", steps)
    wait_for_step(page, target)


def set_in_dialog(page, kind: str, value: str) -> None:
    page.click("#breakpoints-button")
    page.fill(f"#breakpoints-dialog input[data-kind='{kind}']", value)
    page.click("#bp-save")


# -- breakpoints -----------------------------------------------------------------------------
def test_a_step_already_behind_is_refused_in_the_dialog_at_its_field(presenter):
    advance(presenter, 297)

    set_in_dialog(presenter, "step", "10")
    error = presenter.locator("#breakpoints-dialog .bp-error")
    error.filter(has_text="already behind").wait_for()

    assert error.inner_text() == "Not set. Step 10 is already behind: the run is at step 297"
    assert error.get_attribute("role") == "alert" and error.is_visible()
    assert presenter.locator("#breakpoints-dialog").evaluate("d => d.open")  # still open, to correct it
    step = presenter.locator("#breakpoints-dialog input[data-kind='step']")
    assert step.get_attribute("aria-invalid") == "true"
    assert step.evaluate("input => document.activeElement === input")
    assert step.get_attribute("aria-describedby") == "bp-error"
    assert presenter.evaluate("window.servescope.store.status.breakpoints") == []
    assert presenter.errors == []


def test_an_unknown_request_id_is_refused_naming_it_and_the_ids_there_are(presenter):
    num_requests = presenter.evaluate("window.servescope.store.session.num_requests")

    set_in_dialog(presenter, "request", "req-99999")
    error = presenter.locator("#breakpoints-dialog .bp-error")
    error.filter(has_text="req-99999").wait_for()

    assert error.inner_text() == (f"Not set. No request 'req-99999' in this workload: its ids run "
                                  f"req-00000 to req-{num_requests - 1:05d} ({num_requests} requests)")
    # The ids are whole on their lines: none breaks at its hyphen.
    assert error.evaluate("p => [...p.querySelectorAll('.id')].every((s) => s.getClientRects().length === 1)")
    assert error.locator(".id").count() == 3


def test_an_accepted_set_closes_the_dialog(presenter):
    set_in_dialog(presenter, "step", "40")
    presenter.wait_for_function("window.servescope.store.status.breakpoints.length === 1")

    assert not presenter.locator("#breakpoints-dialog").evaluate("d => d.open")
    assert presenter.locator("#breakpoints-button").inner_text() == "Breakpoints (1)"


def test_b_running_to_the_end_without_a_hit_says_so(server, new_page):
    page = open_dashboard(new_page(), f"{server.url}/?config={SMALL}")
    set_in_dialog(page, "kv_usage", "100")
    page.wait_for_function("window.servescope.store.status.breakpoints.length === 1")

    page.keyboard.press("b")
    notice = page.locator("#notice")
    notice.filter(has_text="no breakpoint was hit").wait_for(timeout=30_000)

    end = page.evaluate("window.servescope.store.status.step")
    assert page.evaluate("window.servescope.store.done")
    assert notice.inner_text().startswith(f"B ran to the end of the run (step {end}): no breakpoint was hit")
    assert notice.get_attribute("role") == "alert"


def test_a_refusal_outside_the_dialog_is_on_the_page_not_the_console(presenter):
    messages = []
    presenter.on("console", lambda message: messages.append(message.text))

    presenter.evaluate("window.servescope.send({type: 'run_to_breakpoint'})")
    presenter.locator("#notice", has_text="set a breakpoint first").wait_for()
    presenter.locator("#notice .notice-close").click()

    assert presenter.locator("#notice").inner_text() == ""
    assert not [m for m in messages if "breakpoint" in m]


# -- the keyboard -----------------------------------------------------------------------------
def test_esc_after_enter_on_a_chip_gives_space_back_to_play(presenter):
    advance(presenter, 20)
    chip = presenter.locator(".lane.running .chip").first
    request_id = chip.get_attribute("data-id")
    chip.focus()

    presenter.keyboard.press("Enter")
    presenter.wait_for_function("id => window.servescope.store.selected === id", arg=request_id)
    assert presenter.locator("#inspector").is_visible()
    presenter.keyboard.press("Escape")
    assert presenter.evaluate("document.activeElement === document.body && window.servescope.store.selected === null")
    presenter.keyboard.press(" ")

    presenter.wait_for_function("window.servescope.store.status.playing")
    presenter.keyboard.press(" ")


def cursor_block(page) -> int:
    line = page.locator("#kv-cursor").inner_text()
    return int(re.match(r"block (\d+):", line)[1])


def hover_title(page, block: int) -> str:
    """The pointer's tooltip over `block`, as the grid lays it out now."""
    page.locator("#view-paged").focus()  # the pointer goes over the grid; the keyboard stays out of it
    cell = int(page.locator("#kv-canvas").get_attribute("data-cell"))
    box = page.locator("#kv-canvas").bounding_box()
    cols = int(box["width"] // cell)
    page.mouse.move(box["x"] + (block % cols) * cell + cell / 2, box["y"] + (block // cols) * cell + cell / 2)
    return page.locator("#kv-canvas").get_attribute("title")


def test_the_kv_grid_is_reached_with_tab_and_its_blocks_read_with_the_arrows(presenter):
    advance(presenter, 30)
    presenter.locator("#view-contiguous").focus()

    presenter.keyboard.press("Tab")
    assert presenter.evaluate("document.activeElement.id") == "kv-canvas"
    first = cursor_block(presenter)
    owner = presenter.evaluate("b => window.servescope.store.blocks.owner[b]", first)
    ref = presenter.evaluate("b => window.servescope.store.blocks.ref[b]", first)
    logical = presenter.evaluate("([o, b]) => window.servescope.store.tables.get(o).indexOf(b)", [owner, first])
    words = f"block {first}: {owner}, logical block {logical}, ref count {ref}"
    assert presenter.locator("#kv-cursor").inner_text().startswith(words)
    assert presenter.locator("#kv-cursor").get_attribute("aria-live") == "polite"

    presenter.keyboard.press("ArrowRight")
    assert cursor_block(presenter) == first + 1
    canvas = presenter.locator("#kv-canvas")
    cols = int(canvas.bounding_box()["width"] // int(canvas.get_attribute("data-cell")))
    presenter.keyboard.press("ArrowDown")
    assert cursor_block(presenter) == first + 1 + cols
    presenter.keyboard.press("ArrowUp")
    presenter.keyboard.press("ArrowLeft")
    assert cursor_block(presenter) == first
    assert presenter.evaluate("window.servescope.store.step") == 30  # the arrows moved the cursor, not the session

    words = presenter.locator("#kv-cursor").inner_text()
    assert hover_title(presenter, first) == words  # what the pointer's tooltip says, word for word


def test_enter_on_a_block_opens_its_request_and_esc_leaves_the_grid(presenter):
    advance(presenter, 30)
    presenter.locator("#kv-canvas").focus()
    owner = presenter.evaluate("b => window.servescope.store.blocks.owner[b]", cursor_block(presenter))

    presenter.keyboard.press("Enter")
    presenter.wait_for_function("id => window.servescope.store.selected === id", arg=owner)
    presenter.locator("#inspector", has_text=f"{owner} running").wait_for(timeout=30_000)  # the inspector, open on it
    presenter.keyboard.press("Escape")

    assert presenter.evaluate("document.activeElement === document.body")
    assert presenter.locator("#kv-cursor").inner_text() == ""
    presenter.keyboard.press("ArrowRight")
    wait_for_step(presenter, 31)  # the arrows step the session again


def test_the_grid_keys_keep_the_page_readable_and_accessible(presenter):
    advance(presenter, 30)
    for theme, viewport in (("projector", PROJECTOR), ("normal", NORMAL)):
        set_theme(presenter, theme, viewport)
        presenter.locator("#kv-canvas").focus()
        presenter.keyboard.press("ArrowRight")
        check_layout(presenter, f"{theme} with the KV cursor", projector=theme == "projector")
        assert axe_violations(presenter) == [], theme
        presenter.keyboard.press("Escape")


# -- where pages open -------------------------------------------------------------------------
def test_fleet_opens_on_its_first_busy_frame_not_its_end(server, new_page):
    page = new_page(1280, 720)
    page.goto(f"{server.url}/fleet?replicas=3&requests=90&rate=12")
    page.wait_for_selector(".replica canvas", timeout=60_000)
    page.wait_for_function("window.servescope.run() !== null")

    frame = page.evaluate("window.servescope.frame()")
    frames = page.evaluate("window.servescope.run().frames.map((f) => f.replicas.map((r) => r.running + r.waiting))")
    shown = sum(int(page.locator(f".replica {q}").nth(i).inner_text()) for q in (".running-n", ".waiting-n") for i in range(3))
    finished = sum(int(text) for text in page.locator(".replica .finished").all_inner_texts())

    assert frame < len(frames) - 1 and finished < 90
    assert sum(frames[frame]) == shown > 0  # a replica at work on screen
    assert all(sum(earlier) == 0 for earlier in frames[:frame])  # and nothing happened before it
    assert page.evaluate("document.getElementById('time').value") == str(frame)


def test_the_default_scenario_is_busy_within_the_first_second_of_play(presenter):
    """At the default speed a second of play is 20 steps; by then the engine runs a dozen requests
    (the default preset's burst waiting at the start), drawn in the lanes, the batch and the pool."""
    steps_per_s = presenter.evaluate("window.servescope.store.status.steps_per_s")
    assert steps_per_s == 20 and not presenter.evaluate("window.servescope.store.status.time_ratio")

    advance(presenter, steps_per_s)

    running = presenter.evaluate("window.servescope.store.queues.running.length")
    assert running >= 10
    assert presenter.locator(".lane.running .chip").count() >= 10
    assert presenter.locator("#batch .budget").inner_text().startswith(f"step {steps_per_s} ·")
    assert presenter.evaluate("window.servescope.store.lastRecord.scheduled.length") >= 10
    assert presenter.evaluate("window.servescope.store.lastRecord.kv_usage") > 0.1
