// Request lanes: waiting, running, swapped, finished. Each request is a chip in its own colour
// with its prompt progress (orange) and output progress (blue), and a label, so colour is never
// the only thing that tells requests apart. Chips are kept per position and only what changed is
// written: a step that advances 256 decodes moves their bars, it does not rebuild the lanes.

import { requestColor, statusLabel } from "../colors.js";
import { html, render as write } from "../dom.js";
import { fitLanes } from "./lane_fit.js";
import { setProp, setText } from "../writes.js";

// Each lane keeps chips for the head of its queue (the frame details no more), shows those of the
// whole rows it has room for (lane_fit.js) and "+N more" for the rest.
const LANES = [
  ["running", "Running", "--decode", 48],
  ["preempted", "Preempted · will recompute", "--preempted", 32],
  ["waiting", "Waiting", "--waiting", 32],
  ["swapped", "Swapped to CPU", "--swapped", 32],
  ["finished", "Finished (latest)", "--finished", 32],
];
// While playing, at most this many chips take a new request in one frame. A batch turning over
// moves each lane's head by dozens of requests a step: over a hundred chips relabelled, each
// restyled, laid out and painted, made frames of 50-100 ms at 1920x1080. The chips left over take
// theirs in the next frames, in lane order from where a frame stopped, so a chip is a few frames
// behind at most while the batch turns over (the counts never are), and exact once paused.
const RELABELS_PER_FRAME = 24;

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
    if (request) describeChip(chip, request, true);
  };
  el.addEventListener("pointerover", describe);
  el.addEventListener("focusin", describe);
  el.addEventListener("keydown", (event) => {
    const chip = event.target.closest(".chip");
    if (chip && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); event.stopPropagation(); onSelect(chip.dataset.id); }
  });
  const lanes = new Map(LANES.map(([key, title, colour]) => [key, createLane(el, key, colour)]));
  // A panel that grows or shrinks (the stage, the window) re-shares its rows.
  new ResizeObserver(() => fitLanes(el, [...lanes.values()])).observe(el);
  // Only chips in view are written: a lane shows the chips of its rows (the rest are hidden), and
  // each write costs style and paint. A chip shown again is brought up to date as it appears.
  const visibility = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const chip = entry.target;
      chip.inView = entry.isIntersecting;
      if (!chip.inView) continue;
      if (chip.pending) {
        const { id, showPriority } = chip.pending;
        fill(chip, id, store.requests.get(id), showPriority, id === store.selected, false, true, isMine(store, id));
        continue;
      }
      const request = store.requests.get(chip.dataset.id);
      if (request && !chip.bare) updateChip(chip, request, chip.dataset.id === store.selected);
    }
  });
  let shownKey = "";
  const relabels = { cursor: 0 }; // where the next frame's relabels start (`relabelsThisFrame`)
  let behind = false; // chips left to take their requests in the next frame
  return {
    // True while chips wait to be relabelled: the dashboard then calls again in its next frame,
    // whether or not a new state has come.
    update() {
      // Pausing redraws: chips out of view wait while playing, never in a paused view.
      const key = `${store.step}/${store.seq}/${store.selected}/${store.status.playing}/${store.mineVersion}`;
      if (key === shownKey && !behind) return false; // nothing this panel shows has changed
      shownKey = key;
      behind = render(el, store, lanes, visibility, relabels);
      return behind;
    },
  };
}

function createLane(el, key, colour) {
  const lane = document.createElement("div");
  lane.className = `lane ${key}`;
  lane.style.setProperty("--lane", `var(${colour})`);
  write(lane, html`<header><span></span><b></b></header><div class="chips"><span class="more"></span></div>`);
  el.append(lane);
  return { lane, title: lane.querySelector("header span"), count: lane.querySelector("header b"),
    chips: lane.querySelector(".chips"), more: lane.querySelector(".more"), text: {}, slots: [], total: 0 };
}

// Writes a lane's text only when it differs, so an unchanged lane costs no style recalculation.
function setLaneText(lane, part, text) {
  if (lane.text[part] !== text) { lane.text[part] = text; setText(lane[part], text); }
}



const shortId = (id) => id.replace(/^req-0*(?=\d)/, "#");

// A chip's parts, parsed once and cloned.
const CHIP_PARTS = document.createElement("template");
// Fixed widths (dashboard.css) scaled by a transform: a bar that grows every step then costs no layout.
write(CHIP_PARTS, html`<span class="label"></span><span class="mine" hidden> yours</span><span class="prio" hidden></span><span class="badge" aria-hidden="true" hidden></span><span class="bar"><i class="prompt"></i><i class="out"></i></span>`);

function createSlot() {
  const chip = document.createElement("button");
  chip.className = "chip";
  chip.append(CHIP_PARTS.content.cloneNode(true));
  chip.parts = Object.fromEntries(["label", "mine", "prio", "badge", "prompt", "out"].map((part) => [part, chip.querySelector(`.${part}`)]));
  chip.shown = "";
  return chip;
}

// A lane's chips are kept by position: when the queue moves (a batch turning over moves dozens
// of requests a step), each position takes its new request's label, colour and bars, and no chip
// is made or thrown away. A request the frame names without its details (beyond the head of a
// long queue) shows its id only ("bare"), until its details arrive. A chip not `mayRelabel` keeps
// its request this frame.
function fill(chip, id, request, showPriority, selected, lazy, mayRelabel, mine) {
  if (lazy && chip.inView === false) {
    // While playing, a chip hidden past its lane's rows (most of them on a projector, when a batch
    // turning over changes every position's request) takes its request as it comes into view.
    chip.pending = { id, showPriority };
    return;
  }
  chip.pending = null;
  const bare = !request;
  if (needsRelabel(chip, id, request, showPriority, mine)) {
    if (!mayRelabel) return;
    chip.dataset.id = id;
    chip.bare = bare;
    chip.showPriority = showPriority;
    chip.mine = mine;
    setProp(chip.parts.mine, "hidden", !chip.mine);
    chip.shown = "";
    setProp(chip, "className", `chip${bare ? " bare" : ""}${showPriority && request && request.priority === 0 ? " urgent" : ""}`);
    setText(chip.parts.label, shortId(id));
    setProp(chip.parts.prio, "hidden", bare || !showPriority);
    setProp(chip.parts.prio, "textContent", bare || !showPriority ? "" : ` P${request.priority}`); // read as "#3 P0"
    setProp(chip.parts.badge, "hidden", true);
    setProp(chip.parts.badge, "textContent", "");
    if (bare) {
      chip.style.removeProperty("border-left-color");
      chip.title = `${id}: waiting`;
      chip.describedAs = "";
      chip.setAttribute("aria-label", `${shortId(id)}${chip.mine ? " yours" : ""}: ${id}, waiting`);
    } else {
      chip.removeAttribute("title"); // the last request's: a pointer on the chip writes this one's
      // Not a custom property: that would restyle the chip's every part, not just its border.
      chip.style.borderLeftColor = requestColor(request.color);
      describeChip(chip, request);
    }
  }
  if (bare) chip.classList.toggle("selected", selected);
  else updateChip(chip, request, selected);
}

const needsRelabel = (chip, id, request, showPriority, mine) =>
  chip.dataset.id !== id || chip.bare !== !request || chip.showPriority !== showPriority || chip.mine !== mine;

// The requests this browser sent from the class form (class_desk.js): shown as "yours" here alone.
const isMine = (store, id) => Boolean(store.mine && store.mine.has(id));

// While playing, the chips that take a new request this frame (null: all that need one): at most
// RELABELS_PER_FRAME of those in view, in lane order from where the last frame stopped.
function relabelsThisFrame(slots, relabels, store, showPriority) {
  const stale = slots.filter(({ chip, id }) => chip.inView !== false && needsRelabel(chip, id, store.requests.get(id), showPriority, isMine(store, id)));
  if (stale.length <= RELABELS_PER_FRAME) return null;
  const start = Math.max(0, stale.findIndex((slot) => slot.order >= relabels.cursor));
  const chosen = [...stale.slice(start), ...stale.slice(0, start)].slice(0, RELABELS_PER_FRAME);
  relabels.cursor = chosen[chosen.length - 1].order + 1;
  return new Set(chosen.map((slot) => slot.chip));
}

// The accessible name starts with what the chip shows (its label, priority, preemptions), then
// the request's status and progress as of the last change of status; `fresh` (a pointer or the
// focus on the chip) brings the progress up to date and writes the tooltip too. A chip relabelled
// and updated in one frame is described once: a batch turning over relabels a hundred chips.
function describeChip(chip, request, fresh = false) {
  const key = `${request.id}/${request.status}/${request.preemptions}/${chip.showPriority}/${chip.mine}`;
  if (chip.describedAs === key && !fresh) return;
  chip.describedAs = key;
  const text = title(request);
  if (fresh) chip.title = text;
  const visible = `${shortId(request.id)}${chip.mine ? " yours" : ""}${chip.showPriority ? ` P${request.priority}` : ""}${request.preemptions ? ` ↺${request.preemptions}` : ""}`;
  chip.setAttribute("aria-label", `${visible}: ${text}`);
}

function title(request) {
  return `${request.id}: ${statusLabel(request.status)}, prompt ${Math.min(request.computed, request.prompt)}/${request.prompt}, ` +
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

function render(el, store, lanes, visibility, relabels) {
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
  const playing = Boolean(store.status.playing);
  const slots = []; // each chip and the request at its position, in lane order
  for (const [key, title, , maxChips] of LANES) {
    const lane = lanes.get(key);
    setProp(lane.lane, "hidden", (key === "swapped" || key === "preempted") && !counts[key]);
    const note = key === "waiting" && q.num_pending ? ` · ${q.num_pending} not yet arrived` : "";
    setLaneText(lane, "title", title + note);
    setLaneText(lane, "count", String(counts[key]));
    const wanted = ids[key].slice(0, maxChips);
    wanted.forEach((id, i) => {
      let chip = lane.slots[i];
      if (!chip) {
        chip = createSlot();
        lane.chips.insertBefore(chip, lane.more);
        lane.slots.push(chip);
        visibility.observe(chip);
      }
      slots.push({ chip, id, order: slots.length });
    });
    for (const extra of lane.slots.splice(wanted.length)) { visibility.unobserve(extra); extra.remove(); }
    lane.total = counts[key];
  }
  const allowed = playing ? relabelsThisFrame(slots, relabels, store, showPriority) : null;
  for (const { chip, id } of slots) {
    fill(chip, id, store.requests.get(id), showPriority, id === store.selected, playing, !allowed || allowed.has(chip),
      isMine(store, id));
  }
  fitLanes(el, [...lanes.values()]); // with every chip's label written: labels set the chips' widths
  return allowed !== null;
}
