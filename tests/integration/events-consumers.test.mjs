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
  "entity_timeline_entries",
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
  it("/health/consumers answers 503 with the reason while a consumer is stalled (/health stays 200 with its three keys), then pages once", async () => {
    await emit("order.placed");
    assert.equal((await mesh.fetch("events", "/health/consumers")).status, 200);
    for (const c of CONSUMERS.slice(1)) await drain(c);
    await db.prepare("UPDATE events SET recorded_at = ?1").bind(hoursAgo(2)).run();

    // The platform's /health contract holds: 200 with exactly ok, service and version.
    const plain = await jsonOf(await mesh.fetch("events", "/health"), 200);
    assert.deepEqual(Object.keys(plain).sort(), ["ok", "service", "version"]);
    assert.equal(plain.ok, true);
    // The operator's /health names the stall.
    const operatorView = await jsonOf(await mesh.fetch("events", "/health", { headers: mesh.operator() }), 200);
    assert.equal(operatorView.status, "stalled");
    assert.match(operatorView.reason, /workflow_runner is stalled/);

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
  it("a fan-out cap hit: one PagerDuty v2 trigger and one Slack message per subscription and hour; runbook 'wildcard storm'", async () => {
    // Ten workflows on one glob: the cap counts workflows (ten subscriptions naming one workflow
    // start it once, uncapped: the test after this one).
    const subs = [];
    for (let i = 0; i < 10; i++) {
      await jsonOf(
        await admin("PUT", `/admin/workflows/notify${i}`, { target: { webhook: `${mesh.stubs.url}/webhook/n` } }),
        201,
      );
      subs.push(
        await jsonOf(
          await admin("POST", "/admin/subscriptions", { event_type_glob: "order.*", workflow_type: `notify${i}` }),
          201,
        ),
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
    assert.match(page.payload.summary, /matched 10 subscriptions; 2 dropped over the cap of 8 workflows/);
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

    // The runbook's steps: check the cap, find the offender (its query word for word), cull.
    assert.equal((await jsonOf(await admin("GET", "/health"), 200)).fanout_capped, 2);
    const offenders = await rows(
      "SELECT event_type_glob, COUNT(*) FROM event_subscriptions GROUP BY event_type_glob HAVING COUNT(*) > 5",
    );
    assert.deepEqual(
      offenders.map((r) => Object.values(r)),
      [["order.*", 10]],
    );
    for (const sub of subs.slice(8)) {
      assert.equal((await admin("DELETE", `/admin/subscriptions/${sub.id}`)).status, 204);
    }
    await emit("order.placed");
    // The drain also reads the cap records and run events of before; the new order is not capped
    // (8 matches) and starts its eight workflows.
    const culled = await drain("workflow_runner");
    assert.deepEqual([culled.started, culled.capped], [8, 0]);
    assert.equal((await jsonOf(await admin("GET", "/health"), 200)).fanout_capped, 2);
  });

  it("nine subscriptions naming one workflow start it once per event: duplicates, not a cap hit", async () => {
    await jsonOf(
      await admin("PUT", "/admin/workflows/one_wf", { target: { webhook: `${mesh.stubs.url}/webhook/one` } }),
      201,
    );
    const subs = [];
    for (let i = 0; i < 9; i++) {
      subs.push(
        await jsonOf(
          await admin("POST", "/admin/subscriptions", { event_type_glob: "invoice.*", workflow_type: "one_wf" }),
          201,
        ),
      );
    }
    const before = (await jsonOf(await admin("GET", "/health"), 200)).fanout_capped;
    const id = await emit("invoice.sent");
    const report = await drain("workflow_runner");
    assert.equal(report.capped, 0);
    assert.equal(report.started, 1);
    assert.equal(report.duplicates, 8);
    const starts = mesh.stubs.find("/webhook/one", "POST");
    assert.equal(starts.length, 1);
    assert.equal(starts[0].headers["idempotency-key"], `workflow_runner:${id}:one_wf`);
    assert.equal((await jsonOf(await admin("GET", "/health"), 200)).fanout_capped, before);
    // Culling the repeats changes nothing: the one workflow was started once either way.
    for (const sub of subs.slice(1))
      assert.equal((await admin("DELETE", `/admin/subscriptions/${sub.id}`)).status, 204);
    await emit("invoice.sent");
    assert.deepEqual(
      [(await drain("workflow_runner")).started, mesh.stubs.find("/webhook/one", "POST").length],
      [1, 2],
    );
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

describe("entity timelines", () => {
  it("the hourly cron materializes an entity's timeline; a read shows it, then the events recorded since", async () => {
    const mine = [
      await emit("lead.received", { name: "Jane" }, "lead:T1"),
      await emit("lead.delivered", {}, "lead:T1"),
    ];
    const theirs = await emit("lead.received", {}, "lead:T1", "auto-repair");
    const timeline = async (query = "") =>
      jsonOf(
        await mesh.fetch("events", `/api/entities/lead/T1/timeline${query}`, { headers: mesh.tenantHeaders("bakery") }),
        200,
      );
    const before = await timeline();
    assert.deepEqual(
      before.events.map((e) => [e.event_id, e.indexed]),
      mine.map((id) => [id, false]),
    );

    await (await mesh.mf.getWorker(EVENTS)).scheduled({ cron: "0 * * * *", scheduledTime: new Date() });
    const entries = await rows("SELECT * FROM entity_timeline_entries ORDER BY seq");
    assert.deepEqual(
      entries.map((e) => [e.event_id, e.tenant_key, e.title]),
      [
        [mine[0], "bakery", "Lead received"],
        [mine[1], "bakery", "Lead delivered"],
        [theirs, "auto-repair", "Lead received"],
      ],
    );
    const later = await emit("workflow.run_failed", {}, "lead:T1");
    const page = await timeline();
    assert.deepEqual(
      page.events.map((e) => [e.event_id, e.indexed, e.title]),
      [
        [mine[0], true, "Lead received"],
        [mine[1], true, "Lead delivered"],
        [later, false, "Workflow run failed"],
      ],
    );
    assert.deepEqual(page.events[0].payload, { name: "Jane" });
    assert.equal(page.summary.event_count, 2);
    assert.equal(page.next, null);
    // Newest first, two to a page, across the indexed/live boundary.
    const first = await timeline("?order=desc&limit=2&payload=false");
    assert.deepEqual(
      first.events.map((e) => e.event_id),
      [later, mine[1]],
    );
    assert.equal("payload" in first.events[0], false);
    const second = await timeline(`?order=desc&limit=2&after=${first.next}`);
    assert.deepEqual(
      second.events.map((e) => e.event_id),
      [mine[0]],
    );
    await errorOf(
      await mesh.fetch("events", "/api/entities/lead/T1/timeline?order=up", { headers: mesh.tenantHeaders("bakery") }),
      400,
      "invalid_request",
    );
    // An entity that no entity_ref can name (the type is lower case [a-z0-9_], as on POST and on
    // GET /api/events?entity=) is a 400 naming the path parameter, never an empty timeline.
    for (const [path, field] of [
      ["/api/entities/Lead/T1/timeline", "entityType"],
      ["/api/entities/lead-x/T1/timeline", "entityType"],
      ["/api/entities/lead/T%01/timeline", "entityId"],
      [`/api/entities/${"a".repeat(250)}/x/timeline`, "entityType"],
      [`/api/entities/lead/${"x".repeat(200)}/timeline`, "entityId"],
    ]) {
      const error = await errorOf(
        await mesh.fetch("events", path, { headers: mesh.tenantHeaders("bakery") }),
        400,
        "invalid_request",
      );
      assert.equal(error.field, field, path);
    }
    // `after` is cross-checked against this timeline (in the page's D1 batch): another tenant's event,
    // an id with a seq (a tenant's cursor is the bare id: seq is the ledger-wide order, its own
    // event's included), and garbage are each a 400 naming `after`, never an empty page.
    const seqOf = async (id) => (await rows(`SELECT seq FROM events WHERE event_id = '${id}'`))[0].seq;
    const refused = [];
    for (const after of [theirs, `${mine[0]}.${await seqOf(mine[1])}`, `${mine[0]}.${await seqOf(mine[0])}`, "nope"]) {
      const error = await errorOf(
        await mesh.fetch("events", `/api/entities/lead/T1/timeline?after=${after}`, {
          headers: mesh.tenantHeaders("bakery"),
        }),
        400,
        "invalid_request",
      );
      assert.equal(error.field, "after");
      assert.equal(typeof error.fields?.after, "string");
      refused.push(error.message);
    }
    assert.equal(refused[0], refused[1], "one answer whatever the cursor names elsewhere");
    assert.equal(refused[0], refused[2], "one answer whatever the cursor names elsewhere");
    // The operator may page on "<event_id>.<seq>": an id with another event's seq is refused in the
    // page's D1 batch, with the same answer.
    const mismatched = await errorOf(
      await mesh.fetch("events", `/api/entities/lead/T1/timeline?after=${mine[0]}.${await seqOf(mine[1])}`, {
        headers: mesh.operator(),
      }),
      400,
      "invalid_request",
    );
    assert.equal(mismatched.message, refused[0]);
    const own = await timeline(`?after=${mine[0]}`);
    assert.deepEqual(
      own.events.map((e) => e.event_id),
      [mine[1], later],
    );
    // The ledger-wide seq is the operator's: a tenant's events do not show it (its gaps would count
    // the other tenants' events); the operator's page across tenants does.
    assert.deepEqual(
      own.events.map((e) => "seq" in e),
      [false, false],
    );
    const across = await jsonOf(
      await mesh.fetch("events", "/api/entities/lead/T1/timeline", { headers: mesh.operator() }),
      200,
    );
    assert.deepEqual(
      across.events.map((e) => [e.event_id, e.seq]),
      await Promise.all([mine[0], mine[1], theirs, later].map(async (id) => [id, await seqOf(id)])),
    );
  });
});

describe("runbook 'an anomaly was detected'", () => {
  const RATE_WINDOW_MS = 15 * 60_000; // anomaly_detector's window (and the delivery_failure_burst rule's)
  const FLAP_WINDOW_MS = 6 * 3_600_000; // the monitor_flapping rule's window
  // The window before the one "now" is in has ended whenever the cron runs: the detector judges it.
  const rfc3339 = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z"); // the ledger's form, whole seconds
  const endedWindow = (size) => Math.floor(Date.now() / size) * size - size;
  const setRecordedAt = (id, ms) =>
    db.prepare("UPDATE events SET recorded_at = ?1 WHERE event_id = ?2").bind(new Date(ms).toISOString(), id).run();
  const anomalyCron = async () =>
    (await mesh.mf.getWorker(EVENTS)).scheduled({ cron: "*/15 * * * *", scheduledTime: new Date() });
  const anomalyPages = () => pagerDuty().filter((p) => p.payload?.class === "anomaly");

  it("a burst of lead.delivery_failed in an ended window: the */15 cron pages once; the runbook's reads show the evidence", async () => {
    // What the leads worker emits when a delivery is dead-lettered (workers/leads/notify.cpp): six of
    // bakery's in one 15-minute window, four of auto-repair's (under the threshold of 5). The ledger
    // numbers them now; workerd's clock is real, so their recorded_at is set inside the ended window.
    const start = endedWindow(RATE_WINDOW_MS);
    const failure = (i) => ({
      leadId: `L${i}`,
      deliveryId: `D${i}`,
      channel: "email",
      provider: "resend",
      attempts: 6,
      error: "HTTP 503",
    });
    const bakery = [];
    for (let i = 0; i < 6; i++) bakery.push(await emit("lead.delivery_failed", failure(i), `lead:L${i}`));
    const other = [];
    for (let i = 6; i < 10; i++) {
      other.push(await emit("lead.delivery_failed", failure(i), `lead:L${i}`, "auto-repair"));
    }
    for (const [i, id] of [...bakery, ...other].entries()) await setRecordedAt(id, start + (i + 1) * 60_000);

    await anomalyCron();
    await anomalyCron(); // the next run judges nothing twice

    // The alert: one PagerDuty trigger (warning) and one Slack message, for bakery only.
    const pages = anomalyPages();
    assert.equal(pages.length, 1, JSON.stringify(pagerDuty()));
    const [page] = pages;
    const key = `anomaly:delivery_failure_burst:tenant:bakery:${start}`;
    assert.equal(page.event_action, "trigger");
    assert.equal(page.routing_key, "local-events-routing-key");
    assert.equal(page.dedup_key, `siteswarm-events:${key}`);
    assert.equal(page.payload.severity, "warning");
    assert.equal(page.payload.source, EVENTS);
    assert.match(page.payload.summary, /delivery_failure_burst on tenant:bakery/);
    assert.equal(page.payload.custom_details.tenant_id, "bakery");
    assert.equal(page.payload.custom_details.count, 6);
    const messages = slack();
    assert.equal(messages.length, 1);
    assert.match(messages[0].text, /anomaly: anomaly delivery_failure_burst on tenant:bakery/);

    // Inspect: the anomaly.* events, newest first; the payload is the evidence.
    const listed = await jsonOf(await admin("GET", "/api/events?type=anomaly.*&order=desc"), 200);
    assert.equal(listed.events.length, 1);
    const [anomaly] = listed.events;
    assert.equal(anomaly.event_type, "anomaly.detected");
    assert.equal(anomaly.event_id, page.payload.custom_details.anomaly_event_id, "the page names the event");
    assert.equal(anomaly.tenant_id, "bakery");
    assert.equal(anomaly.entity_ref, "tenant:bakery");
    assert.deepEqual(anomaly.payload, {
      rule: "delivery_failure_burst",
      event_type: "lead.delivery_failed",
      subject: "tenant:bakery",
      count: 6,
      threshold: 5,
      window_minutes: 15,
      window_start: rfc3339(start),
      window_end: rfc3339(start + RATE_WINDOW_MS),
      first_event_id: bakery[0],
      last_event_id: bakery[5],
    });
    // It is bakery's event: its own read shows it, another tenant's does not.
    const own = async (tenant) =>
      (
        await jsonOf(
          await mesh.fetch("events", "/api/events?type=anomaly.*&order=desc", { headers: mesh.tenantHeaders(tenant) }),
          200,
        )
      ).events.map((e) => e.event_id);
    assert.deepEqual(await own("bakery"), [anomaly.event_id]);
    assert.deepEqual(await own("auto-repair"), []);

    // The window counts, word for word: ten failures (both tenants) in the window, none before it.
    const rates = await rows(
      "SELECT * FROM event_type_rates WHERE event_type = 'lead.delivery_failed' ORDER BY window_start_ms DESC LIMIT 20",
    );
    assert.deepEqual(
      rates.map((r) => [r.window_start_ms, r.event_count]),
      [[start, 10]],
    );
    // The sequence rules' counts, word for word: both tenants counted, only bakery over the threshold.
    const signals = await rows("SELECT * FROM anomaly_signals ORDER BY window_end_ms DESC LIMIT 20");
    assert.deepEqual(
      signals.map((r) => [r.rule, r.subject, r.event_count, r.window_end_ms, r.first_event_id, r.last_event_id]).sort(),
      [
        ["delivery_failure_burst", "tenant:auto-repair", 4, start + RATE_WINDOW_MS, other[0], other[3]],
        ["delivery_failure_burst", "tenant:bakery", 6, start + RATE_WINDOW_MS, bakery[0], bakery[5]],
      ],
    );
    const alerts = await jsonOf(await admin("GET", "/admin/alerts"), 200);
    assert.deepEqual(
      alerts.alerts.map((a) => [a.alert_key, a.kind, a.details.anomaly_event_id]),
      [[key, "anomaly", page.payload.custom_details.anomaly_event_id]],
    );
    assert.equal(typeof alerts.alerts[0].pagerduty_sent_at, "string");
    assert.equal(typeof alerts.alerts[0].slack_sent_at, "string");

    // The tenant's failures: the events themselves, newest first, with the provider's error...
    const failures = await jsonOf(
      await admin("GET", "/api/events?type=lead.delivery_failed&tenant=bakery&order=desc"),
      200,
    );
    assert.deepEqual(
      failures.events.map((e) => e.event_id),
      [...bakery].reverse(),
    );
    assert.ok(failures.events.every((e) => e.payload.error === "HTTP 503"));
    // ...and their pattern in reflexion_log, once reflexion_analyzer has read them (*/30, or by hand).
    await drain("reflexion_analyzer");
    const { patterns } = await jsonOf(await admin("GET", "/admin/reflexion?subject=lead.delivery_failed"), 200);
    assert.equal(patterns.length, 1);
    assert.equal(patterns[0].error_class, "email.resend:http_5xx");
    assert.equal(patterns[0].count, 10);
    assert.deepEqual([...patterns[0].tenants].sort(), ["auto-repair", "bakery"]);
  });

  it("a monitor flapping (3 incidents opened in an ended 6-hour window): one page; its incidents in the ledger", async () => {
    const start = endedWindow(FLAP_WINDOW_MS);
    // What the monitoring worker emits (workers/monitoring/jobs.cpp), three flaps of monitor "home".
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const probe = { ok: false, status: 503, reason: "status_mismatch" };
      ids.push(
        await emit("monitor.incident_opened", { monitorId: "home", incidentId: `I${i}`, probe }, "monitor:home"),
      );
      ids.push(
        await emit(
          "monitor.incident_resolved",
          { monitorId: "home", incidentId: `I${i}`, probe: { ok: true, status: 200, reason: null } },
          "monitor:home",
        ),
      );
    }
    // Two incidents of another monitor in the same window: not flapping.
    for (let i = 0; i < 2; i++) {
      ids.push(await emit("monitor.incident_opened", { monitorId: "shop", incidentId: `S${i}` }, "monitor:shop"));
    }
    for (const [i, id] of ids.entries()) await setRecordedAt(id, start + (i + 1) * 20 * 60_000);
    // Hours-old events the other consumers have read long ago in production: drained here, so the
    // alert pass sees no stall and the only page is the anomaly's.
    for (const c of CONSUMERS.filter((c) => c !== "anomaly_detector")) await drain(c);

    await anomalyCron();
    await anomalyCron();

    assert.equal(pagerDuty().length, 1, JSON.stringify(pagerDuty()));
    const [page] = anomalyPages();
    assert.equal(page.dedup_key, `siteswarm-events:anomaly:monitor_flapping:tenant:bakery:monitor:home:${start}`);
    assert.equal(page.payload.custom_details.subject, "monitor:home");
    assert.equal(slack().length, 1);

    const [anomaly] = (await jsonOf(await admin("GET", "/api/events?type=anomaly.*&order=desc"), 200)).events;
    assert.equal(anomaly.entity_ref, "monitor:home");
    assert.equal(anomaly.tenant_id, "bakery");
    assert.deepEqual(
      [anomaly.payload.rule, anomaly.payload.count, anomaly.payload.threshold, anomaly.payload.window_minutes],
      ["monitor_flapping", 3, 3, 360],
    );
    assert.equal(anomaly.payload.first_event_id, ids[0]);
    assert.equal(anomaly.payload.last_event_id, ids[4]);
    const signals = await rows("SELECT * FROM anomaly_signals ORDER BY window_end_ms DESC LIMIT 20");
    assert.deepEqual(signals.map((r) => [r.rule, r.subject, r.event_count, r.window_end_ms]).sort(), [
      ["monitor_flapping", "monitor:home", 3, start + FLAP_WINDOW_MS],
      ["monitor_flapping", "monitor:shop", 2, start + FLAP_WINDOW_MS],
    ]);
    // The monitor's incidents as the ledger saw them, newest first: opened and resolved, three times.
    const history = await jsonOf(await admin("GET", "/api/events?entity=monitor:home&tenant=bakery&order=desc"), 200);
    assert.deepEqual(
      history.events
        .filter((e) => e.event_type.startsWith("monitor."))
        .map((e) => [e.event_type, e.payload.incidentId]),
      [
        ["monitor.incident_resolved", "I2"],
        ["monitor.incident_opened", "I2"],
        ["monitor.incident_resolved", "I1"],
        ["monitor.incident_opened", "I1"],
        ["monitor.incident_resolved", "I0"],
        ["monitor.incident_opened", "I0"],
      ],
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
    const { subscriptions } = await jsonOf(await admin("GET", "/admin/subscriptions"), 200);
    assert.deepEqual(
      subscriptions.map((s) => [s.id, s.event_type_glob, s.filter_expr]),
      [[sub.id, "price.changed", "payload.amount > 100"]],
    );
    const audit = await rows("SELECT * FROM event_subscriptions WHERE event_type_glob LIKE '%*%'");
    assert.equal(audit.length, 0);
  });

  it("runbook 'idempotency_key collision': one event per key, the duplicate check is empty, a tombstone records the decision", async () => {
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

    // Step 1: who emitted, newest first; and the runbook's duplicate check is empty.
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

describe("draining on cron", () => {
  it("one */2 cron run catches up a backlog of 1,100 events (over two batches of 500), each start once", async () => {
    // Before: one batch of 500 per cron run, so a backlog drained at 250 events a minute at best.
    await jsonOf(
      await admin("PUT", "/admin/workflows/notify", { target: { webhook: `${mesh.stubs.url}/webhook/backlog` } }),
      201,
    );
    await jsonOf(
      await admin("POST", "/admin/subscriptions", { event_type_glob: "order.*", workflow_type: "notify" }),
      201,
    );
    const BACKLOG = 1100;
    // The backlog by SQL in one D1 call (emitting 1,100 events one request at a time takes minutes):
    // the rows the ledger writes for an emit, ids 01J0000B<18 digits>.
    await db
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
         INSERT INTO events (event_id, tenant_id, event_type, entity_type, entity_id, payload_json,
                             idempotency_key, occurred_at, recorded_at)
         SELECT printf('01J0000B%018d', i), 'bakery', 'order.placed', 'order', CAST(i AS TEXT),
                json_object('n', i), 'backlog:' || i, ?2, ?2
         FROM n`,
      )
      .bind(BACKLOG, new Date().toISOString())
      .run();
    const last = `01J0000B${String(BACKLOG).padStart(18, "0")}`;

    await (await mesh.mf.getWorker(EVENTS)).scheduled({ cron: "*/2 * * * *", scheduledTime: new Date() });

    const starts = mesh.stubs.find("/webhook/backlog", "POST");
    const keys = new Set(starts.map((s) => s.headers["idempotency-key"]));
    assert.equal(starts.length, BACKLOG, "every event of the backlog started in one cron run");
    assert.equal(keys.size, BACKLOG, "each start once");
    assert.ok(keys.has(`workflow_runner:${last}:notify`));
    const [state] = await rows(
      "SELECT cursor_seq, events_read FROM event_drain_state WHERE consumer = 'workflow_runner'",
    );
    const [lastSeq] = await rows("SELECT seq FROM events WHERE event_id = ?1", last);
    assert.ok(state.cursor_seq >= lastSeq.seq, "the cursor is past the backlog");
    assert.ok(state.events_read > 1000, `read ${state.events_read} events in one run`);
    assert.equal((await rows("SELECT * FROM cron_locks")).length, 0, "the lock released after the run");
    assert.equal((await rows("SELECT * FROM event_consumer_dedupe WHERE status = 'started'")).length, BACKLOG);
    // Caught up: the operator's drain finds nothing of the backlog left.
    assert.equal((await drain("workflow_runner")).started, 0);
  });
});
