// The stage: in the projector theme only the two or three panels that matter for the current
// beat are shown, large; the others fold away behind the buttons of the stage bar, where the
// presenter can bring any of them back. A lesson's beat sets the stage; outside lessons it is
// the requests, the batch and the KV cache.

import { el } from "./dom.js";

const MAX_ON_STAGE = 3;

export function mount(grid, bar, { onChange }) {
  let panels = ["queues", "batch", "kv"];
  const sections = [...grid.querySelectorAll("[data-panel]")];
  bar.replaceChildren(...sections.map((section) => el("button", { "data-stage": section.dataset.panel, "aria-pressed": "false",
    title: "Show or fold this panel (projector theme)" }, section.dataset.title)));
  bar.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-stage]");
    if (!button) return;
    const name = button.dataset.stage;
    if (panels.includes(name)) { if (panels.length > 1) panels = panels.filter((p) => p !== name); }
    else panels = [...panels, name].slice(-MAX_ON_STAGE);
    button.blur();
    apply();
  });

  function apply() {
    for (const section of sections) {
      const index = panels.indexOf(section.dataset.panel);
      section.classList.toggle("folded", index < 0);
      section.style.order = String(index < 0 ? 9 : index);
    }
    for (const button of bar.querySelectorAll("button")) button.setAttribute("aria-pressed", String(panels.includes(button.dataset.stage)));
    grid.style.setProperty("--on-stage", String(panels.length));
    grid.dataset.stage = panels.join(" ");
    onChange();
  }

  apply();
  return { follow(list) { panels = list.slice(0, MAX_ON_STAGE); apply(); }, panels: () => panels };
}
