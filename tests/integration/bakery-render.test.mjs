// The bakery's server-rendered home page (examples/common/render.js, HTMLRewriter) inside workerd: the
// live block from a cms answer and from the manifest's snapshot when the cms worker is failing, the
// Turnstile widget of the deployment, and a refused form post shown to a person.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Miniflare } from "miniflare";
import { escapeHtml } from "../../examples/common/render.js";
import { bundle } from "../../scripts/lib/local-mesh.mjs";
import { ROOT } from "./mesh.mjs";

const manifest = JSON.parse(readFileSync(path.join(ROOT, "examples/bakery/swarm.config.json"), "utf8"));
const template = readFileSync(path.join(ROOT, "examples/bakery/public/index.html"), "utf8");
const agencyTemplate = readFileSync(path.join(ROOT, "examples/software-agency/public/index.html"), "utf8");

let mf;
let scratch;
before(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "siteswarm-render-"));
  const scriptPath = await bundle(
    "render-worker",
    path.join(ROOT, "tests/integration/fixtures/render-worker.js"),
    scratch,
  );
  mf = new Miniflare({ modules: true, scriptPath, modulesRoot: scratch, compatibilityDate: "2026-04-20", cf: false });
});
after(async () => {
  await mf?.dispose();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** The page as home() renders it, from `input` (see fixtures/render-worker.js). */
async function render(input) {
  const res = await mf.dispatchFetch("http://localhost/", {
    method: "POST",
    body: JSON.stringify({ html: template, ...input }),
  });
  assert.equal(res.status, 200);
  return res.text();
}

const count = (html, re) => html.match(re)?.length ?? 0;

describe("bakery home page", () => {
  it("shows the manifest's snapshot when the cms worker is down", async () => {
    // Tuesday 08:00 in New York.
    const html = await render({ cmsDown: true, manifest, now: "2026-06-02T12:00:00Z" });
    assert.match(html, /<div id="live" data-source="fallback">/);
    assert.match(html, /<p id="status">Open now — closes at 15:00 New York time<\/p>/);
    // The shop's clock, named: a visitor in another zone reads whose time it is.
    assert.match(html, /<p id="hours">Today: 07:00–15:00 \(New York time\)<\/p>/);
    assert.match(html, /data-level="info">Fresh sourdough every morning from 7\.<\/p>/);
  });

  it("renders closed — opens at … and escapes announcement text", async () => {
    const content = {
      tenantId: "bakery",
      version: 4,
      hours: manifest.fallback.hours,
      overrides: [],
      announcements: [{ text: "<b>Closed Monday</b>", level: "warning" }],
      source: "kv",
    };
    const status = { open: false, reason: "closed", override: null, nextChange: "2026-06-02T11:00:00Z", source: "kv" };
    const html = await render({ live: { content, status }, now: "2026-06-01T12:00:00Z" }); // Monday
    assert.match(html, /<p id="status">Closed — opens at Tue 07:00 New York time<\/p>/);
    assert.match(html, /<p id="hours">Today: closed<\/p>/);
    assert.match(html, /data-level="warning">&#60;b&#62;Closed Monday&#60;\/b&#62;<\/p>/);
    assert.equal(count(html, /<p id="announcement"/g), 0, "the slot was replaced");
  });

  it("today's hours follow a date override covering today: closed, or its special hours", async () => {
    // Thursday 2026-12-24 10:00 in New York (15:00Z); the weekly Thursday is 07:00–15:00.
    const closedEve = { id: "o1", from: "2026-12-24", to: "2026-12-26", closed: true, message: "Christmas" };
    const content = { tenantId: "bakery", version: 5, hours: manifest.fallback.hours, announcements: [] };
    const status = { open: false, reason: "override", override: closedEve, nextChange: null, source: "kv" };
    const closed = await render({
      live: { content: { ...content, overrides: [closedEve] }, status },
      now: "2026-12-24T15:00:00Z",
    });
    assert.match(closed, /<p id="hours">Today: closed<\/p>/);
    const short = { id: "o2", from: "2026-12-24", to: "2026-12-24", hours: [{ open: "07:00", close: "12:00" }] };
    const special = await render({
      live: { content: { ...content, overrides: [short] }, status: { ...status, open: true, override: short } },
      now: "2026-12-24T15:00:00Z",
    });
    assert.match(special, /<p id="hours">Today: 07:00–12:00 \(New York time\)<\/p>/);
    // Closed for two weeks: the reopening names its date, not a weekday that reads as this week's.
    const holiday = { ...closedEve, to: "2027-01-04" };
    const away = await render({
      live: {
        content: { ...content, overrides: [holiday] },
        status: { ...status, nextChange: "2027-01-05T12:00:00Z" },
      },
      now: "2026-12-24T15:00:00Z",
    });
    assert.match(away, /<p id="status">Closed — opens at Tue 5 Jan 07:00 New York time \(Christmas\)<\/p>/);
  });

  it("last night's hours past midnight open the day; an emergency closure is said once", async () => {
    // Tuesday 01:00 in New York (05:00Z): Monday's 20:00–02:00 is still open; Tuesday has no hours.
    const hours = { timezone: "America/New_York", weekly: { mon: [{ open: "20:00", close: "02:00" }] } };
    const content = { tenantId: "bakery", version: 6, hours, overrides: [], announcements: [], source: "kv" };
    const status = { open: true, reason: "regular_hours", override: null, nextChange: "2026-06-02T06:00:00Z" };
    const late = await render({ live: { content, status }, now: "2026-06-02T05:00:00Z" });
    assert.match(late, /<p id="status">Open now — closes at 02:00 New York time<\/p>/);
    assert.match(late, /<p id="hours">Today: 00:00–02:00 \(New York time\)<\/p>/);
    // Last night's special hours of a date override carry over too, beside today's own.
    const lateShift = { id: "o3", from: "2026-06-01", to: "2026-06-01", hours: [{ open: "20:00", close: "11:00" }] };
    const withOwn = { ...hours, weekly: { ...hours.weekly, tue: [{ open: "14:00", close: "18:00" }] } };
    const carried = await render({
      live: { content: { ...content, hours: withOwn, overrides: [lateShift] }, status },
      now: "2026-06-02T13:00:00Z",
    });
    assert.match(carried, /<p id="hours">Today: 00:00–11:00, 14:00–18:00 \(New York time\)<\/p>/);
    // A day an override closes is closed from midnight, last night's hours or not.
    const closedDay = { id: "o4", from: "2026-06-02", to: "2026-06-02", closed: true };
    const shut = await render({
      live: { content: { ...content, overrides: [closedDay] }, status: { ...status, open: false } },
      now: "2026-06-02T05:00:00Z",
    });
    assert.match(shut, /<p id="hours">Today: closed<\/p>/);
    // An emergency closure: its message in the banner with the clock named, not again in the status.
    const flood = { id: "o5", closedNow: true, until: "2026-06-02T13:30:00Z", message: "Flooded kitchen" };
    const emergency = await render({
      live: {
        content: { ...content, overrides: [flood] },
        status: { open: false, reason: "override", override: flood, nextChange: "2026-06-02T13:30:00Z" },
      },
      now: "2026-06-02T12:00:00Z",
    });
    assert.match(emergency, /data-level="emergency">Closed until 09:30 New York time: Flooded kitchen<\/p>/);
    assert.match(emergency, /<p id="status">Closed — opens at 09:30 New York time<\/p>/);
    assert.equal(count(emergency, /Flooded kitchen/g), 1);
  });

  it("puts this deployment's Turnstile widget in: its script and its sitekey", async () => {
    const env = {
      TURNSTILE_SCRIPT_URL: "http://127.0.0.1:8799/turnstile/v0/api.js",
      TURNSTILE_SITE_KEY: 'site-key-"1"',
    };
    const html = await render({ env, now: "2026-06-01T12:00:00Z" });
    assert.ok(html.includes('<script src="http://127.0.0.1:8799/turnstile/v0/api.js" async defer></script>'));
    assert.ok(!html.includes("challenges.cloudflare.com"));
    assert.match(html, /class="cf-turnstile" data-sitekey="site-key-&#34;1&#34;"/);
  });

  it("a refused post: the summary, each problem beside its field, what was typed back in", async () => {
    const html = await render({
      now: "2026-06-01T12:00:00Z",
      form: {
        summary: "Please check the fields marked below and send the form again.",
        errors: { email: "is not an email address", nickname: "is not a field this form accepts" },
        values: { name: "Ann <Baker>", email: "ann@", message: "Two loaves\nplease" },
        labels: { email: "Email" },
      },
    });
    assert.match(html, /<title>Not sent: /);
    assert.match(html, /<div id="form-errors" role="alert"><p>Please check the fields marked below/);
    // A problem links to its field where the page has one; a field it does not have is listed plain.
    assert.ok(html.includes('<li><a href="#email-field">Email: is not an email address</a></li>'));
    assert.ok(html.includes("<li>nickname: is not a field this form accepts</li>"));
    assert.match(
      html,
      /<input [^>]*name="email"[^>]*aria-describedby="email-error reply-hint"[^>]*aria-invalid="true"/,
    );
    assert.match(html, /<span class="field-error" id="email-error">is not an email address<\/span>/);
    assert.match(html, /<input [^>]*name="name"[^>]*value="Ann &#60;Baker&#62;"/);
    assert.ok(html.includes(">Two loaves\nplease</textarea>"));
    assert.equal(count(html, /aria-invalid/g), 1, "only the field with a problem is marked");
  });

  it("puts text with $ patterns in as text: nothing copies the page into itself", async () => {
    const tricky = "$` $& $' $$ $1";
    const content = {
      tenantId: "bakery",
      version: 5,
      hours: manifest.fallback.hours,
      overrides: [],
      announcements: [{ text: tricky, level: "info" }],
      source: "kv",
    };
    const status = { open: false, reason: "closed", override: null, nextChange: null, source: "kv" };
    const html = await render({
      live: { content, status },
      now: "2026-06-01T12:00:00Z",
      // A field named `$\`` (echoed by the leads worker as unknown) and typed values.
      form: {
        summary: "Please check the fields marked below and send the form again.",
        errors: { "$`": "is not a field this form accepts" },
        values: { message: tricky, name: "$&" },
      },
    });
    assert.equal(count(html, /<!doctype html>/gi), 1, "the page appears once");
    assert.equal(count(html, /<form /g), 1, "the form appears once");
    assert.ok(html.includes(`data-level="info">${escapeHtml(tricky)}</p>`));
    assert.ok(html.includes("<li>$`: is not a field this form accepts</li>"));
    assert.match(html, /<input [^>]*name="name"[^>]*value="\$&#38;"/);
    assert.ok(html.includes(`>${tricky.replaceAll("&", "&amp;")}</textarea>`), "the message is typed back as sent");
  });

  it("a refused post on a page with selects: the chosen option is selected again, a mark after </select>", async () => {
    const html = await render({
      html: agencyTemplate,
      now: "2026-06-01T12:00:00Z",
      form: {
        summary: "Please check the fields marked below and send the form again.",
        errors: { budget: "is not one of the offered budgets" },
        values: { project_type: "api", budget: "a lot", timeline: "later" },
      },
    });
    const selectOf = (name) =>
      html.match(
        new RegExp(`<select [^>]*name="${name}"[^>]*>[\\s\\S]*?</select>[^<]*(<span[^>]*>[^<]*</span>)?`),
      )?.[0] ?? "";
    const projectType = selectOf("project_type");
    assert.equal(count(projectType, / selected/g), 1, "one option of project_type is selected");
    assert.match(projectType, /<option value="api" selected(="")?>/);
    assert.equal(count(selectOf("timeline"), / selected/g), 1);
    assert.match(selectOf("timeline"), /<option value="later" selected(="")?>/);
    // A value no option has selects none; the problem is marked on the select and noted after it.
    const budget = selectOf("budget");
    assert.equal(count(budget, / selected/g), 0);
    assert.match(budget, /<select [^>]*aria-invalid="true"[^>]*aria-describedby="budget-error"/);
    assert.match(
      budget,
      /<\/select><span class="field-error" id="budget-error">is not one of the offered budgets<\/span>$/,
    );
    assert.ok(html.includes('<li><a href="#budget-field">budget: is not one of the offered budgets</a></li>'));
  });
});
