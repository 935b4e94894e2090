// The caption bar of a guided lesson: the story of this arm's run, one beat per moment (the
// opening, the first chunk, the first preemption, ..., the end), each bound to the step where it
// happens and quoting that run's numbers. The beat shown is the last one at or before the current
// step; its buttons jump to each beat's step. A beat puts its panels on stage (projector theme),
// "What it proves" opens the claims and the table as a slide of their own, and at the end beat
// "Check yourself" (Q at any time) asks two or three questions about the arm's run.

import { openCheck as openCheckSlide } from "../check_yourself.js";
import { openClaims as openSlide } from "../claims.js";
import { fmtInt } from "../colors.js";
import { html, render as write } from "../dom.js";
import { setProp, setText } from "../writes.js";

export function mount(el, store, { seek, canControl, stage, dialog, checkDialog }) {
  let lesson = null;
  let loading = false;
  let shownBeat = -1;

  el.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const action = button.dataset.action;
    if (action === "claims") openClaims();
    if (action === "check") openCheck();
    if (action === "next" || action === "prev") move(action === "next" ? 1 : -1);
    if (action === "beat") jump(Number(button.dataset.index));
    button.blur(); // keys go back to the page
  });

  function beats() {
    const info = store.session && store.session.lesson;
    return lesson && info ? lesson.stories[info.arm] || [] : [];
  }

  function current() {
    let index = 0;
    beats().forEach((beat, i) => { if (beat.step <= store.step) index = i; });
    return index;
  }

  function jump(index) {
    const list = beats();
    if (!canControl || !list[index]) return null;
    seek(list[index].step);
    return `beat ${index + 1}/${list.length}: ${list[index].title} (step ${fmtInt(list[index].step)})`;
  }

  // N / P: to the next beat after the current step, or back to the previous one (or to the start
  // of the current beat when the step has moved on from it).
  function move(direction) {
    const list = beats();
    if (!list.length || !canControl) return null;
    const index = current();
    if (direction < 0 && list[index].step < store.step) return jump(index);
    return jump(Math.max(0, Math.min(list.length - 1, index + direction)));
  }

  async function load(name) {
    loading = true;
    const response = await fetch(`/api/lessons/${encodeURIComponent(name)}`);
    if (response.ok) lesson = await response.json();
    loading = false;
    render();
  }

  function openClaims() {
    if (!lesson) return false;
    const info = store.session.lesson;
    const arms = lesson.arms.map((arm, i) => html`${i ? " " : ""}${arm === info.arm
      ? html`<b class="pill on" aria-current="true">${arm} (this session)</b>`
      : html`<a class="pill" href="/?lesson=${encodeURIComponent(lesson.name)}&arm=${encodeURIComponent(arm)}">${arm}</a>`}`);
    openSlide(dialog, lesson, html`Open an arm in a new session: ${arms} · <a href="/compare?lesson=${encodeURIComponent(lesson.name)}">compare side by side</a>`);
    return true;
  }

  function openCheck() {
    const questions = lesson && lesson.questions && lesson.questions[store.session.lesson.arm];
    if (!questions || !questions.length) return false;
    openCheckSlide(checkDialog, { title: lesson.title, arm: store.session.lesson.arm, questions }, { seek: canControl ? seek : null, canReveal: canControl });
    return true;
  }

  function render() {
    const info = store.session && store.session.lesson;
    if (!info) { setProp(el, "hidden", true); return; } // every frame while playing
    if (!lesson) { if (!loading) load(info.name); return; }
    setProp(el, "hidden", false);
    const list = beats();
    if (!list.length) return;
    const index = current();
    const beat = list[index];
    if (index !== shownBeat) { shownBeat = index; stage.follow(beat.stage); }
    // The caption is written once per beat; "(now at step N)" follows every step after it,
    // also during play, when several steps arrive between two frames.
    const key = `${index}/${info.arm}`;
    if (el.dataset.key !== key) { el.dataset.key = key; writeBeat(list, index, info); }
    const now = el.querySelector(".now");
    if (now) setText(now, store.step !== beat.step ? ` (now at step ${fmtInt(store.step)})` : "");
  }

  function writeBeat(list, index, info) {
    const beat = list[index];
    const disabled = canControl ? html`` : html`disabled`;
    const dots = list.map((b, i) => html`<button data-action="beat" data-index="${i}" class="beat${i === index ? " on" : ""}" ${i === index ? html`aria-current="step"` : ""} ${disabled} title="Go to step ${fmtInt(b.step)}: ${b.title}">${i + 1}</button>`);
    write(el, html`<div class="caption"><p class="lesson-title">${lesson.title} · arm <b>${info.arm}</b></p><p class="beat-text"><b>${index + 1}/${list.length} ${beat.title}.</b> ${unbroken(beat.text)}<span class="muted now"></span></p></div><div class="nav"><button data-action="prev" ${disabled} title="Previous beat (P)" aria-label="Previous beat">◀</button><span class="beats" role="group" aria-label="Beats">${dots}</span><button data-action="next" ${disabled} title="Next beat (N)" aria-label="Next beat">▶</button><button data-action="claims" title="The claims and the table, checked on the simulated numbers">What it proves</button>${
      beat.event === "end" ? html`<button data-action="check" class="primary" title="Questions on the run you just watched (Q)">Check yourself</button>` : ""}</div>`);
  }

  return { update: render, next: () => move(1), prev: () => move(-1), openClaims, openCheck, beats, current };
}

// A request id read from the back of a hall must not break at its hyphen ("req-" / "00001").
const unbroken = (text) => String(text).split(/(\breq-\d+)/).map((part, i) => (i % 2 ? html`<span class="id">${part}</span>` : part));
