// A tenant's public status page as a phone shows it, in Debian's Chromium with JavaScript off: the
// overall state, each monitor with its 90-day uptime bar, the recent incidents, nothing wider than
// the screen. The page is served by the real monitoring.wasm after real probes of a local origin.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import { startMesh } from "../integration/mesh.mjs";
import { describePage, launchBrowser, screenshot } from "./browser.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let mesh;
let browser;
let origin;
let status = 200;

before(async () => {
  origin = createServer((req, res) => {
    // "/long" stays up: its monitor fails on its selector alone, a long word in the last check's line.
    res.writeHead(req.url === "/long" ? 200 : status, { "content-type": "text/html" });
    res.end('<!doctype html><main><form id="contact"></form></main>');
  });
  await new Promise((resolve) => origin.listen(0, "127.0.0.1", resolve));
  mesh = await startMesh();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await mesh?.dispose();
  origin?.closeAllConnections();
  origin?.close();
});

async function tick(n) {
  const db = await mesh.d1("monitoring", "MONITORING_DB");
  // The bakery's probes only: other tenants' manifests declare monitors too (auto-repair's home page).
  const count = async () => (await db.prepare("SELECT COUNT(*) AS n FROM probes WHERE tenant_id = 'bakery'").first()).n;
  const before = await count();
  const res = await mesh.fetch("monitoring", "/__test/tick", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tick: n }),
  });
  assert.equal(res.status, 200, await res.text());
  for (let i = 0; i < 300 && (await count()) < before + 3; i++) await sleep(50);
}

describe("status page in Chromium", () => {
  it("shows each monitor's state and 90-day bar on a phone, without JavaScript", async () => {
    const port = origin.address().port;
    const longSelector = `#${"a".repeat(150)}`; // a selector the limits allow, no space to wrap at
    for (const [id, path, selector] of [
      ["home", "/", "form#contact"],
      ["contact", "/contact", "form#contact"],
      ["long", "/long", longSelector],
    ]) {
      const res = await mesh.fetch("monitoring", `/admin/monitors/${id}`, {
        method: "PUT",
        headers: {
          "X-SiteSwarm-Tenant-Id": "bakery",
          authorization: `Bearer ${mesh.tokens.bakery.adminToken}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ url: `http://127.0.0.1:${port}${path}`, mustContain: [selector] }),
      });
      // 200 for "home": the bakery manifest declares it (pointing at the real site), replaced here.
      assert.ok([200, 201].includes(res.status), await res.text());
    }
    const base = Math.floor(Date.now() / 300_000);
    await tick(base + 1);
    status = 503;
    for (let i = 2; i <= 4; i++) await tick(base + i);

    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const response = await page.goto(`${await mesh.url("monitoring")}status/bakery`);
    assert.equal(response.status(), 200);
    try {
      assert.match(await page.locator("h1").textContent(), /bakery/);
      assert.match(await page.locator(".banner").textContent(), /down/i);
      assert.equal(await page.locator("section.monitor").count(), 3);
      const missing = page.locator("section.monitor").filter({ hasText: "selector_missing" });
      assert.match(await missing.textContent(), /selector_missing:#a{150}/);
      assert.equal(await page.locator("section.monitor").first().locator(".bar span").count(), 90);
      assert.match(await page.locator("ul li").first().textContent(), /status_mismatch/);
      assert.equal(await page.locator("script").count(), 0);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 390, `no horizontal scrolling on a phone (page is ${width}px wide)`);
    } catch (err) {
      err.message += `\npage showed: ${await describePage(page)}`;
      throw err;
    } finally {
      await screenshot(page, "monitoring-status-page");
      await context.close();
    }
  });
});
