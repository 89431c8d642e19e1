// Server-side rendering shared by the example client apps, on their static home pages, through
// HTMLRewriter (workerd's streaming HTML parser, lol-html): no string search or regular expression
// ever runs over the page.
// - the live block (open now / closed — opens at …, today's hours, active announcements and emergency
//   closures), through @siteswarm/sdk from the cms worker, or from the manifest's snapshot when the cms
//   worker is missing or failing, so the page always renders;
// - the Turnstile widget's script and sitekey (the local stub's widget in development);
// - a refused form post shown to a person: a summary, each field's problem next to it, what they typed.
// Slots an app's page may contain (each optional): <p id="announcement" role="status"></p>,
// <p id="status"></p>, <div id="form-errors"></div>.
//
//   const rewriter = new HTMLRewriter();
//   renderHome(rewriter, await loadLive(client));
//   withTurnstile(rewriter, env);
//   withFormState(rewriter, state, await controlsOf(html));  // after a refused post
//   return rewriter.transform(new Response(html, init));
import { validZone } from "@siteswarm/sdk";

const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const TURNSTILE_SCRIPT = "https://challenges.cloudflare.com/turnstile/v0/api.js";
// Controls whose value is not typed text: never filled back in.
const UNFILLED_TYPES = new Set(["hidden", "checkbox", "radio", "file", "submit", "button", "image", "reset"]);

/** Fetches content and status together; resolves to `{content, status}` (either may be null). */
export async function loadLive(client, now = new Date()) {
  const [content, status] = await Promise.all([
    client.cms.content().catch(() => null),
    client.cms.status(now).catch(() => null),
  ]);
  return { content, status };
}

/**
 * The live block into the page: `#announcement` becomes the active announcements (an emergency
 * closure first), `#status` the open/closed line and today's hours.
 * @param {HTMLRewriter} rewriter
 */
export function renderHome(rewriter, { content, status }, now = new Date()) {
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
    `<p id="hours">${escapeHtml(todayLine(content, zone, now))}</p>` +
    `</div>`;
  return rewriter
    .on("p#announcement", {
      element: (el) => {
        el.replace(`<div id="announcement" role="status">${announcements}</div>`, { html: true });
      },
    })
    .on("p#status", {
      element: (el) => {
        el.replace(block, { html: true });
      },
    });
}

// A time on the page names whose clock it is ("New York time"): it is rendered on the server in
// the shop's zone, and a visitor elsewhere is not known here.
function clockName(zone) {
  return zone === "UTC" ? "UTC" : `${zone.split("/").pop()?.replaceAll("_", " ")} time`;
}

function statusLine(status, zone, now) {
  if (!status) return "Opening hours are not available right now.";
  // An emergency closure's message is the banner's (emergencyClosure): not said twice.
  const override = status.reason === "override" ? status.override : null;
  const message = override?.message && override.closedNow !== true ? ` (${override.message})` : "";
  const next = status.nextChange ? new Date(status.nextChange) : null;
  const at = next && !Number.isNaN(next.getTime()) ? ` ${when(next, zone, now)} ${clockName(zone)}` : "";
  if (status.open) return `Open now${at ? ` — closes at${at}` : ""}${message}`;
  return `Closed${at ? ` — opens at${at}` : ""}${message}`;
}

// An emergency closure in force (cms override `closedNow`) as the banner's first line.
function emergencyClosure(status, zone, now) {
  const override = status?.reason === "override" ? status.override : null;
  if (!override?.closedNow) return "";
  const until = override.until ? new Date(override.until) : null;
  const reopens =
    until && !Number.isNaN(until.getTime())
      ? ` until ${when(until, zone, now)} ${clockName(zone)}`
      : " until further notice";
  return `Closed${reopens}${override.message ? `: ${override.message}` : ""}`;
}

// Today's hours in the shop's zone, as cms decides open/closed (bindings/sdk/src/hours.js, the same
// rule): a date override covering today (closed, or its special hours; the most recently created
// one, else the last listed, wins) replaces the weekly ones, and last night's hours that run past
// midnight open the day ("00:00–02:00") unless today is closed by an override. So the line never
// says "Today: 07:00–15:00" on a day the shop is closed, nor "Today: closed" while it is open from
// last night.
function todayLine(content, zone, now) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      weekday: "short",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    })
      .formatToParts(now)
      .map((p) => [p.type, p.value]),
  );
  const weekday = Math.max(0, DAYS.indexOf(String(parts.weekday).slice(0, 3).toLowerCase()));
  const today = DAYS[weekday];
  const yesterday = DAYS[(weekday + 6) % 7];
  const date = `${parts.year}-${parts.month}-${parts.day}`;
  const dayBefore = new Date(Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day) - 1))
    .toISOString()
    .slice(0, 10);
  const overrides = Array.isArray(content?.overrides) ? content.overrides : [];
  const rangesOf = (day, on) => {
    const override = dateOverride(overrides, on);
    if (override?.closed) return null; // closed the whole day
    if (Array.isArray(override?.hours)) return override.hours;
    const weekly = content?.hours?.weekly?.[day];
    return Array.isArray(weekly) ? weekly : [];
  };
  const todays = rangesOf(today, date);
  if (todays === null) return "Today: closed";
  const pastMidnight = (r) => typeof r?.open === "string" && typeof r?.close === "string" && r.close < r.open;
  const lastNight = (rangesOf(yesterday, dayBefore) ?? [])
    .filter((r) => pastMidnight(r) && r.close !== "00:00")
    .map((r) => ({ open: "00:00", close: r.close }));
  const ranges = [...lastNight, ...todays];
  if (!ranges.length) return "Today: closed";
  return `Today: ${ranges.map((r) => `${r.open}–${r.close}`).join(", ")} (${clockName(zone)})`;
}

// The date override deciding a local day, as cms picks it: the most recently created of those
// covering it, else the last listed.
function dateOverride(overrides, date) {
  let found = null;
  for (const o of overrides) {
    if (o?.closedNow === true || typeof o?.from !== "string") continue;
    const to = typeof o.to === "string" ? o.to : o.from;
    if (o.from.slice(0, 10) > date || to.slice(0, 10) < date) continue;
    if (!found || String(o.createdAt ?? "") >= String(found.createdAt ?? "")) found = o;
  }
  return found;
}

// "15:00" today, "Tue 07:00" another day of the coming week, "Tue 5 Jan 07:00" later (a weekday
// alone would read as this week's), in the shop's zone.
function when(date, zone, now) {
  const fmt = (d, options) => new Intl.DateTimeFormat("en-GB", { timeZone: zone, ...options }).format(d);
  const time = fmt(date, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  const sameDay = fmt(date, { dateStyle: "short" }) === fmt(now, { dateStyle: "short" });
  if (sameDay) return time;
  const later = date.getTime() - now.getTime() >= 6 * 24 * 3600 * 1000;
  return `${fmt(date, later ? { weekday: "short", day: "numeric", month: "short" } : { weekday: "short" })} ${time}`;
}

/**
 * The Turnstile widget of this deployment: `TURNSTILE_SCRIPT_URL` (the local stub's widget in
 * development) instead of Cloudflare's script, `TURNSTILE_SITE_KEY` instead of the page's test key.
 * @param {HTMLRewriter} rewriter
 */
export function withTurnstile(rewriter, env = {}) {
  const script = env.TURNSTILE_SCRIPT_URL;
  if (typeof script === "string" && script !== "") {
    rewriter.on("script[src]", {
      element: (el) => {
        if (el.getAttribute("src") === TURNSTILE_SCRIPT) el.setAttribute("src", attribute(script));
      },
    });
  }
  const siteKey = env.TURNSTILE_SITE_KEY;
  if (typeof siteKey === "string" && siteKey !== "") {
    rewriter.on(".cf-turnstile[data-sitekey]", {
      element: (el) => {
        el.setAttribute("data-sitekey", attribute(siteKey));
      },
    });
  }
  return rewriter;
}

/**
 * The page's form controls with a name: name → `{ kind, type, id }` (kind "input", "textarea" or
 * "select"; id its own, or ""; the first of a name counts), read by HTMLRewriter.
 * @param {string} html
 * @returns {Promise<Map<string, { kind: string, type: string, id?: string }>>}
 */
export async function controlsOf(html) {
  /** @type {Map<string, { kind: string, type: string, id?: string }>} */
  const controls = new Map();
  const note = (el) => {
    const name = el.getAttribute("name");
    if (name && !controls.has(name)) {
      const type = (el.getAttribute("type") ?? "").toLowerCase();
      controls.set(name, { kind: el.tagName, type, id: el.getAttribute("id") ?? "" });
    }
  };
  await new HTMLRewriter()
    .on("input[name], textarea[name], select[name]", { element: note })
    .transform(new Response(html))
    .arrayBuffer();
  return controls;
}

/**
 * The page after a refused form post: `summary` in the form-errors slot (with a link to each field
 * with a problem: following it puts the cursor in the field, `#<its id>`, else `#<name>-field`,
 * the id it is given), each field's problem next to its control (`aria-invalid`, `aria-describedby`), and the
 * visitor's `values` back in the controls so nothing typed is lost. `controls` is the page's
 * (controlsOf): a problem links to its field only where the page has that control. Control names
 * and option values are compared as the page writes them (HTMLRewriter hands attributes over
 * undecoded): the apps' pages write them as plain text, without character references.
 * @param {HTMLRewriter} rewriter
 * @param {{ summary: string, errors?: Record<string, string>, values?: Record<string, string>,
 *   labels?: Record<string, string> }} state
 * @param {Map<string, { kind: string, type: string, id?: string }>} controls
 */
export function withFormState(rewriter, state, controls) {
  const { summary, errors = {}, values = {}, labels = {} } = state;
  const markable = (name) => controls.has(name) && controls.get(name)?.type !== "hidden";
  // The link goes to the control itself (a link to the problem's text after it would leave Tab
  // going on to the next field, past the one to fix).
  const fieldId = (name) => controls.get(name)?.id || `${name}-field`;
  const listed = Object.entries(errors).map(([name, problem]) => {
    const text = `${escapeHtml(labels[name] ?? name.replaceAll("_", " "))}: ${escapeHtml(problem)}`;
    return markable(name) ? `<li><a href="#${escapeHtml(fieldId(name))}">${text}</a></li>` : `<li>${text}</li>`;
  });
  const block =
    `<div id="form-errors" role="alert"><p>${escapeHtml(summary)}</p>` +
    `${listed.length ? `<ul>${listed.join("")}</ul>` : ""}</div>`;
  // Each name's first control only, as the summary links to one.
  const seen = new Set();
  let selectName = null; // the <select> whose options are being read
  return rewriter
    .on("div#form-errors", {
      element: (el) => {
        el.replace(block, { html: true });
      },
    })
    .on("title", {
      element: (el) => {
        el.prepend("Not sent: ");
      },
    })
    .on("input[name], textarea[name], select[name]", {
      element: (el) => {
        const name = el.getAttribute("name") ?? "";
        const first = !seen.has(name);
        seen.add(name);
        if (el.tagName === "select") {
          selectName = first && Object.hasOwn(values, name) ? name : null;
          el.onEndTag(() => {
            selectName = null;
          });
        }
        if (!first) return;
        const type = (el.getAttribute("type") ?? "").toLowerCase();
        if (Object.hasOwn(values, name) && !UNFILLED_TYPES.has(type)) {
          if (el.tagName === "input") el.setAttribute("value", attribute(values[name]));
          if (el.tagName === "textarea") el.setInnerContent(values[name]);
        }
        if (Object.hasOwn(errors, name) && type !== "hidden") {
          const id = `${name}-error`;
          el.setAttribute("aria-invalid", "true");
          // The problem first, then what the control was already described by (a hint).
          const own = el.getAttribute("aria-describedby");
          el.setAttribute("aria-describedby", attribute(own ? `${id} ${own}` : id));
          if (!el.getAttribute("id")) el.setAttribute("id", attribute(fieldId(name)));
          // After the control (a textarea's or select's end tag included).
          el.after(`<span class="field-error" id="${escapeHtml(id)}">${escapeHtml(errors[name])}</span>`, {
            html: true,
          });
        }
      },
    })
    .on("select option", {
      element: (el) => {
        if (selectName === null) return;
        el.removeAttribute("selected");
        if ((el.getAttribute("value") ?? "") === values[selectName]) el.setAttribute("selected", "");
      },
    });
}

// setAttribute writes its value between double quotes escaping only those: an `&` would then be
// read back as the start of a character reference ("&amp;" typed would come back as "&"), so every
// value goes in escaped whole.
const attribute = (value) => escapeHtml(value);

export function escapeHtml(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
