// Server-side rendering shared by the example client apps, on their static home pages:
// - the live block (open now / closed — opens at …, today's hours, active announcements and emergency
//   closures), through @siteswarm/sdk from the cms worker, or from the manifest's snapshot when the cms
//   worker is missing or failing, so the page always renders;
// - the Turnstile widget's script and sitekey (the local stub's widget in development);
// - a refused form post shown to a person: a summary, each field's problem next to it, what they typed.
// Slots an app's page may contain (each optional): <p id="announcement" role="status"></p>,
// <p id="status"></p>, <div id="form-errors"></div>.
import { validZone } from "@siteswarm/sdk";

const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const ANNOUNCEMENT_SLOT = '<p id="announcement" role="status"></p>';
const STATUS_SLOT = '<p id="status"></p>';
const FORM_ERRORS_SLOT = '<div id="form-errors"></div>';
const TURNSTILE_SCRIPT = "https://challenges.cloudflare.com/turnstile/v0/api.js";

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
  const closure = emergencyClosure(status, zone, now);
  const announcements =
    (closure ? `<p class="announcement closure" data-level="emergency">${escapeHtml(closure)}</p>` : "") +
    (content?.announcements ?? [])
      .map((a) => `<p class="announcement" data-level="${escapeHtml(a.level ?? "info")}">${escapeHtml(a.text)}</p>`)
      .join("");
  const block =
    `<div id="live" data-source="${escapeHtml(source)}">` +
    `<p id="status">${escapeHtml(statusLine(status, zone, now))}</p>` +
    `<p id="hours">${escapeHtml(todayLine(content?.hours, zone, now))}</p>` +
    `</div>`;
  return html
    .replace(ANNOUNCEMENT_SLOT, () => `<div id="announcement" role="status">${announcements}</div>`)
    .replace(STATUS_SLOT, () => block);
}

function statusLine(status, zone, now) {
  if (!status) return "Opening hours are not available right now.";
  const message = status.reason === "override" && status.override?.message ? ` (${status.override.message})` : "";
  const next = status.nextChange ? new Date(status.nextChange) : null;
  if (status.open) return `Open now${next ? ` — closes at ${when(next, zone, now)}` : ""}${message}`;
  return `Closed${next ? ` — opens at ${when(next, zone, now)}` : ""}${message}`;
}

// An emergency closure in force (cms override `closedNow`) as the banner's first line.
function emergencyClosure(status, zone, now) {
  const override = status?.reason === "override" ? status.override : null;
  if (!override?.closedNow) return "";
  const until = override.until ? new Date(override.until) : null;
  const reopens =
    until && !Number.isNaN(until.getTime()) ? ` until ${when(until, zone, now)}` : " until further notice";
  return `Closed${reopens}${override.message ? `: ${override.message}` : ""}`;
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

/**
 * The page with the Turnstile widget of this deployment: `TURNSTILE_SCRIPT_URL` (the local stub's
 * widget in development) instead of Cloudflare's, `TURNSTILE_SITE_KEY` instead of the page's test key.
 */
export function withTurnstile(html, env = {}) {
  let out = html;
  if (typeof env.TURNSTILE_SCRIPT_URL === "string" && env.TURNSTILE_SCRIPT_URL !== "") {
    out = out.replace(`src="${TURNSTILE_SCRIPT}"`, () => `src="${escapeHtml(env.TURNSTILE_SCRIPT_URL)}"`);
  }
  if (typeof env.TURNSTILE_SITE_KEY === "string" && env.TURNSTILE_SITE_KEY !== "") {
    out = out.replace(
      /(class="cf-turnstile[^"]*"[^>]*data-sitekey=")[^"]*"/,
      (_, head) => `${head}${escapeHtml(env.TURNSTILE_SITE_KEY)}"`,
    );
  }
  return out;
}

/**
 * The page after a refused form post: `summary` in the form-errors slot (with a link to each field's
 * problem), each field's problem next to its control (`aria-invalid`, `aria-describedby`), and the
 * visitor's `values` back in the controls so nothing typed is lost.
 * @param {{ summary: string, errors?: Record<string, string>, values?: Record<string, string>,
 *   labels?: Record<string, string> }} state
 */
export function withFormState(html, state) {
  const { summary, errors = {}, values = {}, labels = {} } = state;
  let out = html;
  for (const [name, value] of Object.entries(values)) out = fillControl(out, name, value);
  const listed = [];
  for (const [name, problem] of Object.entries(errors)) {
    const label = labels[name] ?? name.replaceAll("_", " ");
    const marked = markControl(out, name, problem);
    listed.push(
      marked === out
        ? `<li>${escapeHtml(label)}: ${escapeHtml(problem)}</li>`
        : `<li><a href="#${escapeHtml(name)}-error">${escapeHtml(label)}: ${escapeHtml(problem)}</a></li>`,
    );
    out = marked;
  }
  const block =
    `<div id="form-errors" role="alert"><p>${escapeHtml(summary)}</p>` +
    `${listed.length ? `<ul>${listed.join("")}</ul>` : ""}</div>`;
  return out.replace(FORM_ERRORS_SLOT, () => block).replace(/<title>/, "<title>Not sent: ");
}

// The opening tag of the control named `name` (input, textarea or select), as [match, index].
function controlTag(html, name) {
  const re = new RegExp(`<(input|textarea|select)\\b[^>]*\\bname="${name.replace(/[^\w-]/g, "")}"[^>]*>`);
  const m = re.exec(html);
  return m ? { tag: m[0], kind: m[1], start: m.index, end: m.index + m[0].length } : null;
}

function fillControl(html, name, value) {
  const c = controlTag(html, name);
  if (!c || /type="(hidden|checkbox|radio|file)"/.test(c.tag)) return html;
  const v = escapeHtml(value);
  if (c.kind === "input") {
    const tag = c.tag.replace(/\svalue="[^"]*"/, "").replace(/^<input/, () => `<input value="${v}"`);
    return html.slice(0, c.start) + tag + html.slice(c.end);
  }
  if (c.kind === "textarea") {
    const close = html.indexOf("</textarea>", c.end);
    return close < 0 ? html : html.slice(0, c.end) + v + html.slice(close);
  }
  const close = html.indexOf("</select>", c.end);
  if (close < 0) return html;
  const options = html
    .slice(c.end, close)
    .replace(/\sselected\b/g, "")
    .replace(`<option value="${v}"`, () => `<option value="${v}" selected`);
  return html.slice(0, c.end) + options + html.slice(close);
}

function markControl(html, name, problem) {
  const c = controlTag(html, name);
  if (!c || /type="hidden"/.test(c.tag)) return html;
  const id = `${name}-error`;
  const tag = c.tag.replace(
    /^<(\w+)/,
    (_, kind) => `<${kind} aria-invalid="true" aria-describedby="${escapeHtml(id)}"`,
  );
  const note = `<span class="field-error" id="${escapeHtml(id)}">${escapeHtml(problem)}</span>`;
  let at = c.end;
  if (c.kind !== "input") {
    const close = html.indexOf(`</${c.kind}>`, c.end);
    if (close < 0) return html;
    at = close + `</${c.kind}>`.length;
  }
  return html.slice(0, c.start) + tag + html.slice(c.end, at) + note + html.slice(at);
}

export function escapeHtml(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
