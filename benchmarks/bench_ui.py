"""How fast the dashboard draws a big engine: 256 running requests on a pool of 16,384 KV blocks.

All requests arrive at once (fixed 256-token prompts, 512-token outputs), so after the first few
steps the batch stays at max_num_seqs = 256 and every step touches 256 block tables. The control
page plays at a high speed in headless Chromium for a while; the page's own counters
(window.servescope.stats) give frames drawn per second and the longest frame, its step counter the
steps per second the server delivered, and a count of the websocket's state frames (deltas, and
the snapshots a viewer gets once it falls behind) tells the server's share from the drawing's.
Numbers depend on the machine: compare runs on one machine only.

    python benchmarks/bench_ui.py [--seconds 15] [--speed 240]
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request

from screenshots import chromium, serving

SCENARIO = {
    "name": "bench-ui",
    "engine": {"num_gpu_blocks": 16384, "max_num_seqs": 256, "max_num_batched_tokens": 8192},
    # 3,000 requests of 768 tokens: about 12 batches of 256 x 512 decode steps, so the batch is
    # still full when a 15 s measurement at 240 steps/s ends.
    "workload": {"num_requests": 3000, "arrival_rate": 1e6, "lengths": "fixed", "prompt_len": 256, "output_len": 512},
}
WARMUP_STEPS = 64  # the first 256 prompts are prefilled 8,192 tokens a step
# Counts the state frames the page receives, by the opening of their text (the server writes the
# envelope's "v" and "type" first), so the count costs no second JSON parse.
COUNT_FRAMES = """
window.benchFrames = { delta: 0, snapshot: 0 };
const PageSocket = window.WebSocket;
window.WebSocket = function (url, protocols) {
  const socket = new PageSocket(url, protocols);
  socket.addEventListener("message", (message) => {
    const type = message.data.slice(0, 40).match(/^\\{"v":1,"type":"(delta|snapshot)"/);
    if (type) window.benchFrames[type[1]] += 1;
  });
  return socket;
};
Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3, prototype: PageSocket.prototype });
"""


def create_session(base_url: str) -> dict:
    request = urllib.request.Request(f"{base_url}/api/sessions", data=json.dumps({"scenario": SCENARIO}).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def sample(page) -> dict:
    return page.evaluate("""() => {
        const { store, stats } = window.servescope;
        return { frames: stats.frames, longest_ms: stats.longestFrameMs, step: store.step, ...window.benchFrames,
                 running: store.queues.running.length, playing: store.status.playing, blocks: store.blocks.n };
    }""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="how long to play")
    parser.add_argument("--speed", type=float, default=240.0, help="steps per second asked for")
    args = parser.parse_args()

    with serving() as base_url, chromium() as browser:
        session = create_session(base_url)
        context = browser.new_context(viewport={"width": 1920, "height": 1080})
        context.set_default_timeout(60_000)
        page = context.new_page()
        page.add_init_script(COUNT_FRAMES)
        page.goto(f"{session['control_url']}#token={session['control_token']}")  # the fragment hands over control
        page.wait_for_function("window.servescope && window.servescope.store.session !== null")
        page.evaluate("n => window.servescope.send({type: 'step', n})", WARMUP_STEPS)
        page.wait_for_function("n => window.servescope.store.step === n", arg=WARMUP_STEPS)
        page.wait_for_timeout(500)
        warm = sample(page)
        if warm["running"] < 250:
            raise SystemExit(f"expected about 256 running requests after warm-up, found {warm['running']}")

        page.evaluate("speed => window.servescope.send({type: 'speed', steps_per_s: speed})", args.speed)
        page.wait_for_function("speed => window.servescope.store.status.steps_per_s === speed", arg=args.speed)
        page.evaluate("window.servescope.stats.longestFrameMs = 0")
        start, started_at = sample(page), time.monotonic()
        page.evaluate("window.servescope.send({type: 'play'})")
        running = []
        while time.monotonic() - started_at < args.seconds:
            time.sleep(min(1.0, args.seconds - (time.monotonic() - started_at)))
            running.append(sample(page)["running"])
        end, seconds = sample(page), time.monotonic() - started_at
        page.evaluate("window.servescope.send({type: 'pause'})")
        context.close()
    if not end["playing"]:
        print("note: playback stopped before the measurement ended (the run finished or a breakpoint hit)")

    frames_per_s = (end["frames"] - start["frames"]) / seconds
    steps_per_s = (end["step"] - start["step"]) / seconds
    deltas_per_s = (end["delta"] - start["delta"]) / seconds
    snapshots_per_s = (end["snapshot"] - start["snapshot"]) / seconds
    rows = [
        ("KV blocks", f"{end['blocks']:,}"),
        ("running requests (min-max while playing)", f"{min(running)}-{max(running)}"),
        ("speed asked (steps/s)", f"{args.speed:g}"),
        ("played (s)", f"{seconds:.1f}"),
        ("steps advanced per second", f"{steps_per_s:.1f}"),
        ("deltas received per second", f"{deltas_per_s:.1f}"),
        ("snapshots received per second", f"{snapshots_per_s:.1f}"),
        ("frames drawn per second", f"{frames_per_s:.1f}"),
        ("longest frame (ms)", f"{end['longest_ms']:.1f}"),
    ]
    width = max(len(name) for name, _ in rows)
    num_requests = SCENARIO["workload"]["num_requests"]
    print(f"bench_ui: {num_requests} requests, {WARMUP_STEPS} warm-up steps, headless Chromium 1920x1080")
    for name, value in rows:
        print(f"  {name:<{width}}  {value:>10}")


if __name__ == "__main__":
    main()
