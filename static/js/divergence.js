// The lab's timeline over compare mode (`/lab`): how far both sides have run, and the first
// divergence as a marker at its step. The step and its words come with the page (the server found
// them at startup, as `lab check` does); the marker takes both sides to the state just after that
// step, so the batches on screen are the two that differ.

export function mount(el, sides, both) {
  if (!el) return;  // compare mode without a student's scheduler
  const total = Math.max(1, Number(el.dataset.steps));
  const progress = el.querySelector('[data-role="progress"]');
  const marker = el.querySelector('[data-role="marker"]');
  if (marker) {
    const step = Number(el.dataset.step);  // numbered as the dashboard numbers steps: the first is step 1
    // Step N's share of the track is [N - 1, N) of the run's steps; the marker sits in its middle.
    marker.style.left = `${((step - 0.5) / total) * 100}%`;
    marker.addEventListener("click", () => both({ type: "seek", step }));
  }
  let shown = -1;
  function frame() {
    const step = Math.max(...sides.map((side) => side.store.step));
    if (step !== shown) {
      shown = step;
      progress.style.width = `${Math.min(1, step / total) * 100}%`;
    }
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
}
