"""The dashboard in a real browser: Debian's headless Chromium, driven by Playwright, against a
real uvicorn server on a loopback port (tests/browser/conftest.py). Each test opens its own browser
context and every wait is bounded by a timeout."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

import pytest
from playwright.sync_api import Page

from app.main import create_app
from app.routes.api import scenario_from
from app.schemas import SessionCreate
from app.session_manager import SessionManager
from app.settings import Settings
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario
from scheduler_core.timing.model_summary import model_summary
from scheduler_core.timing.presets import GPUS, MODELS
from tests.browser.pages import WAIT_MS, LiveServer, free_port, open_dashboard, wait_for_dashboard, wait_for_step

PANELS = [".panel.queues", ".panel.batch", ".panel.kv", ".panel.charts", ".panel.side"]
VIEWER_CONTROLS = ["#reset", "#step-back", "#play", "#step", "#speed", "#breakpoints-button"]


# -- reading and driving the page ----------------------------------------------------------
def session_of(page: Page) -> tuple[str, str]:
    """(session id, control token): the id from the page's URL, the token from the tab's sessionStorage."""
    session_id = urlparse(page.url).path.split("/")[2]
    return session_id, page.evaluate("id => sessionStorage.getItem('servescope:token:' + id) || ''", session_id)


def shown_step(page: Page) -> int:
    return int(page.evaluate("document.getElementById('step-counter').value").replace(",", ""))


def advance(page: Page, steps: int) -> None:
    """Setup: move the session forward in one command and wait until the page shows it."""
    target = shown_step(page) + steps
    page.evaluate("n => window.servescope.send({type: 'step', n})", steps)
    wait_for_step(page, target)


def server_session(server: LiveServer, session_id: str) -> dict:
    with urllib.request.urlopen(f"{server.url}/api/sessions/{session_id}", timeout=5) as response:
        return json.load(response)


def select_running_chip(page: Page) -> str:
    chip = page.locator(".lane.running .chip").first
    request_id = chip.get_attribute("data-id")
    chip.click()
    page.wait_for_function("id => window.servescope.store.selected === id", arg=request_id)
    return request_id


def box(page: Page, selector: str) -> dict:
    return page.locator(selector).first.bounding_box()


def overlaps(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] - 1 and b["x"] < a["x"] + a["width"] - 1
            and a["y"] < b["y"] + b["height"] - 1 and b["y"] < a["y"] + a["height"] - 1)


# -- loading -------------------------------------------------------------------------------
def test_page_loads_and_steps_without_console_or_page_errors(presenter):
    """Loading the page, stepping and selecting a request log no errors and throw nothing."""
    advance(presenter, 200)
    select_running_chip(presenter)
    presenter.click("#step")
    wait_for_step(presenter, 201)
    presenter.wait_for_timeout(300)
    assert presenter.errors == []


# -- stepping ------------------------------------------------------------------------------
def test_step_button_advances_the_counter_and_shows_the_step_in_the_batch_panel(presenter):
    """The step button takes one step; the batch panel shows that step, numbered like the counter."""
    presenter.click("#step")
    wait_for_step(presenter, 1)
    presenter.click("#step")
    wait_for_step(presenter, 2)
    assert presenter.locator("#batch .budget").inner_text().startswith("step 2 ·")


def test_under_async_scheduling_the_batch_tells_the_pass_time_from_the_batchs_gpu_time(server, presenter, new_page):
    """The default session runs vLLM 0.33's async loop: a pass waits for the batch in flight, so its
    time is not what the step's own batch costs on the GPU; the panel gives both, each named, and
    the synchronous loop keeps its one step time."""
    advance(presenter, 20)
    session = server_session(server, session_of(presenter)[0])
    assert session["scenario"]["engine"]["async_scheduling"] is True
    record = presenter.evaluate("window.servescope.store.lastRecord")
    gpu_ms = sum(record["cost"].values()) * 1e3
    assert "pass time" in presenter.locator("#batch .legend").inner_text()
    shown = f"{gpu_ms:.2f}" if gpu_ms < 10 else f"{gpu_ms:.1f}"  # as the page writes milliseconds
    assert presenter.locator("#batch .cost").inner_text().startswith(f"this batch on the GPU {shown} ms:")
    sync = open_dashboard(new_page(), f"{server.url}/?lesson=async-scheduling&arm=sync")
    advance(sync, 20)
    assert "step time" in sync.locator("#batch .legend").inner_text()
    assert "on the GPU" not in sync.locator("#batch .cost").inner_text()


def test_a_served_run_names_the_front_end_in_the_batch_panel(server, presenter, new_page):
    """The dashboard serves the engine behind vLLM's API server: a step whose tokens still had to
    reach their clients says how long that took; the offline engine has no such line."""
    advance(presenter, 20)
    record = presenter.evaluate("window.servescope.store.lastRecord")
    assert record["front_end_s"] > 0
    assert "front end: +" in presenter.locator("#batch .legend").inner_text()
    offline = open_dashboard(new_page(), f"{server.url}/?config=" + quote(json.dumps({"entrypoint": "offline"})))
    advance(offline, 20)
    assert offline.evaluate("window.servescope.store.lastRecord")["front_end_s"] == 0
    assert "front end" not in offline.locator("#batch .legend").inner_text()


def test_right_arrow_takes_one_step(presenter):
    """→ takes one step."""
    presenter.keyboard.press("ArrowRight")
    wait_for_step(presenter, 1)


def test_shift_right_arrow_takes_ten_steps(presenter):
    """Shift+→ takes ten steps."""
    presenter.keyboard.press("Shift+ArrowRight")
    wait_for_step(presenter, 10)


def test_step_back_button_goes_back_one_step(presenter):
    """The ◀ button goes back one step."""
    advance(presenter, 5)
    presenter.click("#step-back")
    wait_for_step(presenter, 4)


def test_left_arrow_goes_back_one_step(presenter):
    """← goes back one step."""
    advance(presenter, 5)
    presenter.keyboard.press("ArrowLeft")
    wait_for_step(presenter, 4)


def test_home_resets_to_step_zero(presenter):
    """Home goes back to step 0."""
    advance(presenter, 30)
    presenter.keyboard.press("Home")
    wait_for_step(presenter, 0)


# -- playback ------------------------------------------------------------------------------
def wait_until_paused_and_still(page: Page) -> None:
    """Paused, and the step no longer changes (what was in flight has arrived)."""
    page.wait_for_function("!window.servescope.store.status.playing")
    page.wait_for_timeout(300)
    paused_at = shown_step(page)
    page.wait_for_timeout(500)
    assert shown_step(page) == paused_at


def test_play_button_advances_over_time_and_pause_stops_it(presenter):
    """Play advances the step on its own; pressing the button again pauses it."""
    presenter.click("#play")
    presenter.wait_for_function("window.servescope.store.step >= 5")
    presenter.click("#play")
    wait_until_paused_and_still(presenter)


def test_space_plays_and_pauses(presenter):
    """Space starts playback and Space again pauses it."""
    presenter.keyboard.press(" ")
    presenter.wait_for_function("window.servescope.store.step >= 5")
    presenter.keyboard.press(" ")
    wait_until_paused_and_still(presenter)


def test_plus_and_minus_change_the_speed(presenter):
    """+ picks the next faster speed and − the next slower one, from 20 steps/s."""
    assert presenter.locator("#speed").input_value() == "20"
    presenter.keyboard.press("+")
    presenter.wait_for_function("document.getElementById('speed').value === '50'")
    presenter.keyboard.press("-")
    presenter.wait_for_function("document.getElementById('speed').value === '20'")
    presenter.keyboard.press("-")
    presenter.wait_for_function("document.getElementById('speed').value === '10'")


# -- selecting and inspecting a request ----------------------------------------------------
def test_selecting_a_running_chip_inspects_it_and_shows_its_block_table(presenter):
    """A running request's chip opens the Request tab on it and the KV summary shows its block table."""
    advance(presenter, 200)
    request_id = select_running_chip(presenter)
    assert presenter.locator("#tab-inspector").get_attribute("aria-selected") == "true"
    presenter.locator("#inspector h3").filter(has_text=request_id).wait_for()
    summary = presenter.locator("#kv-summary")
    assert "logical→physical" in summary.inner_text()
    assert request_id in summary.inner_text()


def test_clicking_a_kv_block_selects_the_request_that_owns_it(presenter):
    """A click on a block of the KV canvas selects the request whose block table holds it."""
    advance(presenter, 200)
    request_id, block, x, y = presenter.evaluate("""() => {
        // The canvas lays blocks out row by row in square cells (kvgrid.js: sizeCanvas).
        const { store } = window.servescope;
        const [id, table] = [...store.tables].find(([, t]) => t.length > 0);
        const block = table[table.length - 1];
        const wrap = document.getElementById('kv-canvas').parentElement;
        const w = wrap.clientWidth, h = wrap.clientHeight, n = store.blocks.n;
        let cell = Math.max(2, Math.min(48, Math.floor(Math.sqrt((w * h) / n))));
        while (cell > 2 && Math.floor(w / cell) * Math.floor(h / cell) < n) cell -= 1;
        const cols = Math.max(1, Math.floor(w / cell));
        return [id, block, (block % cols) * cell + cell / 2, Math.floor(block / cols) * cell + cell / 2];
    }""")
    canvas = presenter.locator("#kv-canvas")
    canvas.hover(position={"x": x, "y": y})
    assert canvas.get_attribute("title").startswith(f"block {block}: {request_id}")
    canvas.click(position={"x": x, "y": y})
    presenter.wait_for_function("id => window.servescope.store.selected === id", arg=request_id)
    presenter.locator("#inspector h3").filter(has_text=request_id).wait_for()


def test_reserve_max_toggle_shows_the_reservation_summary(presenter):
    """"Reserve max" redraws the pool the pre-PagedAttention way and says how many requests fit."""
    advance(presenter, 200)
    summary = presenter.locator("#kv-summary")
    assert "unused slots in last blocks" in summary.inner_text()
    presenter.click("#view-contiguous")
    presenter.wait_for_function("document.getElementById('kv-summary').textContent.includes('reserving')")
    assert "max_model_len" in summary.inner_text()
    assert presenter.locator("#view-contiguous").get_attribute("aria-checked") == "true"
    presenter.click("#view-paged")
    presenter.wait_for_function("document.getElementById('kv-summary').textContent.includes('unused slots')")


# -- the event log -------------------------------------------------------------------------
def test_event_log_lists_events_and_clicking_one_seeks_to_the_step_after_it(presenter):
    """The event log lists the run's events, numbered as the step counter numbers steps; a click
    seeks to the step shown (the state just after the event)."""
    advance(presenter, 300)
    events = presenter.locator("#events .event")
    events.first.wait_for()
    assert events.count() > 3
    oldest = events.last
    event_step = int(oldest.get_attribute("data-step"))
    assert oldest.locator(".at").inner_text() == str(event_step)
    assert event_step != 300
    oldest.click()
    wait_for_step(presenter, event_step)


# The engine alone (offline): served, the API server would let the burst in a few hundred a second.
BIG_BATCH = ('{"entrypoint":"offline","engine":{"num_gpu_blocks":8192,"max_num_seqs":200,"max_num_batched_tokens":8192},'
             '"workload":{"num_requests":400,"arrival_rate":1000000,"lengths":"fixed","prompt_len":32,"output_len":64}}')


def test_a_batch_of_200_draws_the_rows_in_view_and_scrolls_to_every_one(server, new_page):
    """Every scheduled request has a row to scroll to, but only the rows in view are built."""
    page = open_dashboard(new_page(), f"{server.url}/?config={BIG_BATCH}")
    advance(page, 3)
    scheduled = page.evaluate("window.servescope.store.lastRecord.scheduled.map((s) => s[0])")
    assert len(scheduled) == 200
    assert page.locator("#batch .batch-row").count() < 60
    page.locator("#batch .batch-rows").evaluate("box => box.scrollTop = box.scrollHeight")
    last = page.locator(f"#batch .batch-row[data-id='{scheduled[-1]}']")
    last.wait_for()
    rows, row = page.locator("#batch .batch-rows").bounding_box(), last.bounding_box()
    assert rows["y"] <= row["y"] and row["y"] + row["height"] <= rows["y"] + rows["height"] + 1


def test_after_a_pause_every_chip_shows_the_request_at_its_position(server, new_page):
    """While playing, chips scrolled out of a lane's view wait; paused, every chip of every lane
    names the request the queue holds at its position."""
    page = open_dashboard(new_page(), f"{server.url}/?config={BIG_BATCH.replace('400', '600')}")  # 3 batches of 200
    page.evaluate("window.servescope.send({type: 'speed', steps_per_s: 1000})")
    page.evaluate("window.servescope.send({type: 'play'})")
    page.wait_for_function("window.servescope.store.step >= 70")  # past the first requests' finish
    page.evaluate("window.servescope.send({type: 'pause'})")
    wait_until_paused_and_still(page)
    lanes = page.evaluate("""() => {
      const q = window.servescope.store.queues;
      const shown = (lane) => [...document.querySelectorAll(`#queues .lane.${lane} .chip`)]
        .map((c) => [c.dataset.id, c.querySelector(".label").textContent]);
      return { running: [shown("running"), q.running], waiting: [shown("waiting"), q.waiting],
               finished: [shown("finished"), q.finished.slice().reverse()] };
    }""")
    for lane, (chips, queue) in lanes.items():
        assert chips, lane
        assert [chip_id for chip_id, _ in chips] == queue[:len(chips)], lane
        assert [label for _, label in chips] == ["#" + (chip_id.split("-")[1].lstrip("0") or "0") for chip_id, _ in chips], lane


def test_while_playing_the_lanes_catch_up_with_a_batch_turning_over_between_steps(server, new_page):
    """While playing, chips take their new requests a few dozen a frame (a whole batch turning
    over in one frame stalled it), and catch up in the frames between steps: at a slow speed, every
    chip in view names the request at its position while the step that turned the batch over
    (200 requests finished, 200 admitted) is still the one shown."""
    page = open_dashboard(new_page(), f"{server.url}/?config={BIG_BATCH}")
    page.evaluate("window.servescope.send({type: 'seek', step: 60})")  # a few steps before the batch finishes
    page.wait_for_function("window.servescope.store.step === 60")
    page.evaluate("window.servescope.send({type: 'play', steps_per_s: 4})")
    page.wait_for_function("""() => {
      const store = window.servescope.store;
      if (!store.status.playing || !store.lastRecord || store.lastRecord.finished.length < 100) return false;
      const q = store.queues;
      const lanes = { running: q.running, waiting: q.waiting, finished: q.finished.slice().reverse() };
      return Object.entries(lanes).every(([lane, ids]) => {
        const chips = [...document.querySelectorAll(`#queues .lane.${lane} .chip`)];
        return chips.length > 0 && chips.every((chip, i) => chip.inView === false || chip.dataset.id === ids[i]);
      });
    }""", polling="raf", timeout=15_000)
    page.evaluate("window.servescope.send({type: 'pause'})")


SPEC_DECODING = quote(json.dumps({
    "model": "llama-3.1-8b", "gpu": "h200",
    "engine": {"max_num_seqs": 64, "max_num_batched_tokens": 2048,
               "speculative_config": {"method": "eagle", "num_speculative_tokens": 3}},
    "workload": {"num_requests": 40, "arrival_rate": 20, "lengths": "sharegpt"},
}))


def test_the_batch_shows_each_decodes_drafts_and_the_drafts_accepted_in_the_step(server, new_page):
    """Under speculative decoding a decode row reads 1+3 tokens, the legend counts the drafts and
    the step's line the drafts accepted, each as the step's record says."""
    page = open_dashboard(new_page(), f"{server.url}/?config={SPEC_DECODING}")
    advance(page, 40)
    record = page.evaluate("window.servescope.store.lastRecord")
    drafts, accepted = record["scheduled_spec_decode_tokens"], record["num_accepted_tokens"]
    assert drafts and accepted
    request_id, num_drafts = next(iter(drafts.items()))
    row = page.locator(f"#batch .batch-row[data-id='{request_id}']")
    assert row.locator(".kind").inner_text() == f"D 1+{num_drafts} tok"
    assert f"({sum(drafts.values())} drafts)" in page.locator("#batch .legend").inner_text()
    assert f"{sum(accepted.values())} drafts accepted" in page.locator("#batch .budget").inner_text()


def test_the_kv_grid_counts_the_blocks_held_ahead_for_drafts(server, new_page):
    """Under speculative decoding requests hold blocks past their tokens for the drafts to verify
    (vLLM's lookahead slots): the KV summary counts them as the simulation holds them, and the
    legend names them."""
    page = open_dashboard(new_page(), f"{server.url}/?config={SPEC_DECODING}")
    advance(page, 40)
    sim = scenario_from(SessionCreate.model_validate({"scenario": json.loads(unquote(SPEC_DECODING))})).build()
    for _ in range(40):
        sim.step()
    block_size = sim.scheduler.kv_cache_manager.block_size
    lookahead = sum(max(0, len(sim.block_table(r.request_id)) - max(1, -(-r.num_computed_tokens // block_size)))
                    for r in sim.scheduler.running)
    assert lookahead > 0
    assert f"lookahead blocks {lookahead}" in page.locator("#kv-summary").inner_text()
    assert "lookahead" in page.locator("#kv-legend").inner_text()


def test_many_admissions_in_one_step_share_one_line_of_the_event_log(server, new_page):
    """A step that admits 185 requests is one line in the log, not 185. The first pass admits the
    one request that has arrived at time 0; the host's work on it (12.8 us) lets 14 more arrive (one
    a microsecond) for the second; with async scheduling the third admits the rest, to 200."""
    page = open_dashboard(new_page(), f"{server.url}/?config={BIG_BATCH}")
    advance(page, 3)
    lines = page.locator("#events .event.admitted")
    lines.nth(2).wait_for()
    assert lines.all_inner_texts() == ["3\n185 requests admitted (req-00015, …, req-00199)",
                                       "2\n14 requests admitted (req-00001, …, req-00014)", "1\nreq-00000 admitted"]


def test_clicking_an_event_of_the_selected_request_keeps_it_selected(presenter):
    """Going from a request's finish event to its admission event keeps that request selected."""
    advance(presenter, 300)
    finished = presenter.locator("#events .event.finished").last
    request_id = finished.get_attribute("data-request")
    finished.click()
    presenter.wait_for_function("id => window.servescope.store.selected === id", arg=request_id)
    presenter.click("#tab-events")
    admitted = presenter.locator(f"#events .event.admitted[data-request='{request_id}']")
    admitted_step = int(admitted.get_attribute("data-step"))
    admitted.click()
    wait_for_step(presenter, admitted_step)
    assert presenter.evaluate("window.servescope.store.selected") == request_id


# -- the configuration form --------------------------------------------------------------------
def test_config_form_shows_vllms_startup_lines_and_updates_them(presenter):
    """The form previews vLLM's KV cache size and maximum concurrency; an fp8 KV cache doubles them."""
    presenter.click("#configure")
    startup = presenter.locator("#cfg-startup")
    # The dialog is built after the schema arrives: wait for it before reading it.
    presenter.wait_for_function("document.querySelector('#cfg-startup')?.textContent.includes('GPU KV cache size')",
                                timeout=WAIT_MS)
    presenter.select_option("#cfg-top-kv_cache_dtype", "fp8")
    presenter.wait_for_function("document.querySelector('#cfg-engine-num_gpu_blocks').value === ''", timeout=WAIT_MS)
    presenter.wait_for_function("!document.querySelector('#cfg-startup')?.textContent.includes('Overriding')",
                                timeout=WAIT_MS)
    text = startup.text_content()
    tokens = int(text.split("GPU KV cache size: ")[1].split(" tokens")[0].replace(",", ""))
    expected = Scenario.from_dict({**PRESET_SCENARIOS["default"], "kv_cache_dtype": "fp8",
                                   "engine": {k: v for k, v in PRESET_SCENARIOS["default"]["engine"].items()
                                              if k != "num_gpu_blocks"}}).memory_plan()
    assert tokens == expected.kv_cache_size_tokens
    assert f"Maximum concurrency for 4,096 tokens per request: {expected.max_concurrency:.2f}x" in text


def test_config_form_shows_the_models_parameters_weights_experts_and_kv_per_group(presenter):
    """Picking gpt-oss-120b, the form says its total and active parameters, its weights per GPU with
    their formats, its experts and each KV group's bytes per token, as the server computed them."""
    presenter.click("#configure")
    presenter.wait_for_function("document.querySelector('#cfg-model li') !== null", timeout=WAIT_MS)
    presenter.select_option("#cfg-top-model", "gpt-oss-120b")
    presenter.wait_for_function("document.querySelector('#cfg-model b')?.textContent === 'gpt-oss-120b'", timeout=WAIT_MS)
    lines = presenter.locator("#cfg-model li").all_inner_texts()
    assert lines[0] == "gpt-oss-120b: 116.8B parameters, 5.13B active per token"
    weights = model_summary(MODELS["gpt-oss-120b"], GPUS["h200"])["weights_bytes_per_gpu"] / 2**30
    assert lines[1] == f"weights per GPU: {weights:.2f} GiB (linear bf16, experts mxfp4)"
    assert lines[2] == "experts: 128 in each of 36 MoE layers, 4 per token, no shared expert"
    assert lines[-2:] == ["sliding window 128, 18 layers: 2,048 B/token per layer",
                          "full attention, 18 layers: 2,048 B/token per layer"]
    # No line wider than its box: nothing clipped or running under the next column.
    assert presenter.evaluate("[...document.querySelectorAll('#cfg-model li')].every(e => e.scrollWidth <= e.clientWidth + 1)")


def test_config_form_takes_expert_parallelism_and_says_where_data_parallel_ranks_run(presenter):
    """EP over a TP group is one engine: its startup lines; two DP ranks are two engine cores: the
    server's refusal, naming the field and the fleet API, in place of the startup lines."""
    presenter.click("#configure")
    startup = presenter.locator("#cfg-startup")
    presenter.wait_for_function("document.querySelector('#cfg-startup')?.textContent.includes('GPU KV cache size')",
                                timeout=WAIT_MS)
    # Half of each GPU: a KV cache within one session's block limit.
    presenter.fill("#cfg-top-gpu_memory_utilization", "0.5")
    presenter.select_option("#cfg-top-model", "qwen3-30b-a3b")
    presenter.fill("#cfg-top-tensor_parallel_size", "2")
    presenter.check("#cfg-top-enable_expert_parallel")
    presenter.wait_for_function("document.querySelector('#cfg-model b')?.textContent === 'qwen3-30b-a3b'", timeout=WAIT_MS)
    presenter.wait_for_function("document.querySelector('#cfg-startup')?.textContent.includes('Model loading took')",
                                timeout=WAIT_MS)
    presenter.fill("#cfg-top-data_parallel_size", "2")
    presenter.locator("#cfg-top-data_parallel_size").dispatch_event("change")
    presenter.wait_for_function("document.querySelector('#cfg-startup')?.textContent.startsWith('data_parallel_size:')",
                                timeout=WAIT_MS)
    assert "/api/fleet" in startup.text_content()


# -- help and theme ------------------------------------------------------------------------
def test_question_mark_opens_the_help_dialog_and_escape_closes_it(presenter):
    """? opens the keyboard help; Esc closes it."""
    dialog = presenter.locator("#help-dialog")
    presenter.keyboard.press("?")
    dialog.wait_for(state="visible")
    presenter.keyboard.press("Escape")
    dialog.wait_for(state="hidden")


def test_t_toggles_between_the_normal_and_the_projector_theme(presenter):
    """T switches html[data-theme] to projector and back to normal."""
    theme = presenter.locator("html")
    assert theme.get_attribute("data-theme") == "normal"
    presenter.keyboard.press("t")
    presenter.wait_for_function("document.documentElement.dataset.theme === 'projector'")
    presenter.keyboard.press("t")
    presenter.wait_for_function("document.documentElement.dataset.theme === 'normal'")


# -- the read-only viewer ------------------------------------------------------------------
@pytest.fixture
def viewer(server, presenter, new_page) -> Page:
    """A view-only page on the presenter's session."""
    session_id, _ = session_of(presenter)
    return open_dashboard(new_page(), f"{server.url}/s/{session_id}/view")


def test_viewer_has_disabled_controls_and_says_view_only(viewer):
    """A view-only link shows the transport controls disabled and the role "view only"."""
    for selector in VIEWER_CONTROLS:
        assert viewer.locator(selector).is_disabled(), selector
    assert viewer.locator("#role").inner_text() == "view only"


def test_viewer_arrow_key_does_not_step_the_session(server, presenter, viewer):
    """→ on a view-only page changes nothing, on the page or on the server."""
    viewer.keyboard.press("ArrowRight")
    viewer.wait_for_timeout(500)
    assert shown_step(viewer) == 0
    assert server_session(server, session_of(presenter)[0])["step"] == 0


def test_viewer_follows_the_presenters_steps(presenter, viewer):
    """Steps the presenter takes show up on the viewer's page."""
    presenter.click("#step")
    presenter.click("#step")
    presenter.keyboard.press("ArrowRight")
    wait_for_step(presenter, 3)
    wait_for_step(viewer, 3)


# -- losing the connection -----------------------------------------------------------------
def test_banner_shows_while_the_server_is_down_and_hides_after_it_is_back(new_page):
    """When the server goes away the banner appears; when it is back the page reconnects and hides it."""
    # Sessions outlive this server (its manager is installed without the lifespan that would
    # close them), so a restart on the same port is a dropped connection and nothing more.
    app = create_app(Settings())
    app.state.manager = SessionManager(app.state.settings)
    live = LiveServer(app, free_port(), lifespan="off")
    live.start()
    try:
        page = open_dashboard(new_page(), live.url + "/")
        advance(page, 3)
        banner = page.locator("#banner")
        assert banner.is_hidden()
        live.stop()
        banner.wait_for(state="visible")
        assert "Reconnecting" in banner.inner_text()
        live.start()
        banner.wait_for(state="hidden", timeout=10_000)
        page.click("#step")
        wait_for_step(page, 4)
    finally:
        if live.thread.is_alive():
            live.stop()


def test_deleted_session_shows_the_no_longer_exists_banner(server, presenter):
    """After the session is deleted the banner says it no longer exists."""
    session_id, token = session_of(presenter)
    request = urllib.request.Request(f"{server.url}/api/sessions/{session_id}", method="DELETE",
                                     headers={"X-Control-Token": token})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 204
    banner = presenter.locator("#banner")
    banner.filter(has_text="no longer exists").wait_for()


# -- layout --------------------------------------------------------------------------------
def open_populated(server, new_page, width: int, height: int, theme: str, scale: float = 1) -> Page:
    """A page of a new session, sized, themed, at step 300 with a running request selected."""
    page = new_page(width, height, scale)
    page.goto(server.url + ("/?theme=projector" if theme == "projector" else "/"))
    wait_for_dashboard(page)
    advance(page, 300)
    select_running_chip(page)
    return page


@pytest.mark.parametrize("theme", ["normal", "projector"])
@pytest.mark.parametrize(("width", "height"), [(1920, 1080), (1280, 720)])
def test_layout_fits_one_screen_with_every_panel_visible(server, new_page, width, height, theme):
    """On a 1080p or 720p screen, in either theme, nothing scrolls and every panel is on screen;
    in the projector theme, every panel on stage (the others fold away behind the stage bar)."""
    page = open_populated(server, new_page, width, height, theme)
    assert page.evaluate("document.documentElement.dataset.theme") == theme
    scroll = page.evaluate("[document.scrollingElement.scrollHeight, document.scrollingElement.scrollWidth]")
    assert scroll[0] <= height + 1 and scroll[1] <= width + 1
    panels = PANELS
    if theme == "projector":
        on_stage = page.evaluate("window.servescope.stage.panels()")
        panels = [f".panel.{name}" for name in on_stage]
        assert 2 <= len(panels) <= 3
        for name in ("queues", "batch", "kv", "charts", "side"):
            assert page.locator(f".panel.{name}").is_visible() == (name in on_stage)
            assert page.get_attribute(f"#stage-bar [data-stage={name}]", "aria-pressed") == str(name in on_stage).lower()
    boxes = [box(page, panel) for panel in panels]
    for panel, rect in zip(panels, boxes):
        assert rect["width"] > 0 and rect["height"] > 0, panel
        assert rect["x"] >= 0 and rect["y"] >= 0, panel
        assert rect["x"] + rect["width"] <= width + 1 and rect["y"] + rect["height"] <= height + 1, panel
    assert not any(overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


@pytest.mark.parametrize("theme", ["normal", "projector"])
def test_kv_gauge_label_fits_inside_the_gauge(server, new_page, theme):
    """The "N% used" label of the KV gauge is not cut off by the gauge's box."""
    page = open_populated(server, new_page, 1920, 1080, theme)
    gauge, label = box(page, "#kv-gauge"), box(page, "#kv-gauge span")
    assert label["y"] >= gauge["y"] and label["y"] + label["height"] <= gauge["y"] + gauge["height"] + 0.5


def test_page_works_at_200_percent_zoom(server, new_page):
    """At 200% zoom the panels stack without overlapping or scrolling sideways, and stepping works."""
    page = open_populated(server, new_page, 960, 540, "normal", scale=2)
    assert page.evaluate("window.devicePixelRatio") == 2
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 961
    boxes = [box(page, selector) for selector in [".topbar", *PANELS]]
    assert all(rect["width"] > 0 and rect["height"] > 0 for rect in boxes)
    assert not any(overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    page.click("#step")
    wait_for_step(page, 301)
    assert page.errors == []


def test_kv_grid_painted_from_deltas_equals_a_full_redraw(presenter):
    """After hundreds of steps painted cell by cell from deltas (admissions, growth, preemptions,
    prefix hits and evictions), the canvas is pixel for pixel what a full redraw draws."""
    for _ in range(60):
        advance(presenter, 20)
    presenter.wait_for_timeout(300)  # the frame after the last delta
    incremental = presenter.evaluate("document.getElementById('kv-canvas').toDataURL()")
    presenter.evaluate("window.servescope.store.dirty.add('kv')")
    presenter.wait_for_timeout(300)
    full = presenter.evaluate("document.getElementById('kv-canvas').toDataURL()")
    assert incremental == full


FIGURES = ["#kv-summary", "#kv-gauge", "#batch .budget", "#batch .legend", "#batch .cost"]


def test_figures_changed_in_place_read_as_a_page_drawing_the_step_afresh(server, presenter, new_page):
    """Step by step, the KV and batch panels change their figures in the text nodes already there
    rather than parse their HTML again; after dozens of such steps they read exactly what a page
    opened at that step draws from scratch."""
    advance(presenter, 40)
    presenter.evaluate("window.marked = document.querySelector('#kv-summary b').firstChild")
    for step in range(41, 71):
        presenter.keyboard.press("ArrowRight")
        wait_for_step(presenter, step)
    assert presenter.evaluate("document.querySelector('#kv-summary b').firstChild === window.marked")
    session_id, _ = session_of(presenter)
    fresh = open_dashboard(new_page(), f"{server.url}/s/{session_id}/view")
    wait_for_step(fresh, 70)
    fresh.wait_for_timeout(300)  # the frame that draws it
    for selector in FIGURES:
        assert presenter.locator(selector).inner_html() == fresh.locator(selector).inner_html(), selector


# -- presenter safety: sessions made by POST, the token never in the address bar -----------
def session_count(server: LiveServer) -> int:
    with urllib.request.urlopen(f"{server.url}/healthz", timeout=5) as response:
        return json.load(response)["sessions"]


def test_opening_the_page_creates_one_session_that_a_reload_reuses(server, new_page):
    """`/` creates its session by POST; the address bar shows the view link, never the token; a
    reload keeps the same session and control."""
    before = session_count(server)
    page = open_dashboard(new_page(), server.url + "/?scenario=default")
    session_id, token = session_of(page)
    assert urlparse(page.url).path == f"/s/{session_id}/view" and token and "token" not in page.url
    assert page.locator("#role").inner_text() == "presenter"
    page.reload()
    wait_for_dashboard(page)
    page.goto(server.url + "/?scenario=default")  # the same query again, in the same tab
    wait_for_dashboard(page)
    assert session_of(page) == (session_id, token)
    assert page.locator("#role").inner_text() == "presenter" and "token" not in page.url
    assert session_count(server) == before + 1
    advance(page, 2)


def test_share_copies_the_view_link(presenter):
    presenter.evaluate("navigator.clipboard.writeText = async (text) => { window.copied = text; }")
    presenter.click("#share")
    presenter.wait_for_function("window.copied !== undefined")
    session_id, token = session_of(presenter)
    copied = presenter.evaluate("window.copied")
    assert urlparse(copied).path == f"/s/{session_id}/view" and token not in copied


def test_a_token_handed_over_in_a_link_fragment_gives_control_and_leaves_the_address_bar(server, new_page):
    request = urllib.request.Request(f"{server.url}/api/sessions", data=b'{"preset": "default"}', method="POST",
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        created = json.load(response)
    page = open_dashboard(new_page(), f"{created['control_url']}#token={created['control_token']}")
    assert page.locator("#role").inner_text() == "presenter"
    assert created["control_token"] not in page.url
    advance(page, 1)


def test_a_viewer_tab_has_no_end_session_button(viewer):
    assert viewer.locator("#end-session").is_hidden()


def test_the_presenter_ends_the_session_after_confirming(server, presenter):
    session_id, _ = session_of(presenter)
    presenter.once("dialog", lambda dialog: dialog.dismiss())
    presenter.click("#end-session")
    presenter.wait_for_timeout(300)
    assert server_session(server, session_id)["session_id"] == session_id
    presenter.once("dialog", lambda dialog: dialog.accept())
    presenter.click("#end-session")
    presenter.get_by_text("This session has ended").wait_for()
    with pytest.raises(urllib.error.HTTPError) as gone:
        server_session(server, session_id)
    assert gone.value.code == 404


def test_a_full_server_shows_a_page_with_a_way_out(new_page):
    """At the session limit the page says so in words, with a button that tries again."""
    live = LiveServer(create_app(Settings(max_sessions=1)), free_port())
    live.start()
    try:
        first = open_dashboard(new_page(), live.url + "/")
        second = new_page()
        second.goto(live.url + "/")
        second.get_by_text("No session could be started").wait_for()
        assert "at most 1 sessions" in second.inner_text("body") and "{" not in second.inner_text("body")
        first.once("dialog", lambda dialog: dialog.accept())
        first.click("#end-session")
        first.get_by_text("This session has ended").wait_for()
        second.click("#start-retry")
        wait_for_dashboard(second)
    finally:
        live.stop()


def test_the_presenter_downloads_an_export_and_a_viewer_cannot(presenter, viewer):
    """Exports need the token: the presenter's page sends it in a header, a viewer has no Export."""
    advance(presenter, 5)
    presenter.click("#export")
    with presenter.expect_download() as download:
        presenter.click("#export-steps")
    assert len(Path(download.value.path()).read_text().splitlines()) == 5
    assert viewer.locator("#export").is_disabled()
