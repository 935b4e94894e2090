// Request lanes: waiting, running, swapped, finished. Each request is a chip in its own colour
// with its prompt progress (orange) and output progress (blue), and a label, so colour is never
// the only thing that tells requests apart. Chips are kept per request and only what changed is
// written: a step that advances 256 decodes moves 256 bars, it does not rebuild the lanes.

import { requestColor } from "../colors.js";

// Each lane shows the head of its queue: a few rows more than its box holds (it scrolls), and
// "+N more" for the rest, so a batch turning over rebuilds dozens of chips a frame, not hundreds.
const LANES = [
  ["running", "Running", "--decode", 48],
  ["preempted", "Preempted · will recompute", "--preempted", 32],
  ["waiting", "Waiting", "--waiting", 32],
  ["swapped", "Swapped to CPU", "--swapped", 32],
  ["finished", "Finished (latest)", "--finished", 32],
];

export function mount(el, store, { onSelect }) {
  el.addEventListener("click", (event) => {
    const chip = event.target.closest(".chip");
    if (chip) onSelect(chip.dataset.id);
  });
  // The detailed tooltip changes every step; it is written when a pointer or the focus reaches
  // a chip, not for every chip in every frame.
  const describe = (event) => {
    const chip = event.target.closest(".chip");
    const request = chip && store.requests.get(chip.dataset.id);
    if (request) describeChip(chip, request);
  };
  el.addEventListener("pointerover", describe);
  el.addEventListener("focusin", describe);
  el.addEventListener("keydown", (event) => {
    const chip = event.target.closest(".chip");
    if (chip && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); event.stopPropagation(); onSelect(chip.dataset.id); }
  });
  const lanes = new Map(LANES.map(([key, title, colour]) => [key, createLane(el, key, colour)]));
  const chips = new Map(); // request id -> its chip, wherever it is shown
  // Only chips in view are written: a lane shows some 35 of its up to 120 chips, and each write
  // costs style and paint. A chip scrolled into view is brought up to date as it appears.
  chips.visibility = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const chip = entry.target;
      chip.inView = entry.isIntersecting;
      const request = store.requests.get(chip.dataset.id);
      if (chip.inView && request && !chip.bare) updateChip(chip, request, chip.dataset.id === store.selected);
    }
  });
  let shownKey = "";
  return {
    update() {
      const key = `${store.step}/${store.seq}/${store.selected}`;
      if (key === shownKey) return; // nothing this panel shows has changed
      shownKey = key;
      render(store, lanes, chips);
    },
  };
}

function createLane(el, key, colour) {
  const lane = document.createElement("div");
  lane.className = `lane ${key}`;
  lane.style.setProperty("--lane", `var(${colour})`);
  lane.innerHTML = `<header><span></span><b></b></header><div class="chips"><span class="more"></span></div>`;
  el.append(lane);
  return { lane, title: lane.querySelector("header span"), count: lane.querySelector("header b"),
    chips: lane.querySelector(".chips"), more: lane.querySelector(".more"), text: {} };
}

// Writes a lane's text only when it differs, so an unchanged lane costs no style recalculation.
function setText(lane, part, text) {
  if (lane.text[part] !== text) { lane.text[part] = text; lane[part].textContent = text; }
}

const shortId = (id) => id.replace(/^req-0*(?=\d)/, "#");

// A request the frame names without its details (beyond the head of a long queue): its id only,
// replaced by a full chip once its details arrive.
function createBareChip(id) {
  const chip = document.createElement("button");
  chip.className = "chip bare";
  chip.dataset.id = id;
  chip.textContent = shortId(id);
  chip.title = `${id}: waiting`;
  chip.setAttribute("aria-label", `${shortId(id)}: ${id}, waiting`);
  chip.bare = true;
  return chip;
}

// A chip's parts, parsed once and cloned: a batch turning over makes dozens of chips a frame.
const CHIP_PARTS = document.createElement("template");
CHIP_PARTS.innerHTML = `<span class="badge" aria-hidden="true" hidden></span>` +
  // Fixed widths scaled by a transform: a bar that grows every step then costs no layout.
  `<span class="bar"><i class="prompt" style="width:50%;transform-origin:0 0"></i><i class="out" style="left:50%;width:50%;transform-origin:0 0"></i></span>`;

function createChip(request, showPriority) {
  const chip = document.createElement("button");
  chip.className = `chip${showPriority && request.priority === 0 ? " urgent" : ""}`;
  chip.dataset.id = request.id;
  chip.style.setProperty("--c", requestColor(request.color));
  chip.append(shortId(request.id));
  if (showPriority) {
    const priority = document.createElement("span");
    priority.className = "prio";
    priority.textContent = `P${request.priority}`;
    chip.append(" ", priority);
  }
  chip.append(CHIP_PARTS.content.cloneNode(true));
  chip.parts = { badge: chip.querySelector(".badge"), prompt: chip.querySelector(".prompt"), out: chip.querySelector(".out") };
  chip.shown = "";
  chip.showPriority = showPriority;
  return chip;
}

// The accessible name starts with what the chip shows (its label, priority, preemptions).
function describeChip(chip, request) {
  chip.title = title(request);
  const visible = `${shortId(request.id)}${chip.showPriority ? ` P${request.priority}` : ""}${request.preemptions ? ` ↺${request.preemptions}` : ""}`;
  chip.setAttribute("aria-label", `${visible}: ${chip.title}`);
}

function title(request) {
  return `${request.id}: ${request.status}, prompt ${Math.min(request.computed, request.prompt)}/${request.prompt}, ` +
    `output ${request.output}/${request.max_tokens}` + (request.preemptions ? `, preempted ${request.preemptions}×` : "") +
    (request.cached ? `, ${request.cached} prompt tokens from the prefix cache` : "") +
    (request.priority !== undefined ? `, priority ${request.priority}` : "");
}

// A chip is rewritten when what it shows changes: its status, its bars by a visible step (a
// hundredth of their length), its preemptions or selection.
function updateChip(chip, request, selected) {
  const prompt = Math.min(1, request.computed / request.prompt);
  const out = request.output / request.max_tokens;
  const shown = `${request.status}/${prompt.toFixed(2)}/${out.toFixed(2)}/${request.preemptions}/${selected}`;
  if (chip.shown === shown || chip.inView === false) return;
  const statusChanged = !chip.shown.startsWith(`${request.status}/`);
  chip.shown = shown;
  chip.classList.toggle("selected", selected);
  chip.classList.toggle("preempted", request.status === "preempted");
  const badge = request.preemptions ? `↺${request.preemptions}` : "";
  const badgeChanged = chip.parts.badge.textContent !== badge;
  if (badgeChanged) { // only then: writing even the same text would dirty the lane's layout
    chip.parts.badge.hidden = !badge;
    chip.parts.badge.textContent = badge;
  }
  if (statusChanged || badgeChanged) describeChip(chip, request);
  chip.parts.prompt.style.transform = `scaleX(${prompt.toFixed(2)})`;
  chip.parts.out.style.transform = `scaleX(${out.toFixed(2)})`;
}

function render(store, lanes, chips) {
  const q = store.queues;
  // Preempted requests wait at the head of the waiting queue; they get a lane of their own.
  const isPreempted = (id) => store.requests.get(id)?.status === "preempted";
  const ids = {
    running: q.running,
    preempted: q.waiting.filter(isPreempted),
    waiting: q.waiting.filter((id) => !isPreempted(id)),
    swapped: q.swapped,
    finished: q.finished.slice().reverse(),
  };
  const counts = {
    running: q.running.length, preempted: ids.preempted.length, waiting: q.num_waiting - ids.preempted.length,
    swapped: q.swapped.length, finished: q.num_finished,
  };
  // Priority matters when the engine schedules by it or the workload mixes priorities.
  const scenario = store.session ? store.session.scenario : null;
  const showPriority = Boolean(scenario && (scenario.engine.scheduling_order === "priority" || scenario.workload.high_priority_fraction > 0));
  const used = new Set();
  for (const [key, title, , maxChips] of LANES) {
    const lane = lanes.get(key);
    lane.lane.hidden = (key === "swapped" || key === "preempted") && !counts[key];
    const note = key === "waiting" && q.num_pending ? ` · ${q.num_pending} not yet arrived` : "";
    setText(lane, "title", title + note);
    setText(lane, "count", String(counts[key]));
    // Place the shown chips in order before the lane's closing note, moving only those out of place.
    const wanted = ids[key].slice(0, maxChips);
    const wantedSet = new Set(wanted);
    let cursor = lane.chips.firstChild;
    for (const id of wanted) {
      while (cursor !== lane.more && !wantedSet.has(cursor.dataset.id)) { const next = cursor.nextSibling; cursor.remove(); cursor = next; }
      const request = store.requests.get(id);
      let chip = chips.get(id);
      if (chip && (request ? chip.bare || chip.showPriority !== showPriority : !chip.bare)) { // its kind changed
        if (chip === cursor) cursor = cursor.nextSibling;
        chip.remove(); chips.visibility.unobserve(chip); chip = null;
      }
      if (!chip) {
        chip = request ? createChip(request, showPriority) : createBareChip(id);
        chips.set(id, chip);
        chips.visibility.observe(chip);
      }
      if (request) updateChip(chip, request, id === store.selected);
      else chip.classList.toggle("selected", id === store.selected);
      used.add(id);
      if (chip === cursor) cursor = cursor.nextSibling;
      else lane.chips.insertBefore(chip, cursor);
    }
    while (cursor !== lane.more) { const next = cursor.nextSibling; cursor.remove(); cursor = next; }
    const extra = counts[key] - wanted.length;
    setText(lane, "more", extra > 0 ? `+${extra} more` : !counts[key] ? "none" : "");
    lane.more.hidden = !lane.text.more;
  }
  for (const [id, chip] of chips) if (!used.has(id)) { chip.remove(); chips.delete(id); chips.visibility.unobserve(chip); }
}
