// The caption bar of a fleet lesson: the story of this arm's run, one beat per fleet moment (the
// opening, the first request routed, the first hit, the first KV transfer, ..., the end), each
// bound to the frame taken at its instant and quoting that run's numbers. The beat shown is the
// last one at or before the frame on screen; its buttons, N and P jump to a beat's frame, "What it
// proves" (W) opens the lesson's claims and table as a slide of their own, and at the end beat
// "Check yourself" (Q at any time) asks two or three questions about the arm's run.

import { openCheck as openCheckSlide } from "./check_yourself.js";
import { openClaims as openSlide } from "./claims.js";
import { html, render } from "./dom.js";

// A request's or a replica's name read from the back of a hall must not break at its hyphen.
const unbroken = (text) => String(text).split(/(\b(?:req|replica|prefill|decode)-\d+)/).map((part, i) => (i % 2 ? html`<span class="id">${part}</span>` : part));

// `canReveal`: whether this page may reveal the answers (not a class's copy: check_yourself.js).
export function mount(el, { seek, dialog, checkDialog, canReveal }) {
  let lesson = null;  // {title, summary} of the lesson picked, before its run arrives
  let story = null;   // the run's lesson: {title, arm, beats}
  let frames = [];
  let frame = 0;
  let key = "";

  el.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const action = button.dataset.action;
    if (action === "next" || action === "prev") move(action === "next" ? 1 : -1);
    if (action === "beat") jump(Number(button.dataset.index));
    button.blur(); // keys go back to the page
    if (action === "claims") openClaims();
    if (action === "check") openCheck();
  });

  const beats = () => (story ? story.beats : []);

  function openClaims() {
    if (!story) return;
    const arms = story.arms.map((arm, i) => html`${i ? " " : ""}${arm === story.arm
      ? html`<b class="pill on" aria-current="true">${arm} (shown)</b>`
      : html`<a class="pill" href="/fleet?lesson=${encodeURIComponent(story.name)}&arm=${encodeURIComponent(arm)}">${arm}</a>`}`);
    openSlide(dialog, story, html`Open another arm: ${arms}`);
  }

  function openCheck() {
    if (!story || !story.questions || !story.questions.length) return false;
    openCheckSlide(checkDialog, story, { seek, canReveal });
    return true;
  }

  function current() {
    let index = 0;
    beats().forEach((beat, i) => { if (beat.frame <= frame) index = i; });
    return index;
  }

  function jump(index) {
    const beat = beats()[index];
    if (beat) seek(beat.frame);
  }

  // N / P: to the next beat after the frame shown, or back to the previous one (or to the start
  // of the current beat when the time has moved on from it).
  function move(direction) {
    const list = beats();
    if (!list.length) return;
    const index = current();
    if (direction < 0 && list[index].frame < frame) { jump(index); return; }
    jump(Math.max(0, Math.min(list.length - 1, index + direction)));
  }

  // The lesson picked, while its run is computed: its title and summary.
  function pick(picked, arm) {
    lesson = picked ? { ...picked, arm } : null;
    story = null;
    key = "";
    el.hidden = !lesson;
    if (lesson) {
      render(el, html`<div class="caption"><p class="lesson-title">${lesson.title} · arm <b>${arm}</b></p><p class="beat-text">${lesson.summary} <span class="muted">(running every arm: a few seconds)</span></p></div>`);
    }
  }

  function load(run) {
    story = run.lesson || null;
    frames = run.frames;
    key = "";
  }

  function update(index) {
    frame = index;
    const list = beats();
    if (!list.length) return;
    const at = current();
    const beat = list[at];
    const here = frame === beat.frame;
    const next = `${at}/${here}/${here ? "" : frames[frame].t.toFixed(3)}`;
    if (next === key) return;
    key = next;
    const dots = list.map((b, i) => html`<button type="button" data-action="beat" data-index="${i}" class="beat${i === at ? " on" : ""}"${i === at ? html` aria-current="step"` : ""} title="Go to ${b.t.toFixed(3)} s: ${b.title}">${i + 1}</button>`);
    const away = here ? "" : html` <span class="muted">(now at ${frames[frame].t.toFixed(3)} s)</span>`;
    render(el, html`<div class="caption"><p class="lesson-title">${story.title} · arm <b>${story.arm}</b></p><p class="beat-text"><b>${at + 1}/${list.length} ${beat.title}.</b> ${unbroken(beat.text)}${away}</p></div><div class="nav"><button type="button" data-action="prev" title="Previous beat (P)" aria-label="Previous beat">◀</button><span class="beats" role="group" aria-label="Beats">${dots}</span><button type="button" data-action="next" title="Next beat (N)" aria-label="Next beat">▶</button><button type="button" data-action="claims" title="The claims and the table, checked on the simulated numbers (W)">What it proves</button>${
      beat.event === "end" ? html`<button type="button" data-action="check" class="primary" title="Questions on the run you just watched (Q)">Check yourself</button>` : ""}</div>`);
  }

  return { pick, load, update, next: () => move(1), prev: () => move(-1), beats, current, openClaims, openCheck };
}
