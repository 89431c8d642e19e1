// The bakery's server-rendered live block (examples/common/render.js) through the real SDK: from a
// cms answer, and from the manifest's snapshot when the cms worker is missing or failing.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { createPlatformClient } from "../../bindings/sdk/src/index.js";
import { escapeHtml, loadLive, renderHome, withFormState } from "../../examples/common/render.js";

const root = new URL("../../", import.meta.url);
const manifest = JSON.parse(readFileSync(new URL("examples/bakery/swarm.config.json", root), "utf8"));
const template = readFileSync(new URL("examples/bakery/public/index.html", root), "utf8");
const TOKEN = "bakery-token-0123456789";

describe("bakery home page", () => {
  it("shows the manifest's snapshot when the cms worker is down", async () => {
    const CMS_SERVICE = {
      fetch: async () => {
        throw new Error("connection refused");
      },
    };
    const client = createPlatformClient({ manifest, bindings: { CMS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN } });
    const now = new Date("2026-06-02T12:00:00Z"); // Tuesday 08:00 in New York
    const html = renderHome(template, await loadLive(client, now), now);
    assert.match(html, /<div id="live" data-source="fallback">/);
    assert.match(html, /<p id="status">Open now — closes at 15:00<\/p>/);
    assert.match(html, /<p id="hours">Today: 07:00–15:00<\/p>/);
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
    const now = new Date("2026-06-01T12:00:00Z"); // Monday
    const html = renderHome(template, { content, status }, now);
    assert.match(html, /<p id="status">Closed — opens at Tue 07:00<\/p>/);
    assert.match(html, /<p id="hours">Today: closed<\/p>/);
    assert.match(html, /data-level="warning">&#60;b&#62;Closed Monday&#60;\/b&#62;<\/p>/);
  });

  it("puts text with $ patterns in as text: a replacement never copies the page into itself", async () => {
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
    const home = renderHome(template, { content, status }, new Date("2026-06-01T12:00:00Z"));
    assert.equal(home.match(/<!doctype html>/gi)?.length, 1);
    assert.ok(home.includes(`data-level="info">${escapeHtml(tricky)}</p>`));

    // A refused post: a field named `$\`` (echoed by the leads worker as unknown) and a typed value.
    const page = withFormState(home, {
      summary: "Please check the fields marked below and send the form again.",
      errors: { "$`": "is not a field this form accepts" },
      values: { message: tricky, name: "$&" },
    });
    assert.equal(page.match(/<!doctype html>/gi)?.length, 1, "the page appears once");
    assert.equal(page.match(/<form /g)?.length, 1, "the form appears once");
    assert.ok(page.includes("<li>$`: is not a field this form accepts</li>"));
    assert.ok(page.includes(`<input value="${escapeHtml("$&")}" name="name"`));
    assert.ok(page.includes(`>${escapeHtml(tricky)}</textarea>`), "the message is typed back as sent");
  });
});
