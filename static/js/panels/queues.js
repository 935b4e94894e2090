// Request lanes: waiting, running, swapped, finished. Each request is a chip in its own colour
// with its prompt progress (orange) and output progress (blue), and a label, so colour is never
// the only thing that tells requests apart.

import { requestColor } from "../colors.js";

const LANES = [
  ["running", "Running", "--decode"],
  ["preempted", "Preempted · will recompute", "--preempted"],
  ["waiting", "Waiting", "--waiting"],
  ["swapped", "Swapped to CPU", "--swapped"],
  ["finished", "Finished (latest)", "--finished"],
];
const MAX_CHIPS = 120;

export function mount(el, store, { onSelect }) {
  el.addEventListener("click", (event) => {
    const chip = event.target.closest(".chip");
    if (chip) onSelect(chip.dataset.id);
  });
  el.addEventListener("keydown", (event) => {
    const chip = event.target.closest(".chip");
    if (chip && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); event.stopPropagation(); onSelect(chip.dataset.id); }
  });
  return { update: () => render(el, store) };
}

function chip(request, selected) {
  const prompt = Math.min(1, request.computed / request.prompt);
  const out = request.output / request.max_tokens;
  const preempted = request.status === "preempted";
  const label = request.id.replace(/^req-0*(?=\d)/, "#");
  const title = `${request.id}: ${request.status}, prompt ${Math.min(request.computed, request.prompt)}/${request.prompt}, ` +
    `output ${request.output}/${request.max_tokens}` + (request.preemptions ? `, preempted ${request.preemptions}×` : "") +
    (request.cached ? `, ${request.cached} prompt tokens from the prefix cache` : "");
  return `<button class="chip${selected ? " selected" : ""}${preempted ? " preempted" : ""}" data-id="${request.id}" ` +
    `style="--c:${requestColor(request.color)}" title="${title}" aria-label="${title}">${label}` +
    (request.preemptions ? `<span class="badge" aria-hidden="true">↺${request.preemptions}</span>` : "") +
    `<span class="bar"><i class="prompt" style="width:${(prompt * 50).toFixed(1)}%"></i>` +
    `<i class="out" style="left:50%;width:${(out * 50).toFixed(1)}%"></i></span></button>`;
}

function render(el, store) {
  const q = store.queues;
  // Preempted requests wait at the head of the waiting queue; they get a lane of their own.
  const isPreempted = (id) => store.requests.get(id)?.status === "preempted";
  const lanes = {
    running: q.running,
    preempted: q.waiting.filter(isPreempted),
    waiting: q.waiting.filter((id) => !isPreempted(id)),
    swapped: q.swapped,
    finished: q.finished.slice().reverse(),
  };
  const counts = {
    running: q.running.length, preempted: lanes.preempted.length, waiting: q.num_waiting - lanes.preempted.length,
    swapped: q.swapped.length, finished: q.num_finished,
  };
  const signature = `${store.step}/${store.seq}/${store.selected}`;
  if (el.dataset.key === signature) return; // nothing this panel shows has changed
  el.dataset.key = signature;
  let html = "";
  for (const [key, title, colour] of LANES) {
    if ((key === "swapped" || key === "preempted") && !counts[key]) continue;
    const ids = lanes[key];
    const shown = ids.slice(0, MAX_CHIPS);
    const chips = shown.map((id) => store.requests.get(id)).filter(Boolean).map((r) => chip(r, r.id === store.selected)).join("");
    const extra = counts[key] - shown.length;
    const note = key === "waiting" && q.num_pending ? ` · ${q.num_pending} not yet arrived` : "";
    html += `<div class="lane ${key}" style="--lane:var(${colour})"><header><span>${title}${note}</span><b>${counts[key]}</b></header>` +
      `<div class="chips">${chips}${extra > 0 ? `<span class="more">+${extra} more</span>` : ""}` +
      `${!counts[key] ? '<span class="more">none</span>' : ""}</div></div>`;
  }
  el.innerHTML = html;
}
