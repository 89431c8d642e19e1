// The ledger's consumers beyond workflow_runner and its operator alerts, on the real events.wasm in
// workerd (docs/runbook-events.md): /health/consumers 503 on a stall, PagerDuty v2 + Slack alerts at the local
// stubs (once per cap hit and hour, real request format), the five cron triggers, reflexion_log and
// tenant health for operators, order=desc, PATCH of a subscription, and the runbook's scenarios.
//
// workerd's clock is real, so "an hour ago" is written into D1 directly (recorded_at): the only
// way a test of seconds can show a stall of an hour. Virtual-time tests of the windows live in
// workers/events/consumers-test.cpp.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { errorOf, jsonOf, startMesh } from "./mesh.mjs";

const EVENTS = "siteswarm-events-service";
const TABLES = [
  "events",
  "event_subscriptions",
  "workflow_definitions",
  "event_drain_state",
  "event_consumer_dedupe",
  "events_quarantine",
  "workflow_run_log",
  "cron_locks",
  "kill_switches",
  "entity_timelines",
  "event_type_rates",
  "anomaly_signals",
  "reflexion_log",
  "tenant_health",
  "events_alerts",
];
const CONSUMERS = [
  "workflow_runner",
  "timeline_indexer",
  "anomaly_detector",
  "reflexion_analyzer",
  "customer_health_watcher",
];
const JSON_TYPE = { "content-type": "application/json" };

let mesh;
let db;
before(async () => {
  const tenants = [
    { appId: "bakery", config: {} },
    { appId: "auto-repair", config: {} },
  ];
  mesh = await startMesh({ tenants });
  db = await mesh.d1("events", "EVENTS_DB");
});
after(async () => {
  await mesh?.dispose();
});
beforeEach(async () => {
  await db.batch(TABLES.map((t) => db.prepare(`DELETE FROM ${t}`)));
  mesh.stubs.reset();
});

function admin(method, pathname, body) {
  const init = { method, headers: mesh.operator(body === undefined ? {} : JSON_TYPE) };
  if (body !== undefined) init.body = JSON.stringify(body);
  return mesh.fetch("events", pathname, init);
}
async function emit(eventType, payload = {}, entityRef = "item:1", tenant = "bakery") {
  const res = await mesh.fetch("events", "/api/events", {
    method: "POST",
    headers: { ...mesh.tenantHeaders(tenant), ...JSON_TYPE },
    body: JSON.stringify({ event_type: eventType, entity_ref: entityRef, payload }),
  });
  return (await jsonOf(res, 201)).event_id;
}
async function drain(consumer) {
  const body = await jsonOf(await admin("POST", `/admin/events/drain?consumer=${consumer}`), 200);
  return body.consumers[consumer];
}
const rows = async (sql, ...params) =>
  (
    await db
      .prepare(sql)
      .bind(...params)
      .all()
  ).results;
const hoursAgo = (h) => new Date(Date.now() - h * 3_600_000).toISOString();
const pagerDuty = () => mesh.stubs.find("/v2/enqueue", "POST").map((r) => JSON.parse(r.body));
const slack = () => mesh.stubs.find("/slack/events-alerts", "POST").map((r) => JSON.parse(r.body));

describe("stalls", () => {
  it("/health/consumers answers 503 with the reason while a consumer is stalled (/health stays 200), then pages once", async () => {
    await emit("order.placed");
    assert.equal((await mesh.fetch("events", "/health/consumers")).status, 200);
    for (const c of CONSUMERS.slice(1)) await drain(c);
    await db.prepare("UPDATE events SET recorded_at = ?1").bind(hoursAgo(2)).run();

    // The platform's /health contract holds: 200 ok:true, the stall named in its status.
    const plain = await jsonOf(await mesh.fetch("events", "/health"), 200);
    assert.equal(plain.ok, true);
    assert.equal(plain.status, "stalled");
    assert.match(plain.reason, /workflow_runner is stalled/);

    const res = await mesh.fetch("events", "/health/consumers");
    const body = await jsonOf(res, 503);
    assert.equal(body.ok, false);
    assert.equal(body.service, EVENTS);
    assert.equal(body.status, "stalled");
    assert.match(body.reason, /workflow_runner is stalled/);
    assert.equal(body.error.code, "consumer_stalled");
    assert.equal(body.consumers, undefined, "the details stay the operator's");

    // Two cron runs during the stall: one page, one Slack message.
    const worker = await mesh.mf.getWorker(EVENTS);
    await worker.scheduled({ cron: "*/5 * * * *", scheduledTime: new Date() });
    await worker.scheduled({ cron: "*/2 * * * *", scheduledTime: new Date() });
    const pages = pagerDuty().filter((p) => p.payload?.class === "consumer_stalled");
    // The */2 run drained workflow_runner first: the stall it paged for is over, no second alert —
    // a resolve with the same dedup_key instead, so the PagerDuty incident closes by itself.
    assert.equal(pages.length, 1);
    assert.equal(pages[0].routing_key, "local-events-routing-key");
    assert.equal(pages[0].payload.custom_details.consumer, "workflow_runner");
    const resolves = pagerDuty().filter((p) => p.event_action === "resolve");
    assert.equal(resolves.length, 1);
    assert.equal(resolves[0].dedup_key, pages[0].dedup_key);
    assert.equal(slack().length, 2);
    assert.match(slack()[1].text, /resolved/);
    assert.equal((await mesh.fetch("events", "/health/consumers")).status, 200);
  });
});

describe("alerts", () => {
  it("a fan-out cap hit: one PagerDuty v2 trigger and one Slack message per subscription and hour", async () => {
    await jsonOf(
      await admin("PUT", "/admin/workflows/notify", { target: { webhook: `${mesh.stubs.url}/webhook/n` } }),
      201,
    );
    for (let i = 0; i < 10; i++) {
      await jsonOf(
        await admin("POST", "/admin/subscriptions", { event_type_glob: "order.*", workflow_type: "notify" }),
        201,
      );
    }
    const first = await emit("order.placed");
    await emit("order.placed");
    const report = await drain("workflow_runner");
    assert.equal(report.capped, 2);
    const delivered = await jsonOf(await admin("POST", "/admin/alerts/deliver"), 200);
    assert.equal(delivered.sent, 1);
    await jsonOf(await admin("POST", "/admin/alerts/deliver"), 200); // nothing left to send

    const pages = pagerDuty();
    assert.equal(pages.length, 1);
    const [page] = pages;
    assert.equal(page.event_action, "trigger");
    assert.equal(page.routing_key, "local-events-routing-key");
    assert.match(page.dedup_key, /^siteswarm-events:fanout_capped:[0-9A-Z]{26}:\d+$/);
    assert.equal(page.payload.source, EVENTS);
    assert.equal(page.payload.severity, "error");
    assert.match(page.payload.summary, /matched 10 subscriptions; 2 dropped over the cap of 8/);
    assert.equal(page.payload.custom_details.event_id, first);
    assert.deepEqual(
      page.payload.custom_details.dropped_patterns.map((p) => p.event_type_glob),
      ["order.*", "order.*"],
    );
    const [message] = slack();
    assert.match(message.text, /fanout_capped/);
    const listed = await jsonOf(await admin("GET", "/admin/alerts"), 200);
    assert.equal(listed.alerts.length, 1);
    assert.equal(typeof listed.alerts[0].pagerduty_sent_at, "string");
    assert.doesNotMatch(JSON.stringify(listed), /local-events-routing-key/);
  });
});

describe("consumers", () => {
  it("cron */30 runs reflexion_analyzer and */5 customer_health_watcher; operators read what they keep", async () => {
    await emit("lead.delivered", { channel: "email" }, "lead:1");
    for (let i = 0; i < 3; i++) {
      await emit(
        "lead.delivery_failed",
        { channel: "email", provider: "resend", error: "resend answered 503" },
        "lead:2",
      );
    }
    await emit("workflow.run_failed", { workflow_type: "notify", error: "target answered 500" }, "workflow:notify");
    const worker = await mesh.mf.getWorker(EVENTS);
    await worker.scheduled({ cron: "*/30 * * * *", scheduledTime: new Date() });
    await worker.scheduled({ cron: "*/5 * * * *", scheduledTime: new Date() });

    const { patterns } = await jsonOf(await admin("GET", "/admin/reflexion"), 200);
    assert.equal(patterns.length, 2);
    assert.equal(patterns[0].subject, "lead.delivery_failed");
    assert.equal(patterns[0].error_class, "email.resend:http_5xx");
    assert.equal(patterns[0].count, 3);
    assert.equal(patterns[1].subject, "notify");

    const health = await jsonOf(await admin("GET", "/admin/tenants/bakery/health"), 200);
    assert.equal(health.score, 60); // 3 of 4 deliveries failed (-37.5), one workflow run failed (-2)
    assert.equal(health.band, "watch");
    const changed = await rows("SELECT * FROM events WHERE event_type = 'tenant.health_changed'");
    assert.equal(changed.length, 1);
    assert.equal(changed[0].tenant_id, "bakery");
    assert.equal(JSON.parse(changed[0].payload_json).to, "watch");
    const other = await jsonOf(await admin("GET", "/admin/tenants/auto-repair/health"), 200);
    assert.equal(other.score, 100);
    await errorOf(await admin("GET", "/admin/tenants/nobody/health"), 404, "not_found");
    await errorOf(
      await mesh.fetch("events", "/admin/tenants/bakery/health", { headers: mesh.tenantHeaders("bakery") }),
      401,
      "unauthorized",
    );
  });
});

describe("reads and subscriptions", () => {
  it("GET /api/events?order=desc pages newest first by insertion", async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await emit("price.changed", { i }));
    await emit("price.changed", {}, "item:1", "auto-repair");
    const get = async (q) =>
      jsonOf(await mesh.fetch("events", `/api/events${q}`, { headers: mesh.tenantHeaders("bakery") }), 200);
    const page1 = await get("?order=desc&limit=3");
    assert.deepEqual(
      page1.events.map((e) => e.event_id),
      ids.slice(2).reverse(),
    );
    const page2 = await get(`?order=desc&limit=3&after=${page1.next}`);
    assert.deepEqual(
      page2.events.map((e) => e.event_id),
      ids.slice(0, 2).reverse(),
    );
    assert.equal(page2.next, null);
    const bad = await errorOf(
      await mesh.fetch("events", "/api/events?order=up", { headers: mesh.tenantHeaders("bakery") }),
      400,
      "invalid_request",
    );
    assert.match(bad.message, /order/);
  });

  it("runbook 'Narrow': PATCH a subscription in place; validation names the field; foreign ids are 404", async () => {
    const sub = await jsonOf(
      await admin("POST", "/admin/subscriptions", { event_type_glob: "*", workflow_type: "notify" }),
      201,
    );
    const bad = await jsonOf(
      await admin("PATCH", `/admin/subscriptions/${sub.id}`, { filter_expr: "payload.a >" }),
      400,
    );
    assert.equal(bad.error.field, "filter_expr");
    await errorOf(
      await admin("PATCH", "/admin/subscriptions/01HZZZZZZZZZZZZZZZZZZZZZZZ", { enabled: false }),
      404,
      "not_found",
    );
    const narrowed = await jsonOf(
      await admin("PATCH", `/admin/subscriptions/${sub.id}`, {
        event_type_glob: "price.changed",
        filter_expr: "payload.amount > 100",
      }),
      200,
    );
    assert.equal(narrowed.event_type_glob, "price.changed");
    assert.equal(narrowed.workflow_type, "notify");
    const audit = await rows("SELECT * FROM event_subscriptions WHERE event_type_glob LIKE '%*%'");
    assert.equal(audit.length, 0);
  });

  it("runbook 'idempotency_key collision': one event per key, the seed's check is empty, a tombstone records the decision", async () => {
    const post = (body, headers = mesh.tenantHeaders("bakery")) =>
      mesh.fetch("events", "/api/events", {
        method: "POST",
        headers: { ...headers, ...JSON_TYPE },
        body: JSON.stringify(body),
      });
    // Two producers, the same key: the second gets the first's id and nothing is written.
    const draft = { event_type: "order.created", entity_ref: "order:7", payload: { total: 12 } };
    const first = await jsonOf(
      await post({ ...draft, source_system: "shop-a", idempotency_key: "order.created:order:7:v1" }),
      201,
    );
    const again = await jsonOf(
      await post({
        ...draft,
        source_system: "shop-b",
        payload: { total: 99 },
        idempotency_key: "order.created:order:7:v1",
      }),
      200,
    );
    assert.deepEqual(again, { event_id: first.event_id, duplicate: true });
    // The same meaning under another key: a second event (keys are the producers' promise).
    const other = await jsonOf(
      await post({ ...draft, source_system: "shop-b", idempotency_key: "order-7-created" }),
      201,
    );

    // Step 1: who emitted, newest first; and the seed's duplicate check, word for word, is empty.
    const listed = await jsonOf(await admin("GET", "/api/events?entity=order:7&order=desc&tenant=bakery"), 200);
    assert.deepEqual(
      listed.events.map((e) => e.event_id),
      [other.event_id, first.event_id],
    );
    assert.deepEqual(
      listed.events.map((e) => e.source_system),
      ["shop-b", "shop-a"],
      "each event names its producer",
    );
    assert.equal(listed.events[1].payload.total, 12, "the duplicate's payload was not written");
    const dupes = await rows(
      "SELECT idempotency_key, COUNT(*) AS n FROM events WHERE idempotency_key IS NOT NULL GROUP BY COALESCE(tenant_id,''), idempotency_key HAVING COUNT(*) > 1",
    );
    assert.deepEqual(dupes, []);

    // Step 2: the decision is a tombstone event, never a DELETE or an UPDATE.
    const before = await rows("SELECT * FROM events WHERE event_id = ?1", other.event_id);
    const tombstone = await jsonOf(
      await post(
        {
          event_type: "events.tombstoned",
          entity_ref: `event:${other.event_id}`,
          payload: { reason: `duplicate of ${first.event_id}` },
        },
        mesh.operator(),
      ),
      201,
    );
    const audit = await jsonOf(await admin("GET", "/api/events?type=events.tombstoned&order=desc"), 200);
    const recorded = audit.events.find((e) => e.event_id === tombstone.event_id);
    assert.ok(recorded, "the tombstone is listed");
    assert.equal(recorded.entity_ref, `event:${other.event_id}`);
    assert.equal(recorded.payload.reason, `duplicate of ${first.event_id}`);
    assert.deepEqual(
      await rows("SELECT * FROM events WHERE event_id = ?1", other.event_id),
      before,
      "the tombstoned event itself is untouched",
    );
  });

  it("runbook 'storage is growing': retention redacts what is past the period, keeps ids and provenance, and tombstones each run", async () => {
    const old = [await emit("price.changed", { secret: "a" }), await emit("price.changed", { secret: "b" }, "item:2")];
    const auto = await emit("lead.received", { secret: "c" }, "lead:1", "auto-repair");
    const fresh = await emit("price.changed", { secret: "d" });
    // Three events recorded 731 days ago (the default period is 730): written into D1, workerd's clock being real.
    const longAgo = hoursAgo(731 * 24);
    for (const id of [...old, auto]) {
      await db.prepare("UPDATE events SET recorded_at = ?1 WHERE event_id = ?2").bind(longAgo, id).run();
    }
    // The runbook's check, word for word.
    const [{ n }] = await rows(
      "SELECT COUNT(*) AS n FROM events WHERE redacted_at IS NULL AND event_type != 'events.tombstoned' AND recorded_at < strftime('%Y-%m-%dT%H:%M:%fZ','now','-730 days')",
    );
    assert.equal(n, 3);

    // Run it now, repeated until nothing is left to redact.
    const first = await jsonOf(await admin("POST", "/admin/events/retention"), 200);
    assert.equal(first.redacted, 3);
    assert.equal((await jsonOf(await admin("POST", "/admin/events/retention"), 200)).redacted, 0);

    const stored = Object.fromEntries(
      (
        await rows(
          "SELECT event_id, tenant_id, event_type, entity_type, entity_id, payload_json, redacted_at FROM events",
        )
      ).map((r) => [r.event_id, r]),
    );
    for (const id of [...old, auto]) {
      assert.deepEqual(JSON.parse(stored[id].payload_json), { _redacted: true }, id);
      assert.ok(stored[id].redacted_at, id);
    }
    assert.deepEqual([stored[old[1]].entity_type, stored[old[1]].entity_id], ["item", "2"], "ids and entities stay");
    assert.deepEqual(JSON.parse(stored[fresh].payload_json), { secret: "d" }, "a recent event is untouched");

    // Audit: one tombstone per tenant, each naming its summary; the summaries count what went.
    const audit = await jsonOf(await admin("GET", "/api/events?type=events.tombstoned&order=desc"), 200);
    const byTenant = Object.fromEntries(audit.events.map((e) => [e.tenant_id, e]));
    assert.equal(audit.events.length, 2);
    assert.equal(byTenant.bakery.payload.reason, "retention");
    assert.deepEqual(
      byTenant.bakery.payload.summary.map((s) => [s.event_type, s.count]),
      [["price.changed", 2]],
    );
    assert.deepEqual(
      byTenant["auto-repair"].payload.summary.map((s) => [s.event_type, s.count]),
      [["lead.received", 1]],
    );
    const summaries = await rows("SELECT event_type, event_count FROM events_retention_summaries ORDER BY event_type");
    assert.deepEqual(
      summaries.map((r) => [r.event_type, r.event_count]),
      [
        ["lead.received", 1],
        ["price.changed", 2],
      ],
    );
    // No payload text survives anywhere in the ledger's tables.
    const everything = JSON.stringify(await rows("SELECT * FROM events WHERE event_id != ?1", fresh));
    for (const secret of ['"secret":"a"', '"secret":"b"', '"secret":"c"']) assert.ok(!everything.includes(secret));
  });
});

describe("provenance and kill switches", () => {
  const startTarget = async (type, extra = {}) =>
    jsonOf(
      await admin("PUT", `/admin/workflows/${type}`, {
        target: { webhook: `${mesh.stubs.url}/webhook/${type}` },
        ...extra,
      }),
      201,
    );

  it("the runner records workflow.run_started caused by the event, and the start names the run", async () => {
    await startTarget("notify");
    await jsonOf(
      await admin("POST", "/admin/subscriptions", { event_type_glob: "order.*", workflow_type: "notify" }),
      201,
    );
    const id = await emit("order.placed");
    assert.equal((await drain("workflow_runner")).started, 1);
    const [start] = mesh.stubs.find("/webhook/notify", "POST");
    const body = JSON.parse(start.body);
    assert.equal(start.headers["x-siteswarm-workflow-run-id"], body.workflow_run_id);
    const [run] = await rows("SELECT * FROM events WHERE event_type = 'workflow.run_started'");
    assert.equal(run.caused_by, `event:${id}`);
    assert.equal(run.workflow_run_id, body.workflow_run_id);
    assert.equal(run.tenant_id, "bakery");
    assert.equal(run.entity_id, body.workflow_run_id);
  });

  it("kill:high_risk_ops holds risk_level >= 4 starts (and sets FLAGS); off releases each once", async () => {
    await startTarget("refund", { risk_level: 5 });
    await startTarget("notify");
    await jsonOf(
      await admin("POST", "/admin/subscriptions", { event_type_glob: "order.*", workflow_type: "refund" }),
      201,
    );
    await jsonOf(
      await admin("POST", "/admin/subscriptions", { event_type_glob: "order.*", workflow_type: "notify" }),
      201,
    );
    const on = await jsonOf(await admin("PUT", "/admin/kill-switches/kill:high_risk_ops", { enabled: true }), 200);
    assert.equal(on.shared, true);
    const flags = await mesh.mf.getKVNamespace("FLAGS", "siteswarm-leads-service");
    assert.notEqual(await flags.get("kill:high_risk_ops"), null, "every worker's FLAGS sees the switch");

    await emit("order.placed");
    const report = await drain("workflow_runner");
    assert.equal(report.held, 1);
    assert.equal(report.started, 1);
    assert.equal(mesh.stubs.find("/webhook/refund", "POST").length, 0);
    assert.equal(mesh.stubs.find("/webhook/notify", "POST").length, 1);

    const off = await jsonOf(await admin("PUT", "/admin/kill-switches/kill:high_risk_ops", { enabled: false }), 200);
    assert.equal(off.released.released, 1);
    assert.equal(await flags.get("kill:high_risk_ops"), null);
    await drain("workflow_runner");
    assert.equal(mesh.stubs.find("/webhook/refund", "POST").length, 1);
    assert.equal(mesh.stubs.find("/webhook/notify", "POST").length, 1);
  });
});
