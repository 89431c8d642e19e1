// The tracker in a real browser (Debian's Chromium): the bakery page loads /_sa/script.js through
// the site's route delegation, the tracker sends a beacon on load and another on an SPA navigation
// (history.pushState), both show up in /v1/stats once the queue consumer has rolled them up, a
// headless user agent is filtered, and the dashboard renders its chart (screenshot saved).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jsonOf, startMesh } from "../integration/mesh.mjs";
import { describePage, launchBrowser, screenshot } from "./browser.mjs";

// Chromium headless announces itself as HeadlessChrome, which the service filters as a bot; the
// "visitor" therefore presents an ordinary desktop Chrome user agent.
const DESKTOP_CHROME =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let mesh;
let browser;
before(async () => {
  mesh = await startMesh();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await mesh?.dispose();
});

async function stats(query) {
  const res = await mesh.fetch("analytics", `/v1/stats${query}`, { headers: mesh.tenantHeaders("bakery") });
  return jsonOf(res, 200);
}

async function statsWhen(what, query, ok, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await stats(query);
    if (ok(s)) return s;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s)}`);
    await sleep(200);
  }
}

describe("analytics tracker in Chromium", () => {
  it("sends a pageview on load and on SPA navigation; both reach /v1/stats", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const query = `?from=${today}&to=${today}&by=path`;
    const context = await browser.newContext({ userAgent: DESKTOP_CHROME });
    const page = await context.newPage();
    try {
      const first = page.waitForRequest((r) => r.url().endsWith("/_sa/beacon") && r.method() === "POST");
      // Arriving from another site: the landing page's referrer is that site.
      // (The referrer's query leaves the browser no more than the page's: only its origin and path.)
      const response = await page.goto(await mesh.url("bakery"), {
        referer: "https://news.example/story?token=secret#comments",
      });
      assert.equal(response.status(), 200);
      const beacon1 = await first;
      const landing = page.url();
      assert.deepEqual(
        [JSON.parse(beacon1.postData()).u, JSON.parse(beacon1.postData()).r],
        [landing, "https://news.example/story"],
      );

      // An SPA navigation's referrer is the page navigated from, as a link between two pages would
      // send: the other site is counted once, not once per page of the visit.
      const second = page.waitForRequest((r) => r.url().endsWith("/_sa/beacon") && r.method() === "POST");
      await page.evaluate(() =>
        history.pushState({}, "", "/spa-page?email=someone%40example.com&utm_source=browser-test#top"),
      );
      const beacon2 = await second;
      // Only what the service reads leaves the browser: the path and the utm_* parameters (the rest
      // of a query may hold an email or a token), no hash.
      assert.match(JSON.parse(beacon2.postData()).u, /\/spa-page\?utm_source=browser-test$/);
      assert.equal(JSON.parse(beacon2.postData()).r, landing);

      const s = await statsWhen("both pageviews", query, (s) =>
        ["/", "/spa-page"].every((p) => s.rows.some((r) => r.key === p && r.pageviews >= 1)),
      );
      assert.ok(s.totals.pageviews >= 2);
      assert.ok(s.totals.visitors >= 1);
      const utm = await stats(`?from=${today}&to=${today}&by=utm_source`);
      assert.ok(utm.rows.some((r) => r.key === "browser-test"));
      const referrers = await stats(`?from=${today}&to=${today}&by=referrer`);
      assert.equal(referrers.rows.find((r) => r.key === "news.example")?.pageviews, 1, JSON.stringify(referrers));
    } catch (err) {
      err.message += `\npage showed: ${await describePage(page)}`;
      throw err;
    } finally {
      await context.close();
    }
  });

  it("a HeadlessChrome visit is filtered, not counted", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const before = await stats(`?from=${today}&to=${today}`);
    const page = await browser.newPage(); // the default headless user agent
    const sent = page.waitForRequest((r) => r.url().endsWith("/_sa/beacon"));
    await page.goto(await mesh.url("bakery"));
    await sent;
    const s = await statsWhen(
      "the filtered hit",
      `?from=${today}&to=${today}`,
      (s) => s.totals.filtered > before.totals.filtered,
    );
    assert.equal(s.totals.pageviews, before.totals.pageviews);
    await page.close();
  });

  it("the dashboard renders its chart and top lists (screenshot)", async () => {
    // A page whose path is a long percent-encoded slug (what a non-Latin title becomes): a top-list
    // key with no place to wrap, which must not widen the page on a phone.
    const slug = `/${"%E3%81%82".repeat(50)}`; // 451 bytes: under the 512 a path is cut at
    const today = new Date().toISOString().slice(0, 10);
    const sent = await mesh.fetch("analytics", "/beacon", {
      method: "POST",
      headers: { ...mesh.tenantHeaders("bakery"), "content-type": "text/plain", "user-agent": DESKTOP_CHROME },
      body: JSON.stringify({ u: `https://crumbandcrust.example${slug}`, r: null, w: 390 }),
    });
    assert.equal(sent.status, 202);
    await statsWhen("the long path", `?from=${today}&to=${today}&by=path`, (s) => s.rows.some((r) => r.key === slug));
    const context = await browser.newContext({
      javaScriptEnabled: false, // it must work without JavaScript
      extraHTTPHeaders: {
        "x-siteswarm-tenant-id": "bakery",
        authorization: `Bearer ${mesh.tokens.bakery.adminToken}`,
      },
    });
    const page = await context.newPage();
    try {
      const response = await page.goto(`${await mesh.url("analytics")}dashboard`);
      assert.equal(response.status(), 200);
      const chart = page.locator("figure svg");
      assert.equal(await chart.isVisible(), true);
      assert.ok((await page.locator("svg rect.pv").count()) >= 1);
      assert.equal(await page.locator("h2", { hasText: "Pages" }).isVisible(), true);
      assert.ok((await page.locator("td", { hasText: "/spa-page" }).count()) >= 1);
      // On a phone the chart shrinks to half its width: its labels must stay readable.
      await page.setViewportSize({ width: 375, height: 800 });
      const label = await page.locator("figure svg text").first().boundingBox();
      assert.ok(label && label.height >= 8, `chart label ${JSON.stringify(label)} px high at 375 px`);
      assert.ok((await page.locator("td", { hasText: slug }).count()) >= 1);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 375, `no horizontal scrolling on a phone (page is ${width}px wide)`);
    } finally {
      await screenshot(page, "analytics-dashboard");
      await context.close();
    }
  });
});
