"""Every number on the dashboard describes the same step: the top bar's step and clock and the
batch panel's "step N", on a served session (`serve --openai`, whose steps are taken when their
start comes and shown when their tokens leave the API server) as on a session playing."""

import threading

import openai
import pytest

from tests.app.openai_server import MODEL, OpenAIServer
from tests.browser.pages import open_dashboard

# Read in an animation frame after the page's own (which applies the next frame and draws it):
# the store as one frame left it, and the DOM as that draw wrote it.
SAMPLE = """async () => {
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
  return await new Promise((resolve) => requestAnimationFrame(() => {
    const store = window.servescope.store, record = store.lastRecord;
    const budget = document.querySelector('#batch .budget b');
    resolve({
      step: store.step, clock: store.clock, seq: store.seq,
      batch_step: record ? record.step + 1 : null, batch_clock: record ? record.clock_s + record.step_s : null,
      dom_step: Number(document.getElementById('step-counter').value.replace(/,/g, '')),
      dom_batch_step: budget ? Number(budget.textContent.replace(/,/g, '')) : null,
    });
  }));
}"""


def samples_agree(page, count: int = 12) -> list[dict]:
    """`count` samples, each checked: the store's step and its batch's step agree exactly (one
    frame sets both), the top bar shows the store's step, and the batch panel (which a busy frame
    may leave to the next) shows it or, while that frame is in flight, the step before."""
    samples = []
    for _ in range(count):
        sample = page.evaluate(SAMPLE)
        if sample["batch_step"] is None:
            continue
        assert sample["step"] == sample["batch_step"], sample
        assert abs(sample["clock"] - sample["batch_clock"]) < 1e-6, sample
        assert sample["dom_step"] == sample["step"], sample
        samples.append(sample)
        page.wait_for_timeout(40)
    in_step = [s for s in samples if s["dom_batch_step"] == s["dom_step"]]
    assert len(in_step) >= len(samples) // 2, samples
    assert all(0 <= s["dom_step"] - s["dom_batch_step"] < 20 for s in samples), samples
    return samples


@pytest.fixture(scope="module")
def served():
    with OpenAIServer() as server:
        yield server


def test_a_served_sessions_top_bar_and_batch_show_the_same_step(served, new_page):
    page = open_dashboard(new_page(1920, 1080), f"{served.url}/s/{served.served.engine.live.session.session_id}/view")
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0)
    thread = threading.Thread(target=lambda: client.completions.create(
        model=MODEL, prompt="keep every number on one step " * 20, max_tokens=400, extra_body={"ignore_eos": True}))
    thread.start()
    try:
        page.wait_for_function("() => document.querySelector('#queues .lane.running .chip') !== null")
        samples = samples_agree(page)
    finally:
        thread.join(timeout=30)
    assert len(samples) >= 8
    assert samples[-1]["step"] > samples[0]["step"]  # sampled while it decoded
    assert page.errors == []


def test_a_playing_sessions_top_bar_and_batch_show_the_same_step(server, new_page):
    page = open_dashboard(new_page(1920, 1080), server.url + "/")
    page.evaluate("window.servescope.send({type: 'play', steps_per_s: 60})")
    page.wait_for_function("() => window.servescope.store.step > 5")
    samples = samples_agree(page)
    page.evaluate("window.servescope.send({type: 'pause'})")
    assert len(samples) >= 8
    assert samples[-1]["step"] > samples[0]["step"]
    assert page.errors == []
