// Synthetic monitoring end to end on the real monitoring.wasm in workerd: probes through the host's
// fetch effect (HTMLRewriter checks mustContain on the real HTML), the worker's own job queue, the
// incident/alert pipeline against the PagerDuty and Slack stubs, SSRF refusals with local outbound
// off, and the status page.
//
// The origin is a small server started here (127.0.0.1 only) whose status, delay and body the test
// sets. Ticks are driven through POST /__test/tick (test hooks) so several ticks fit in a few seconds.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, beforeEach, describe, it } from "node:test";
import { errorOf, jsonOf, startMesh } from "./mesh.mjs";

const PAGE = `<!doctype html><html><head><title>Origin</title></head><body>
<main id="main" class="content"><h1>Welcome</h1>
<form id="contact" action="/submit" method="post"><input name="email" type="email">
<button type="submit" data-role="send">Send</button></form></main></body></html>`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(probe, what, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`waitFor: timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function startOrigin() {
  const origin = {
    status: 200,
    delayMs: 0,
    body: PAGE,
    redirectTo: null,
    hits: 0,
    url: "",
  };
  const server = createServer(async (req, res) => {
    origin.hits++;
    if (req.url.startsWith("/redirect") && origin.redirectTo) {
      res.writeHead(302, { location: origin.redirectTo });
      return res.end();
    }
    if (origin.delayMs) await sleep(origin.delayMs);
    res.writeHead(origin.status, { "content-type": "text/html; charset=utf-8" });
    res.end(origin.body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin.url = `http://127.0.0.1:${server.address().port}`;
  origin.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return origin;
}

let mesh;
let origin;
let tick = Math.floor(Date.now() / 300_000);

const adminHeaders = (tenant = "bakery") => ({
  "X-SiteSwarm-Tenant-Id": tenant,
  authorization: `Bearer ${mesh.tokens[tenant].adminToken}`,
  "content-type": "application/json",
});
const put = (id, body, tenant = "bakery") =>
  mesh.fetch("monitoring", `/admin/monitors/${id}`, {
    method: "PUT",
    headers: adminHeaders(tenant),
    body: JSON.stringify(body),
  });
const db = () => mesh.d1("monitoring", "MONITORING_DB");
const probeCount = async (id) =>
  (await (await db()).prepare("SELECT COUNT(*) AS n FROM probes WHERE monitor_id = ?1").bind(id).first()).n;
const pendingAlerts = async () =>
  (await (await db()).prepare("SELECT COUNT(*) AS n FROM alerts WHERE state IN ('pending','sending')").first()).n;

/** One cron tick; waits until the monitor's probe is recorded and every alert has settled. */
async function runTick(id) {
  const before = await probeCount(id);
  const res = await mesh.fetch("monitoring", "/__test/tick", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tick: ++tick }),
  });
  await jsonOf(res, 200);
  await waitFor(async () => (await probeCount(id)) > before, `a probe of ${id}`);
  await waitFor(async () => (await pendingAlerts()) === 0, "alerts to settle", 20_000);
}

async function monitorView(id, tenant = "bakery") {
  const body = await jsonOf(
    await mesh.fetch("monitoring", "/v1/monitors", { headers: mesh.tenantHeaders(tenant) }),
    200,
  );
  return body.monitors.find((m) => m.id === id);
}

const monitor = (extra = {}) => ({
  url: `${origin.url}/`,
  mustContain: ["form#contact", "main button[data-role=send]"],
  alertChannels: {
    pagerduty: { routingKey: "R0UTINGKEY0123456789" },
    slack: { webhookUrl: `${mesh.stubs.url}/slack/services/T0/B0/secret` },
  },
  ...extra,
});

before(async () => {
  origin = await startOrigin();
  mesh = await startMesh({ queueBatchTimeout: 0.05 });
});
after(async () => {
  await mesh?.dispose();
  await origin?.close();
});
beforeEach(async () => {
  // Every test starts without monitors: they all probe the same origin.
  const list = await jsonOf(await mesh.fetch("monitoring", "/admin/monitors", { headers: adminHeaders() }), 200);
  for (const m of list.monitors) {
    await mesh.fetch("monitoring", `/admin/monitors/${m.id}`, { method: "DELETE", headers: adminHeaders() });
  }
  // A monitor deleted while down closes its incident: its resolves go out before the stubs forget.
  await waitFor(async () => (await pendingAlerts()) === 0, "the deleted monitors' alerts to settle", 20_000);
  origin.status = 200;
  origin.delayMs = 0;
  origin.body = PAGE;
  origin.redirectTo = null;
  mesh.stubs.reset();
});

describe("monitoring: monitors API", () => {
  it("stores every contract field with its defaults, and another tenant's id is a 404", async () => {
    const created = await jsonOf(await put("api-defaults", { url: `${origin.url}/` }), 201);
    assert.deepEqual(created.expectStatus, [200]);
    assert.equal(created.maxLatencyMs, 500);
    assert.equal(created.method, "GET");
    assert.equal(created.enabled, true);
    const other = await mesh.fetch("monitoring", "/admin/monitors/api-defaults", {
      headers: adminHeaders("auto-repair"),
    });
    await errorOf(other, 404, "not_found");
    const bad = await put("bad", { url: `${origin.url}/`, mustContain: ["a:hover"] });
    const error = await errorOf(bad, 400, "invalid_request");
    assert.equal(error.field, "mustContain[0]");
    await jsonOf(
      await mesh.fetch("monitoring", "/admin/monitors/api-defaults", {
        method: "DELETE",
        headers: adminHeaders(),
      }),
      200,
    );
  });
});

describe("monitoring: a monitor never probed", () => {
  it("is well-formed in /v1/monitors and on the status page: lastProbe an object of nulls", async () => {
    await jsonOf(await put("fresh", { url: `${origin.url}/` }), 201);
    const m = await monitorView("fresh");
    assert.equal(m.state, "unknown");
    assert.equal(m.url, `${origin.url}/`);
    assert.deepEqual(m.lastProbe, { at: null, ok: null, status: null, latencyMs: null, reason: null });
    assert.deepEqual(m.uptime, { "24h": null, "7d": null, "30d": null });
    assert.deepEqual(m.latencyMs, { p50: null, p95: null });
    assert.equal(m.incident, null);
    const status = await jsonOf(await mesh.fetch("monitoring", "/status/bakery.json"), 200);
    const shown = status.monitors.find((s) => s.id === "fresh");
    assert.deepEqual(shown.lastProbe, m.lastProbe);
    const html = await (await mesh.fetch("monitoring", "/status/bakery")).text();
    assert.ok(html.includes("fresh") && !html.includes("Last check"), "no empty last check on the page");
  });
});

describe("monitoring: its cron fired by hand on its own port (local runs)", () => {
  it("/__scheduled and /cdn-cgi/handler/scheduled run the */5 probe tick", async () => {
    await jsonOf(await put("by-hand", { url: `${origin.url}/` }), 201);
    const fired = await jsonOf(await mesh.fetch("monitoring", "/__scheduled?cron=*/5+*+*+*+*"), 200);
    assert.deepEqual([fired.ok, fired.cron], [true, "*/5 * * * *"]);
    await waitFor(async () => (await probeCount("by-hand")) === 1, "the first probe");
    // Another firing seconds later is another tick (its own scheduledTime): a second probe.
    const again = `/cdn-cgi/handler/scheduled?cron=${encodeURIComponent("*/5 * * * *")}&time=${Date.now() + 1000}`;
    await jsonOf(await mesh.fetch("monitoring", again), 200);
    await waitFor(async () => (await probeCount("by-hand")) === 2, "the second probe");
    assert.equal((await monitorView("by-hand")).state, "up");
  });
});

describe("monitoring: monitors API, writes", () => {
  it("keeps and answers maintenance windows in UTC, whatever offset was sent", async () => {
    const maintenance = [{ start: "2026-01-01T01:00:00+01:00", end: "2026-01-02T00:00:00.250-05:00" }];
    const utc = [{ start: "2026-01-01T00:00:00Z", end: "2026-01-02T05:00:00.250Z" }];
    const created = await jsonOf(await put("tz-window", { url: `${origin.url}/`, maintenance }), 201);
    assert.deepEqual(created.maintenance, utc);
    const read = await jsonOf(
      await mesh.fetch("monitoring", "/admin/monitors/tz-window", { headers: adminHeaders() }),
      200,
    );
    assert.deepEqual(read.maintenance, utc);
  });

  it("answers one 201 to concurrent creations of one monitor, 200 to the others", async () => {
    const answers = await Promise.all(Array.from({ length: 4 }, () => put("race", { url: `${origin.url}/` })));
    const statuses = answers.map((r) => r.status).sort();
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    assert.deepEqual(statuses, [200, 200, 200, 201]);
  });
});

describe("monitoring: probes in workerd", () => {
  it("passes on the real page and names each failure reason", async () => {
    await jsonOf(await put("reasons", monitor({ alertChannels: {} })), 201);
    await runTick("reasons");
    let m = await monitorView("reasons");
    assert.equal(m.state, "up", JSON.stringify(m));
    assert.equal(m.lastProbe.ok, true);
    assert.equal(m.lastProbe.status, 200);
    assert.equal(m.lastProbe.reason, null);
    assert.equal(typeof m.lastProbe.latencyMs, "number");

    origin.status = 503;
    await runTick("reasons");
    m = await monitorView("reasons");
    assert.equal(m.lastProbe.reason, "status_mismatch");
    assert.equal(m.lastProbe.status, 503);

    origin.status = 200;
    origin.body = PAGE.replace('data-role="send"', "");
    await runTick("reasons");
    assert.equal((await monitorView("reasons")).lastProbe.reason, "selector_missing:main button[data-role=send]");

    origin.body = PAGE;
    origin.delayMs = 700;
    await runTick("reasons");
    assert.equal((await monitorView("reasons")).lastProbe.reason, "too_slow");

    origin.delayMs = 0;
    await jsonOf(await put("reasons", monitor({ alertChannels: {}, timeoutMs: 200 })), 200);
    origin.delayMs = 1500;
    await runTick("reasons");
    assert.equal((await monitorView("reasons")).lastProbe.reason, "timeout");

    // network_error is covered by the native tests: this mesh's outbound service turns a refused
    // connection into a 5xx response, so workerd never sees the network failure itself.

    origin.delayMs = 0;
    // A redirect to a private address is refused hop by hop, even in local development.
    origin.redirectTo = "http://169.254.169.254/latest/meta-data/";
    await jsonOf(await put("reasons", monitor({ alertChannels: {}, url: `${origin.url}/redirect` })), 200);
    await runTick("reasons");
    assert.equal((await monitorView("reasons")).lastProbe.reason, "ssrf_blocked");
    mesh.stubs.reset();
  });
});

describe("monitoring: selectors on the real page", () => {
  it("matches attribute names in any case, as HTML does (lol-html compares them lower-cased)", async () => {
    origin.body = PAGE.replace('data-role="send"', 'Data-Role="send"');
    const mustContain = ["main BUTTON[DATA-ROLE=send]", "[Data-Role]", "form#contact[ACTION]"];
    await jsonOf(await put("attr-case", monitor({ alertChannels: {}, mustContain })), 201);
    await runTick("attr-case");
    const m = await monitorView("attr-case");
    assert.equal(m.lastProbe.reason, null, JSON.stringify(m.lastProbe));
    assert.equal(m.state, "up");
    // Values keep their case: a miss is named as written.
    await jsonOf(await put("attr-case", monitor({ alertChannels: {}, mustContain: ["[DATA-ROLE=SEND]"] })), 200);
    await runTick("attr-case");
    assert.equal((await monitorView("attr-case")).lastProbe.reason, "selector_missing:[DATA-ROLE=SEND]");
  });

  it("takes non-ASCII names, which CSS and lol-html take (#über, .café)", async () => {
    origin.body = PAGE.replace('<form id="contact"', '<form id="über" class="café"');
    const mustContain = ["main form#über.café", "[id=über]"];
    await jsonOf(await put("non-ascii", monitor({ alertChannels: {}, mustContain })), 201);
    await runTick("non-ascii");
    const m = await monitorView("non-ascii");
    assert.equal(m.lastProbe.reason, null, JSON.stringify(m.lastProbe));
    origin.body = PAGE;
    await runTick("non-ascii");
    assert.equal((await monitorView("non-ascii")).lastProbe.reason, "selector_missing:main form#über.café");
  });
});

describe("monitoring: platform workers through their service bindings", () => {
  it("probes the ledger's /health/consumers over EVENTS_SERVICE and sees it stall", async () => {
    const refused = await errorOf(
      await put("svc", { service: "events", path: "/admin/consumers" }),
      400,
      "invalid_request",
    );
    assert.equal(refused.field, "path");
    const unbound = await errorOf(await put("svc", { service: "billing" }), 400, "invalid_request");
    assert.equal(unbound.field, "service");

    const created = await jsonOf(await put("svc", { service: "events", path: "/health/consumers" }), 201);
    assert.equal(created.url, "service://events/health/consumers");
    await jsonOf(await put("svc-leads", { service: "leads" }), 201);
    await runTick("svc");
    let m = await monitorView("svc");
    assert.equal(m.state, "up", JSON.stringify(m));
    assert.equal(m.lastProbe.status, 200);
    assert.equal(typeof m.lastProbe.latencyMs, "number");
    assert.equal((await monitorView("svc-leads")).lastProbe.status, 200);

    // An event nobody has drained for two hours: the ledger's paging probe answers 503.
    const events = await mesh.d1("events", "EVENTS_DB");
    const emitted = await mesh.fetch("events", "/api/events", {
      method: "POST",
      headers: { ...mesh.tenantHeaders("bakery"), "content-type": "application/json" },
      body: JSON.stringify({ event_type: "monitoring.test", entity_ref: "probe:1", payload: {} }),
    });
    const { event_id: eventId } = await jsonOf(emitted, 201);
    assert.match(eventId, /^[0-9A-Z]{26}$/);
    // Lag is measured from the oldest unread event: every event of this mesh is two hours old now.
    await events
      .prepare("UPDATE events SET recorded_at = ?1")
      .bind(new Date(Date.now() - 2 * 3_600_000).toISOString())
      .run();
    await runTick("svc");
    m = await monitorView("svc");
    assert.equal(m.lastProbe.status, 503);
    assert.equal(m.lastProbe.reason, "status_mismatch");
    // Leave the ledger as it was for the other suites: drain every consumer.
    for (const consumer of [
      "workflow_runner",
      "timeline_indexer",
      "anomaly_detector",
      "reflexion_analyzer",
      "customer_health_watcher",
    ]) {
      await mesh.fetch("events", `/admin/events/drain?consumer=${consumer}`, {
        method: "POST",
        headers: { authorization: `Bearer ${mesh.adminToken}` },
      });
    }
  });
});

describe("monitoring: incidents and alerts", () => {
  it("2 failures then a success: no incident, no alert", async () => {
    await jsonOf(await put("flaky", monitor()), 201);
    origin.status = 500;
    await runTick("flaky");
    await runTick("flaky");
    origin.status = 200;
    await runTick("flaky");
    assert.equal((await monitorView("flaky")).incident, null);
    assert.equal(mesh.stubs.find("/v2/enqueue").length, 0);
    assert.equal(mesh.stubs.find("/slack/").length, 0);
  });

  it("3 failures: one PagerDuty trigger and one Slack message; a success: one resolve", async () => {
    await jsonOf(await put("outage", monitor()), 201);
    origin.status = 503;
    for (let i = 0; i < 4; i++) await runTick("outage");
    const triggers = mesh.stubs.find("/v2/enqueue").map((r) => JSON.parse(r.body));
    assert.equal(triggers.length, 1);
    assert.equal(triggers[0].routing_key, "R0UTINGKEY0123456789");
    assert.equal(triggers[0].event_action, "trigger");
    assert.ok(triggers[0].dedup_key);
    assert.equal(triggers[0].payload.severity, "critical");
    assert.equal(triggers[0].payload.source, "siteswarm-synthetic-monitoring");
    assert.match(triggers[0].payload.summary, /outage/);
    const slack = mesh.stubs.find("/slack/services/T0/B0/secret");
    assert.equal(slack.length, 1);
    assert.match(JSON.parse(slack[0].body).text, /outage/);
    const down = await monitorView("outage");
    assert.equal(down.state, "down");
    assert.equal(down.incident.reason, "status_mismatch");

    origin.status = 200;
    await runTick("outage");
    const all = mesh.stubs.find("/v2/enqueue").map((r) => JSON.parse(r.body));
    assert.equal(all.length, 2);
    assert.equal(all[1].event_action, "resolve");
    assert.equal(all[1].dedup_key, triggers[0].dedup_key);
    assert.equal(mesh.stubs.find("/slack/").length, 2);
    const up = await monitorView("outage");
    assert.equal(up.state, "up");
    assert.equal(up.incident, null);

    // The ledger got the pipeline's events through its queue, stamped with the monitor's tenant.
    const ledger = async (tenant) => {
      const path = "/api/events?type=monitor.*&entity=monitor:outage&limit=100";
      const res = await mesh.fetch("events", path, { headers: mesh.tenantHeaders(tenant) });
      return (await jsonOf(res, 200)).events;
    };
    const ofIncident = (events) => events.filter((e) => e.payload?.incidentId === down.incident.id);
    await waitFor(async () => ofIncident(await ledger("bakery")).length === 2, "the incident's events");
    const events = await ledger("bakery");
    assert.deepEqual(
      ofIncident(events)
        .map((e) => e.event_type)
        .sort(),
      ["monitor.incident_opened", "monitor.incident_resolved"],
    );
    assert.ok(events.filter((e) => e.event_type === "monitor.probe_failed").length >= 4);
    assert.ok(events.every((e) => e.tenant_id === "bakery" && e.entity_ref === "monitor:outage"));
    assert.deepEqual(await ledger("auto-repair"), []);
  });

  it("three cron firings seconds apart (real scheduled events, as an operator triggers them) probe three times and open the incident", async () => {
    await jsonOf(await put("manual", monitor()), 201);
    origin.status = 503;
    const worker = await mesh.mf.getWorker("siteswarm-synthetic-monitoring");
    for (let i = 0; i < 3; i++) {
      const before = await probeCount("manual");
      await worker.scheduled({ cron: "*/5 * * * *", scheduledTime: new Date() });
      await waitFor(async () => (await probeCount("manual")) > before, `probe ${i + 1}`);
    }
    await waitFor(async () => (await pendingAlerts()) === 0, "alerts to settle", 20_000);
    assert.equal(await probeCount("manual"), 3);
    const down = await monitorView("manual");
    assert.equal(down.state, "down");
    assert.equal(down.incident.reason, "status_mismatch");
    assert.equal(mesh.stubs.find("/v2/enqueue").length, 1);
    // The status page shows it at once (its cached copy is dropped when the state changes).
    const status = await jsonOf(await mesh.fetch("monitoring", "/status/bakery.json"), 200);
    assert.equal(status.monitors.find((m) => m.id === "manual").state, "down");
  });

  it("a hooks.slack.com webhook goes to SLACK_API_URL (the stub) with its path and query", async () => {
    // The tenant gives Slack's real URL; workers.json's local vars point SLACK_API_URL at the stubs,
    // so nothing is posted to the internet (the mesh's outbound refuses it anyway).
    const webhookUrl = "https://hooks.slack.com/services/T1/B1/hooksecret?thread=1";
    await jsonOf(await put("slackhook", monitor({ alertChannels: { slack: { webhookUrl } } })), 201);
    origin.status = 503;
    for (let i = 0; i < 3; i++) await runTick("slackhook");
    const [message, ...more] = mesh.stubs.find("/slack/services/T1/B1/hooksecret", "POST");
    assert.equal(more.length, 0);
    assert.deepEqual(message.query, { thread: "1" });
    assert.match(JSON.parse(message.body).text, /slackhook/);
    const { alerts } = await jsonOf(
      await mesh.fetch("monitoring", "/admin/monitors/slackhook/alerts", { headers: adminHeaders() }),
      200,
    );
    assert.deepEqual(
      alerts.map((a) => [a.channel, a.action, a.state]),
      [["slack", "trigger", "sent"]],
    );
    // The stored webhook is still the tenant's.
    const saved = await jsonOf(
      await mesh.fetch("monitoring", "/admin/monitors/slackhook", { headers: adminHeaders() }),
      200,
    );
    assert.equal(saved.alertChannels.slack.webhookUrl, webhookUrl);
  });

  it("a monitor deleted while down: its PagerDuty incident is resolved and Slack is told", async () => {
    await jsonOf(await put("gone", monitor()), 201);
    origin.status = 503;
    for (let i = 0; i < 3; i++) await runTick("gone");
    const [trigger] = mesh.stubs.find("/v2/enqueue").map((r) => JSON.parse(r.body));
    assert.equal(trigger.event_action, "trigger");
    await jsonOf(
      await mesh.fetch("monitoring", "/admin/monitors/gone", { method: "DELETE", headers: adminHeaders() }),
      200,
    );
    await waitFor(async () => (await pendingAlerts()) === 0, "the resolves to settle", 20_000);
    const pd = mesh.stubs.find("/v2/enqueue").map((r) => JSON.parse(r.body));
    assert.equal(pd.length, 2);
    assert.deepEqual(pd[1], {
      routing_key: "R0UTINGKEY0123456789",
      event_action: "resolve",
      dedup_key: trigger.dedup_key,
    });
    const slack = mesh.stubs.find("/slack/services/T0/B0/secret").map((r) => JSON.parse(r.body).text);
    assert.equal(slack.length, 2);
    assert.match(slack[1], /no longer monitored \(the monitor was deleted\)/);
    const row = await (await db()).prepare("SELECT resolved_at FROM incidents WHERE monitor_id = 'gone'").first();
    assert.ok(row.resolved_at, "the incident is resolved in D1");
  });

  it("a monitor deleted and made again under its id shows none of the old one's incidents", async () => {
    await jsonOf(await put("remade", monitor()), 201);
    origin.status = 503;
    for (let i = 0; i < 3; i++) await runTick("remade");
    const old = (await monitorView("remade")).incident;
    assert.ok(old?.id, "the old monitor's incident is open");
    await jsonOf(
      await mesh.fetch("monitoring", "/admin/monitors/remade", { method: "DELETE", headers: adminHeaders() }),
      200,
    );
    await waitFor(async () => (await pendingAlerts()) === 0, "the resolves to settle", 20_000);
    await jsonOf(await put("remade", monitor()), 201);
    const shown = async () => {
      const data = await jsonOf(await mesh.fetch("monitoring", "/status/bakery.json"), 200);
      return data.incidents.filter((i) => i.monitorId === "remade");
    };
    assert.deepEqual(await shown(), []);
    assert.equal((await monitorView("remade")).incident, null);
    const alerts = async () =>
      (await jsonOf(await mesh.fetch("monitoring", "/admin/monitors/remade/alerts", { headers: adminHeaders() }), 200))
        .alerts;
    assert.deepEqual(await alerts(), []);
    const html = await (await mesh.fetch("monitoring", "/status/bakery")).text();
    assert.ok(!html.includes("<strong>remade</strong>"), "no incident of remade on the page");
    // The footer's "Updated …" may fall in the same second as the old incident's opening.
    const incidents = html.slice(0, html.indexOf("<footer>"));
    assert.ok(html.includes("<footer>") && !incidents.includes(old.openedAt), "the old incident is not on the page");
    // Probed up, its figures are its own: no failure of the old monitor's.
    origin.status = 200;
    await runTick("remade");
    const view = await monitorView("remade");
    assert.equal(view.state, "up");
    assert.equal(view.uptime["24h"], 100);
    assert.deepEqual(await shown(), []);
    // In D1 the old incident stays, resolved and marked as a deleted monitor's.
    const row = await (await db())
      .prepare("SELECT resolved_at, monitor_deleted FROM incidents WHERE incident_id = ?1")
      .bind(old.id)
      .first();
    assert.ok(row.resolved_at);
    assert.equal(row.monitor_deleted, 1);
  });

  it("an alert endpoint down then up: each alert arrives exactly once", async () => {
    await jsonOf(await put("retry", monitor()), 201);
    origin.status = 500;
    await runTick("retry");
    await runTick("retry");
    mesh.stubs.failNext("/v2/enqueue", 2);
    mesh.stubs.failNext("/slack/", 1);
    await runTick("retry");
    const accepted = (prefix) => mesh.stubs.find(prefix).length; // failed attempts are recorded too
    assert.equal(accepted("/v2/enqueue"), 3); // 2 failures + 1 success
    assert.equal(accepted("/slack/"), 2);
    const alerts = await jsonOf(
      await mesh.fetch("monitoring", "/admin/monitors/retry/alerts", {
        headers: adminHeaders(),
      }),
      200,
    );
    assert.deepEqual(
      alerts.alerts.map((a) => a.state),
      ["sent", "sent"],
    );
    assert.ok(!JSON.stringify(alerts).includes("R0UTINGKEY"));
  });

  it("a maintenance window: probes recorded, nothing alerts", async () => {
    const now = Date.now();
    const window = {
      start: new Date(now - 3_600_000).toISOString().replace(/\.\d+Z$/, "Z"),
      end: new Date(now + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z"),
    };
    await jsonOf(await put("maint", monitor({ maintenance: [window] })), 201);
    origin.status = 503;
    for (let i = 0; i < 4; i++) await runTick("maint");
    assert.equal(await probeCount("maint"), 4);
    assert.equal((await monitorView("maint")).incident, null);
    assert.equal(mesh.stubs.find("/v2/enqueue").length, 0);
    assert.equal(mesh.stubs.find("/slack/").length, 0);
  });

  it("a window that has not started yet suppresses nothing: 3 failures open an incident and page", async () => {
    const now = Date.now();
    const window = {
      start: new Date(now + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z"),
      end: new Date(now + 7_200_000).toISOString().replace(/\.\d+Z$/, "Z"),
    };
    await jsonOf(await put("later", monitor({ maintenance: [window] })), 201);
    origin.status = 503;
    for (let i = 0; i < 3; i++) await runTick("later");
    const pd = mesh.stubs.find("/v2/enqueue").map((r) => JSON.parse(r.body));
    assert.deepEqual(
      pd.map((e) => e.event_action),
      ["trigger"],
    );
    assert.equal(mesh.stubs.find("/slack/").length, 1);
    const down = await monitorView("later");
    assert.equal(down.state, "down");
    assert.equal(down.incident?.reason, "status_mismatch");
  });

  it("an incident that recovers inside a window: no resolve during it, the first success after it resolves", async () => {
    const pd = () => mesh.stubs.find("/v2/enqueue").map((r) => JSON.parse(r.body));
    const slack = () => mesh.stubs.find("/slack/").length;
    await jsonOf(await put("planned", monitor()), 201);
    origin.status = 503;
    for (let i = 0; i < 3; i++) await runTick("planned");
    const opened = pd();
    assert.equal(opened.length, 1);
    assert.equal(opened[0].event_action, "trigger");
    const slackOpened = slack();
    // Planned work starts; the site comes back inside it.
    const now = Date.now();
    const window = {
      start: new Date(now - 60_000).toISOString().replace(/\.\d+Z$/, "Z"),
      end: new Date(now + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z"),
    };
    await jsonOf(await put("planned", monitor({ maintenance: [window] })), 200);
    origin.status = 200;
    await runTick("planned");
    await runTick("planned");
    assert.equal(pd().length, 1, "no resolve is sent inside the window");
    assert.equal(slack(), slackOpened);
    const during = await monitorView("planned");
    assert.equal(during.state, "up");
    assert.ok(during.incident, "the incident stays open until the window is over");
    // The window is over (removed): the first success resolves the incident and sends the resolve.
    await jsonOf(await put("planned", monitor()), 200);
    await runTick("planned");
    const all = pd();
    assert.equal(all.length, 2);
    assert.equal(all[1].event_action, "resolve");
    assert.equal(all[1].dedup_key, opened[0].dedup_key);
    assert.equal(slack(), slackOpened + 1);
    assert.equal((await monitorView("planned")).incident, null);
  });
});

describe("monitoring: status page", () => {
  it("serves HTML without scripts and the same data as JSON", async () => {
    await jsonOf(await put("outage", monitor()), 201);
    await runTick("outage");
    const res = await mesh.fetch("monitoring", "/status/bakery");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/html/);
    assert.match(res.headers.get("cache-control"), /max-age=60/);
    const html = await res.text();
    assert.ok(!/<script/i.test(html));
    assert.match(html, /outage/);
    const data = await jsonOf(await mesh.fetch("monitoring", "/status/bakery.json"), 200);
    assert.ok(data.monitors.length >= 1);
    assert.equal(data.monitors[0].days.length, 90);
    // The page prints the 90-day uptime with two decimals (the wasm's own snprintf, shared/printf_lite).
    const up90 = data.monitors[0].uptime["90d"];
    assert.equal(typeof up90, "number");
    assert.ok(html.includes(`${up90.toFixed(2)}% uptime`), `no "${up90.toFixed(2)}% uptime" in the page`);
    await errorOf(await mesh.fetch("monitoring", "/status/nobody"), 404, "not_found");
    await errorOf(await mesh.fetch("monitoring", "/status/nobody.json"), 404, "not_found");
  });
});

describe("monitoring: SSRF with local outbound off", () => {
  let strict;
  before(async () => {
    strict = await startMesh({ bindings: { monitoring: { ALLOW_LOCAL_OUTBOUND: "0" } } });
  });
  after(async () => strict?.dispose());

  it("refuses loopback, private, link-local and obfuscated targets, naming the field", async () => {
    for (const url of [
      "http://127.1/",
      "http://[::1]/",
      "http://169.254.169.254/",
      "http://0x7f000001/",
      "http://user@10.0.0.1/",
      "http://127.0.0.1:8080/",
      "http://localhost/",
      "file:///etc/passwd",
    ]) {
      const res = await strict.fetch("monitoring", "/admin/monitors/ssrf", {
        method: "PUT",
        headers: {
          "X-SiteSwarm-Tenant-Id": "bakery",
          authorization: `Bearer ${strict.tokens.bakery.adminToken}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ url }),
      });
      const error = await errorOf(res, 400, "invalid_request");
      assert.equal(error.field, "url", url);
    }
  });
});
