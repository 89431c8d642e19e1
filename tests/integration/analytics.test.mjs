// The analytics-service end to end on the real analytics.wasm in workerd: the tracker and beacons
// through the bakery's /_sa/* route delegation, the queue consumer rolling pageviews into D1, stats
// and dashboard, bots, DNT/GPC, size and shape limits, tenant isolation, salts on virtual time
// (X-SiteSwarm-Test-Now, honoured only with SITESWARM_TEST_HOOKS=1), and the promise that no IP or
// user agent is stored in any table.
//
// Analytics Engine's local binding stores nothing (writeDataPoint is a no-op in Miniflare), so the
// AE points themselves are checked by the native suite (workers/analytics/analytics-test.cpp).
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { after, before, describe, it } from "node:test";
import { errorOf, jsonOf, startMesh } from "./mesh.mjs";

const CHROME =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const IPHONE =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";
const IP = "203.0.113.77";
const DAY_MS = 86_400_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let mesh;

async function waitFor(what, probe, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`waitFor: timed out waiting for ${what}`);
    await sleep(100);
  }
}

const utcDay = (ms) => new Date(ms).toISOString().slice(0, 10);

/** A beacon straight to the analytics worker, with the tenant context and an optional clock. */
function beacon(body, { tenant = "bakery", ua = CHROME, at, headers = {} } = {}) {
  return mesh.fetch("analytics", "/beacon", {
    method: "POST",
    headers: {
      ...mesh.tenantHeaders(tenant),
      "content-type": "text/plain;charset=UTF-8",
      ...(ua === null ? {} : { "user-agent": ua }),
      "cf-connecting-ip": IP,
      ...(at === undefined ? {} : { "x-siteswarm-test-now": String(at) }),
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function stats(query, tenant = "bakery") {
  return jsonOf(await mesh.fetch("analytics", `/v1/stats${query}`, { headers: mesh.tenantHeaders(tenant) }), 200);
}

/** Waits until the stats of `query` satisfy `ok` (the queue consumer runs in batches). */
const statsWhen = (what, query, ok, tenant) =>
  waitFor(what, async () => {
    const s = await stats(query, tenant);
    return ok(s) ? s : null;
  });

/** The hourly job at `at` (ms), through the test hook. */
const maintenance = async (at) =>
  jsonOf(
    await mesh.fetch("analytics", "/__test/maintenance", {
      method: "POST",
      headers: { "x-siteswarm-test-now": String(at) },
    }),
    200,
  );

async function allRows() {
  const db = await mesh.d1("analytics", "ANALYTICS_DB");
  const tables = (await db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).results;
  const out = {};
  for (const { name } of tables) {
    if (name.startsWith("_cf") || name.startsWith("sqlite_") || name === "d1_migrations") continue;
    out[name] = (await db.prepare(`SELECT * FROM "${name}"`).all()).results;
  }
  return out;
}

before(async () => {
  mesh = await startMesh({ queueBatchTimeout: 0.05 });
});
after(async () => {
  await mesh?.dispose();
});

describe("analytics: tracker", () => {
  it("GET /_sa/script.js through the bakery: the tracker, under 1 KiB gzipped, cacheable", async () => {
    const res = await mesh.fetch("bakery", "/_sa/script.js");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/javascript/);
    const js = await res.text();
    assert.ok(gzipSync(js, { level: 9 }).length < 1024, "tracker gzipped must be < 1 KiB");
    assert.match(js, /sendBeacon/);
    assert.match(js, /keepalive/);
    assert.doesNotMatch(js, /cookie|localStorage|sessionStorage|indexedDB/);
    const version = res.headers.get("x-tracker-version");
    assert.match(version, /^[0-9a-f]{12}$/);
    assert.equal(res.headers.get("cache-control"), "public, max-age=3600");
    const pinned = await mesh.fetch("bakery", `/_sa/script.js?v=${version}`);
    assert.equal(pinned.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.equal(await pinned.text(), js);
    // If-None-Match is compared weakly (RFC 9110 §13.1.2): Cloudflare's edge weakens the ETag when
    // it compresses the script, so a browser echoes W/"…"; a list or `*` may name it too.
    const etag = res.headers.get("etag");
    for (const tag of [etag, `W/${etag}`, `"other", W/${etag}`, "*"]) {
      const again = await mesh.fetch("analytics", "/script.js", { headers: { "if-none-match": tag } });
      assert.equal(again.status, 304, tag);
      assert.equal(again.headers.get("etag"), etag);
    }
    const other = await mesh.fetch("analytics", "/script.js", { headers: { "if-none-match": '"other"' } });
    assert.equal(other.status, 200);
    await other.arrayBuffer();
  });
});

describe("analytics: beacons through the bakery's delegation", () => {
  it("counts a pageview with country and colo from request.cf; tenant from the context only", async () => {
    const today = utcDay(Date.now());
    const before = (await stats(`?from=${today}&to=${today}&by=path`)).totals.pageviews;
    const otherBefore = (await stats(`?from=${today}&to=${today}`, "auto-repair")).totals.pageviews;
    const res = await mesh.fetch("bakery", "/_sa/beacon", {
      method: "POST",
      headers: {
        "content-type": "text/plain;charset=UTF-8",
        "user-agent": IPHONE,
        // a forged tenant context from the internet is replaced by the site's own
        "x-siteswarm-tenant-id": "auto-repair",
      },
      body: JSON.stringify({
        u: "https://crumbandcrust.example/delegated?utm_source=x&secret=1",
        r: "",
        w: 390,
        tenant: "auto-repair",
      }),
    });
    assert.equal(res.status, 202);
    assert.equal(await res.text(), "");
    const s = await statsWhen(
      "the delegated pageview",
      `?from=${today}&to=${today}&by=path`,
      (s) => s.totals.pageviews > before,
    );
    assert.deepEqual(
      s.rows.find((r) => r.key === "/delegated"),
      { key: "/delegated", pageviews: 1, visitors: 1 },
    );
    const countries = await stats(`?from=${today}&to=${today}&by=country`);
    assert.ok(
      countries.rows.some((r) => /^[A-Z]{2}$/.test(r.key)),
      JSON.stringify(countries.rows),
    );
    const devices = await stats(`?from=${today}&to=${today}&by=device`);
    assert.ok(devices.rows.some((r) => r.key === "mobile"));
    assert.equal((await stats(`?from=${today}&to=${today}`, "auto-repair")).totals.pageviews, otherBefore);
  });
});

describe("analytics: beacons on virtual days", () => {
  // Each test gets its own UTC day far from today, so the counts are exact.
  let nextDay = Date.UTC(2030, 0, 1);
  const freshDay = () => {
    const start = nextDay;
    nextDay += 10 * DAY_MS;
    return start;
  };

  it("rolls pageviews, visitors, bounce rate and dimensions into /v1/stats", async () => {
    const t = freshDay() + 3_600_000;
    const day = utcDay(t);
    for (const [u, ua, r] of [
      ["https://crumbandcrust.example/", CHROME, "https://www.google.com/"],
      ["https://crumbandcrust.example/menu", CHROME, "https://crumbandcrust.example/"],
      ["https://crumbandcrust.example/", IPHONE, ""],
    ]) {
      assert.equal((await beacon({ u, r, w: 1000 }, { ua, at: t })).status, 202);
    }
    const s = await statsWhen("three pageviews", `?from=${day}&to=${day}`, (s) => s.totals.pageviews === 3);
    // Exactly the contract's keys (contract "analytics-service"): a `by` echo was sent beside them.
    assert.deepEqual(Object.keys(s).sort(), ["from", "rows", "to", "totals"]);
    assert.deepEqual(s.totals, { pageviews: 3, visitors: 2, bounceRate: 0.5, filtered: 0 });
    assert.deepEqual(s.rows, [{ key: day, pageviews: 3, visitors: 2 }]);
    const refs = await stats(`?from=${day}&to=${day}&by=referrer`);
    assert.deepEqual(Object.keys(refs).sort(), ["from", "rows", "to", "totals"]);
    assert.deepEqual(refs.rows, [
      { key: "(direct)", pageviews: 2, visitors: 2 },
      { key: "google.com", pageviews: 1, visitors: 1 },
    ]);
    const browsers = await stats(`?from=${day}&to=${day}&by=browser`);
    assert.deepEqual(browsers.rows.map((r) => r.key).sort(), ["Chrome", "Safari"]);
  });

  it("filters bots (crawler list, HeadlessChrome, curl, the monitor probe, empty UA)", async () => {
    const t = freshDay();
    const day = utcDay(t);
    const bots = [
      "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
      "curl/8.5.0",
      "SiteSwarm-Monitor/0.1",
      "",
    ];
    for (const ua of bots) {
      assert.equal((await beacon({ u: "https://crumbandcrust.example/" }, { ua, at: t })).status, 202);
    }
    // (A request without any User-Agent header cannot be sent from here: the fetch client adds its
    // own. The native suite covers the missing header.)
    const s = await statsWhen("five filtered hits", `?from=${day}&to=${day}`, (s) => s.totals.filtered >= 5);
    assert.deepEqual(s.totals, { pageviews: 0, visitors: 0, bounceRate: 0, filtered: 5 });
  });

  it("DNT: 1 and Sec-GPC: 1 count the pageview without a visitor", async () => {
    const t = freshDay();
    const day = utcDay(t);
    await beacon({ u: "https://crumbandcrust.example/" }, { at: t, headers: { dnt: "1" } });
    await beacon({ u: "https://crumbandcrust.example/" }, { at: t, ua: IPHONE, headers: { "sec-gpc": "1" } });
    const s = await statsWhen("two pageviews", `?from=${day}&to=${day}`, (s) => s.totals.pageviews === 2);
    assert.equal(s.totals.visitors, 0);
  });

  it("DNT: 0 and Sec-GPC: 0 are no opt-out: each beacon counts a visitor", async () => {
    const t = freshDay();
    const day = utcDay(t);
    assert.equal((await beacon({ u: "https://crumbandcrust.example/" }, { at: t, headers: { dnt: "0" } })).status, 202);
    const gpc0 = await beacon(
      { u: "https://crumbandcrust.example/" },
      { at: t, ua: IPHONE, headers: { "sec-gpc": "0" } },
    );
    assert.equal(gpc0.status, 202);
    const s = await statsWhen("two pageviews", `?from=${day}&to=${day}`, (s) => s.totals.pageviews === 2);
    assert.equal(s.totals.visitors, 2, "two browsers that did not opt out: two visitors");
  });

  it("413 over 4 KiB, 400 malformed, 401 without tenant context: nothing counted", async () => {
    const t = freshDay();
    const day = utcDay(t);
    await errorOf(
      await beacon({ u: `https://crumbandcrust.example/${"a".repeat(5000)}` }, { at: t }),
      413,
      "payload_too_large",
    );
    await errorOf(await beacon("{not json", { at: t }), 400, "invalid_json");
    // Bytes that are not UTF-8: malformed, not a path with U+FFFD in it.
    const latin1 = await mesh.fetch("analytics", "/beacon", {
      method: "POST",
      headers: {
        ...mesh.tenantHeaders("bakery"),
        "content-type": "text/plain;charset=UTF-8",
        "user-agent": CHROME,
        "cf-connecting-ip": IP,
        "x-siteswarm-test-now": String(t),
      },
      body: Buffer.concat([
        Buffer.from('{"u":"https://crumbandcrust.example/caf'),
        Buffer.from([0xe9]),
        Buffer.from('"}'),
      ]),
    });
    await errorOf(latin1, 400, "invalid_json");
    const bad = await errorOf(await beacon({ r: "https://x.example/" }, { at: t }), 400, "invalid_request");
    assert.equal(bad.field, "u");
    const anonymous = await mesh.fetch("analytics", "/beacon", {
      method: "POST",
      headers: { "user-agent": CHROME, "x-siteswarm-test-now": String(t) },
      body: JSON.stringify({ u: "https://crumbandcrust.example/" }),
    });
    await errorOf(anonymous, 401, "unauthenticated_tenant");
    // A valid beacon afterwards is the only one counted.
    await beacon({ u: "https://crumbandcrust.example/ok" }, { at: t });
    const s = await statsWhen("the valid pageview", `?from=${day}&to=${day}&by=path`, (s) => s.totals.pageviews >= 1);
    assert.deepEqual(s.rows, [{ key: "/ok", pageviews: 1, visitors: 1 }]);
  });

  it("each finished day reaches the event ledger once as analytics.day_summarized", async () => {
    const t = freshDay() + 3_600_000;
    const day = utcDay(t);
    await beacon({ u: "https://crumbandcrust.example/" }, { at: t });
    await beacon({ u: "https://crumbandcrust.example/menu" }, { at: t + 1000 });
    await statsWhen("two pageviews", `?from=${day}&to=${day}`, (s) => s.totals.pageviews === 2);
    const summaries = async (tenant) =>
      (
        await jsonOf(
          await mesh.fetch("events", "/api/events?type=analytics.day_summarized&order=desc&limit=500", {
            headers: mesh.tenantHeaders(tenant),
          }),
          200,
        )
      ).events.filter((e) => e.payload.day === day);
    const nextMidnight = Date.parse(`${day}T00:00:00Z`) + DAY_MS;
    // Twice in the hour that announces it, and again later: the ledger holds it once.
    await maintenance(nextMidnight + 3_600_000);
    await maintenance(nextMidnight + 3_600_000 + 1000);
    const [event] = await waitFor("the day summary in the ledger", async () => {
      const found = await summaries("bakery");
      return found.length ? found : null;
    });
    await maintenance(nextMidnight + 2 * 3_600_000);
    assert.equal(event.tenant_id, "bakery");
    assert.equal(event.entity_ref, "tenant:bakery");
    assert.equal(event.source_system, "siteswarm-analytics-service");
    assert.deepEqual(event.payload, { day, pageviews: 2, visitors: 1, bounces: 0, filtered: 0 });
    await sleep(1000); // a repeat, had one been sent, would have reached the ledger by now
    assert.equal((await summaries("bakery")).length, 1);
    assert.deepEqual(await summaries("auto-repair"), []);
  });

  it("salts rotate at 00:00 UTC and are deleted 48 hours after their day began", async () => {
    const midnight = freshDay() + DAY_MS;
    const [d0, d1, d2, d3] = [-1, 0, 1, 2].map((n) => utcDay(midnight + n * DAY_MS));
    const late = await maintenance(midnight - 1000);
    assert.ok(late.saltDays.includes(d0) && late.saltDays.includes(d1), JSON.stringify(late));
    // The same person just before and just after midnight: two different visitor hashes.
    await beacon({ u: "https://crumbandcrust.example/" }, { at: midnight - 1000 });
    await beacon({ u: "https://crumbandcrust.example/" }, { at: midnight + 1000 });
    await statsWhen("both pageviews", `?from=${d0}&to=${d1}`, (s) => s.totals.pageviews === 2);
    const hashes = async (day) =>
      (await allRows()).visitor_days
        .filter((r) => r.day === day && r.tenant_id === "bakery")
        .map((r) => r.visitor_hash);
    const [h0, h1] = [await hashes(d0), await hashes(d1)];
    assert.equal(h0.length, 1);
    assert.equal(h1.length, 1);
    assert.notEqual(h0[0], h1[0]);
    // 48 hours after d0 began: d0's salt and per-visitor rows are gone, the rollup stays.
    const later = await maintenance(midnight + DAY_MS);
    assert.ok(!later.saltDays.includes(d0), JSON.stringify(later));
    assert.ok(later.saltDays.includes(d2) && later.saltDays.includes(d3));
    assert.deepEqual(await hashes(d0), []);
    assert.equal((await stats(`?from=${d0}&to=${d0}`)).totals.visitors, 1);
  });

  it("stats: bad ranges are 400 naming the field; other tenants see nothing", async () => {
    for (const [q, field] of [
      ["?from=2030-02-30", "from"],
      ["?to=soon", "to"],
      ["?from=2030-05-02&to=2030-05-01", "from"],
      ["?from=2020-01-01&to=2030-01-01", "from"],
      ["?by=ip", "by"],
    ]) {
      const res = await mesh.fetch("analytics", `/v1/stats${q}`, { headers: mesh.tenantHeaders("bakery") });
      const err = await errorOf(res, 400, "invalid_request");
      assert.equal(err.field, field, q);
    }
    const s = await stats("?from=2030-01-01&to=2030-12-31", "auto-repair");
    assert.equal(s.totals.pageviews, 0);
    const forged = await mesh.fetch("analytics", "/v1/stats", {
      headers: { ...mesh.tenantHeaders("bakery"), "x-siteswarm-tenant-id": "auto-repair" },
    });
    await errorOf(forged, 401, "unauthenticated_tenant");
  });

  it("no IP address or user agent is stored in any table", async () => {
    const rows = JSON.stringify(await allRows());
    assert.ok(rows.includes("bakery"));
    for (const needle of [IP, "Mozilla", "AppleWebKit", "Googlebot", "HeadlessChrome", "curl/"]) {
      assert.ok(!rows.includes(needle), `found ${needle} in the analytics database`);
    }
  });

  it("GET /dashboard: HTML with an SVG chart and top lists, for the tenant admin only", async () => {
    const res = await mesh.fetch("analytics", "/dashboard?from=2030-01-01&to=2030-03-31", {
      headers: { "x-siteswarm-tenant-id": "bakery", authorization: `Bearer ${mesh.tokens.bakery.adminToken}` },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/html/);
    assert.match(res.headers.get("content-security-policy"), /default-src 'none'/);
    const html = await res.text();
    assert.match(html, /<svg/);
    // Bars placed with "%.1f" (shared/printf_lite's %f, which analytics turns on: use_printf_fixed).
    assert.match(html, /<rect class="pv" x="\d+\.\d" y="\d+\.\d"/);
    assert.match(html, /<h2>Pages<\/h2>/);
    assert.doesNotMatch(html, /<script/);
    const tenantOnly = await mesh.fetch("analytics", "/dashboard", { headers: mesh.tenantHeaders("bakery") });
    await errorOf(tenantOnly, 401, "unauthenticated_tenant");
  });
});
