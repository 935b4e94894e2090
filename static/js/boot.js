// Opens the page's session before the dashboard starts: `/` creates one with a POST (or reuses
// the one this tab made for the same query), `/s/ID/view` shows an existing one. Control comes
// from the token this tab holds, never from the URL.

import { adoptTokenFromUrl, reuseOrCreate, showStartFailure } from "./sessions.js";

const data = document.body.dataset;
if (data.session) {
  adoptTokenFromUrl(data.session);
  await import("./main.js");
} else {
  let opened = null;
  try {
    opened = await reuseOrCreate(data.origin, data.create);
  } catch (error) {
    showStartFailure(error, data.idleMinutes);
  }
  if (opened) {
    data.session = opened.sessionId;
    history.replaceState(null, "", `/s/${opened.sessionId}/view?${data.origin}${themeParam()}`);
    await import("./main.js");
  }
}

function themeParam() {
  const theme = new URLSearchParams(location.search).get("theme");
  return theme ? `&theme=${encodeURIComponent(theme)}` : "";
}
