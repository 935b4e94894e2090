"""The issue's question answered from the page alone: for the default scenario's first preemption,
the Why? tab names the request that needed blocks, how many it needed and how many were free, the
victim and the rule that chose it, and where the victim's blocks went; each number is checked
against the step computed here, independently, with the core's decision trace on."""

from __future__ import annotations

import json
import re

import pytest

from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario, with_vllm_defaults
from tests.browser.pages import wait_for_step

NUMBER = r"([\d,]+)"


def as_int(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.fixture(scope="module")
def first_preemption():
    """The default scenario's first preempting step, with its decision trace, run as a session runs
    it (vLLM's defaults: async scheduling on for 0.33.0)."""
    data = json.loads(json.dumps(PRESET_SCENARIOS["default"]))
    sim = Scenario.from_dict(with_vllm_defaults({**data, "name": "default"})).build(keep_finished=True)
    sim.scheduler.enable_decision_trace()
    while True:
        record = sim.step()
        if record.preempted:
            return record


def run_to_first_preemption(page) -> None:
    """As a user would: set a preemption breakpoint in its dialog and press B."""
    page.click("#breakpoints-button")
    page.check("#breakpoints-dialog input[data-kind='preemption']")
    page.click("#bp-save")
    page.wait_for_function("window.servescope.store.status.breakpoints.length === 1")
    page.keyboard.press("b")
    page.wait_for_function("(window.servescope.store.lastRecord || {preempted: []}).preempted.length > 0", timeout=60_000)


def test_the_preemption_line_opens_the_evidence_and_its_numbers_are_the_steps(presenter, first_preemption):
    preemption = first_preemption.decisions["preemptions"][0]
    freed = next(f for f in first_preemption.decisions["frees"] if f["request"] == preemption["victim"])
    run_to_first_preemption(presenter)
    wait_for_step(presenter, first_preemption.step + 1)

    presenter.locator("#events .event.preempted").first.click()
    assert presenter.locator("#tab-why").get_attribute("aria-selected") == "true"
    evidence = presenter.locator("#why .why-request")
    evidence.wait_for()
    text = " ".join(evidence.inner_text().split())

    match = re.search(rf"Preempted in step {NUMBER}\. (\S+) needed {NUMBER} blocks? for {NUMBER} more tokens? but only "
                      rf"{NUMBER} blocks? (?:was|were) free \(counting {NUMBER} free blocks that still hold evictable "
                      rf"cached prefixes\)\. Rule: (.+?)(?:: (\S+?)|, and that was (\S+) itself: it preempted itself)\. "
                      rf"The victim held {NUMBER} blocks?\.", text)
    assert match, text
    step, needing, needed, tokens, free, evictable, rule, other_victim, self_victim, held = match.groups()
    victim = other_victim or self_victim
    assert (self_victim is not None) == (preemption["victim"] == preemption["request"])
    assert as_int(step) == first_preemption.step + 1
    assert needing == preemption["request"]
    assert as_int(needed) == preemption["blocks_needed"] and as_int(tokens) == preemption["tokens"]
    assert as_int(free) == preemption["blocks_free"] < as_int(needed)
    assert as_int(evictable) == preemption["evictable_cached"]
    assert victim == preemption["victim"] == first_preemption.preempted[0]
    assert rule == "FCFS preempts the last request of the running list (the newest)"
    assert as_int(held) == preemption["victim_blocks"] == freed["blocks"]

    # Where the victim's blocks went, by destination, as the step's trace says.
    destinations = re.search(rf"Its {NUMBER} blocks?: (.+?)\.(?: |$)", text)
    assert destinations, text
    assert as_int(destinations.group(1)) == freed["blocks"]
    said = destinations.group(2)
    for key, words in (("to_head", "to the head of the free queue"), ("to_tail_cached", "still holding a cached prefix"),
                       ("still_shared", "shared with other requests")):
        count = len(freed[key])
        if count:
            assert re.search(rf"{count} blocks? {'stay in use, ' if key == 'still_shared' else ''}"
                             rf"{'to the tail, ' if key == 'to_tail_cached' else ''}", said), (key, said)
            assert words in said
        else:
            assert words not in said

    # The page's own record of the step agrees, and the block diff is drawn on the grid.
    assert presenter.evaluate("window.servescope.store.lastRecord.preempted") == first_preemption.preempted
    returned = sum(len(f["to_head"]) + len(f["to_tail_cached"]) + len(f["to_tail"]) for f in first_preemption.decisions["frees"])
    diff = " ".join(presenter.locator("#why .why-diff").inner_text().split())
    assert f"freed {returned}" in diff
    assert presenter.evaluate("window.servescope.store.blockDiff.freed.length") == returned
    assert presenter.errors == []


def test_the_inspector_lists_a_whole_block_table_and_the_history(presenter):
    """No truncation at 16 entries: the longest running table, scrolled to its end, shows its last block."""
    presenter.evaluate("window.servescope.send({type: 'step', n: 1500})")
    presenter.wait_for_function("window.servescope.store.step === 1500", timeout=60_000)
    request_id, table = presenter.evaluate("""() => {
        const { store } = window.servescope;
        return [...store.tables].filter(([id]) => store.queues.running.includes(id)).sort((a, b) => b[1].length - a[1].length)[0];
    }""")
    assert len(table) > 16
    presenter.locator(f".lane.running .chip[data-id='{request_id}']").click()
    heading = presenter.locator("#inspector h4").filter(has_text="Block table")
    heading.wait_for()
    assert heading.inner_text() == f"Block table: {len(table)} blocks"
    rows = presenter.locator("#inspector .vlist.table")
    rows.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    last = presenter.locator("#inspector .vlist.table .vrow:not(.vhead)").last
    presenter.wait_for_function("n => [...document.querySelectorAll('#inspector .vlist.table .vrow')]"
                                ".some((r) => r.firstChild.textContent === String(n))", arg=len(table) - 1)
    assert last.locator("span").nth(1).inner_text() == str(table[-1])
    history = presenter.locator("#inspector h4").filter(has_text="History")
    assert int(re.search(r"(\d+) steps", history.inner_text()).group(1)) > 0


@pytest.fixture(scope="module")
def last_token_in_flight():
    """The first step of the default session (async scheduling on, as vLLM 0.33 runs it) after
    which a request's last token is in flight: the step, the request and its blocks."""
    data = json.loads(json.dumps(PRESET_SCENARIOS["default"]))
    sim = Scenario.from_dict(with_vllm_defaults({**data, "name": "default"})).build(keep_finished=True)
    while True:
        sim.step()
        for request in sim.scheduler.running:
            if request.num_output_placeholders and request.num_output_tokens + 1 == request.max_tokens:
                return sim.step_index, request.request_id, len(sim.block_table(request.request_id))


def test_a_request_whose_last_token_is_in_flight_says_so_and_finishes_a_step_later(presenter, last_token_in_flight):
    """The async one-step lag on a finishing request: the inspector counts its last token in flight
    and says it keeps its blocks until that token comes back; one step later it has finished."""
    step, request_id, blocks = last_token_in_flight
    presenter.evaluate("n => window.servescope.send({type: 'seek', step: n})", step)
    wait_for_step(presenter, step)
    presenter.locator(f"#queues .lane.running .chip[data-id='{request_id}']").click()
    note = presenter.locator("#inspector .in-flight")
    note.wait_for()
    assert f"holding its {blocks} blocks" in " ".join(note.inner_text().split())
    assert "+ 1 in flight" in presenter.locator("#inspector .kvlist").inner_text()

    presenter.keyboard.press("ArrowRight")
    wait_for_step(presenter, step + 1)
    presenter.locator("#inspector .pill", has_text="finished").wait_for()
    assert presenter.locator("#inspector .in-flight").count() == 0
