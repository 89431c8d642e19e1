// Synthetic monitoring against hostile probe targets and hand-corrupted D1 rows, on the real
// monitoring.wasm in workerd: what a probe reports for a page lol-html cannot parse to the end or a
// compression bomb, and that one corrupt row neither hides a tenant's other monitors nor stops
// them from being probed (docs/monitoring.md).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import zlib from "node:zlib";
import { after, before, describe, it } from "node:test";
import { jsonOf, startMesh } from "./mesh.mjs";

const PAGE = "<!doctype html><html><body><main><form id=contact></form></main></body></html>";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// 256 MiB of blanks, gzipped to ~250 KiB; the selector's element comes after them.
const BOMB = zlib.gzipSync(Buffer.concat([Buffer.alloc(256 * 1024 * 1024, 0x20), Buffer.from(PAGE)]), {
  level: 9,
});
const ROUTES = {
  "/ok": (res) => res.writeHead(200, { "content-type": "text/html" }).end(PAGE),
  // Deeper than lol-html's memory limit lets it track; the element is there, at the end.
  "/nested": (res) => res.writeHead(200, { "content-type": "text/html" }).end(`${"<div>".repeat(200_000)}${PAGE}`),
  "/bomb": (res) => res.writeHead(200, { "content-type": "text/html", "content-encoding": "gzip" }).end(BOMB),
  // The form, but not as HTML: a browser builds no DOM from either.
  "/plain": (res) => res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(PAGE),
  "/json": (res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ html: PAGE })),
  "/untyped": (res) => res.writeHead(200).end(PAGE),
  // The form at once, the rest of the page 1.5 s later.
  "/slow-tail": (res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.write(PAGE);
    setTimeout(() => res.end("<footer>the end</footer>"), 1500);
  },
};

let mesh;
let origin;
let tick = Math.floor(Date.now() / 300_000);

async function waitFor(probe, what, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`waitFor: timed out waiting for ${what}`);
    await sleep(100);
  }
}

const db = () => mesh.d1("monitoring", "MONITORING_DB");
const adminHeaders = () => ({
  "X-SiteSwarm-Tenant-Id": "bakery",
  authorization: `Bearer ${mesh.tokens.bakery.adminToken}`,
  "content-type": "application/json",
});
const put = async (id, body) =>
  jsonOf(
    await mesh.fetch("monitoring", `/admin/monitors/${id}`, {
      method: "PUT",
      headers: adminHeaders(),
      body: JSON.stringify(body),
    }),
  );
const sql = async (statement, ...args) =>
  (await db())
    .prepare(statement)
    .bind(...args)
    .run();
const probesOf = async (id) =>
  (
    await (
      await db()
    )
      .prepare("SELECT ok, status, reason FROM probes WHERE monitor_id = ?1 ORDER BY at_ms")
      .bind(id)
      .all()
  ).results;

/** One cron tick; waits until each monitor of `ids` has one more probe recorded. */
async function runTick(ids) {
  const before = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, (await probesOf(id)).length])));
  await jsonOf(
    await mesh.fetch("monitoring", "/__test/tick", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tick: ++tick }),
    }),
    200,
  );
  for (const id of ids) {
    await waitFor(async () => (await probesOf(id)).length > before[id], `a probe of ${id}`);
  }
}
const lastProbe = async (id) => (await probesOf(id)).at(-1);

before(async () => {
  const server = createServer((req, res) => (ROUTES[req.url] ?? ROUTES["/ok"])(res));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  mesh = await startMesh();
});
after(async () => {
  await mesh?.dispose();
  await origin?.close();
});

describe("monitoring: hostile pages", () => {
  it("judges a page lol-html cannot parse to the end by its status and the selectors seen", async () => {
    await put("deep", { url: `${origin.url}/nested`, mustContain: ["form#contact"], maxLatencyMs: 60_000 });
    await runTick(["deep"]);
    const probe = await lastProbe("deep");
    // The site answered 200: not a network error, whatever the parser made of its body.
    assert.equal(probe.status, 200, JSON.stringify(probe));
    assert.equal(probe.reason, "selector_missing:form#contact");
    await mesh.fetch("monitoring", "/admin/monitors/deep", { method: "DELETE", headers: adminHeaders() });
  });

  it("reads at most 8 MiB of a compression bomb, then judges the selectors seen", async () => {
    await put("bomb", {
      url: `${origin.url}/bomb`,
      mustContain: ["form#contact"],
      timeoutMs: 30_000,
      maxLatencyMs: 60_000,
    });
    await runTick(["bomb"]);
    const probe = await lastProbe("bomb");
    assert.equal(probe.status, 200, JSON.stringify(probe));
    assert.equal(probe.reason, "selector_missing:form#contact");
    await mesh.fetch("monitoring", "/admin/monitors/bomb", { method: "DELETE", headers: adminHeaders() });
  });
});

describe("monitoring: what a page is and how long it takes", () => {
  it("a page that says it is not HTML holds no elements; one that says nothing is read as HTML", async () => {
    await put("plain", { url: `${origin.url}/plain`, mustContain: ["form#contact"] });
    await put("json", { url: `${origin.url}/json`, mustContain: ["form"] });
    await put("untyped", { url: `${origin.url}/untyped`, mustContain: ["form#contact"] });
    await runTick(["plain", "json", "untyped"]);
    assert.equal((await lastProbe("plain")).reason, "selector_missing:form#contact");
    assert.equal((await lastProbe("json")).reason, "selector_missing:form");
    assert.equal((await lastProbe("untyped")).ok, 1, JSON.stringify(await lastProbe("untyped")));
    for (const id of ["plain", "json", "untyped"]) {
      await mesh.fetch("monitoring", `/admin/monitors/${id}`, { method: "DELETE", headers: adminHeaders() });
    }
  });

  it("a page is timed to its end, after its selectors have matched too", async () => {
    await put("tail", { url: `${origin.url}/slow-tail`, mustContain: ["form#contact"], maxLatencyMs: 1000 });
    await runTick(["tail"]);
    const probe = await lastProbe("tail");
    assert.equal(probe.status, 200);
    assert.equal(probe.reason, "too_slow", JSON.stringify(probe));
    await mesh.fetch("monitoring", "/admin/monitors/tail", { method: "DELETE", headers: adminHeaders() });
  });
});

describe("monitoring: corrupt rows", () => {
  it("shows and probes a tenant's monitors whatever one hand-edited row holds", async () => {
    const ids = ["c-json", "c-enabled", "c-count", "c-hist", "c-good"];
    for (const id of ids)
      await put(id, { url: `${origin.url}/ok`, mustContain: ["form#contact"], maxLatencyMs: 60_000 });
    await runTick(ids);
    await sql("UPDATE monitors SET spec_json = '{not json' WHERE monitor_id = 'c-json'");
    await sql("UPDATE monitors SET enabled = 'yes' WHERE monitor_id = 'c-enabled'");
    await sql("UPDATE monitors SET consecutive_failures = 'many', probing_until = 'x' WHERE monitor_id = 'c-count'");
    await sql("UPDATE monitors SET last_probe_json = 12 WHERE monitor_id = 'c-count'");
    await sql("UPDATE probe_days SET hist_json = 'x', checks = 'lots' WHERE monitor_id = 'c-hist'");

    const overview = await jsonOf(
      await mesh.fetch("monitoring", "/v1/monitors", { headers: mesh.tenantHeaders("bakery") }),
      200,
    );
    for (const id of ids)
      assert.ok(
        overview.monitors.some((m) => m.id === id),
        id,
      );
    const admin = await jsonOf(await mesh.fetch("monitoring", "/admin/monitors", { headers: adminHeaders() }), 200);
    assert.equal(admin.monitors.find((m) => m.id === "c-json").enabled, true);
    const page = await jsonOf(await mesh.fetch("monitoring", "/status/bakery.json"), 200);
    assert.ok(page.monitors.some((m) => m.id === "c-good"));
    const html = await mesh.fetch("monitoring", "/status/bakery");
    assert.equal(html.status, 200);
    assert.match(await html.text(), /c-good/);

    // The next tick probes the others; the unreadable spec fails as a monitor the rules refuse.
    await runTick(["c-good", "c-hist", "c-count", "c-json"]);
    assert.equal((await lastProbe("c-good")).ok, 1);
    assert.equal((await lastProbe("c-hist")).ok, 1);
    assert.equal((await lastProbe("c-json")).reason, "ssrf_blocked");
    const hist = await (await db())
      .prepare("SELECT json_valid(hist_json) AS valid FROM probe_days WHERE monitor_id = 'c-hist'")
      .first();
    assert.equal(hist.valid, 1);
  });
});
