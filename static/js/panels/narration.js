// The caption bar of a guided lesson: what to watch now (captions follow the step), the other
// arms of the comparison, and what the lesson proves: its claims, filled in from the simulated
// numbers by the server and checked by the test suite.

export function mount(el, store, { seek, canControl }) {
  let lesson = null;
  let loading = false;
  let showClaims = false;

  el.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const action = button.dataset.action;
    if (action === "claims") { showClaims = !showClaims; render(); }
    if (action === "next" || action === "prev") move(action === "next" ? 1 : -1);
  });

  function current() {
    let index = 0;
    lesson.captions.forEach((c, i) => { if (c.step <= store.step) index = i; });
    return index;
  }

  function move(direction) {
    if (!lesson || !canControl) return;
    const index = Math.max(0, Math.min(lesson.captions.length - 1, current() + direction));
    seek(lesson.captions[index].step);
  }

  async function load(name) {
    loading = true;
    const response = await fetch(`/api/lessons/${encodeURIComponent(name)}`);
    if (response.ok) lesson = await response.json();
    loading = false;
    render();
  }

  function render() {
    const info = store.session && store.session.lesson;
    if (!info) { el.hidden = true; return; }
    if (!lesson) { if (!loading) load(info.name); return; }
    el.hidden = false;
    const index = current();
    const caption = lesson.captions[index];
    const arms = lesson.arms.map((arm) => arm === info.arm
      ? `<b class="pill" aria-current="true">${arm}</b>`
      : `<a class="pill" href="/?lesson=${lesson.name}&arm=${encodeURIComponent(arm)}" title="Open this arm in a new session">${arm}</a>`).join(" ");
    const claims = showClaims ? `<div class="claims"><table><thead><tr><th></th>${lesson.table.arms.map((a) => `<th>${a}</th>`).join("")}</tr></thead><tbody>` +
      lesson.table.rows.map((row) => `<tr><th>${row.label}</th>${row.values.map((v) => `<td>${v}</td>`).join("")}</tr>`).join("") +
      `</tbody></table><ul>${lesson.claims.map((c) => `<li>${c.holds ? "✔" : "✘"} ${c.text}</li>`).join("")}</ul></div>` : "";
    el.innerHTML = `<div class="caption"><h3>${lesson.title}</h3>` +
      `<p><b>${caption.title}.</b> ${caption.text}</p><p class="arms">arms: ${arms} · <a href="/compare?lesson=${lesson.name}">compare side by side</a></p>${claims}</div>` +
      `<div class="nav"><button data-action="prev" ${canControl ? "" : "disabled"} title="Previous caption (P)">◀ P</button>` +
      `<span>${index + 1}/${lesson.captions.length}</span>` +
      `<button data-action="next" ${canControl ? "" : "disabled"} title="Next caption (N)">N ▶</button>` +
      `<button data-action="claims" aria-expanded="${showClaims}">${showClaims ? "Hide" : "What it proves"}</button></div>`;
  }

  return { update: render, next: () => move(1), prev: () => move(-1) };
}
