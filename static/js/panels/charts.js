// Latency and throughput charts (uPlot, vendored): the TTFT / ITL / E2E distributions with
// their p50, p90 and p99 marked, and the run over simulated time: requests running and
// waiting, KV usage with output throughput, and the tokens of each step against the budget.

import { cssVar, fmtSeconds } from "../colors.js";

const MAX_DRAWN_POINTS = 1200;
const THROUGHPUT_WINDOW = 25; // steps averaged for tokens/s
const LATENCIES = { ttft_s: "TTFT", itl_s: "ITL", e2e_s: "E2E" };

export function mount(el, store) {
  let latency = "ttft_s";
  let plots = [];
  el.innerHTML = `
    <div class="chart" id="chart-latency"><h3><span class="seg" role="radiogroup" aria-label="Latency metric">
      ${Object.entries(LATENCIES).map(([k, v]) => `<button data-latency="${k}" role="radio">${v}</button>`).join("")}
      </span></h3><div class="pct" id="latency-pct"></div><div class="plot"></div></div>
    <div class="chart" id="chart-queues"><h3 title="Requests running and waiting over simulated time">Running / waiting</h3><div class="plot"></div></div>
    <div class="chart" id="chart-kv"><h3 title="KV cache usage and output tokens per second">KV usage · throughput</h3><div class="plot"></div></div>
    <div class="chart" id="chart-tokens"><h3 title="Prefill and decode tokens in each step">Tokens per step</h3><div class="plot"></div></div>`;
  el.querySelector(".seg").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-latency]");
    if (button) { latency = button.dataset.latency; store.dirty.add("charts"); }
  });

  function axis(label, extra = {}) {
    const text = cssVar("--text"), grid = cssVar("--border");
    const px = Number.parseFloat(cssVar("--small")) || 12;
    const font = `${px}px system-ui, sans-serif`;
    return { label, stroke: text, grid: { stroke: grid, width: 0.5 }, ticks: { stroke: grid }, font, labelFont: `bold ${font}`,
      labelSize: px + 6, size: px * 3.6, ...extra };
  }

  function seconds(u, values) { return values.map((v) => (v == null ? "" : v >= 1 ? `${+v.toFixed(1)}s` : `${+(v * 1000).toFixed(v < 0.01 ? 1 : 0)}ms`)); }

  function build() {
    for (const p of plots) p.destroy();
    const stroke = Number.parseFloat(cssVar("--stroke")) || 1.5;
    const width = stroke * 1.3;
    const c = { prefill: cssVar("--prefill"), decode: cssVar("--decode"), waiting: cssVar("--waiting"), accent: cssVar("--accent"),
      finished: cssVar("--finished"), preempted: cssVar("--preempted"), text: cssVar("--text") };
    const common = { legend: { show: true, live: false }, cursor: { drag: { x: false, y: false } } };
    const timeAxis = axis("simulated s");
    const percentileLines = {
      draw: [(u) => {
        const marks = u._marks || [];
        const ctx = u.ctx;
        ctx.save();
        for (const [index, [value, label, colour]] of marks.entries()) {
          const x = u.valToPos(value, "x", true);
          if (!Number.isFinite(x)) continue;
          ctx.strokeStyle = colour; ctx.lineWidth = width * devicePixelRatio; ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
          ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
          const px = (Number.parseFloat(cssVar("--small")) || 12) * devicePixelRatio;
          ctx.setLineDash([]);
          ctx.font = `bold ${px}px sans-serif`; ctx.textAlign = "left"; ctx.textBaseline = "top";
          const y = u.bbox.top + index * px * 1.15; // stacked, so close percentiles stay legible
          ctx.fillStyle = cssVar("--panel"); ctx.fillRect(x + 2, y, ctx.measureText(label).width + 4, px);
          ctx.fillStyle = colour; ctx.fillText(label, x + 4, y);
        }
        ctx.restore();
      }],
    };
    const specs = [
      ["#chart-latency", {
        ...common, scales: { x: { time: false, distr: 3 }, y: { range: (u, lo, hi) => [0, Math.max(1, hi)] } },
        axes: [axis("", { values: seconds }), axis("requests")],
        legend: { show: false },
        series: [{}, { label: "requests", stroke: c.accent, fill: c.accent + "55", width, paths: uPlot.paths.bars({ size: [0.95, 40], align: 1 }) }],
        hooks: percentileLines,
      }],
      ["#chart-queues", {
        ...common, scales: { x: { time: false } }, axes: [timeAxis, axis("requests")],
        series: [{}, { label: "running", stroke: c.decode, width }, { label: "waiting", stroke: c.waiting, width, dash: [6, 4] }],
      }],
      ["#chart-kv", {
        ...common, scales: { x: { time: false }, pct: { range: [0, 100] }, tps: {} },
        axes: [timeAxis, axis("KV %", { scale: "pct" }), axis("tok/s", { scale: "tps", side: 1, grid: { show: false } })],
        series: [{}, { label: "KV usage %", stroke: c.accent, width, scale: "pct", fill: c.accent + "22" },
          { label: "output tok/s", stroke: c.finished, width, scale: "tps" }],
      }],
      ["#chart-tokens", {
        ...common, scales: { x: { time: false } }, axes: [timeAxis, axis("tokens")],
        series: [{}, { label: "prefill", stroke: c.prefill, width }, { label: "decode", stroke: c.decode, width }],
      }],
    ];
    plots = specs.map(([selector, options]) => {
      const box = el.querySelector(`${selector} .plot`);
      box.innerHTML = "";
      const size = plotSize(box);
      return new uPlot({ ...options, ...size }, options.series.map(() => []), box);
    });
    const observer = new ResizeObserver(() => { plots.forEach((p, i) => p.setSize(plotSize(el.querySelectorAll(".plot")[i]))); });
    el.querySelectorAll(".plot").forEach((box) => observer.observe(box));
    store.dirty.add("charts");
  }

  function plotSize(box) {
    const legend = box.parentElement.id === "chart-latency" ? 0 : 26;
    return { width: Math.max(120, box.clientWidth), height: Math.max(80, box.clientHeight - legend) };
  }

  function series() {
    const points = store.points;
    const stride = Math.max(1, Math.ceil(points.length / MAX_DRAWN_POINTS));
    const t = [], running = [], waiting = [], kv = [], tps = [], prefill = [], decode = [];
    let windowTokens = 0, windowTime = 0;
    const tokenQueue = [];
    for (let i = 0; i < points.length; i++) {
      const [clock, r, w, k, p, d, dt] = points[i];
      windowTokens += d; windowTime += dt; tokenQueue.push([d, dt]);
      if (tokenQueue.length > THROUGHPUT_WINDOW) { const [od, odt] = tokenQueue.shift(); windowTokens -= od; windowTime -= odt; }
      if (i % stride && i !== points.length - 1) continue;
      t.push(clock); running.push(r); waiting.push(w); kv.push(k * 100);
      tps.push(windowTime > 0 ? windowTokens / windowTime : 0); prefill.push(p); decode.push(d);
    }
    return { t, running, waiting, kv, tps, prefill, decode };
  }

  function latencyData() {
    const m = store.metrics;
    const bins = m && m.histograms[latency] ? m.histograms[latency] : [];
    const stats = m && m.report[latency] ? m.report[latency] : null;
    el.querySelectorAll("button[data-latency]").forEach((b) => {
      b.classList.toggle("on", b.dataset.latency === latency);
      b.setAttribute("aria-checked", String(b.dataset.latency === latency));
    });
    el.querySelector("#latency-pct").textContent = stats && stats.p50 != null
      ? `p50 ${fmtSeconds(stats.p50)} · p90 ${fmtSeconds(stats.p90)} · p99 ${fmtSeconds(stats.p99)}` : "no finished requests yet";
    plots[0]._marks = stats && stats.p50 != null ? [[stats.p50, "p50", cssVar("--finished")], [stats.p90, "p90", cssVar("--prefill")], [stats.p99, "p99", cssVar("--preempted")]] : [];
    return [bins.map((b) => b[0]), bins.map((b) => b[1])];
  }

  function update() {
    if (!plots.length) return;
    const s = series();
    plots[0].setData(latencyData());
    plots[1].setData([s.t, s.running, s.waiting]);
    plots[2].setData([s.t, s.kv, s.tps]);
    plots[3].setData([s.t, s.prefill, s.decode]);
  }

  build();
  return { update, rebuild: build };
}
