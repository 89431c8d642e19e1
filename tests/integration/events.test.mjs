// The event ledger's guarantees (docs/contract.md "events-service", docs/runbook-events.md), end to end on
// the real events.wasm in workerd: idempotent emit, a drainer killed mid-batch, the fan-out cap,
// quarantine and retry, kill switches, replay, overlapping drains, globs/filters/mappers, the
// contract's errors, ingest through the queue and the cron trigger.
//
// Workflow targets are webhooks on a small recording server started here (127.0.0.1 only; the mesh
// sets ALLOW_LOCAL_OUTBOUND=1 so http://127.0.0.1 webhooks can be registered). Like a real workflow
// engine, it treats the Idempotency-Key as the identity of a start: a redelivered key is accepted
// again (200) but is not a second start. It can fail chosen events (500) and hold requests open.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { gzipSync } from "node:zlib";
import { after, before, beforeEach, describe, it } from "node:test";
import { errorOf, jsonOf, startMesh } from "./mesh.mjs";

const EVENTS = "siteswarm-events-service";
const LEDGER_TABLES = [
  "events",
  "event_subscriptions",
  "workflow_definitions",
  "event_drain_state",
  "event_consumer_dedupe",
  "events_quarantine",
  "workflow_run_log",
  "cron_locks",
  "kill_switches",
  "events_schema",
  "entity_timelines",
  "entity_timeline_entries",
  "event_type_rates",
  "events_retention_summaries",
];
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const ulid = (ms = Date.now()) => {
  let time = "";
  for (let t = ms, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  return time + Array.from({ length: 16 }, () => CROCKFORD[Math.floor(Math.random() * 32)]).join("");
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns something truthy. */
async function waitFor(probe, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("waitFor: timed out");
    await sleep(50);
  }
}

/** The workflow-target stand-in: POST /hooks/<workflow_type>. */
async function startHooks() {
  const hooks = {
    calls: [], // every delivery: { workflowType, key, contentType, body, status }
    started: new Map(), // Idempotency-Key → the delivery that started it (first 2xx)
    failing: new Set(), // event ids answered 500
    onCall: null, // async (call) => status | "drop" | undefined: holds or overrides one delivery
    reset() {
      this.calls.length = 0;
      this.started.clear();
      this.failing.clear();
      this.onCall = null;
    },
    /** How many deliveries carried each Idempotency-Key. */
    deliveries() {
      const counts = new Map();
      for (const c of hooks.calls) counts.set(c.key, (counts.get(c.key) ?? 0) + 1);
      return counts;
    },
  };
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const { pathname } = new URL(req.url, "http://127.0.0.1");
    let body = null;
    try {
      body = JSON.parse(text);
    } catch {}
    const call = {
      workflowType: pathname.replace(/^\/hooks\//, ""),
      key: req.headers["idempotency-key"],
      contentType: req.headers["content-type"],
      method: req.method,
      body,
    };
    hooks.calls.push(call);
    let status = hooks.failing.has(body?.event?.event_id) ? 500 : 202;
    if (hooks.onCall) status = (await hooks.onCall(call)) ?? status;
    if (status === "drop") {
      call.status = "dropped";
      return req.socket.destroy(); // the connection dies: the target never answered
    }
    if (status >= 200 && status < 300) {
      if (hooks.started.has(call.key))
        status = 200; // a redelivery of a start it already has
      else hooks.started.set(call.key, call);
    }
    call.status = status;
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(status < 300 ? { accepted: true } : { error: "stub failure" }));
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  hooks.url = `http://127.0.0.1:${server.address().port}`;
  hooks.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return hooks;
}

let mesh;
let hooks;
let db;
before(async () => {
  // Bare manifests: the ledger needs its two tenants, not the other workers' per-tenant config.
  const tenants = [
    { appId: "bakery", config: {} },
    { appId: "auto-repair", config: {} },
  ];
  // The runner's own workflow.run_* events are tested in events-consumers.test.mjs; here they would
  // add to every count of reads. DRAIN_CHUNK_STARTS=2: workflow_runner claims and commits one event
  // (2 starts) per D1 batch here, so the crash tests can pin which event was in flight; the default
  // chunks of 1,000 starts run in events-consumers.test.mjs and the bench.
  const bindings = { events: { WORKFLOW_RUN_EVENTS: "0", DRAIN_CHUNK_STARTS: "2" } };
  [mesh, hooks] = await Promise.all([startMesh({ tenants, bindings }), startHooks()]);
  db = await mesh.d1("events", "EVENTS_DB");
});
after(async () => {
  await mesh?.dispose();
  await hooks?.close();
});
// Every test starts from an empty ledger (tenants stay provisioned) and a fresh recording server.
beforeEach(async () => {
  await db.batch(LEDGER_TABLES.map((t) => db.prepare(`DELETE FROM ${t}`)));
  hooks.reset();
});

const JSON_TYPE = { "content-type": "application/json" };
const key = (eventId, workflowType) => `workflow_runner:${eventId}:${workflowType}`;

function admin(method, pathname, body) {
  const init = { method, headers: mesh.operator(body === undefined ? {} : JSON_TYPE) };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  return mesh.fetch("events", pathname, init);
}
function post(body, headers = { ...mesh.tenantHeaders("bakery"), ...JSON_TYPE }) {
  return mesh.fetch("events", "/api/events", {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}
async function emit(eventType, payload = {}, entityRef = "item:1", extra = {}) {
  const res = await post({ event_type: eventType, entity_ref: entityRef, payload, ...extra });
  const { event_id } = await jsonOf(res, 201);
  assert.match(event_id, ULID);
  return event_id;
}
async function emitMany(n, eventType = "order.placed", chunk = 20) {
  const ids = [];
  for (let i = 0; i < n; i += chunk) {
    // Concurrent within a chunk; ids are sorted afterwards (ULIDs sort by creation).
    const batch = Array.from({ length: Math.min(chunk, n - i) }, (_, j) => emit(eventType, { n: i + j }));
    ids.push(...(await Promise.all(batch)));
  }
  return ids.sort();
}
async function workflow(type, target = { webhook: `${hooks.url}/hooks/${type}` }) {
  await jsonOf(await admin("PUT", `/admin/workflows/${type}`, { target }), 201);
}
async function subscribe(glob, workflowType, extra = {}) {
  return jsonOf(
    await admin("POST", "/admin/subscriptions", { event_type_glob: glob, workflow_type: workflowType, ...extra }),
    201,
  );
}
async function drain(consumer = "workflow_runner") {
  const body = await jsonOf(await admin("POST", `/admin/events/drain?consumer=${consumer}`), 200);
  return body.consumers[consumer];
}
// The consumers' details on /health are the operator's (the public part is a coarse status).
const health = async () => jsonOf(await mesh.fetch("events", "/health", { headers: mesh.operator() }), 200);
const rows = async (sql, ...params) =>
  (
    await db
      .prepare(sql)
      .bind(...params)
      .all()
  ).results;
const cursorOf = async (consumer = "workflow_runner") =>
  (await db.prepare("SELECT cursor FROM event_drain_state WHERE consumer = ?1").bind(consumer).first())?.cursor;

/** Each expected key started exactly once at the target, nothing else started. */
function assertStartedExactlyOnce(expectedKeys) {
  assert.deepEqual([...hooks.started.keys()].sort(), [...expectedKeys].sort());
}

describe("emit", () => {
  it("the same idempotency_key emitted 5 times is one event (201, then 200 duplicate)", async () => {
    const body = {
      event_type: "price.changed",
      entity_ref: "item:10472",
      payload: { old_price: 1.42, amount: 1 },
      idempotency_key: "bid-B5875",
    };
    const { event_id } = await jsonOf(await post(body), 201);
    assert.match(event_id, ULID);
    for (let i = 0; i < 4; i++) {
      assert.deepEqual(await jsonOf(await post(body), 200), { event_id, duplicate: true });
    }
    const stored = await rows("SELECT event_id, tenant_id, idempotency_key FROM events");
    assert.deepEqual(stored, [{ event_id, tenant_id: "bakery", idempotency_key: "bid-B5875" }]);

    // Five at once with a fresh key: one 201, four duplicates of the same event, one row.
    const race = { ...body, idempotency_key: "bid-race" };
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(race)));
    const statuses = answers.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 200, 201]);
    const ids = new Set((await Promise.all(answers.map((r) => r.json()))).map((b) => b.event_id));
    assert.equal(ids.size, 1);
    assert.equal((await rows("SELECT * FROM events WHERE idempotency_key = 'bid-race'")).length, 1);

    // Keys are per tenant: auto-repair's identical key is its own event.
    const other = await post(body, { ...mesh.tenantHeaders("auto-repair"), ...JSON_TYPE });
    assert.notEqual((await jsonOf(other, 201)).event_id, event_id);
    assert.equal((await rows("SELECT * FROM events")).length, 3);
  });

  it("stamps the caller's tenant and lets each tenant read only its own events", async () => {
    await emit("price.changed", { amount: 2 }, "item:10472", { tenant_id: "auto-repair" }); // ignored field
    await post(
      { event_type: "price.changed", entity_ref: "item:9", payload: {} },
      { ...mesh.tenantHeaders("auto-repair"), ...JSON_TYPE },
    );
    const mine = await jsonOf(
      await mesh.fetch("events", "/api/events", { headers: mesh.tenantHeaders("bakery") }),
      200,
    );
    assert.equal(mine.events.length, 1);
    assert.equal(mine.events[0].tenant_id, "bakery");
    assert.equal(mine.events[0].entity_ref, "item:10472");
    assert.deepEqual(mine.events[0].payload, { amount: 2 });
    const all = await jsonOf(await admin("GET", "/api/events"), 200);
    assert.equal(all.events.length, 2);
  });

  // docs/runbook-events.md "The HTTP surface where the contract leaves a choice".
  it("the operator names any tenant (keys scoped by it); a tenant's ?tenant= is not read; events have no resource", async () => {
    const body = { event_type: "order.placed", entity_ref: "order:1", payload: {}, idempotency_key: "op-k" };
    const mine = (await jsonOf(await post(body), 201)).event_id;
    // The operator posting for bakery with bakery's key gets bakery's event back.
    assert.deepEqual(await jsonOf(await admin("POST", "/api/events", { ...body, tenant_id: "bakery" }), 200), {
      event_id: mine,
      duplicate: true,
    });
    // Platform-wide events are a key scope of their own; a tenant the ledger has not provisioned is
    // named as the queue names it.
    const platform = (await jsonOf(await admin("POST", "/api/events", body), 201)).event_id;
    assert.notEqual(platform, mine);
    const unprovisioned = (await jsonOf(await admin("POST", "/api/events", { ...body, tenant_id: "not-yet" }), 201))
      .event_id;
    const read = await jsonOf(await admin("GET", "/api/events?tenant=not-yet"), 200);
    assert.deepEqual(
      read.events.map((e) => [e.event_id, e.tenant_id]),
      [[unprovisioned, "not-yet"]],
    );
    const stored = await rows("SELECT event_id, tenant_id FROM events ORDER BY seq");
    assert.deepEqual(stored, [
      { event_id: mine, tenant_id: "bakery" },
      { event_id: platform, tenant_id: null },
      { event_id: unprovisioned, tenant_id: "not-yet" },
    ]);
    // A tenant reads its own events, whatever ?tenant= says; the default page is 100 events.
    const own = await jsonOf(
      await mesh.fetch("events", "/api/events?tenant=not-yet", { headers: mesh.tenantHeaders("bakery") }),
      200,
    );
    assert.deepEqual(
      own.events.map((e) => e.event_id),
      [mine],
    );
    for (let i = 0; i < 101; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, 101 - i) }, (_, j) => emit("item.seen", { n: i + j })));
    }
    const page = await jsonOf(
      await mesh.fetch("events", "/api/events", { headers: mesh.tenantHeaders("bakery") }),
      200,
    );
    assert.equal(page.events.length, 100);
    assert.equal(page.next, page.events[99].event_id);
    // No method updates or deletes an event: /api/events/{id} is no route, /api/events is 405.
    for (const method of ["GET", "PUT", "PATCH", "DELETE"]) {
      await errorOf(await admin(method, `/api/events/${mine}`), 404, "not_found");
    }
    for (const method of ["PUT", "PATCH", "DELETE"]) {
      const res = await admin(method, "/api/events");
      assert.equal(res.headers.get("allow"), "POST, GET, HEAD");
      await errorOf(res, 405, "method_not_allowed");
    }
    assert.equal((await rows("SELECT * FROM events WHERE event_id = ?1", mine)).length, 1);
  });
});

describe("workflow_runner", () => {
  it("a drainer killed mid-batch (wasm trap while a start is in flight) and re-run starts every workflow exactly once", async () => {
    await workflow("notify");
    await workflow("audit");
    await subscribe("price.*", "notify");
    await subscribe("*", "audit");
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push(await emit("price.changed", { n: i }));

    // The starts of the 4th event are held open; while they are, the instance traps, which fails
    // every run on it, the drain included. Then the target answers: notify "accepted" (202, the
    // worst case: the target started it but the ledger died before committing), audit's connection
    // is dropped (never started).
    const held = [];
    let release;
    const released = new Promise((r) => (release = r));
    hooks.onCall = async (call) => {
      if (call.body.event.event_id !== ids[3] || held.includes(call.workflowType)) return undefined;
      held.push(call.workflowType);
      await released;
      return call.workflowType === "notify" ? 202 : "drop";
    };
    const dying = admin("POST", "/admin/events/drain?consumer=workflow_runner");
    await waitFor(() => held.length === 2);
    // workflow_runner drains in the ledger's runner worker (docs/architecture.md): that is the
    // instance that dies; the entry answers with the runner's error.
    await errorOf(await mesh.fetch("events_runner", "/__test/trap"), 500, "internal");
    release();
    await errorOf(await dying, 500, "internal");
    hooks.onCall = null;

    // What the dead run left: 3 events committed, the 4th event's two starts claimed, its lock held.
    assert.equal(await cursorOf(), ids[2]);
    assert.equal((await rows("SELECT * FROM event_consumer_dedupe WHERE status = 'started'")).length, 6);
    assert.equal((await rows("SELECT * FROM event_consumer_dedupe WHERE status = 'claimed'")).length, 2);
    assert.equal((await rows("SELECT * FROM cron_locks WHERE name = 'drain:workflow_runner'")).length, 1);
    const blocked = await drain();
    assert.equal(blocked.locked, true, "the dead run's lock still protects the consumer");
    assert.equal(blocked.read, 0);
    assert.equal(blocked.cursor, ids[2]);

    // Runbook: clear the dead run's lock and expire its claims (both would expire after 5 minutes),
    // then re-run.
    await db.prepare("DELETE FROM cron_locks WHERE name = 'drain:workflow_runner'").run();
    await db.prepare("UPDATE event_consumer_dedupe SET claimed_at_ms = 0 WHERE status = 'claimed'").run();
    const report = await drain();
    assert.deepEqual(report, { read: 3, started: 6, duplicates: 0, quarantined: 0, capped: 0, cursor: ids[5] });
    assert.equal((await rows("SELECT * FROM cron_locks")).length, 0, "released after the run");

    const expected = ids.flatMap((id) => [key(id, "notify"), key(id, "audit")]);
    assertStartedExactlyOnce(expected);
    // Only the two starts in flight at the crash were delivered again, with the same Idempotency-Key.
    const deliveries = hooks.deliveries();
    for (const k of expected) {
      const redelivered = k === key(ids[3], "notify") || k === key(ids[3], "audit");
      assert.equal(deliveries.get(k), redelivered ? 2 : 1, k);
    }
    // The ledger's own records: one dedupe row and one 'started' run per (event, workflow).
    const dedupe = await rows("SELECT dedupe_key FROM event_consumer_dedupe ORDER BY dedupe_key");
    assert.deepEqual(
      dedupe.map((r) => r.dedupe_key),
      [...expected].sort(),
    );
    const runs = await rows("SELECT event_id, workflow_type FROM workflow_run_log WHERE status = 'started'");
    assert.equal(runs.length, 12);
    assert.equal(new Set(runs.map((r) => `${r.event_id}:${r.workflow_type}`)).size, 12);

    // Every start carries the contract's request: POST, JSON, {workflow_type, workflow_run_id, event, input}.
    const start = hooks.started.get(key(ids[0], "notify"));
    assert.equal(start.method, "POST");
    assert.match(start.contentType, /^application\/json/);
    assert.deepEqual(Object.keys(start.body).sort(), ["event", "input", "workflow_run_id", "workflow_type"]);
    assert.equal(start.body.workflow_type, "notify");
    assert.match(start.body.workflow_run_id, /^run_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(start.body.event.event_id, ids[0]);
    assert.equal(start.body.event.event_type, "price.changed");
    assert.equal(start.body.event.tenant_id, "bakery");
    assert.deepEqual(start.body.event.payload, { n: 0 });
    assert.deepEqual(start.body.input, { n: 0 });
    const runIds = new Set([...hooks.started.values()].map((c) => c.body.workflow_run_id));
    assert.equal(runIds.size, 12);
  });

  it("a re-run over state a dead run left (cursor mid-batch, dedupe rows ahead of it) starts each workflow once", async () => {
    await workflow("notify");
    await workflow("audit");
    await subscribe("price.*", "notify");
    await subscribe("*", "audit");
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push(await emit("price.changed", { n: i }));

    // As a previous run would have left it: starts recorded for the first 3 events, the cursor
    // committed after only 2 of them. Dedupe, not the cursor, must keep event 3 from starting again.
    const now = new Date().toISOString();
    const seeded = ids
      .slice(0, 3)
      .flatMap((id) =>
        ["notify", "audit"].map((wf) =>
          db
            .prepare(
              "INSERT INTO event_consumer_dedupe (consumer, seq, dedupe_key, event_id, created_at) " +
                "SELECT 'workflow_runner', seq, ?1, ?2, ?3 FROM events WHERE event_id = ?2",
            )
            .bind(key(id, wf), id, now),
        ),
      );
    await db.batch([
      ...seeded,
      db
        .prepare(
          "INSERT INTO event_drain_state (consumer, cursor_seq, cursor, last_run_at, events_read) " +
            "SELECT 'workflow_runner', seq, ?1, ?2, 2 FROM events WHERE event_id = ?1",
        )
        .bind(ids[1], now),
    ]);

    const report = await drain();
    assert.deepEqual(report, { read: 4, started: 6, duplicates: 2, quarantined: 0, capped: 0, cursor: ids[5] });
    assertStartedExactlyOnce(ids.slice(3).flatMap((id) => [key(id, "notify"), key(id, "audit")]));
    assert.equal(hooks.calls.length, 6);
    for (const c of hooks.calls) assert.equal(c.key, key(c.body.event.event_id, c.body.workflow_type));
    assert.equal((await rows("SELECT * FROM event_consumer_dedupe")).length, 12);
    // Nothing left to do.
    assert.deepEqual(await drain(), { read: 0, started: 0, duplicates: 0, quarantined: 0, capped: 0, cursor: ids[5] });
  });

  it("50 subscriptions on * start 8 workflows and leave exactly one events.fanout_capped record", async () => {
    const types = Array.from({ length: 50 }, (_, i) => `wf${100 + i}`);
    const subs = [];
    for (const type of types) {
      await workflow(type);
      subs.push(await subscribe("*", type)); // sequential: creation order is the cap's order
    }
    const id = await emit("item.created");
    const report = await drain();
    assert.equal(report.read, 1);
    assert.equal(report.started, 8);
    assert.equal(report.capped, 1);
    assert.equal(hooks.calls.length, 8);
    assert.deepEqual(hooks.calls.map((c) => c.workflowType).sort(), types.slice(0, 8), "the first 8 by creation");

    const caps = await rows("SELECT * FROM events WHERE event_type = 'events.fanout_capped'");
    assert.equal(caps.length, 1);
    const payload = JSON.parse(caps[0].payload_json);
    assert.equal(payload.event_id, id);
    assert.equal(payload.matched, 50);
    assert.deepEqual(
      payload.dropped_subscriptions,
      subs.slice(8).map((s) => s.id ?? s.subscription_id),
    );
    assert.equal(caps[0].tenant_id, "bakery");
    const h = await health();
    assert.equal(h.ok, true);
    assert.equal(h.fanout_capped, 1);

    // The cap record is an event too: it fans out (capped again) without a cap record of its own.
    const again = await drain();
    assert.equal(again.read, 1);
    assert.equal(again.capped, 1);
    assert.equal((await rows("SELECT * FROM events WHERE event_type = 'events.fanout_capped'")).length, 1);
    assert.equal((await health()).fanout_capped, 1);
  });

  it("a poison event is quarantined, the cursor moves past it, later events flow, and retry starts it once", async () => {
    await workflow("notify");
    await subscribe("*", "notify");
    const a = await emit("lead.received");
    const poison = await emit("lead.received", { poison: true });
    const c = await emit("lead.received");
    hooks.failing.add(poison);

    const report = await drain();
    assert.deepEqual(report, { read: 3, started: 2, duplicates: 0, quarantined: 1, capped: 0, cursor: c });
    assertStartedExactlyOnce([key(a, "notify"), key(c, "notify")]);
    const q = await jsonOf(await admin("GET", "/admin/quarantine?consumer=workflow_runner"), 200);
    assert.equal(q.quarantined.length, 1);
    assert.equal(q.quarantined[0].event_id, poison);
    assert.equal(q.quarantined[0].consumer, "workflow_runner");
    assert.match(q.quarantined[0].reason, /500/);
    // A 500 may pass: the */2 cron retries it 2 minutes after it was quarantined (workerd's SQLite).
    const due = Date.parse(q.quarantined[0].retry_at) - Date.parse(q.quarantined[0].quarantined_at);
    assert.ok(
      due >= 119_000 && due <= 121_000,
      `retry ${q.quarantined[0].retry_at} after ${q.quarantined[0].quarantined_at}`,
    );
    assert.equal((await health()).quarantined, 1);
    const d = await emit("lead.received");
    assert.equal((await drain()).started, 1, "events after the poison keep flowing");

    // Still failing: retry keeps it quarantined (attempts grows).
    const stillBad = await jsonOf(await admin("POST", `/admin/quarantine/workflow_runner/${poison}/retry`), 200);
    assert.equal(stillBad.resolved, false);
    const [second] = await rows(
      "SELECT attempts, retry_at, quarantined_at FROM events_quarantine WHERE event_id = ?1",
      poison,
    );
    assert.equal(second.attempts, 2);
    assert.ok(Date.parse(second.retry_at) - Date.now() > 3 * 60_000, `the second retry backs off: ${second.retry_at}`);

    hooks.failing.clear(); // the target recovers
    const retried = await jsonOf(await admin("POST", `/admin/quarantine/workflow_runner/${poison}/retry`), 200);
    assert.equal(retried.resolved, true);
    assert.equal(retried.started, 1);
    assert.deepEqual((await jsonOf(await admin("GET", "/admin/quarantine"), 200)).quarantined, []);
    assert.equal((await health()).quarantined, 0);
    const resolved = await jsonOf(await admin("GET", "/admin/quarantine?all=1"), 200);
    assert.equal(resolved.quarantined.length, 1);
    assertStartedExactlyOnce([a, poison, c, d].map((id) => key(id, "notify")));

    // Resolved: nothing to retry (409 with its time), and nothing is started again.
    const again = await errorOf(
      await admin("POST", `/admin/quarantine/workflow_runner/${poison}/retry`),
      409,
      "conflict",
    );
    assert.equal(typeof again.resolved_at, "string");
    await errorOf(await admin("POST", `/admin/quarantine/workflow_runner/${a}/retry`), 404, "not_found");
    assertStartedExactlyOnce([a, poison, c, d].map((id) => key(id, "notify")));
  });

  it("kill:fanout on: nothing fans out and events are still accepted; off: everything drains", async () => {
    await workflow("notify");
    await subscribe("*", "notify");
    const on = await jsonOf(await admin("PUT", "/admin/kill-switches/kill:fanout", { enabled: true }), 200);
    assert.equal(on.enabled, true);
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await emit("order.placed", { n: i }));
    const killed = await drain();
    assert.equal(killed.killed, true);
    assert.equal(killed.read, 0);
    assert.equal(killed.started, 0);
    assert.equal(hooks.calls.length, 0);
    const cron = await (await mesh.mf.getWorker(EVENTS)).scheduled({ cron: "*/2 * * * *", scheduledTime: new Date() });
    assert.equal(cron.outcome, "ok");
    assert.equal(hooks.calls.length, 0, "the cron drain is stopped too");
    assert.equal((await rows("SELECT * FROM events")).length, 5);
    assert.equal(await cursorOf(), undefined);
    const list = await jsonOf(await admin("GET", "/admin/kill-switches"), 200);
    assert.deepEqual(
      list.kill_switches.map(({ name, enabled }) => ({ name, enabled })),
      [{ name: "kill:fanout", enabled: true }],
    );

    await jsonOf(await admin("PUT", "/admin/kill-switches/kill:fanout", { enabled: false }), 200);
    const report = await drain();
    assert.equal(report.read, 5);
    assert.equal(report.started, 5);
    assert.equal(report.cursor, ids[4]);
    assertStartedExactlyOnce(ids.map((id) => key(id, "notify")));
    // Every held event starts once; starts go out up to 6 at a time (issue 12: Workers' connection
    // limit), so they may arrive in any order — targets order by the event's id (docs/runbook-events.md).
    assert.deepEqual(hooks.calls.map((c) => c.body.event.event_id).sort(), [...ids].sort(), "each held event started");

    await errorOf(await admin("PUT", "/admin/kill-switches/Kill Fanout", { enabled: true }), 400, "invalid_request");
    await errorOf(await admin("PUT", "/admin/kill-switches/kill:fanout", { enabled: "yes" }), 400, "invalid_request");
    // A name nothing on this platform obeys is kept, and its answer says so (a typo is visible).
    const unknown = await jsonOf(await admin("PUT", "/admin/kill-switches/kill:ns_writes", { enabled: true }), 200);
    assert.equal(unknown.known, false);
    assert.match(unknown.warning, /kill:fanout/);
    const listed = await jsonOf(await admin("GET", "/admin/kill-switches"), 200);
    assert.deepEqual(
      listed.kill_switches.map(({ name, enabled, known }) => ({ name, enabled, known })),
      [
        { name: "kill:fanout", enabled: false, known: true },
        { name: "kill:ns_writes", enabled: true, known: false },
      ],
    );
    // Taken away whole (one something obeys is not: it is turned off with PUT instead).
    assert.equal((await admin("DELETE", "/admin/kill-switches/kill:ns_writes")).status, 204);
    await errorOf(await admin("DELETE", "/admin/kill-switches/kill:fanout"), 400, "invalid_request");
    const after = await jsonOf(await admin("GET", "/admin/kill-switches"), 200);
    assert.deepEqual(
      after.kill_switches.map(({ name }) => name),
      ["kill:fanout"],
    );
  });

  it("replay shows the consumer the window again and dedupe prevents double starts", async () => {
    await workflow("notify");
    await subscribe("*", "notify");
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await emit("price.changed", { n: i }, "item:7"));
    assert.equal((await drain()).started, 4);
    assert.equal(hooks.calls.length, 4);

    const replay = await jsonOf(
      await admin("POST", "/admin/consumers/workflow_runner/replay", { from_event_id: ids[1] }),
      200,
    );
    assert.equal(replay.from_event_id, ids[1]);
    assert.equal(replay.cursor, ids[0], "the event inserted just before from_event_id");
    assert.equal(await cursorOf(), ids[0]);
    const report = await drain();
    assert.deepEqual(report, { read: 3, started: 0, duplicates: 3, quarantined: 0, capped: 0, cursor: ids[3] });
    assert.equal(hooks.calls.length, 4, "no new call reached the target");
    assert.equal((await rows("SELECT * FROM workflow_run_log")).length, 4);

    await errorOf(await admin("POST", "/admin/consumers/nobody/replay", { from_event_id: ids[0] }), 404, "not_found");
    // The consumer is the path's record: unknown, it is 404 before the body is read (was 415, 400).
    await errorOf(await admin("POST", "/admin/consumers/nobody/replay"), 404, "not_found");
    await errorOf(await admin("POST", "/admin/consumers/nobody/replay", "{"), 404, "not_found");
    await errorOf(await admin("POST", "/admin/consumers/workflow_runner/replay", "{"), 400, "invalid_json");
    const bad = await errorOf(
      await admin("POST", "/admin/consumers/workflow_runner/replay", { from_event_id: "x" }),
      400,
      "invalid_request",
    );
    assert.equal(bad.field, "from_event_id");

    // A run holding the drain lock commits its cursor with every batch: a replay under it would be
    // overwritten, so it is a 409 that changes nothing; once the lock is gone it lands.
    await db
      .prepare("INSERT INTO cron_locks (name, holder, expires_at_ms) VALUES ('drain:workflow_runner', 'a-run', ?1)")
      .bind(Date.now() + 60_000)
      .run();
    await errorOf(
      await admin("POST", "/admin/consumers/workflow_runner/replay", { from_event_id: ids[0] }),
      409,
      "conflict",
    );
    assert.equal(await cursorOf(), ids[3], "the cursor did not move");
    assert.equal((await rows("SELECT holder FROM cron_locks"))[0].holder, "a-run", "the run's lock is untouched");
    await db.prepare("DELETE FROM cron_locks WHERE name = 'drain:workflow_runner'").run();
    await jsonOf(await admin("POST", "/admin/consumers/workflow_runner/replay", { from_event_id: ids[0] }), 200);
    assert.equal((await drain()).read, 4);
    assert.equal((await rows("SELECT * FROM cron_locks")).length, 0, "the replay let its lock go");
  });

  it("two drains at once never start a workflow twice (200 events, overlap forced)", async (t) => {
    await workflow("notify");
    await subscribe("*", "notify");
    let overlaps = 0;
    const all = [];
    for (let round = 0; round < 3; round++) {
      const ids = await emitMany(200);
      all.push(...ids);
      let reports;
      if (round === 0) {
        // The overlap forced: the first drain's first start is held at the target until a second
        // drain, started meanwhile, has reported the lock taken.
        let holding;
        const held = new Promise((resolve) => {
          holding = resolve;
        });
        let release;
        const released = new Promise((resolve) => {
          release = resolve;
        });
        hooks.onCall = async () => {
          hooks.onCall = null;
          holding();
          await released;
          return undefined;
        };
        const first = drain();
        let second;
        try {
          await held;
          second = await drain();
          assert.deepEqual({ locked: second.locked, read: second.read }, { locked: true, read: 0 });
        } finally {
          release(); // a failure above must not leave the first drain parked at its target
        }
        reports = [await first, second];
      } else {
        // Started together: whichever takes the lock drains; the other is locked out or finds nothing.
        reports = await Promise.all([drain(), drain()]);
      }
      const worked = reports.filter((r) => !r.locked);
      const locked = reports.filter((r) => r.locked);
      overlaps += locked.length;
      for (const r of locked) assert.equal(r.read, 0);
      assert.equal(
        worked.reduce((n, r) => n + r.read, 0),
        200,
        JSON.stringify(reports),
      );
      assert.equal(
        worked.reduce((n, r) => n + r.started, 0),
        200,
      );
      assert.equal(await cursorOf(), ids.at(-1));
    }
    t.diagnostic(`drain pairs that overlapped (one reported locked): ${overlaps}/3`);
    assert.equal(hooks.calls.length, 600);
    assert.ok(
      [...hooks.deliveries().values()].every((n) => n === 1),
      "no Idempotency-Key delivered twice",
    );
    assertStartedExactlyOnce(all.map((id) => key(id, "notify")));
    assert.equal((await rows("SELECT * FROM cron_locks")).length, 0);
  });

  it("globs, filters and mappers that do not match start nothing; a matching mapper shapes input", async () => {
    await workflow("big_items");
    await workflow("vendors");
    await workflow("leads");
    await subscribe("price.*", "big_items", { filter_expr: 'payload.amount > 100 && entity_type == "item"' });
    await subscribe("vendor.*", "vendors", {
      input_mapper: { vendor_id: "$.entity_id", cost: "$.payload.cost", version: 2 },
    });
    await subscribe("lead.?", "leads"); // ? is one character: lead.received does not match
    await subscribe("order.*", "leads", { enabled: false });
    await emit("price.changed", { amount: 50 }); // filter false
    await emit("price.changed", { amount: 500 }, "vendor:9"); // entity_type mismatch
    await emit("pricex.changed", { amount: 500 }); // glob mismatch
    await emit("lead.received", { amount: 500 }); // glob mismatch
    await emit("order.placed"); // disabled subscription
    const none = await drain();
    assert.equal(none.read, 5);
    assert.equal(none.started, 0);
    assert.equal(hooks.calls.length, 0);

    const big = await emit("price.changed", { amount: 101 });
    const vendor = await emit("vendor.cost_changed", { cost: 3.5 }, "vendor:42");
    const bare = await emit("vendor.renamed", { name: "x" }, "vendor:43");
    assert.equal((await drain()).started, 3);
    const byEvent = Object.fromEntries(hooks.calls.map((c) => [c.body.event.event_id, c]));
    assert.deepEqual(byEvent[big].body.input, { amount: 101 }, "no mapper: the payload");
    assert.equal(byEvent[big].workflowType, "big_items");
    assert.deepEqual(byEvent[vendor].body.input, { vendor_id: "42", cost: 3.5, version: 2 });
    assert.deepEqual(byEvent[bare].body.input, { vendor_id: "43", cost: null, version: 2 }, "a missing path is null");
  });

  it("the */2 cron trigger runs workflow_runner", async () => {
    await workflow("notify");
    await subscribe("*", "notify");
    const id = await emit("order.placed");
    const worker = await mesh.mf.getWorker(EVENTS);
    const other = await worker.scheduled({ cron: "*/15 * * * *", scheduledTime: new Date() });
    assert.equal(other.outcome, "ok");
    assert.equal(hooks.calls.length, 0, "*/15 is the anomaly detector, not the workflow runner");
    const result = await worker.scheduled({ cron: "*/2 * * * *", scheduledTime: new Date() });
    assert.equal(result.outcome, "ok");
    assertStartedExactlyOnce([key(id, "notify")]);
    assert.equal(await cursorOf(), id);
    assert.equal((await rows("SELECT * FROM cron_locks")).length, 0);
  });
});

// Overlapping runs that the lock alone cannot prevent: starts are claimed in D1 before they are sent
// (migrations/events/0003_dedupe_claims.sql), so the second run never starts what the first claimed.
describe("overlapping runs", () => {
  it("a drain that outlives its 5-minute lock shares the window with the next run, no double start", async () => {
    await workflow("notify");
    await subscribe("*", "notify");
    await emitMany(10);
    hooks.onCall = () => sleep(300).then(() => undefined); // a slow target: 10 events take 3 s
    const first = admin("POST", "/admin/events/drain?consumer=workflow_runner");
    await waitFor(() => hooks.calls.length >= 2);
    // As if 5 minutes had passed (kLockTtlMs); a batch of 500 events × starts that each may wait the
    // 10 s fetch timeout can run far longer than that, and the */2 cron starts the next run meanwhile.
    await db.prepare("UPDATE cron_locks SET expires_at_ms = 0").run();
    const second = admin("POST", "/admin/events/drain?consumer=workflow_runner");
    await Promise.all([first, second]);
    assert.ok(
      [...hooks.deliveries().values()].every((n) => n === 1),
      `deliveries: ${JSON.stringify([...hooks.deliveries()])}`,
    );
    assert.equal((await rows("SELECT * FROM workflow_run_log WHERE status = 'started'")).length, 10);
  });

  it("two retries of one quarantined event at once start it once", async () => {
    await workflow("notify");
    await subscribe("*", "notify");
    const poison = await emit("lead.received");
    hooks.failing.add(poison);
    assert.equal((await drain()).quarantined, 1);
    hooks.failing.clear();
    hooks.calls.length = 0;
    const retry = () => admin("POST", `/admin/quarantine/workflow_runner/${poison}/retry`);
    const answers = await Promise.all([retry(), retry()]);
    // Each answers 200, or — when its lookup runs after the other's commit — 409: already resolved.
    const bodies = await Promise.all(answers.map((r) => jsonOf(r, r.status === 409 ? 409 : 200)));
    assert.ok(answers.some((r) => r.status === 200));
    assert.equal(
      bodies.reduce((n, b) => n + (b.started ?? 0), 0),
      1,
      JSON.stringify(bodies),
    );
    for (const b of bodies) if (b.error) assert.equal(b.error.code, "conflict");
    assert.equal(hooks.calls.length, 1);
  });
});

describe("errors", () => {
  it("invalid subscriptions and workflows: 400 naming the field, nothing stored", async () => {
    const cases = [
      [{ event_type_glob: "Price.*", workflow_type: "x" }, "event_type_glob"],
      [{ workflow_type: "x" }, "event_type_glob"],
      [{ event_type_glob: "price.*", workflow_type: "X Y" }, "workflow_type"],
      [{ event_type_glob: "price.*" }, "workflow_type"],
      [{ event_type_glob: "price.*", workflow_type: "x", filter_expr: "payload.a >" }, "filter_expr"],
      [{ event_type_glob: "price.*", workflow_type: "x", filter_expr: "((((a)" }, "filter_expr"],
      [{ event_type_glob: "price.*", workflow_type: "x", filter_expr: 5 }, "filter_expr"],
      [{ event_type_glob: "price.*", workflow_type: "x", input_mapper: { a: "entity_id" } }, "input_mapper"],
      [{ event_type_glob: "price.*", workflow_type: "x", input_mapper: "nope" }, "input_mapper"],
      [{ event_type_glob: "price.*", workflow_type: "x", enabled: "no" }, "enabled"],
    ];
    for (const [body, field] of cases) {
      const error = await errorOf(await admin("POST", "/admin/subscriptions", body), 400, "invalid_request");
      assert.equal(error.field, field, JSON.stringify(body));
      assert.ok(error.message.includes(field), `${field}: ${error.message}`);
    }
    assert.equal((await rows("SELECT * FROM event_subscriptions")).length, 0);

    for (const [target, field] of [
      [{ webhook: "ftp://x" }, "target.webhook"],
      [{ webhook: "http://example.com/hook" }, "target.webhook"],
      [{ service: "leads" }, "target.service"],
      [{ service: "NOPE", path: "/start" }, "target.service"], // not a binding of the ledger
      [{ service: "LEADS_SERVICE", path: "start" }, "target.path"],
      [{}, "target"],
    ]) {
      const error = await errorOf(await admin("PUT", "/admin/workflows/x", { target }), 400, "invalid_request");
      assert.equal(error.field, field, JSON.stringify(target));
    }
    assert.equal((await rows("SELECT * FROM workflow_definitions")).length, 0);

    // Concurrent definitions of one new workflow type: one 201, the others 200.
    const racing = await Promise.all(
      Array.from({ length: 4 }, () =>
        admin("PUT", "/admin/workflows/race.type", { target: { service: "LEADS_SERVICE", path: "/x" } }),
      ),
    );
    const statuses = racing.map((r) => r.status).sort();
    await Promise.all(racing.map((r) => r.arrayBuffer()));
    assert.deepEqual(statuses, [200, 200, 200, 201]);
    assert.equal((await admin("DELETE", "/admin/workflows/race.type")).status, 204);

    await errorOf(await admin("POST", "/admin/subscriptions", "{"), 400, "invalid_json");
    await errorOf(
      await mesh.fetch("events", "/admin/subscriptions", { method: "POST", headers: JSON_TYPE, body: "{}" }),
      401,
      "unauthorized",
    );
    await errorOf(await mesh.fetch("events", "/admin/events/drain", { method: "POST" }), 401, "unauthorized");
    await errorOf(await mesh.fetch("events", "/admin/quarantine"), 401, "unauthorized");

    // A subscription's id is a ULID: Crockford base32 reads it in either case, as event ids are read.
    const { id } = await subscribe("price.*", "x");
    const lower = id.toLowerCase();
    assert.equal((await jsonOf(await admin("GET", `/admin/subscriptions/${lower}`), 200)).id, id);
    assert.equal(
      (await jsonOf(await admin("PATCH", `/admin/subscriptions/${lower}`, { enabled: false }), 200)).enabled,
      false,
    );
    assert.equal((await admin("DELETE", `/admin/subscriptions/${lower}`)).status, 204);
    await errorOf(await admin("GET", `/admin/subscriptions/${id}`), 404, "not_found");
  });

  it("invalid events: 400 naming the field, 413 over 64 KiB, 415 wrong type, 401 without credentials", async () => {
    const base = { event_type: "price.changed", entity_ref: "item:1", payload: {} };
    const cases = [
      [{ entity_ref: "item:1" }, "event_type"],
      // payload is required (the contract lists it without "?").
      [{ event_type: "price.changed", entity_ref: "item:1" }, "payload"],
      [{ ...base, payload: null }, "payload"],
      [{ ...base, event_type: "Price.Changed" }, "event_type"],
      [{ ...base, event_type: "price" }, "event_type"],
      [{ ...base, entity_ref: "item" }, "entity_ref"],
      [{ ...base, payload: [] }, "payload"],
      [{ ...base, payload: "x" }, "payload"],
      [{ ...base, event_id: "not-a-ulid" }, "event_id"],
      [{ ...base, occurred_at: "yesterday" }, "occurred_at"],
      [{ ...base, sequence_no: "x" }, "sequence_no"],
    ];
    for (const [body, field] of cases) {
      const error = await errorOf(await post(body), 400, "invalid_event");
      assert.equal(error.field, field, JSON.stringify(body));
    }
    const big = await errorOf(
      await post({ ...base, payload: { blob: "x".repeat(65 * 1024) } }),
      413,
      "payload_too_large",
    );
    assert.equal(big.field, "payload");
    const huge = await post({ ...base, payload: { blob: "x".repeat(300 * 1024) } });
    assert.equal(huge.status, 413, "a body far over the limit is refused before parsing");
    assert.ok((await huge.json()).error.code);
    await errorOf(await post('{"event_type":'), 400, "invalid_json");
    // Bytes that are not UTF-8 are malformed JSON, not a payload with U+FFFD in it.
    const latin1 = Buffer.concat([
      Buffer.from('{"event_type":"order.placed","entity_ref":"order:1","payload":{"n":"'),
      Buffer.from([0xe9]),
      Buffer.from('"}}'),
    ]);
    await errorOf(
      await mesh.fetch("events", "/api/events", {
        method: "POST",
        headers: { ...mesh.tenantHeaders("bakery"), ...JSON_TYPE },
        body: latin1,
      }),
      400,
      "invalid_json",
    );
    await errorOf(
      await post(base, { ...mesh.tenantHeaders("bakery"), "content-type": "text/plain" }),
      415,
      "unsupported_media_type",
    );
    // A compressed body: an unsupported content coding (RFC 9110 §8.4.1), 415 naming the header.
    const gzipped = await errorOf(
      await mesh.fetch("events", "/api/events", {
        method: "POST",
        headers: { ...mesh.tenantHeaders("bakery"), ...JSON_TYPE, "content-encoding": "gzip" },
        body: gzipSync(JSON.stringify(base)),
      }),
      415,
      "unsupported_media_type",
    );
    assert.equal(gzipped.field, "Content-Encoding");
    await errorOf(await post(base, JSON_TYPE), 401, "unauthenticated_tenant");
    await errorOf(
      await post(base, { ...mesh.tenantHeaders("bakery", { token: "wrong-token-0000000000" }), ...JSON_TYPE }),
      401,
      "unauthenticated_tenant",
    );
    await errorOf(await post(base, { authorization: "Bearer wrong", ...JSON_TYPE }), 401, "unauthenticated_tenant");

    const schema = { type: "object", required: ["amount"], properties: { amount: { type: "number" } } };
    await jsonOf(await admin("PUT", "/admin/schemas/price.changed", { schema }), 201);
    const violation = await errorOf(await post({ ...base, payload: { amount: "lots" } }), 422, "schema_violation");
    assert.ok(violation.violations.length >= 1);
    // Named as every error about one input is: the payload, its first violation the problem.
    assert.equal(violation.field, "payload");
    assert.deepEqual(violation.fields, { payload: "/amount: expected number" });
    assert.equal((await rows("SELECT * FROM events")).length, 0, "nothing written");
    // Non-integral numbers in an enum (hashed by their bits, no printf in the wasm): registered,
    // compared exactly.
    const rate = { type: "object", properties: { rate: { enum: [1.5, 0.25] } } };
    await jsonOf(await admin("PUT", "/admin/schemas/tax.changed", { schema: rate }), 201);
    const taxed = { ...base, event_type: "tax.changed" };
    await errorOf(await post({ ...taxed, payload: { rate: 2.5 } }), 422, "schema_violation");
    await jsonOf(await post({ ...taxed, payload: { rate: 0.25 } }), 201);
    assert.equal((await rows("SELECT * FROM events")).length, 1);
    // A keyword the ledger does not enforce is refused when registered, never accepted and ignored
    // (a payload breaking it would be stored while the schema reads as if it were checked).
    const unenforced = await errorOf(
      await admin("PUT", "/admin/schemas/code.changed", {
        schema: { properties: { code: { type: "string", pattern: "^[A-Z]+$" } } },
      }),
      400,
      "invalid_request",
    );
    assert.match(unenforced.message, /\/properties\/code\/pattern/);
    await errorOf(
      await admin("PUT", "/admin/schemas/code.changed", {
        schema: { $ref: "#/definitions/x", definitions: { x: {} } },
      }),
      400,
      "invalid_request",
    );
    const listed = await jsonOf(await admin("GET", "/admin/schemas"), 200);
    assert.ok(!listed.schemas.some((x) => x.event_type === "code.changed"), "nothing registered");
    // The schema itself as the body registers it too, through the entry to the config part; GET
    // reads one schema back.
    const raw = { type: "object", required: ["sku"], properties: { sku: { type: "string" } } };
    await jsonOf(await admin("PUT", "/admin/schemas/stock.changed", raw), 201);
    assert.deepEqual((await jsonOf(await admin("GET", "/admin/schemas/stock.changed"), 200)).schema, raw);
    await errorOf(await post({ ...base, event_type: "stock.changed", payload: { sku: 7 } }), 422, "schema_violation");
    await errorOf(await admin("GET", "/admin/schemas/none.here"), 404, "not_found");

    const read = (q) => mesh.fetch("events", `/api/events${q}`, { headers: mesh.tenantHeaders("bakery") });
    for (const [q, field] of [
      ["?type=PRICE.*", "type"],
      ["?after=zzz", "after"],
      ["?limit=0", "limit"],
      ["?limit=501", "limit"],
      [`?type=a.${"b".repeat(48)}*`, "type"], // a glob over D1's 50-byte GLOB pattern: 400, not D1's 503
    ]) {
      const error = await errorOf(await read(q), 400, "invalid_request");
      assert.equal(error.field, field, q);
    }
    // An exact type longer than D1's GLOB pattern limit (an event type may have 128 characters) is
    // read by type: it was a 503 from D1.
    const long = `a.${"c".repeat(126)}`;
    const { event_id } = await jsonOf(await post({ ...base, event_type: long, payload: {} }), 201);
    const found = await jsonOf(await read(`?type=${long}`), 200);
    assert.deepEqual(
      found.events.map((e) => e.event_id),
      [event_id],
    );
    assert.equal((await jsonOf(await read(`?type=a.${"c".repeat(47)}*`), 200)).events.length, 1);
  });
});

describe("insertion order (the ledger's own sequence, not producer ids)", () => {
  const FAR_FUTURE = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ";
  async function enqueue(eventId, tenantId = "bakery") {
    const producer = await mesh.mf.getQueueProducer("EVENTS_QUEUE", "siteswarm-leads-service");
    await producer.send({
      event_id: eventId,
      event_type: "order.placed",
      entity_ref: "order:9",
      payload: {},
      tenant_id: tenantId,
    });
    await waitFor(async () => (await rows("SELECT seq FROM events WHERE event_id = ?1", eventId)).length === 1);
  }

  // Before: POST accepted it, and it moved every cursor past all later events of every tenant.
  it("a far-future event_id is 400 on POST, accepted from the queue, and another tenant's later event is still drained and started", async () => {
    await workflow("notify");
    await subscribe("*", "notify");
    const refused = await errorOf(
      await post({ event_type: "order.placed", entity_ref: "order:1", payload: {}, event_id: FAR_FUTURE }),
      400,
      "invalid_event",
    );
    assert.equal(refused.field, "event_id");
    await enqueue(FAR_FUTURE);
    assert.deepEqual(await drain(), {
      read: 1,
      started: 1,
      duplicates: 0,
      quarantined: 0,
      capped: 0,
      cursor: FAR_FUTURE,
    });
    const later = (
      await jsonOf(
        await post(
          { event_type: "order.placed", entity_ref: "order:2", payload: {} },
          { ...mesh.tenantHeaders("auto-repair"), ...JSON_TYPE },
        ),
        201,
      )
    ).event_id;
    assert.ok(later < FAR_FUTURE);
    assert.deepEqual(await drain(), { read: 1, started: 1, duplicates: 0, quarantined: 0, capped: 0, cursor: later });
    assertStartedExactlyOnce([key(FAR_FUTURE, "notify"), key(later, "notify")]);
    assert.equal(hooks.started.get(key(later, "notify")).body.event.tenant_id, "auto-repair");
  });

  // Before: the cursor had passed the late event's id, so it was skipped for good.
  it("an event ingested after the cursor passed its timestamp is still drained", async () => {
    await workflow("notify");
    await subscribe("*", "notify");
    const minted = ulid(Date.now() - 10 * 60 * 1000); // a producer's id, delayed in the queue
    const fresh = await emit("order.placed");
    assert.equal((await drain()).cursor, fresh);
    await enqueue(minted);
    assert.deepEqual(await drain(), { read: 1, started: 1, duplicates: 0, quarantined: 0, capped: 0, cursor: minted });
    assertStartedExactlyOnce([key(fresh, "notify"), key(minted, "notify")]);
    assert.equal((await drain()).read, 0);
  });
});

describe("no leaks", () => {
  // Before: every consumer's cursor, lag and the quarantine counts, to anyone, at 7 D1 queries.
  it("public /health is exactly {ok, service, version}; the consumers' details need the operator token", async () => {
    await emit("order.placed");
    const pub = await jsonOf(await mesh.fetch("events", "/health"), 200);
    assert.deepEqual(pub, { ok: true, service: EVENTS, version: pub.version });
    assert.match(pub.version, /^\d+\.\d+\.\d+$/);
    const details = await health();
    assert.equal(details.status, "ok");
    assert.equal(details.consumers.workflow_runner.lagging, false);
    assert.equal(details.quarantined, 0);
  });

  // Before: pages followed event_id, so a reader polling with `after` never saw an event whose
  // producer id sorts before its cursor.
  it("GET /api/events pages in insertion order: a late producer id is on the reader's next page", async () => {
    const entity = `order:late-${Date.now()}`;
    const read = async (query) =>
      (
        await jsonOf(
          await mesh.fetch("events", `/api/events?entity=${entity}${query}`, { headers: mesh.tenantHeaders("bakery") }),
          200,
        )
      ).events.map((e) => e.event_id);
    const a = (await jsonOf(await post({ event_type: "order.placed", entity_ref: entity, payload: {} }), 201)).event_id;
    const b = (await jsonOf(await post({ event_type: "order.placed", entity_ref: entity, payload: {} }), 201)).event_id;
    assert.deepEqual(await read(""), [a, b]);
    const late = "01H00000000000000000000000";
    await jsonOf(await post({ event_type: "order.placed", entity_ref: entity, payload: {}, event_id: late }), 201);
    assert.deepEqual(await read(`&after=${b}`), [late]);
    assert.deepEqual(await read(""), [a, b, late]);
    assert.deepEqual(await read("&order=desc"), [late, b, a]);
  });

  // The page's events are written by workerd's SQLite and joined into the body by the host (docs/abi.md
  // "Held columns"): the text must be what the ledger's JSON writer gives (sorted keys, escapes as
  // below, the stored payload as stored, ".000" dropped from times), whatever the characters.
  it("GET /api/events writes each event byte for byte as the ledger's JSON, both orders; HEAD has no body", async () => {
    const SHORT = { '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };
    const escaped = (c) => SHORT[c] ?? (c < " " ? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}` : c);
    const quote = (s) => (s === null ? "null" : `"${[...s].map(escaped).join("")}"`);
    const shown = (t) => (t.length === 24 && t.endsWith(".000Z") ? `${t.slice(0, 19)}Z` : t);
    const view = (r) =>
      `{"caused_by":${quote(r.caused_by)},"entity_id":${quote(r.entity_id)},` +
      `"entity_ref":${quote(`${r.entity_type}:${r.entity_id}`)},"entity_type":${quote(r.entity_type)},` +
      `"event_id":${quote(r.event_id)},"event_type":${quote(r.event_type)},` +
      `"idempotency_key":${quote(r.idempotency_key)},"occurred_at":${quote(shown(r.occurred_at))},` +
      `"payload":${r.payload_json},"recorded_at":${quote(shown(r.recorded_at))},` +
      `"sequence_no":${r.sequence_no ?? "null"},"source_system":${quote(r.source_system)},` +
      `"tenant_id":${quote(r.tenant_id)},"workflow_run_id":${quote(r.workflow_run_id)}}`;
    const tricky = 'quote" back\\slash \u0001\u001f\b\f\r\t\n \u007f caf\u00e9 \u{1F370} \u2028\u2029\u0000 </script>';
    const mild = 'quote" back\\slash caf\u00e9 \u{1F370} </script>'; // ids take no control characters
    await emit(
      "note.added",
      { text: tricky, n: [0, -1, 2.5, 1e300, -1.5e-7, 0.1, 1234567890123456], e: [], o: {} },
      `note:${mild}`,
      {
        caused_by: tricky,
        source_system: "caf\u00e9",
        occurred_at: "2026-05-25T14:23:11.123Z",
        idempotency_key: "k-1",
        sequence_no: 2 ** 53 - 1, // the largest a sequence number may be: read back exactly
      },
    );
    await emit("price.changed", { amount: 3 }, "item:1");
    const stored = await rows("SELECT * FROM events ORDER BY seq");
    assert.equal(stored.length, 2);
    const headers = { headers: mesh.tenantHeaders("bakery") };
    const asc = await mesh.fetch("events", "/api/events?limit=2", headers);
    assert.equal(asc.status, 200);
    assert.equal(asc.headers.get("content-type"), "application/json; charset=utf-8");
    // The last page, though full: nothing follows, no cursor.
    assert.equal(await asc.text(), `{"events":[${stored.map(view).join(",")}],"next":null}`);
    // A page with another after it: its views alone (the row read past it is not shown), and a cursor.
    const first = await mesh.fetch("events", "/api/events?limit=1", headers);
    assert.equal(await first.text(), `{"events":[${view(stored[0])}],"next":"${stored[0].event_id}"}`);
    const desc = await mesh.fetch("events", "/api/events?order=desc", headers);
    assert.equal(await desc.text(), `{"events":[${stored.map(view).reverse().join(",")}],"next":null}`);
    const page = await jsonOf(await mesh.fetch("events", "/api/events", headers), 200);
    assert.equal(page.events[0].entity_id, mild);
    assert.equal(page.events[0].payload.text, tricky);
    assert.equal(page.events[0].occurred_at, "2026-05-25T14:23:11.123Z");
    assert.match(page.events[1].recorded_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const none = await mesh.fetch("events", "/api/events?type=nothing.*", headers);
    assert.equal(await none.text(), '{"events":[],"next":null}');
    const head = await mesh.fetch("events", "/api/events", { method: "HEAD", ...headers });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  });

  // Before: 409 "event_id is already used" told auto-repair that some tenant holds the id.
  it("an event_id another tenant holds is simply a different event (201), never a 409", async () => {
    const id = ulid();
    await jsonOf(await post({ event_type: "order.placed", entity_ref: "order:1", payload: {}, event_id: id }), 201);
    const other = await jsonOf(
      await post(
        { event_type: "order.placed", entity_ref: "order:2", payload: {}, event_id: id },
        { ...mesh.tenantHeaders("auto-repair"), ...JSON_TYPE },
      ),
      201,
    );
    assert.deepEqual(other, { event_id: id });
    assert.equal((await rows("SELECT * FROM events WHERE event_id = ?1", id)).length, 2);
    const mine = await jsonOf(
      await mesh.fetch("events", "/api/events", { headers: mesh.tenantHeaders("auto-repair") }),
      200,
    );
    assert.deepEqual(
      mine.events.map((e) => e.entity_ref),
      ["order:2"],
    );
  });
});

describe("queue", () => {
  it("an event_message() sent twice through another worker's EVENTS_QUEUE lands once", async () => {
    const eventId = ulid();
    const message = {
      // shared/emit.cpp event_message()
      event_id: eventId,
      event_type: "lead.received",
      entity_ref: `lead:${eventId}`,
      payload: { channel: "form" },
      source_system: "siteswarm-leads-service",
      occurred_at: new Date().toISOString(),
      tenant_id: "bakery",
    };
    const producer = await mesh.mf.getQueueProducer("EVENTS_QUEUE", "siteswarm-leads-service");
    await producer.send(message);
    await producer.send(message);
    const sentinel = ulid(Date.now() + 1);
    await producer.send({ ...message, event_id: sentinel, entity_ref: `lead:${sentinel}` });
    const count = () => db.prepare("SELECT COUNT(*) AS n FROM events").first("n");
    await waitFor(async () => (await count()) >= 2);
    await sleep(1500); // one more max_batch_timeout: any late redelivery would have landed
    const stored = await rows(
      "SELECT event_id, tenant_id, source_system, event_type, payload_json FROM events ORDER BY event_id",
    );
    assert.equal(stored.length, 2, JSON.stringify(stored));
    assert.deepEqual(stored[0], {
      event_id: eventId,
      tenant_id: "bakery",
      source_system: "siteswarm-leads-service",
      event_type: "lead.received",
      payload_json: '{"channel":"form"}',
    });
    assert.equal(stored[1].event_id, sentinel);
  });
});

// The ledger is deployed as three workers built from one library (docs/architecture.md "The ledger's
// three workers"): events (the entry), the runner and the config part. In one Miniflare, as deployed,
// they bind one D1 database (same database_id) and one FLAGS namespace, and a test hook set on the
// entry holds in its parts (bindings/host.js `parts`).
describe("the ledger's parts", () => {
  const PART_NAMES = { events_runner: "siteswarm-events-runner", events_config: "siteswarm-events-config" };
  const faults = (key, method, rules) =>
    mesh.fetch(key, "/__test/faults", {
      method,
      headers: JSON_TYPE,
      body: rules === undefined ? undefined : JSON.stringify(rules),
    });

  it("each answers /health in the mesh", async () => {
    for (const [key, name] of Object.entries(PART_NAMES)) {
      const body = await jsonOf(await mesh.fetch(key, "/health"), 200);
      assert.equal(body.ok, true, key);
      assert.equal(body.service, name, key);
    }
  });

  it("share events' D1 database and FLAGS: what one writes, the others read", async () => {
    const eventId = await emit("parts.shared", { n: 1 });
    for (const key of Object.keys(PART_NAMES)) {
      const partDb = await mesh.d1(key, "EVENTS_DB");
      assert.equal(
        await partDb.prepare("SELECT event_id FROM events WHERE event_id = ?1").bind(eventId).first("event_id"),
        eventId,
        key,
      );
    }
    const runnerDb = await mesh.d1("events_runner", "EVENTS_DB");
    await runnerDb
      .prepare("INSERT INTO cron_locks (name, holder, expires_at_ms) VALUES ('parts-test', 'runner', 0)")
      .run();
    assert.equal(await db.prepare("SELECT holder FROM cron_locks WHERE name = 'parts-test'").first("holder"), "runner");
    const flags = async (name) => mesh.mf.getKVNamespace("FLAGS", name);
    await (await flags(PART_NAMES.events_config)).put("parts-test", "from-config");
    assert.equal(await (await flags(EVENTS)).get("parts-test"), "from-config");
    assert.equal(await (await flags(PART_NAMES.events_runner)).get("parts-test"), "from-config");
    await (await flags(EVENTS)).delete("parts-test");
  });

  it("/__test/faults set on events holds in both parts; GET sums their firings; DELETE clears all", async () => {
    const rules = [{ kind: "d1.*", rate: 1, times: 1 }];
    try {
      assert.deepEqual(await jsonOf(await faults("events", "POST", rules), 200), { rules: 1 });
      for (const key of Object.keys(PART_NAMES)) {
        assert.deepEqual(await jsonOf(await faults(key, "GET"), 200), { rules: 1, fired: [0] }, key);
      }
      // A bad rule list is refused as before, and changes nothing anywhere.
      await errorOf(await faults("events", "POST", [{ kind: "d1.*", rate: 2 }]), 400, "invalid_request");
      assert.deepEqual(await jsonOf(await faults("events_runner", "GET"), 200), { rules: 1, fired: [0] });
      // A drain run in the runner's isolate meets the rule there (its first D1 call fails, once).
      await mesh.fetch("events_runner", "/admin/events/drain?consumer=workflow_runner", {
        method: "POST",
        headers: mesh.operator(),
      });
      assert.deepEqual(await jsonOf(await faults("events_runner", "GET"), 200), { rules: 1, fired: [1] });
      assert.deepEqual(await jsonOf(await faults("events_config", "GET"), 200), { rules: 1, fired: [0] });
      // The entry answers for the whole ledger: its own firings (none) plus its parts'.
      assert.deepEqual(await jsonOf(await faults("events", "GET"), 200), { rules: 1, fired: [1] });
    } finally {
      assert.deepEqual(await jsonOf(await faults("events", "DELETE"), 200), { rules: 0 });
    }
    for (const key of Object.keys(PART_NAMES)) {
      assert.deepEqual(await jsonOf(await faults(key, "GET"), 200), { rules: 0, fired: [] }, key);
    }
  });
});
