// The sweep page: throughput against p99 TTFT and TPOT for each configuration of a sweep, the
// Pareto front and the SLO line. The rows come from a bounded sweep this page submits
// (POST /api/sweep, checked by the server's schema) or from a results file the browser reads
// itself: no request ever names a file on the server.
import { cssVar, fmtInt, plural } from "./colors.js";
import { el } from "./dom.js";

const $ = (id) => document.getElementById(id);
if (new URLSearchParams(location.search).get("theme") === "projector" || localStorage.getItem("servescope-theme") === "projector") {
  document.documentElement.dataset.theme = "projector";
}
const PALETTE = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9", "#8a6d00", "#5b6470"];
let result = null;  // {keys, rows, slo_ttft_s, slo_tpot_s}

function parseValue(text) {
  const trimmed = text.trim();
  if (trimmed === "true" || trimmed === "false") return trimmed === "true";
  return trimmed !== "" && !Number.isNaN(Number(trimmed)) ? Number(trimmed) : trimmed;
}

function axes() {
  const out = {};
  document.querySelectorAll(".axis").forEach((axis) => {
    const field = axis.querySelector(".axis-field").value;
    const values = axis.querySelector(".axis-values").value.split(",").filter((v) => v.trim() !== "").map(parseValue);
    if (field && values.length) out[field] = values;
  });
  return out;
}

function gridSize() {
  const sizes = Object.values(axes()).map((v) => v.length);
  const points = sizes.length ? sizes.reduce((a, b) => a * b, 1) : 0;
  const max = Number(document.body.dataset.maxPoints);
  $("grid-size").textContent = `${plural(points, "point")} (at most ${max} here; larger sweeps: servescope sweep, locally or on Ray)`;
  $("run").disabled = points === 0 || points > max;
}

function showBanner(text) {
  $("banner").textContent = text;
  $("banner").hidden = !text;
}

// What the server refused: a list naming each field, or a budget it ran out of (a sentence).
function errorText(detail) {
  if (!Array.isArray(detail)) return String(detail);
  return detail.map((e) => `${(e.loc || []).filter((p) => p !== "body").join(".")}: ${e.msg}`).join("; ");
}

function sweepBody() {
  const a = axes();
  if (!("workload.num_requests" in a)) a["workload.num_requests"] = [Number($("num-requests").value)];
  return {
    preset: $("preset").value, axes: a, cluster: { replicas: 1, router: $("router").value },
    slo_ttft_ms: Number($("slo-ttft").value) || null, slo_tpot_ms: Number($("slo-tpot").value) || null,
  };
}

const post = (url, body) => fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

// The form as it is now, checked by the server (POST /api/sweep/check, which runs nothing) a
// moment after each change: the banner names the fields wrong now, every one of them, and clears
// once none is. Only the answer to the latest change is shown.
let checks = 0, checkTimer = null;
function checkSoon() {
  clearTimeout(checkTimer);
  const mine = ++checks;
  checkTimer = setTimeout(async () => {
    const response = await post("/api/sweep/check", sweepBody());
    if (mine !== checks || response.status === 429) return;  // a newer change, or the server too busy to say
    showBanner(response.ok ? "" : errorText((await response.json()).detail));
  }, 300);
}

async function runSweep(event) {
  event.preventDefault();
  const body = sweepBody();
  checks++;  // a check still on its way describes the form before this run
  showBanner("");
  $("run").disabled = true;
  $("run").textContent = "Running…";
  try {
    const response = await post("/api/sweep", body);
    const data = await response.json();
    if (!response.ok) {
      showBanner(errorText(data.detail));
      return;
    }
    if (body.axes["workload.num_requests"].length === 1) data.keys = data.keys.filter((k) => k !== "workload.num_requests");
    result = data;
    draw();
  } finally {
    $("run").textContent = "Run sweep";
    gridSize();
  }
}

// -- results files read in the browser ------------------------------------------------------
function parseCsvLine(line) {
  const out = [];
  let field = "", quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") { out.push(field); field = ""; } else field += c;
  }
  out.push(field);
  return out;
}

function parseResults(text) {
  const lines = text.split("\n").filter((l) => l.trim());
  let rows;
  if (lines[0].trim().startsWith("{")) rows = lines.map((l) => JSON.parse(l));
  else {
    const header = parseCsvLine(lines[0]);
    rows = lines.slice(1).map((l) => Object.fromEntries(parseCsvLine(l).map((v, i) => [header[i], v === "" ? null : parseValue(v)])));
  }
  const columns = Object.keys(rows[0] || {});
  const keys = columns.slice(1, columns.indexOf("num_gpus"));
  if (!columns.includes("ttft_s.p99") || columns[0] !== "point") throw new Error("not a servescope sweep results file");
  return { keys, rows, slo_ttft_s: Number($("slo-ttft").value) / 1e3 || null, slo_tpot_s: Number($("slo-tpot").value) / 1e3 || null };
}

$("upload").addEventListener("change", async () => {
  const file = $("upload").files[0];
  if (!file) return;
  try {
    result = parseResults(await file.text());
    showBanner("");
    draw();
  } catch (e) {
    showBanner(`${file.name}: ${e.message}`);
  }
});

// -- the charts -----------------------------------------------------------------------------
function configKey(row) {
  return result.keys.filter((k) => !k.startsWith("workload.")).map((k) => `${k.replace(/^(engine|cluster)\./, "")}=${row[k]}`).join(", ") || "the configuration";
}

function paretoFront(points) {
  // Not dominated: no other point has at least its throughput and at most its latency.
  const sorted = [...points].sort((a, b) => b.x - a.x || a.y - b.y);
  const front = [];
  let best = Infinity;
  for (const p of sorted) if (p.y < best) { front.push(p); best = p.y; }
  return front.sort((a, b) => a.x - b.x);
}

function niceMax(value) {
  if (!(value > 0)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

function plot(canvas, metric, slo, label) {
  const box = canvas.getBoundingClientRect();
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.max(100, box.width) * ratio;
  canvas.height = Math.max(80, box.height) * ratio;
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  const W = canvas.width / ratio, H = canvas.height / ratio;
  const font = parseFloat(getComputedStyle(document.body).fontSize) * 0.8;
  ctx.font = `${font}px system-ui, sans-serif`;
  const text = cssVar("--text"), muted = cssVar("--muted"), border = cssVar("--border");
  const points = result.rows.filter((r) => r[metric] !== null && r.requests_per_s !== null)
    .map((r) => ({ x: Number(r.requests_per_s), y: Number(r[metric]) * 1e3, config: configKey(r) }));
  const left = font * 4, bottom = font * 3, top = font, right = font;
  const xMax = niceMax(Math.max(...points.map((p) => p.x), 0) * 1.05);
  const yCap = slo ? Math.max(slo * 1e3 * 3, 1) : Infinity;
  const yMax = niceMax(Math.min(Math.max(...points.map((p) => p.y), slo ? slo * 1e3 * 1.2 : 0), yCap) * 1.05);
  const X = (x) => left + (x / xMax) * (W - left - right);
  const Y = (y) => H - bottom - (Math.min(y, yMax) / yMax) * (H - bottom - top);
  ctx.strokeStyle = border; ctx.fillStyle = muted; ctx.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const y = (yMax * i) / 4, x = (xMax * i) / 4;
    ctx.beginPath(); ctx.moveTo(left, Y(y)); ctx.lineTo(W - right, Y(y)); ctx.stroke();
    ctx.textAlign = "right"; ctx.fillText(`${+y.toPrecision(3)}`, left - 4, Y(y) + font / 3);
    ctx.textAlign = "center"; ctx.fillText(`${+x.toPrecision(3)}`, X(x), H - bottom + font * 1.2);
  }
  ctx.fillText("throughput (requests/s)", (left + W - right) / 2, H - font * 0.4);
  ctx.save(); ctx.translate(font, (top + H - bottom) / 2); ctx.rotate(-Math.PI / 2);
  ctx.fillText(`${label} (ms)`, 0, 0); ctx.restore();
  if (slo) {
    ctx.strokeStyle = cssVar("--preempted"); ctx.setLineDash([6, 4]); ctx.lineWidth = 2;
    ctx.beginPath(); ctx.moveTo(left, Y(slo * 1e3)); ctx.lineTo(W - right, Y(slo * 1e3)); ctx.stroke();
    ctx.setLineDash([]); ctx.fillStyle = cssVar("--preempted"); ctx.textAlign = "right";
    ctx.fillText(`SLO ${slo * 1e3} ms`, W - right - 2, Y(slo * 1e3) - 4);
  }
  const configs = [...new Set(points.map((p) => p.config))];
  configs.forEach((config, i) => {
    const series = points.filter((p) => p.config === config).sort((a, b) => a.x - b.x);
    ctx.strokeStyle = ctx.fillStyle = PALETTE[i % PALETTE.length]; ctx.lineWidth = 1.5;
    ctx.beginPath();
    series.forEach((p, j) => (j ? ctx.lineTo(X(p.x), Y(p.y)) : ctx.moveTo(X(p.x), Y(p.y))));
    ctx.stroke();
    for (const p of series) {
      ctx.beginPath();
      if (p.y > yMax) {
        // Off the scale: a triangle at the top edge, with its value.
        const x = X(p.x), y = Y(yMax);
        ctx.moveTo(x, y - font * 0.5); ctx.lineTo(x - font * 0.4, y + font * 0.2); ctx.lineTo(x + font * 0.4, y + font * 0.2);
        ctx.fill();
        ctx.textAlign = "left"; ctx.fillText(`${Math.round(p.y)}`, x + font * 0.5, y + font * 0.9);
      } else {
        ctx.arc(X(p.x), Y(p.y), font * 0.3, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
  });
  const front = paretoFront(points);
  ctx.strokeStyle = text; ctx.lineWidth = 2.5; ctx.setLineDash([2, 3]);
  ctx.beginPath();
  front.forEach((p, j) => (j ? ctx.lineTo(X(p.x), Y(p.y)) : ctx.moveTo(X(p.x), Y(p.y))));
  ctx.stroke(); ctx.setLineDash([]);
  // The picture in words, for a screen reader: the table below holds every number.
  canvas.setAttribute("aria-label", `${label} against throughput: ${plural(points.length, "point")} of ${plural(configs.length, "configuration")}, `
    + `${fmtInt(front.length)} on the Pareto front; the Points table lists each`);
  return configs;
}

function draw() {
  if (!result) return;
  $("no-sweep").hidden = true;
  const configs = plot($("chart-ttft"), "ttft_s.p99", result.slo_ttft_s, "p99 TTFT");
  plot($("chart-tpot"), "tpot_s.p99", result.slo_tpot_s, "p99 TPOT");
  // Labels and cells come from the results file: text, whatever they hold.
  $("legend").replaceChildren(...configs.map((c, i) => el("span", {}, el("i", { style: { background: PALETTE[i % PALETTE.length] } }), String(c))),
    el("span", {}, "┄ Pareto front"));
  table();
}

function meets(row) {
  const ttft = result.slo_ttft_s ?? Infinity, tpot = result.slo_tpot_s ?? Infinity;
  return row["ttft_s.p99"] !== null && row["ttft_s.p99"] <= ttft && row["tpot_s.p99"] !== null && row["tpot_s.p99"] <= tpot;
}

function table() {
  const rateKeys = result.keys.filter((k) => k.startsWith("workload."));
  const cheapest = new Map();  // workload -> the row with the fewest GPUs meeting the SLO
  for (const row of result.rows) {
    if (!meets(row)) continue;
    const w = rateKeys.map((k) => row[k]).join(",");
    const best = cheapest.get(w);
    if (!best || row.num_gpus < best.num_gpus || (row.num_gpus === best.num_gpus && row.goodput_requests_per_s > best.goodput_requests_per_s)) cheapest.set(w, row);
  }
  const head = ["configuration", ...rateKeys.map((k) => k.replace("workload.", "")), "GPUs", "req/s", "p99 TTFT ms", "p99 TPOT ms", "goodput", "SLO"];
  const body = result.rows.map((row) => {
    const cells = [configKey(row), ...rateKeys.map((k) => row[k]), row.num_gpus, Number(row.requests_per_s).toFixed(2),
      (Number(row["ttft_s.p99"]) * 1e3).toFixed(1), (Number(row["tpot_s.p99"]) * 1e3).toFixed(2),
      Number(row.goodput_requests_per_s).toFixed(2), meets(row) ? "meets" : "misses"];
    const classes = [meets(row) ? "meets" : "", [...cheapest.values()].includes(row) ? "cheapest" : ""].join(" ");
    return el("tr", { class: classes }, cells.map((c) => el("td", {}, String(c))));
  });
  $("table").replaceChildren(el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))), el("tbody", {}, body));
  $("cheapest").textContent = cheapest.size ? "outlined: the fewest GPUs meeting the SLO at each rate" : "no point meets the SLO";
}

document.querySelectorAll(".axis select, .axis input").forEach((el) => el.addEventListener("input", gridSize));
document.querySelectorAll("#sweep-form select, #sweep-form input:not([type=file])").forEach((el) => el.addEventListener("input", checkSoon));
$("sweep-form").addEventListener("submit", runSweep);
$("theme").addEventListener("click", () => {
  const projector = document.documentElement.dataset.theme !== "projector";
  document.documentElement.dataset.theme = projector ? "projector" : "normal";
  localStorage.setItem("servescope-theme", projector ? "projector" : "normal");
  draw();
});
document.addEventListener("keydown", (event) => {
  if (!event.target.closest("input, select") && (event.key === "t" || event.key === "T")) $("theme").click();
});
window.addEventListener("resize", draw);
gridSize();
