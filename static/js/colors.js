// Colours: each request keeps one hue for the whole run (its arrival order walks the hue circle
// by the golden angle, so neighbours differ); state colours come from the CSS palette.

export function requestColor(index) {
  const hue = (index * 137.508) % 360;
  const light = 48 + ((index * 7) % 3) * 8;
  return `hsl(${hue.toFixed(1)} 62% ${light}%)`;
}

export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export function fmtSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "–";
  if (s < 1) return `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms`;
  return `${s.toFixed(s < 10 ? 2 : 1)} s`;
}

export function fmtInt(n) {
  return n === null || n === undefined ? "–" : Math.round(n).toLocaleString("en-US");
}
