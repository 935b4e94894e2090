// Colours: each request keeps one hue for the whole run (its arrival order walks the hue circle
// by the golden angle, so neighbours differ); state colours come from the CSS palette.

export function requestColor(index) {
  const hue = (index * 137.508) % 360;
  const light = 48 + ((index * 7) % 3) * 8;
  return `hsl(${hue.toFixed(1)} 62% ${light}%)`;
}

// Palette values, read once per theme: getComputedStyle forces style work, too slow per frame.
const cache = new Map();
let cachedTheme = null;

export function cssVar(name) {
  const theme = document.documentElement.dataset.theme;
  if (theme !== cachedTheme) { cache.clear(); cachedTheme = theme; }
  if (!cache.has(name)) cache.set(name, getComputedStyle(document.documentElement).getPropertyValue(name).trim());
  return cache.get(name);
}

// A request's status as the page words it: vLLM's FINISHED_ABORTED is a client that went away
// (`short` where a line has no room for why: the KV panel's one-line table).
export const statusLabel = (status, short = false) =>
  status !== "finished_aborted" ? status : short ? "aborted" : "aborted (client disconnected)";

export function fmtSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "–";
  if (s < 1) return `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms`;
  return `${s.toFixed(s < 10 ? 2 : 1)} s`;
}

// Thousands separated by commas, as en-US writes them, without toLocaleString's cost per call.
export function fmtInt(n) {
  if (n === null || n === undefined) return "–";
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

// A count's noun, singular for one; and the count with it: "1 cached block", "2,048 cached blocks".
export const noun = (n, one, many = `${one}s`) => (n === 1 ? one : many);
export const plural = (n, one, many) => `${fmtInt(n)} ${noun(n, one, many)}`;
