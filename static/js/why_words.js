// The decision trace in plain words. The server sends data (scheduler_core/engine/decision_trace.py);
// every number in these sentences is a field of it or of the step's record.

// Each sentence is an html`...` fragment (dom.js): its words and tags fixed here, every piece of
// data in it a hole, written as text (a request id is data: a scenario may name it anything).

import { fmtInt, noun } from "./colors.js";
import { html } from "./dom.js";

const id = (rid) => html`<button type="button" class="rid" data-id="${rid}" title="Select ${rid}">${rid}</button>`;
const n = (value) => html`<b class="num">${fmtInt(value)}</b>`;
const counted = (count, one) => html`${n(count)} ${noun(count, one)}`;
const blocks = (count) => counted(count, "block");
const tokens = (count) => counted(count, "token");
const were = (count) => html`${blocks(count)} ${count === 1 ? "was" : "were"}`;
// Fragments joined by `separator` (fragments are never joined as strings).
const joined = (parts, separator) => parts.map((part, i) => html`${i ? separator : ""}${part}`);

const RULES = {
  fcfs_last_running: "FCFS preempts the last request of the running list (the newest)",
  priority_lowest: "priority scheduling preempts the lowest-priority running request (largest priority value, latest arrival)",
};

// Why a prefix-cache hit lost its last block (scheduler_core/engine/eagle_hit_rule.py).
const DROP_RULES = {
  eagle_block_drop: "the EAGLE/MTP drafter needs the target model's hidden states at the hit's last block, which a cache hit does not keep, so vLLM drops that block from every hit (before 0.33.0, or on 0.33.0 with disable_lookahead_block_hashes); disable_eagle_block_drop opts out from 0.30.0",
  eagle_block_drop_kv_connector: "with a KV connector configured, vLLM 0.33.0 keeps the block hashes of old, without the token after each block, and so the drop: the EAGLE/MTP drafter needs the hidden states of the hit's last block, which a cache hit does not keep",
};

// The block an EAGLE/MTP drafter took from the request's hit, and what it costs.
function droppedHitWords(drop, rid, d, wait) {
  const bs = d.limits.block_size;
  const fresh = (d.allocated[rid] || [])[0]; // its first new block: the table's slot after the hit
  return html`<span class="why-key dropped-hit">Hit cut by one block:</span> its prompt matched ${blocks(wait.cached_tokens / bs + 1)} in the prefix cache, but ${
    DROP_RULES[drop.rule] || drop.rule} (rule ${drop.rule}). Cached block ${n(drop.block)} was dropped from the hit and stays cached; its ${
    n(bs)} tokens are computed again${fresh === undefined ? "" : html` in block ${n(fresh)}, allocated fresh where the cached one would have been reused`}.`;
}

// Why a request got fewer tokens than it asked for.
function bound(entry, limits) {
  switch (entry.bound) {
    case "none": return "all it asked for";
    case "token_budget": return html`all that was left of the token budget (max_num_batched_tokens = ${n(limits.max_num_batched_tokens)})`;
    case "long_prefill_token_threshold": return html`capped by long_prefill_token_threshold = ${n(limits.long_prefill_token_threshold_in_force)}`;
    case "max_model_len": return html`capped by max_model_len = ${n(limits.max_model_len)}`;
    default: return entry.bound;
  }
}

// Where a released block table went.
export function freedWords(free) {
  const parts = [];
  if (free.to_head.length) parts.push(html`${blocks(free.to_head.length)} to the head of the free queue (no cached prefix: reused first)`);
  if (free.to_tail_cached.length) parts.push(html`${blocks(free.to_tail_cached.length)} to the tail, still holding a cached prefix (evictable, can be hit again)`);
  if (free.to_tail.length) parts.push(html`${blocks(free.to_tail.length)} to the tail of the free queue`);
  if (free.still_shared.length) parts.push(html`${blocks(free.still_shared.length)} stay in use, shared with other requests`);
  return parts.length ? html`${joined(parts, "; ")}` : "it held no blocks";
}

// A hybrid model's window group, in vLLM's words when the page knows the groups.
const groupWords = (groups, group) => (groups && groups[group] ? groups[group].label : `KV cache group ${group}`);
const span = (first, last) => (first === last ? html`${n(first)}` : html`${n(first)}–${n(last)}`);

// A request's window entries of one step, those of groups that read the same and gave back the
// same logical blocks as one (Gemma 3's six groups of sliding window 1024 move together): `groups`
// lists them, the destinations hold all their blocks.
export function mergedWindows(entries, groups) {
  const merged = new Map();
  for (const w of entries) {
    const key = `${w.request}/${groupWords(groups, w.group)}/${w.first_index}/${w.blocks}`;
    const into = merged.get(key);
    if (!into) { merged.set(key, { ...w, groups: [w.group] }); continue; }
    into.groups.push(w.group);
    for (const where of ["to_head", "to_tail_cached", "to_tail", "still_shared"]) into[where] = [...into[where], ...w[where]];
  }
  return [...merged.values()];
}

// Blocks that left a sliding window (or an attention chunk) while the request ran (an entry of
// mergedWindows): vLLM's remove_skipped_blocks gives them back and the table points at the null
// block in their place.
export function leftWindowWords(w, limits, groups) {
  const bs = limits.block_size, group = groups && groups[w.group], many = w.groups.length > 1;
  const reach = group && group.kind === "chunked_local" ? html`its attention chunk of ${tokens(group.window)}`
    : group && group.window ? html`the last ${tokens(group.window)} it attends to` : "its window";
  const who = many ? html`${n(w.groups.length)} groups of ${groupWords(groups, w.group)} (groups ${
    w.groups.every((g, i) => !i || g === w.groups[i - 1] + 1) ? `${w.groups[0]}–${w.groups[w.groups.length - 1]}` : w.groups.join(", ")}) each` : groupWords(groups, w.group);
  return html`<span class="why-key">${who} gave back ${blocks(w.blocks)}:</span>
    tokens ${span(w.first_index * bs, (w.first_index + w.blocks) * bs - 1)} (logical block${w.blocks === 1 ? "" : "s"} ${span(w.first_index, w.first_index + w.blocks - 1)} of ${many ? "each group's" : "that group's"} table) fell out of ${reach},
    so the table points at the null block there. Where ${many ? html`all ${n(w.blocks * w.groups.length)}` : "they"} went: ${freedWords(w)}.`;
}

function preemptionWords(p, limits) {
  const rule = p.rule === "self"
    ? html`${RULES[p.rule_order]}, and that was ${id(p.request)} itself: it preempted itself`
    : html`${RULES[p.rule_order]}: ${id(p.victim)}${p.rule_order === "priority_lowest" ? html` (priority ${n(p.victim_priority)})` : ""}`;
  return html`${id(p.request)} needed ${blocks(p.blocks_needed)} for ${counted(p.tokens, "more token")}
    but only ${were(p.blocks_free)} free (counting ${n(p.evictable_cached)} free blocks that still hold evictable cached prefixes).
    Rule: ${rule}. The victim held ${blocks(p.victim_blocks)}.`;
}

const WAITING_REASONS = {
  token_budget_spent: (stop, limits) => html`the step's token budget (max_num_batched_tokens = ${n(limits.max_num_batched_tokens)}) was spent before the waiting queue got to it`,
  max_num_seqs: (stop, limits) => html`${n(stop.num_running)} requests were running, the limit max_num_seqs = ${n(limits.max_num_seqs)}`,
  preempted_this_step: () => "this step preempted a request, and a step that preempts admits nobody (it had to take blocks away)",
  swapped_first: () => "requests swapped out to CPU resume before anything new is admitted",
};

function order(limits) {
  return limits.scheduling_order === "priority" ? "in priority order" : "in arrival order";
}

// A waiting request the scan looked at and did not admit; `end` closes the sentence (none when
// it goes on in another).
function rejectedWords(e, limits, end = ".") {
  switch (e.reason) {
    case "blocks_full_context":
      return html`not admitted: vLLM 0.33 admits a request only if the free blocks cover its whole context.
        It needed ${blocks(e.blocks_needed_full)} for all of it (its first chunk of ${tokens(e.tokens)} alone needed ${n(e.blocks_needed_chunk)});
        ${were(e.blocks_free)} free${end}`;
    case "blocks":
      return html`not admitted: its chunk of ${tokens(e.tokens)} needed ${blocks(e.blocks_needed_chunk)} and only ${were(e.blocks_free)} free${end}`;
    case "prompt_exceeds_budget_unchunked":
      return html`not admitted: chunked prefill is off, so its ${n(e.asked)}-token prompt must run whole, and only ${tokens(e.budget_before)} of budget were left${end}`;
    default:
      return html`not admitted (${e.reason})${end}`;
  }
}

function stopWords(stop, limits, answer) {
  if (WAITING_REASONS[stop.reason]) return WAITING_REASONS[stop.reason](stop, limits);
  const blocker = answer.decisions.waiting.find((e) => e.request === stop.request);
  return html`head-of-line blocking at ${id(stop.request)}, first in the queue ${order(limits)}: it was
    ${blocker ? rejectedWords(blocker, limits, "") : "not admitted"}; vLLM does not look past it`;
}

// Sentences about one request in one step: what it asked, got, and why. `status` is its status
// after the step (to tell a waiting request the scan never reached).
export function explainRequest(answer, rid, status, groups = null) {
  const d = answer.decisions, r = answer.record, limits = d.limits, step = r.step + 1;
  const out = [];
  if (r.arrived.includes(rid)) out.push(html`${id(rid)} arrived in step ${n(step)}.`);
  for (const p of d.preemptions) {
    if (p.victim === rid) out.push(html`<span class="why-key preempted">Preempted in step ${n(step)}.</span> ${preemptionWords(p, limits)}`);
    else if (p.request === rid) out.push(html`Out of blocks in step ${n(step)}: ${preemptionWords(p, limits)}`);
  }
  const run = d.running.find((e) => e.request === rid);
  if (run) {
    const drafts = run.drafts ? html` (1 + ${n(run.drafts)} draft${run.drafts === 1 ? "" : "s"} to verify)` : "";
    if (run.scheduled) out.push(html`It ran: asked for ${n(run.asked)} token${run.asked === 1 ? "" : "s"}${drafts}, given ${n(run.given)}: ${bound(run, limits)}.`);
    else if (run.unscheduled_tokens) out.push(html`It was scheduled for ${tokens(run.unscheduled_tokens)}, then unscheduled when priority preemption took it.`);
    else if (!d.preemptions.some((p) => p.victim === rid) && run.given === 0) out.push(html`It had nothing it could compute (asked ${n(run.asked)}, room 0 under max_model_len = ${n(limits.max_model_len)}).`);
  } else if (status === "running" && !r.admitted.includes(rid) && !r.resumed.includes(rid) && d.running_stop) {
    const stop = d.running_stop;
    out.push(stop.reason === "token_budget_spent"
      ? html`It got no tokens: the token budget (max_num_batched_tokens = ${n(limits.max_num_batched_tokens)}) was spent on the running requests ahead of it (${n(stop.num_not_examined)} left out).`
      : html`It got no tokens: the scan of running requests stopped when ${id(stop.request)} preempted itself.`);
  }
  const wait = d.waiting.find((e) => e.request === rid);
  const chunk = r.scheduled.find((s) => s[0] === rid);
  if (chunk && !run && !wait) {
    // Swap-ins, and the policies whose trace holds only preemptions and blocks.
    const swapped = r.swapped_in.find(([s]) => s === rid);
    out.push(html`It ran: given ${n(chunk[1])} token${chunk[1] === 1 ? "" : "s"}${
      swapped ? html`, back from CPU swap space with its ${blocks(swapped[1])}` : ""}${
      limits.policy !== "vllm-v1" ? ` (the ${limits.policy} policy's trace records preemptions and blocks, not token limits)` : ""}.`);
  }
  if (wait) {
    if (wait.admitted) {
      out.push(html`<span class="why-key">${wait.resumed ? "Resumed after preemption" : "Admitted"}</span> from the waiting queue${
        wait.cached_tokens ? html` with ${tokens(wait.cached_tokens)} hit in the prefix cache` : ""}: asked for ${tokens(wait.asked)}, given ${n(wait.given)}: ${bound(wait, limits)}.`);
    } else {
      out.push(html`<span class="why-key">Waiting:</span> examined, ${rejectedWords(wait, limits)}${
        d.waiting_stop && d.waiting_stop.request === rid ? " The scan of the waiting queue stopped here." : " The scan went on past it."}`);
    }
    const drop = (d.dropped_hit_blocks || {})[rid];
    if (drop && wait.admitted) out.push(droppedHitWords(drop, rid, d, wait));
  } else if ((status === "waiting" || status === "preempted") && !d.preemptions.some((p) => p.victim === rid)) {
    const stop = d.waiting_stop;
    out.push(stop ? html`<span class="why-key">Waiting, not examined:</span> ${stopWords(stop, limits, answer)}.`
      : html`Waiting: the scan never reached it.`);
  }
  for (const f of d.frees) {
    if (f.request === rid && f.cause === "finished") out.push(html`<span class="why-key">Finished</span> in step ${n(step)}; its ${blocks(f.blocks)}: ${freedWords(f)}.`);
    if (f.request === rid && f.cause === "preempted") out.push(html`Its ${blocks(f.blocks)}: ${freedWords(f)}.`);
    if (f.request === rid && f.cause === "aborted") out.push(html`<span class="why-key">Aborted</span> at the start of step ${n(step)} (its client disconnected); its ${blocks(f.blocks)}: ${freedWords(f)}.`);
  }
  for (const w of mergedWindows((d.left_window || []).filter((e) => e.request === rid), groups)) out.push(leftWindowWords(w, limits, groups));
  const mine = (map) => (map[rid] || []).length;
  const changes = [];
  if (mine(d.allocated)) changes.push(html`took ${blocks(mine(d.allocated))} from the free queue`);
  if (mine(d.revived)) changes.push(html`hit ${blocks(mine(d.revived))} of cached prefix waiting in the free queue`);
  if (mine(d.newly_shared)) changes.push(html`now shares ${blocks(mine(d.newly_shared))} with other requests`);
  if (changes.length) out.push(html`Blocks: it ${joined(changes, ", ")}.`);
  if (!out.length) out.push(html`${id(rid)} was not part of step ${n(step)}'s decisions.`);
  return out;
}

// The step as a whole: preemptions (but those of `told`, already explained), and why the waiting
// queue stopped.
export function explainStep(answer, told = null) {
  const d = answer.decisions, limits = d.limits, r = answer.record;
  const used = r.scheduled.reduce((a, s) => a + s[1], 0);
  const out = [html`It spent ${n(used)} of ${tokens(limits.max_num_batched_tokens)} on ${n(r.scheduled.length)} requests;
    ${were(d.blocks_free_at_start)} free when it began.`];
  for (const p of d.preemptions) {
    if (p.victim !== told && p.request !== told) out.push(html`<span class="why-key preempted">Preemption:</span> ${preemptionWords(p, limits)}`);
  }
  const left = d.left_window || [];
  if (left.length) {
    const total = left.reduce((sum, w) => sum + w.blocks, 0), requests = new Set(left.map((w) => w.request)).size;
    out.push(html`<span class="why-key">Sliding windows:</span> ${n(requests)} running request${requests === 1 ? "" : "s"} gave back ${blocks(total)} that left the window (the null block holds ${total === 1 ? "its place in its table" : "their places in the tables"}).`);
  }
  if (d.waiting_stop) out.push(html`The waiting queue (${n(d.waiting_stop.num_waiting_left)} left) stopped: ${stopWords(d.waiting_stop, limits, answer)}.`);
  return out;
}
