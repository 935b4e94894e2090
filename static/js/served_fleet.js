// The served replicas of `serve --openai --replicas N`, live: each engine's queues, KV gauge and
// small KV grid, as the simulated fleet's cards show them, from GET /api/served/replicas (read
// only), asked again every POLL_MS (and later when the server says to wait). A card opens that
// replica's session on the dashboard.
import { fmtInt } from "./colors.js";
import { html, render } from "./dom.js";
import { drawGrid } from "./kv_cells.js";

const POLL_MS = 500;
const section = document.getElementById("served-fleet");
const grid = document.getElementById("served-grid");
let mostQueued = 1;  // the largest queue seen sets the bars' scale, so they compare across replicas and time
let latest = null;

function buildCards(replicas) {
  grid.replaceChildren();
  for (const r of replicas) {
    const card = document.createElement("a");
    card.className = "replica served";
    card.href = r.view_url;
    card.dataset.replica = r.replica;
    card.title = `Open replica ${r.replica}'s session on the dashboard`;
    render(card, html`
      <header><h3>replica ${r.replica}</h3><span class="role">${r.port ? `port ${r.port}` : "served"}</span></header>
      <div class="stats">
        <span>requests</span><b class="requests">0</b><span>finished</span><b class="finished">0</b>
        <span>running</span><b class="running-n">0</b><span>waiting</span><b class="waiting-n">0</b>
      </div>
      <div class="queue-bar" aria-hidden="true"><div class="running"></div><div class="waiting"></div></div>
      <div class="stats"><span>KV cache</span><b class="kv-n">0%</b><span>blocks</span><b>${fmtInt(r.num_blocks)}</b></div>
      <div class="gauge" aria-hidden="true"><div class="fill"></div></div>
      <canvas width="200" height="80" aria-label="replica ${r.replica} KV blocks"></canvas>
      <div class="hint">open its session ›</div>`);
    grid.appendChild(card);
  }
}

function show(picture) {
  if (grid.children.length !== picture.replicas.length) buildCards(picture.replicas);
  for (const r of picture.replicas) mostQueued = Math.max(mostQueued, r.running + r.waiting);
  for (const r of picture.replicas) {
    const card = grid.querySelector(`[data-replica="${r.replica}"]`);
    card.querySelector(".requests").textContent = fmtInt(r.requests);
    card.querySelector(".finished").textContent = fmtInt(r.finished);
    card.querySelector(".running-n").textContent = fmtInt(r.running);
    card.querySelector(".waiting-n").textContent = fmtInt(r.waiting);
    card.querySelector(".kv-n").textContent = `${(100 * r.kv).toFixed(1)}%`;
    card.querySelector(".queue-bar .running").style.width = `${(100 * r.running) / mostQueued}%`;
    const waiting = card.querySelector(".queue-bar .waiting");
    waiting.style.left = `${(100 * r.running) / mostQueued}%`;
    waiting.style.width = `${(100 * r.waiting) / mostQueued}%`;
    card.querySelector(".gauge .fill").style.width = `${100 * r.kv}%`;
    drawGrid(card.querySelector("canvas"), r.grid);
  }
}

async function poll() {
  let wait = POLL_MS;
  try {
    const response = await fetch("/api/served/replicas");
    if (response.ok) {
      latest = await response.json();
      requestAnimationFrame(() => show(latest));
    } else {
      wait = Math.max(POLL_MS, 1000 * Number(response.headers.get("Retry-After") || 1));
    }
  } catch {
    wait = 2000;  // the server went away: keep trying, slowly
  }
  setTimeout(poll, wait);
}

section.hidden = false;
poll();
window.addEventListener("resize", () => { if (latest) show(latest); });
// For tests: the last picture shown.
window.servedFleet = { latest: () => latest };
