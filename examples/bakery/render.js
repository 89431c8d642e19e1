// Server-side rendering of the bakery's live block (open now / closed — opens at …, today's hours,
// active announcements) into the static home page. The data comes through @siteswarm/sdk from the
// cms worker, or from the manifest's snapshot when the cms worker is missing or failing, so the
// page always renders.
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const ANNOUNCEMENT_SLOT = '<p id="announcement" role="status"></p>';
const STATUS_SLOT = '<p id="status"></p>';

/** Fetches content and status together; resolves to `{content, status}` (either may be null). */
export async function loadLive(client, now = new Date()) {
  const [content, status] = await Promise.all([
    client.cms.content().catch(() => null),
    client.cms.status(now).catch(() => null),
  ]);
  return { content, status };
}

/** The home page with the live block filled in. */
export function renderHome(html, { content, status }, now = new Date()) {
  const zone = validZone(content?.hours?.timezone) ?? "UTC";
  const source = status?.source ?? content?.source ?? "unknown";
  const announcements = (content?.announcements ?? [])
    .map((a) => `<p class="announcement" data-level="${escapeHtml(a.level ?? "info")}">${escapeHtml(a.text)}</p>`)
    .join("");
  const block =
    `<div id="live" data-source="${escapeHtml(source)}">` +
    `<p id="status">${escapeHtml(statusLine(status, zone, now))}</p>` +
    `<p id="hours">${escapeHtml(todayLine(content?.hours, zone, now))}</p>` +
    `</div>`;
  return html
    .replace(ANNOUNCEMENT_SLOT, `<div id="announcement" role="status">${announcements}</div>`)
    .replace(STATUS_SLOT, block);
}

function statusLine(status, zone, now) {
  if (!status) return "Opening hours are not available right now.";
  const message = status.reason === "override" && status.override?.message ? ` (${status.override.message})` : "";
  const next = status.nextChange ? new Date(status.nextChange) : null;
  if (status.open) return `Open now${next ? ` — closes at ${when(next, zone, now)}` : ""}${message}`;
  return `Closed${next ? ` — opens at ${when(next, zone, now)}` : ""}${message}`;
}

function todayLine(hours, zone, now) {
  const day = new Intl.DateTimeFormat("en-US", { timeZone: zone, weekday: "short" })
    .format(now)
    .slice(0, 3)
    .toLowerCase();
  const ranges = hours?.weekly?.[DAYS.includes(day) ? day : "sun"] ?? [];
  if (!ranges.length) return "Today: closed";
  return `Today: ${ranges.map((r) => `${r.open}–${r.close}`).join(", ")}`;
}

// "15:00" today, "Tue 07:00" another day, in the shop's zone.
function when(date, zone, now) {
  const fmt = (d, options) => new Intl.DateTimeFormat("en-GB", { timeZone: zone, ...options }).format(d);
  const time = fmt(date, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  const sameDay = fmt(date, { dateStyle: "short" }) === fmt(now, { dateStyle: "short" });
  return sameDay ? time : `${fmt(date, { weekday: "short" })} ${time}`;
}

function validZone(zone) {
  if (typeof zone !== "string") return undefined;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return zone;
  } catch {
    return undefined;
  }
}

function escapeHtml(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
