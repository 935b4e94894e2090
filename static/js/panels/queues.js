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

// A request the frame names without its details (beyond the head of a long queue): its id only.
function bareChip(id, selected) {
  const label = id.replace(/^req-0*(?=\d)/, "#");
  return `<button class="chip bare${selected ? " selected" : ""}" data-id="${id}" title="${id}: waiting" aria-label="${label}: ${id}, waiting">${label}</button>`;
}

function chip(request, selected, showPriority) {
  const prompt = Math.min(1, request.computed / request.prompt);
  const out = request.output / request.max_tokens;
  const preempted = request.status === "preempted";
  const label = request.id.replace(/^req-0*(?=\d)/, "#");
  const title = `${request.id}: ${request.status}, prompt ${Math.min(request.computed, request.prompt)}/${request.prompt}, ` +
    `output ${request.output}/${request.max_tokens}` + (request.preemptions ? `, preempted ${request.preemptions}×` : "") +
    (request.cached ? `, ${request.cached} prompt tokens from the prefix cache` : "");
  const priority = showPriority ? `P${request.priority}` : "";
  const visible = `${label}${priority ? ` ${priority}` : ""}${request.preemptions ? ` ↺${request.preemptions}` : ""}`;
  return `<button class="chip${selected ? " selected" : ""}${preempted ? " preempted" : ""}${showPriority && request.priority === 0 ? " urgent" : ""}" data-id="${request.id}" ` +
    `style="--c:${requestColor(request.color)}" title="${title}" aria-label="${visible}: ${title}${priority ? `, priority ${request.priority}` : ""}">${label}` +
    (priority ? ` <span class="prio">${priority}</span>` : "") +
    (request.preemptions ? ` <span class="badge">↺${request.preemptions}</span>` : "") +
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
  // Priority matters when the engine schedules by it or the workload mixes priorities.
  const scenario = store.session ? store.session.scenario : null;
  const showPriority = Boolean(scenario && (scenario.engine.scheduling_order === "priority" || scenario.workload.high_priority_fraction > 0));
  let html = "";
  for (const [key, title, colour] of LANES) {
    if ((key === "swapped" || key === "preempted") && !counts[key]) continue;
    const ids = lanes[key];
    const shown = ids.slice(0, MAX_CHIPS);
    const chips = shown.map((id) => {
      const request = store.requests.get(id);
      return request ? chip(request, id === store.selected, showPriority) : bareChip(id, id === store.selected);
    }).join("");
    const extra = counts[key] - shown.length;
    const note = key === "waiting" && q.num_pending ? ` · ${q.num_pending} not yet arrived` : "";
    html += `<div class="lane ${key}" style="--lane:var(${colour})"><header><span>${title}${note}</span><b>${counts[key]}</b></header>` +
      `<div class="chips">${chips}${extra > 0 ? `<span class="more">+${extra} more</span>` : ""}` +
      `${!counts[key] ? '<span class="more">none</span>' : ""}</div></div>`;
  }
  el.innerHTML = html;
}
