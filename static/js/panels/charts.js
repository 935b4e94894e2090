// Latency and throughput charts (uPlot, vendored): the TTFT / ITL / E2E distributions with
// their p50, p90 and p99 marked, and the run over simulated time: requests running and
// waiting, KV usage with output throughput, and the tokens of each step against the budget.

import { cssVar, fmtSeconds } from "../colors.js";
import { html, render } from "../dom.js";
import { setHtml } from "../writes.js";
import { countLabels, fitTitles, logSplits, rangeFrom0, splitsFrom0 } from "./chart_ticks.js";

const MAX_DRAWN_POINTS = 1200;
const THROUGHPUT_WINDOW = 25; // steps averaged for tokens/s
const LATENCIES = { ttft_s: "TTFT", itl_s: "ITL", e2e_s: "E2E" };

export function mount(el, store) {
  let latency = "ttft_s";
  let plots = [];
  let percentiles = []; // [label, colour, dash] of p50, p90, p99
  render(el, html`
    <div class="chart" id="chart-latency"><h3><span class="seg" role="radiogroup" aria-label="Latency metric">
      ${Object.entries(LATENCIES).map(([k, v]) => html`<button data-latency="${k}" role="radio">${v}</button>`)}
      </span></h3><div class="pct" id="latency-pct"></div><div class="plot"></div></div>
    <div class="chart" id="chart-queues"><h3 title="Requests running and waiting over simulated time">Running / waiting</h3><div class="plot"></div></div>
    <div class="chart" id="chart-kv"><h3 title="KV cache usage and output tokens per second">KV usage · throughput</h3><div class="plot"></div></div>
    <div class="chart" id="chart-tokens"><h3 title="Prefill and decode tokens in each step">Tokens per step</h3><div class="plot"></div></div>`);
  el.querySelector(".seg").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-latency]");
    if (button) { latency = button.dataset.latency; button.blur(); build(); }
  });

  // An axis whose room is measured from its widest tick label, so its title never sits on the
  // numbers; its ticks and title fit the plot (chart_ticks.js). `titles`: its wordings, longest first.
  function axis(titles, extra = {}) {
    const text = cssVar("--text"), grid = cssVar("--border");
    const px = Number.parseFloat(cssVar("--small")) || 12;
    const font = `${px}px system-ui, sans-serif`;
    titles = [titles].flat();
    return { label: titles[0], titles, stroke: text, grid: { stroke: grid, width: 0.5 }, ticks: { stroke: grid, size: 4 }, font, labelFont: `bold ${font}`,
      labelSize: px + 4, labelGap: 2, gap: 3, space: px * 1.8, size: measuredSize(px), ...extra };
  }

  function measuredSize(px) {
    return (u, values, index, cycle) => {
      const a = u.axes[index];
      if (cycle > 1) return a._size;
      if (a.side % 2 === 0) return Math.ceil(a.ticks.size + a.gap + px * 1.3); // horizontal: one line of text
      u.ctx.font = a.font[0];
      const widest = (values || []).reduce((w, v) => Math.max(w, u.ctx.measureText(v ?? "").width), 0);
      return Math.ceil(a.ticks.size + a.gap + widest / devicePixelRatio + 4);
    };
  }

  const countAxis = (label, extra = {}) => axis(label, { splits: splitsFrom0(true), values: countLabels, ...extra });
  const countRange = rangeFrom0(true, "y");

  function seconds(u, values) { return values.map((v) => (v == null ? "" : v >= 1 ? `${+v.toFixed(2)}s` : `${+(v * 1000).toPrecision(2)}ms`)); }

  function build() {
    for (const p of plots) p.destroy();
    const stroke = Number.parseFloat(cssVar("--stroke")) || 1.5;
    const width = stroke * 1.3;
    const c = { prefill: cssVar("--prefill"), decode: cssVar("--decode"), waiting: cssVar("--waiting"), accent: cssVar("--accent"),
      finished: cssVar("--finished"), preempted: cssVar("--preempted"), text: cssVar("--text") };
    percentiles = [["p50", c.finished, []], ["p90", c.prefill, [8, 4]], ["p99", c.preempted, [2, 3]]];
    const common = { legend: { show: true, live: false }, cursor: { drag: { x: false, y: false } } };
    const timeAxis = () => axis(["simulated time (s)", "time (s)", "t (s)"], { splits: splitsFrom0(false), values: (u, v) => v.map((x) => `${+x.toPrecision(6)}`) });
    const timeScale = { time: false, range: (u, lo, hi) => [0, Math.max(hi || 0, 1e-3)] };
    // The percentiles are dashed lines in their legend's colour and dash; their values are in the
    // legend above the plot, so labels never collide with the bars or with each other.
    const percentileLines = {
      draw: [(u) => {
        const ctx = u.ctx;
        ctx.save();
        for (const [value, colour, dash] of u._marks || []) {
          const x = u.valToPos(value, "x", true);
          if (!Number.isFinite(x)) continue;
          ctx.strokeStyle = colour; ctx.lineWidth = width * 1.5 * devicePixelRatio;
          ctx.setLineDash(dash.map((d) => d * devicePixelRatio));
          ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
        }
        ctx.restore();
      }],
    };
    const specs = [
      ["#chart-latency", {
        ...common, scales: { x: { time: false, distr: 3 }, y: { range: countRange } },
        axes: [axis([`${LATENCIES[latency]} (log scale)`, `${LATENCIES[latency]} (log)`, LATENCIES[latency]], { values: seconds, splits: logSplits, filter: (u, splits) => splits }), countAxis("requests")],
        legend: { show: false },
        series: [{}, { label: "requests", stroke: c.accent, fill: c.accent + "55", width, paths: uPlot.paths.bars({ size: [0.95, 40], align: 1 }) }],
        hooks: percentileLines,
      }],
      ["#chart-queues", {
        ...common, scales: { x: timeScale, y: { range: countRange } }, axes: [timeAxis(), countAxis("requests")],
        series: [{}, { label: "running", stroke: c.decode, width }, { label: "waiting", stroke: c.waiting, width, dash: [6, 4] }],
      }],
      ["#chart-kv", {
        ...common, scales: { x: timeScale, pct: { range: [0, 100] }, tps: { range: rangeFrom0(true, "tps") } },
        axes: [timeAxis(), axis("KV %", { scale: "pct", splits: () => [0, 50, 100] }),
          countAxis("tok/s", { scale: "tps", side: 1, grid: { show: false } })],
        series: [{}, { label: "KV %", stroke: c.accent, width, scale: "pct", fill: c.accent + "22" },
          { label: "output tok/s", stroke: c.finished, width, scale: "tps" }],
      }],
      ["#chart-tokens", {
        ...common, scales: { x: timeScale, y: { range: countRange } }, axes: [timeAxis(), countAxis("tokens")],
        series: [{}, { label: "prefill", stroke: c.prefill, width }, { label: "decode", stroke: c.decode, width }],
      }],
    ];
    plots = specs.map(([selector, options]) => {
      const box = el.querySelector(`${selector} .plot`);
      box.replaceChildren();
      const size = plotSize(box);
      const hooks = { ...options.hooks, drawClear: [fitTitles], setSize: [fitLegend] };
      const plot = new uPlot({ ...options, hooks, ...size }, options.series.map(() => []), box);
      plot.setSize(plotSize(box, plot));
      box.plot = plot; // what the browser tests read its drawn axes from (tests/js/fit_check.js)
      return plot;
    });
    const observer = new ResizeObserver(() => { plots.forEach((p, i) => p.setSize(plotSize(el.querySelectorAll(".plot")[i], p))); });
    el.querySelectorAll(".plot").forEach((box) => observer.observe(box));
    store.dirty.add("charts");
  }

  // The plot takes the box less its legend's measured height: the legend always stays in view.
  function plotSize(box, plot) {
    const legend = plot && plot.root.querySelector(".u-legend");
    const legendHeight = legend && legend.style.display !== "none" ? legend.offsetHeight + 2 : 0;
    return { width: Math.max(120, box.clientWidth), height: Math.max(80, box.clientHeight - legendHeight) };
  }

  // The legend wraps to the plot's width, which uPlot applies after setSize returns: once it has,
  // the height is taken again from the legend as it wraps now (in the next frame: a setSize
  // inside this hook is dropped).
  function fitLegend(plot) {
    const size = plotSize(plot.root.parentElement, plot);
    if (size.width !== plot.width || size.height !== plot.height) requestAnimationFrame(() => plot.setSize(plotSize(plot.root.parentElement, plot)));
  }

  function series() {
    const points = store.points;
    const stride = Math.max(1, Math.ceil(points.length / MAX_DRAWN_POINTS));
    const t = [], running = [], waiting = [], kv = [], tps = [], prefill = [], decode = [];
    // Output tokens per simulated second over the last THROUGHPUT_WINDOW steps: the tokens they
    // decoded over the clock time they spanned.
    let windowTokens = 0;
    for (let i = 0; i < points.length; i++) {
      const [clock, r, w, k, p, d] = points[i];
      windowTokens += d;
      const start = i - THROUGHPUT_WINDOW;
      if (start >= 0) windowTokens -= points[start][5];
      const span = clock - (start >= 0 ? points[start][0] : points[0][0] - points[0][6]);
      if (i % stride && i !== points.length - 1) continue;
      t.push(clock); running.push(r); waiting.push(w); kv.push(k * 100);
      tps.push(span > 0 ? windowTokens / span : 0); prefill.push(p); decode.push(d);
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
    const has = stats && stats.p50 != null;
    setHtml(el.querySelector("#latency-pct"), has
      ? html`${percentiles.map(([label, colour, dash]) => html`<span><svg width="22" height="10" aria-hidden="true"><line x1="0" y1="5" x2="22" y2="5" stroke="${colour}" stroke-width="3" stroke-dasharray="${dash.join(" ")}"/></svg>${label} ${fmtSeconds(stats[label])}</span>`)}`
      : html`no finished requests yet`);
    plots[0]._marks = has ? percentiles.map(([label, colour, dash]) => [stats[label], colour, dash]) : [];
    return [bins.map((b) => b[0]), bins.map((b) => b[1])];
  }

  let round = null; // the series of a redraw spread over frames, and the next plot it draws

  function draw(index, s) {
    if (index === 0) plots[0].setData(latencyData());
    else if (index === 1) plots[1].setData([s.t, s.running, s.waiting]);
    else if (index === 2) plots[2].setData([s.t, s.kv, s.tps]);
    else plots[3].setData([s.t, s.prefill, s.decode]);
  }

  function update() {
    if (!plots.length) return;
    round = null;
    const s = series();
    plots.forEach((_, index) => draw(index, s));
  }

  // While playing, one plot per frame: no frame pays for all four. True once the last is drawn.
  function drawNext() {
    if (!plots.length) return true;
    if (!round) round = { s: series(), next: 0 };
    draw(round.next, round.s);
    round.next += 1;
    if (round.next < plots.length) return false;
    round = null;
    return true;
  }

  build();
  return { update, drawNext, rebuild: build };
}
