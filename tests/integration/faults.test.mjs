// Faults survived, in workerd: the host's test-only fault layer (bindings/faults.js, SITESWARM_TEST_HOOKS)
// makes D1, KV, queue sends and service calls fail before or after they happen, hang, or kill the
// instance (a trap), and the stubs make providers fail. For each: the client gets the contract's answer
// (503 JSON with nothing half-written, or a 202 that is later delivered), and afterwards nothing is lost
// and nothing happened twice.
//
// The ledger's workflow starts go over a service binding (WORKFLOW_TARGET) to a small recording worker
// started here: like a real workflow engine it treats the Idempotency-Key as the identity of a start (a
// repeated key is answered 200 and is not a second start). DRAIN_CHUNK_STARTS=2: workflow_runner claims
// and commits one event (2 starts) per D1 batch, so a test can pin the chunk a crash hits.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { secret, startMesh } from "./mesh.mjs";

const TENANT = "ft-faults";
const HOOK = "/webhook/faults";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let mesh;
let creds;
let ip = 0;

async function faults(worker, rules) {
  const res = await mesh.fetch(worker, "/__test/faults", {
    method: rules ? "POST" : "DELETE",
    headers: { "content-type": "application/json" },
    body: rules ? JSON.stringify(rules) : undefined,
  });
  assert.equal(res.status, 200, await res.text());
}

function submit(n, headers = {}) {
  ip++;
  return mesh.fetch("leads", "/api/leads/submit", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "X-SiteSwarm-Tenant-Id": TENANT,
      "X-SiteSwarm-Tenant-Token": creds.token,
      "X-SiteSwarm-Capability-Version": "1.0.0",
      "CF-Connecting-IP": `10.9.${(ip >> 8) & 255}.${ip & 255}`,
      ...headers,
    },
    body: JSON.stringify({ name: `Fault ${n}`, email: `fault-${n}@faults.example`, message: `Submission ${n}` }),
  });
}

const leadsDb = () => mesh.d1("leads", "LEADS_DB");
const count = async (db, sql, ...params) =>
  (
    await (
      await db
    )
      .prepare(sql)
      .bind(...params)
      .first()
  ).n;
const storedFor = (n) =>
  count(leadsDb(), "SELECT COUNT(*) AS n FROM leads WHERE tenant_id = ?1 AND payload LIKE ?2", TENANT, `%fault-${n}@%`);
const tenantDeliveries = () =>
  count(leadsDb(), "SELECT COUNT(*) AS n FROM lead_deliveries WHERE tenant_id = ?1", TENANT);
const deliveriesOf = async (leadId) =>
  (
    await (
      await leadsDb()
    )
      .prepare("SELECT status, attempts FROM lead_deliveries WHERE lead_id = ?1")
      .bind(leadId)
      .all()
  ).results.map((row) => ({ ...row }));
const fired = async (worker) => (await (await mesh.fetch(worker, "/__test/faults")).json()).fired ?? [];
const hookCallsFor = (leadId) =>
  mesh.stubs.find(HOOK, "POST").filter((c) => !c.injectedFailure && JSON.parse(c.body).leadId === leadId);
const receivedEvents = (leadId) =>
  count(
    mesh.d1("events", "EVENTS_DB"),
    "SELECT COUNT(*) AS n FROM events WHERE tenant_id = ?1 AND event_type = 'lead.received' AND entity_id = ?2",
    TENANT,
    leadId,
  );

async function waitFor(what, check, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * The sweeper as the backstop: ages the lead's deliveries (those not tried yet, when `untriedOnly`),
 * fires the leads cron and checks the webhook got the lead exactly once.
 */
async function sweepAndExpectOnce(leadId, what, { untriedOnly = false } = {}) {
  await (await leadsDb())
    .prepare(
      `UPDATE lead_deliveries SET updated_at = '2000-01-01T00:00:00.000Z' WHERE lead_id = ?1${untriedOnly ? " AND attempts = 0" : ""}`,
    )
    .bind(leadId)
    .run();
  await (await mesh.mf.getWorker("siteswarm-leads-service")).scheduled({ cron: "*/10 * * * *" });
  await waitFor(what, async () => hookCallsFor(leadId).length >= 1);
  await sleep(1500);
  assert.equal(hookCallsFor(leadId).length, 1, "delivered once");
}

async function contractError(res, status, code) {
  assert.equal(res.status, status);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  const body = await res.json();
  assert.equal(body.error?.code, code, JSON.stringify(body));
  assert.equal(typeof body.error?.message, "string");
  return body;
}

// The workflow target: every start it received, in order ({key, eventId, workflowType, repeat}).
const WORKFLOW_TARGET = {
  name: "workflow-target",
  modules: true,
  compatibilityDate: "2026-04-20",
  script: `
    const calls = [];
    const started = new Set();
    export default {
      async fetch(request) {
        if (request.method === "GET") return Response.json(calls);
        const key = request.headers.get("idempotency-key");
        const body = await request.json();
        const repeat = started.has(key);
        started.add(key);
        calls.push({ key, eventId: body.event?.event_id, workflowType: body.workflow_type, repeat,
                     tenant: request.headers.get("x-siteswarm-tenant-id") });
        return Response.json({ accepted: true }, { status: repeat ? 200 : 202 });
      },
    };`,
};

before(async () => {
  mesh = await startMesh({
    // The test's own workflow target is a service binding the ledger is given here: the host tells
    // the core its bindings, so PUT /admin/workflows accepts it without any configuration.
    bindings: { events: { DRAIN_CHUNK_STARTS: "2" } },
    queueBatchTimeout: 0.05,
    extraWorkers: [WORKFLOW_TARGET],
    serviceBindings: { events: { WORKFLOW_TARGET: WORKFLOW_TARGET.name } },
  });
  creds = { token: secret(), adminToken: secret() };
  const res = await mesh.fetch("leads", `/admin/tenants/${TENANT}`, {
    method: "PUT",
    headers: mesh.operator({ "content-type": "application/json" }),
    body: JSON.stringify({
      ...creds,
      config: {
        turnstile: "off",
        rateLimit: { limit: 10000, periodSeconds: 60 },
        notify: { webhook: { url: mesh.stubs.url + HOOK, secret: `whsec-${secret()}` } },
      },
    }),
  });
  assert.equal(res.status, 201, await res.text());
});
after(() => mesh?.dispose());

describe("fault injection is a test hook", () => {
  it("refuses a malformed rule list with the contract's 400", async () => {
    const res = await mesh.fetch("leads", "/__test/faults", { method: "POST", body: '[{"kind":"d1.*","rate":2}]' });
    await contractError(res, 400, "invalid_request");
  });
});

describe("leads intake under faults", () => {
  it("D1 refusing the lead's transaction: 503, nothing stored, nobody notified; then the retry is accepted once", async () => {
    await faults("leads", [{ kind: "d1.batch", match: "INSERT INTO leads", rate: 1 }]);
    const deliveriesBefore = await tenantDeliveries();
    await contractError(await submit(1), 503, "dependency_unavailable");
    assert.deepEqual(await fired("leads"), [1], "the lead's transaction was refused, once");
    await faults("leads", null);
    assert.equal(await storedFor(1), 0, "nothing half-written");
    // No delivery row: nothing was or will be queued for it, and the sweeper has nothing to send.
    assert.equal(await tenantDeliveries(), deliveriesBefore, "no notification for a refused lead");

    const res = await submit(1);
    assert.equal(res.status, 202);
    const { leadId } = await res.json();
    assert.equal(await storedFor(1), 1);
    await waitFor("the webhook delivery", async () => hookCallsFor(leadId).length === 1);
    await waitFor("lead.received in the ledger", async () => (await receivedEvents(leadId)) === 1);
  });

  it("D1 committing but its answer lost: with an Idempotency-Key the client gets the stored lead's id, stored and delivered once", async () => {
    await faults("leads", [{ kind: "d1.batch", match: "INSERT INTO leads", rate: 1, when: "after" }]);
    const res = await submit(2, { "Idempotency-Key": "fault-2" });
    await faults("leads", null);
    assert.equal(res.status, 202, "the replay lookup finds the committed lead");
    const { leadId } = await res.json();
    assert.equal(await storedFor(2), 1);
    // A client retry with the same key gets the same id and adds nothing.
    const again = await submit(2, { "Idempotency-Key": "fault-2" });
    assert.equal((await again.json()).leadId, leadId);
    assert.equal(await storedFor(2), 1);
    // The claim names this very lead: it is queued as any stored lead; the sweeper adds nothing.
    await sweepAndExpectOnce(leadId, "the webhook delivery", { untriedOnly: true });
  });

  it("D1 committing but its answer lost, without an Idempotency-Key: 202 (the lead's row is read back), stored and delivered once", async () => {
    await faults("leads", [{ kind: "d1.batch", match: "INSERT INTO leads", rate: 1, when: "after" }]);
    const res = await submit(6);
    await faults("leads", null);
    assert.equal(res.status, 202, "a 503 would have the client submit a stored lead again");
    const { leadId } = await res.json();
    assert.equal(await storedFor(6), 1);
    // Queued at once, as any stored lead: no sweeper needed, and it finds nothing left to send.
    await waitFor("the webhook delivery", async () => hookCallsFor(leadId).length === 1);
    await sweepAndExpectOnce(leadId, "the webhook delivery", { untriedOnly: true });
  });

  it("the notify queue refusing sends: 202, and the sweeper delivers the lead once", async () => {
    await faults("leads", [{ kind: "queue.send", match: "NOTIFY_QUEUE", rate: 1 }]);
    const res = await submit(3);
    assert.equal(res.status, 202);
    const { leadId } = await res.json();
    // The enqueue runs after the answer (ctx.waitUntil): its one send (the webhook's) is refused.
    await waitFor("the refused enqueue", async () => (await fired("leads"))[0] === 1);
    await faults("leads", null);
    assert.deepEqual(await deliveriesOf(leadId), [{ status: "pending", attempts: 0 }], "nothing was queued");
    await sweepAndExpectOnce(leadId, "the swept delivery");
    const status = await (await leadsDb())
      .prepare("SELECT status FROM lead_deliveries WHERE lead_id = ?1")
      .bind(leadId)
      .first();
    assert.equal(status.status, "delivered");
  });

  it("the instance trapping between the lead's commit and its enqueue: the 202 stands, and the sweeper delivers once", async () => {
    // The 202 goes out right after the D1 commit; the notification is queued after it (ctx.waitUntil).
    // The first notify send kills the instance there, as a wasm trap would.
    await faults("leads", [{ kind: "queue.send", match: "NOTIFY_QUEUE", rate: 1, when: "trap", times: 1 }]);
    const res = await submit(4);
    assert.equal(res.status, 202, "answered before the trap");
    const { leadId } = await res.json();
    await waitFor("the trap", async () => {
      const state = await (await mesh.fetch("leads", "/__test/faults")).json();
      return state.fired?.[0] === 1;
    });
    await faults("leads", null);
    assert.equal(await storedFor(4), 1, "committed before the answer");
    const pending = await (await leadsDb())
      .prepare("SELECT status, attempts FROM lead_deliveries WHERE lead_id = ?1")
      .bind(leadId)
      .first();
    assert.deepEqual({ ...pending }, { status: "pending", attempts: 0 }, "never queued");
    // The next request gets a fresh instance and is delivered as usual.
    const next = await submit(5);
    assert.equal(next.status, 202);
    const nextId = (await next.json()).leadId;
    await waitFor("the next lead's delivery", async () => hookCallsFor(nextId).length === 1);
    assert.equal(hookCallsFor(leadId).length, 0, "the trapped lead was not sent");
    // The sweeper is the backstop.
    await sweepAndExpectOnce(leadId, "the swept delivery");
  });

  it("the ledger's D1 losing answers after committing: every lead.received is in the ledger once", async () => {
    await faults("events", [{ kind: "d1.*", match: "INSERT", rate: 0.5, when: "after", seed: 11 }]);
    const ids = [];
    for (let n = 10; n < 20; n++) {
      const res = await submit(n);
      assert.equal(res.status, 202);
      ids.push((await res.json()).leadId);
    }
    // Retried queue messages meet the rows their lost answers committed: deduplicated, not doubled.
    await waitFor(
      "every lead.received",
      async () => (await Promise.all(ids.map(receivedEvents))).every((n) => n >= 1),
      60_000,
    );
    await faults("events", null);
    await sleep(1500);
    assert.deepEqual(
      await Promise.all(ids.map(receivedEvents)),
      ids.map(() => 1),
    );
  });

  it("a burst under 5 % D1 and 20 % provider failures: every 202 stored and delivered once, every refusal a 503 JSON error", async () => {
    await faults("leads", [{ kind: "d1.*", rate: 0.05, seed: 5 }]);
    mesh.stubs.failRate(HOOK, 0.2, 503, 9);
    const accepted = [];
    let refused = 0;
    let next = 100;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let n = next++; n < 180; n = next++) {
          const res = await submit(n);
          if (res.status === 202) accepted.push({ n, leadId: (await res.json()).leadId });
          else {
            await contractError(res, 503, "dependency_unavailable");
            refused++;
          }
        }
      }),
    );
    await faults("leads", null);
    assert.equal(accepted.length + refused, 80);
    assert.ok(refused > 0, "the injected D1 failures refused some submissions");
    assert.ok(accepted.length > 40);
    await waitFor(
      "every accepted lead delivered",
      async () => accepted.every(({ leadId }) => hookCallsFor(leadId).length >= 1),
      90_000,
    );
    mesh.stubs.failRate(HOOK, 0);
    await sleep(1500);
    for (const { n, leadId } of accepted) {
      assert.equal(await storedFor(n), 1, `lead ${n} stored once`);
      assert.equal(hookCallsFor(leadId).length, 1, `lead ${n} delivered once`);
    }
    const failedCalls = mesh.stubs.find(HOOK, "POST").filter((c) => c.injectedFailure).length;
    assert.ok(failedCalls > 0, "the provider failures were retried");
  });
});

// --- the ledger: workflow starts over a service binding --------------------------------------------

const LOCK_TTL_MS = 5 * 60_000; // kLockTtlMs: a drain lock and its start claims expire after this
const eventsDb = () => mesh.d1("events", "EVENTS_DB");
const ledgerAdmin = (method, pathname, body) =>
  mesh.fetch("events", pathname, {
    method,
    headers: mesh.operator(body === undefined ? {} : { "content-type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const drain = () => ledgerAdmin("POST", "/admin/events/drain?consumer=workflow_runner");
async function drainReport() {
  const res = await drain();
  assert.equal(res.status, 200);
  return (await res.json()).consumers.workflow_runner;
}
/** Drains workflow_runner until a run reads nothing (the cursor at the end of the ledger). */
async function drainAll() {
  for (let i = 0; i < 20; i++) if ((await drainReport()).read === 0) return;
  assert.fail("workflow_runner never caught up");
}
async function targetCalls(workflowTypes) {
  const res = await (await mesh.mf.getWorker(WORKFLOW_TARGET.name)).fetch("http://localhost/calls");
  return (await res.json()).filter((c) => workflowTypes.includes(c.workflowType));
}
/** Workflows on the target and one subscription each for `eventType`. */
async function subscribeWorkflows(eventType, workflowTypes) {
  for (const type of workflowTypes) {
    const target = { service: "WORKFLOW_TARGET", path: `/start/${type}` };
    assert.equal((await ledgerAdmin("PUT", `/admin/workflows/${type}`, { target })).status, 201);
    const sub = await ledgerAdmin("POST", "/admin/subscriptions", { event_type_glob: eventType, workflow_type: type });
    assert.equal(sub.status, 201, await sub.text());
  }
}
async function emitEvents(eventType, n) {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const res = await mesh.fetch("events", "/api/events", {
      method: "POST",
      headers: { ...mesh.tenantHeaders("bakery"), "content-type": "application/json" },
      body: JSON.stringify({ event_type: eventType, entity_ref: `fault:${i}`, payload: { n: i } }),
    });
    const text = await res.text();
    assert.equal(res.status, 201, text);
    ids.push(JSON.parse(text).event_id);
  }
  return ids;
}
const startKey = (eventId, type) => `workflow_runner:${eventId}:${type}`;
const seqOf = async (eventId) =>
  (await (await eventsDb()).prepare("SELECT seq FROM events WHERE event_id = ?1").bind(eventId).first()).seq;
const cursorSeq = async () =>
  (
    await (
      await eventsDb()
    )
      .prepare("SELECT cursor_seq FROM event_drain_state WHERE consumer = 'workflow_runner'")
      .first()
  ).cursor_seq;
const openQuarantine = async (ids) =>
  (
    await (
      await eventsDb()
    )
      .prepare(
        `SELECT event_id, reason, attempts FROM events_quarantine WHERE consumer = 'workflow_runner'
         AND resolved_at IS NULL AND event_id IN (SELECT value FROM json_each(?1))`,
      )
      .bind(JSON.stringify(ids))
      .all()
  ).results;

/**
 * After a crash: a drain is locked out while the dead run's lock lives; then the lock and the claims
 * are aged by the lock's TTL (what five minutes would do), and the drains catch up.
 */
async function rerunAfterTtl() {
  const blocked = await drainReport();
  assert.equal(blocked.locked, true, "the dead run's lock still protects the consumer");
  assert.equal(blocked.read, 0);
  const db = await eventsDb();
  await db
    .prepare("UPDATE cron_locks SET expires_at_ms = expires_at_ms - ?1 WHERE name = 'drain:workflow_runner'")
    .bind(LOCK_TTL_MS)
    .run();
  await db
    .prepare("UPDATE event_consumer_dedupe SET claimed_at_ms = claimed_at_ms - ?1 WHERE status = 'claimed'")
    .bind(LOCK_TTL_MS)
    .run();
  await drainAll();
}

/** Every start of `ids` × `types` reached the target, each once in effect; nothing else did. */
async function assertEachStartOnce(ids, types) {
  const calls = await targetCalls(types);
  const expected = ids.flatMap((id) => types.map((t) => startKey(id, t))).sort();
  assert.deepEqual([...new Set(calls.map((c) => c.key))].sort(), expected, "every start, none missing");
  const firsts = calls.filter((c) => !c.repeat).map((c) => c.key);
  assert.deepEqual(firsts.sort(), expected, "each key started once at the target");
  assert.ok(
    calls.every((c) => c.tenant === "bakery"),
    "each start names its event's tenant",
  );
  const db = await eventsDb();
  const rows = (
    await db
      .prepare(
        `SELECT dedupe_key, status FROM event_consumer_dedupe WHERE consumer = 'workflow_runner'
         AND event_id IN (SELECT value FROM json_each(?1)) ORDER BY dedupe_key`,
      )
      .bind(JSON.stringify(ids))
      .all()
  ).results;
  assert.deepEqual(
    rows.map((r) => `${r.dedupe_key}:${r.status}`),
    expected.map((k) => `${k}:started`),
    "one started dedupe row per start, no claim left",
  );
  const runs = await db
    .prepare(
      `SELECT COUNT(*) AS n, COUNT(DISTINCT event_id || ':' || workflow_type) AS d FROM workflow_run_log
         WHERE status = 'started' AND event_id IN (SELECT value FROM json_each(?1))`,
    )
    .bind(JSON.stringify(ids))
    .first();
  assert.deepEqual({ ...runs }, { n: expected.length, d: expected.length }, "one started run per start");
  assert.deepEqual(await openQuarantine(ids), [], "nothing quarantined");
  assert.ok((await cursorSeq()) >= (await seqOf(ids.at(-1))), "the cursor is past the batch");
  const probe = await mesh.fetch("events", "/health/consumers");
  assert.equal(probe.status, 200, await probe.text());
  return calls;
}

describe("the ledger's workflow_runner killed mid-batch, in workerd", () => {
  before(drainAll); // what the leads cases put in the ledger is behind the cursor

  it("a trap at a chunk's D1 batch (the previous chunk's commit with the next claims): re-run after the lock's TTL, each start once in effect", async () => {
    const types = ["kill_commit_a", "kill_commit_b"];
    await subscribeWorkflows("fault.kill_commit", types);
    const ids = await emitEvents("fault.kill_commit", 6);
    // One event per chunk: the 4th claims batch carries the 3rd chunk's commit, and the instance dies
    // there: events 1-2 are committed, the 3rd event's starts reached the target unrecorded, events
    // 4-6 were never claimed.
    await faults("events", [
      { kind: "d1.batch", match: "INSERT INTO event_consumer_dedupe", rate: 1, when: "trap", skip: 3, times: 1 },
    ]);
    await contractError(await drain(), 500, "internal");
    assert.deepEqual(await fired("events"), [1]);
    await faults("events", null);
    assert.equal(await cursorSeq(), await seqOf(ids[1]), "the cursor stayed after the last commit");
    const claimed = (
      await (
        await eventsDb()
      )
        .prepare("SELECT dedupe_key FROM event_consumer_dedupe WHERE status = 'claimed' ORDER BY dedupe_key")
        .all()
    ).results.map((r) => r.dedupe_key);
    assert.deepEqual(claimed, types.map((t) => startKey(ids[2], t)).sort(), "the 3rd event's starts are left claimed");
    assert.equal((await targetCalls(types)).length, 6, "the starts of events 1-3 went out before the trap");

    await rerunAfterTtl();
    const calls = await assertEachStartOnce(ids, types);
    // Only the starts sent but never recorded went out again, with the same Idempotency-Key.
    const repeated = calls.filter((c) => c.repeat).map((c) => c.key);
    assert.deepEqual(repeated.sort(), types.map((t) => startKey(ids[2], t)).sort());
  });

  it("the commit after the starts refused by D1: 503 JSON; the next drain waits on the live claims, and after the TTL re-sends them once in effect", async () => {
    const types = ["commit_fail_a", "commit_fail_b"];
    await subscribeWorkflows("fault.commit_fail", types);
    const ids = await emitEvents("fault.commit_fail", 2);
    // The 2nd batch marking starts 'started' is the last commit (the 1st rode with event 2's claims).
    await faults("events", [{ kind: "d1.batch", match: "SET status = 'started'", rate: 1, skip: 1, times: 1 }]);
    await contractError(await drain(), 503, "dependency_unavailable");
    await faults("events", null);
    assert.equal(await cursorSeq(), await seqOf(ids[0]));
    assert.equal((await targetCalls(types)).length, 4, "both events' starts went out");
    // The failed run released its lock but its claims are live: the next drain neither re-sends
    // them nor moves the cursor past them.
    const waiting = await drainReport();
    assert.deepEqual([waiting.contended, waiting.started], [true, 0]);
    assert.equal(await cursorSeq(), await seqOf(ids[0]));
    assert.equal((await targetCalls(types)).length, 4);
    await (await eventsDb())
      .prepare("UPDATE event_consumer_dedupe SET claimed_at_ms = claimed_at_ms - ?1 WHERE status = 'claimed'")
      .bind(LOCK_TTL_MS)
      .run();
    await drainAll();
    const calls = await assertEachStartOnce(ids, types);
    const repeated = calls.filter((c) => c.repeat).map((c) => c.key);
    assert.deepEqual(repeated.sort(), types.map((t) => startKey(ids[1], t)).sort());
  });

  it("a start that hangs until the runtime kills the run: a drain meanwhile is locked out; re-run after the TTL, each start once in effect", async () => {
    const types = ["kill_start_a", "kill_start_b"];
    await subscribeWorkflows("fault.kill_start", types);
    const ids = await emitEvents("fault.kill_start", 6);
    // The 7th start (one of the 4th event's) hangs, then the instance dies, as when Workers end an
    // invocation past its limits; its sibling start may or may not have gone out meanwhile. The hang
    // is long enough for the drain sent meanwhile to answer before the trap ends every run (15 s: a
    // lock check is one D1 query, even on a loaded 2-core box).
    await faults("events", [
      { kind: "service", match: "WORKFLOW_TARGET", rate: 1, when: "trap", skip: 6, times: 1, delayMs: 15_000 },
    ]);
    const dying = drain();
    await waitFor("the hung start", async () => (await fired("events"))[0] === 1);
    const meanwhile = await drainReport();
    assert.equal(meanwhile.locked, true, "a second drain never runs beside the hung one");
    assert.equal(meanwhile.started, 0);
    await contractError(await dying, 500, "internal");
    await faults("events", null);
    assert.equal(await cursorSeq(), await seqOf(ids[2]), "the cursor stayed after the last commit");
    const inFlight = types.map((t) => startKey(ids[3], t));
    const before = await targetCalls(types);
    assert.equal(before.filter((c) => !inFlight.includes(c.key)).length, 6, "events 1-3 went out");
    assert.ok(before.filter((c) => inFlight.includes(c.key)).length <= 1, "the hung start never arrived");

    await rerunAfterTtl();
    const calls = await assertEachStartOnce(ids, types);
    const repeated = calls.filter((c) => c.repeat).map((c) => c.key);
    assert.ok(
      repeated.length <= 1 && repeated.every((k) => inFlight.includes(k)),
      `only a start in flight at the crash may repeat: ${repeated}`,
    );
  });
});

describe("service-binding faults", () => {
  it("a workflow start whose target never answers times out after 10 s: quarantined, the drain's lock freed; the retry starts it once in effect", async () => {
    const types = ["svc_hang"];
    await subscribeWorkflows("fault.svc_hang", types);
    const [id] = await emitEvents("fault.svc_hang", 1);
    // The start reaches the target, whose answer never comes back in time (the HttpCall's 10 s).
    await faults("events", [
      { kind: "service", match: "WORKFLOW_TARGET", rate: 1, when: "after", delayMs: 12_000, times: 1 },
    ]);
    const report = await drainReport();
    assert.equal(report.started, 0);
    assert.ok(report.quarantined >= 1);
    const [row] = await openQuarantine([id]);
    assert.match(row.reason, /timeout|no answer within 10000 ms/);
    // The run ended: its lock is free, so the next drain runs (and does not send it again).
    const next = await drainReport();
    assert.notEqual(next.locked, true);
    await faults("events", null);
    const retried = await ledgerAdmin("POST", `/admin/quarantine/workflow_runner/${id}/retry`);
    const body = await retried.json();
    assert.equal(retried.status, 200, JSON.stringify(body));
    assert.equal(body.resolved, true);
    await drainAll();
    await assertEachStartOnce([id], types);
  });

  it("a workflow start failing before it is sent: the event is quarantined at once (no blind re-send), the target got nothing; the operator's retry starts it once", async () => {
    const types = ["svc_before"];
    await subscribeWorkflows("fault.svc_before", types);
    const [id] = await emitEvents("fault.svc_before", 1);
    await faults("events", [{ kind: "service", match: "WORKFLOW_TARGET", rate: 1 }]);
    const report = await drainReport();
    assert.equal(report.started, 0);
    assert.ok(report.quarantined >= 1);
    assert.ok((await cursorSeq()) >= (await seqOf(id)), "the cursor moves past the poison event");
    const [row] = await openQuarantine([id]);
    assert.equal(row.attempts, 1);
    assert.match(row.reason, /^svc_before: service\(\): service_error/);
    // The next drain does not send it again: it is behind the cursor, in quarantine.
    await drainAll();
    // A retry while the binding still fails keeps it quarantined and counts the attempt.
    const failed = await ledgerAdmin("POST", `/admin/quarantine/workflow_runner/${id}/retry`);
    assert.equal(failed.status, 200);
    assert.equal((await failed.json()).resolved, false);
    assert.equal((await openQuarantine([id]))[0].attempts, 2);
    assert.deepEqual(await targetCalls(types), [], "nothing reached the target");

    await faults("events", null);
    const retried = await ledgerAdmin("POST", `/admin/quarantine/workflow_runner/${id}/retry`);
    const body = await retried.json();
    assert.equal(retried.status, 200, JSON.stringify(body));
    assert.deepEqual([body.resolved, body.started], [true, 1]);
    await drainAll();
    await assertEachStartOnce([id], types);
  });

  it("a workflow start whose answer is lost after the target got it: quarantined, and the retry repeats the same Idempotency-Key (one start in effect)", async () => {
    const types = ["svc_after"];
    await subscribeWorkflows("fault.svc_after", types);
    const [id] = await emitEvents("fault.svc_after", 1);
    await faults("events", [{ kind: "service", match: "WORKFLOW_TARGET", rate: 1, when: "after" }]);
    const report = await drainReport();
    await faults("events", null);
    assert.equal(report.started, 0, "the ledger never saw the target's answer");
    assert.equal((await openQuarantine([id])).length, 1);
    assert.equal((await targetCalls(types)).length, 1, "the target did get it");

    const retried = await ledgerAdmin("POST", `/admin/quarantine/workflow_runner/${id}/retry`);
    assert.equal(retried.status, 200);
    assert.equal((await retried.json()).resolved, true);
    await drainAll();
    const calls = await assertEachStartOnce([id], types);
    assert.deepEqual(
      calls.map((c) => c.repeat),
      [false, true],
      "sent twice with one key: the target's dedupe made it one start",
    );
  });
});

describe("service-binding faults: a quarantine retry killed mid-start", () => {
  it("a retry meanwhile leaves the event quarantined (the dead retry's claim is live); after the TTL the retry starts it once", async () => {
    const types = ["svc_retry"];
    await subscribeWorkflows("fault.svc_retry", types);
    const [id] = await emitEvents("fault.svc_retry", 1);
    await faults("events", [{ kind: "service", match: "WORKFLOW_TARGET", rate: 1 }]);
    assert.ok((await drainReport()).quarantined >= 1);
    // The operator's retry claims the start, then its instance dies before the start goes out.
    const retry = `/admin/quarantine/workflow_runner/${id}/retry`;
    await faults("events", [{ kind: "service", match: "WORKFLOW_TARGET", rate: 1, when: "trap", times: 1 }]);
    await contractError(await ledgerAdmin("POST", retry), 500, "internal");
    await faults("events", null);
    // A retry while that claim is live must not call the event resolved: nothing has started it, and
    // the cursor is past it, so nothing else ever would.
    const met = await ledgerAdmin("POST", retry);
    const body = await met.json();
    assert.equal(met.status, 200, JSON.stringify(body));
    assert.deepEqual([body.resolved, body.started], [false, 0]);
    assert.match(body.reason, /claimed by another run/);
    assert.equal((await openQuarantine([id])).length, 1, "still quarantined");
    assert.deepEqual(await targetCalls(types), []);
    // Five minutes on (the claim aged by the lock's TTL), the retry takes the claim over.
    await (await eventsDb())
      .prepare("UPDATE event_consumer_dedupe SET claimed_at_ms = claimed_at_ms - ?1 WHERE status = 'claimed'")
      .bind(LOCK_TTL_MS)
      .run();
    const retried = await ledgerAdmin("POST", retry);
    assert.equal(retried.status, 200);
    assert.deepEqual([(await retried.json()).resolved, (await targetCalls(types)).length], [true, 1]);
    await assertEachStartOnce([id], types);
  });
});

describe("service-binding faults: a monitor of a platform worker", () => {
  let tick = Math.floor(Date.now() / 300_000);
  const MONITOR = "fault-events";
  const tenantAdmin = (extra = {}) => ({
    "X-SiteSwarm-Tenant-Id": "bakery",
    authorization: `Bearer ${mesh.tokens.bakery.adminToken}`,
    ...extra,
  });
  const monitoringDb = () => mesh.d1("monitoring", "MONITORING_DB");
  const probes = async () => count(monitoringDb(), "SELECT COUNT(*) AS n FROM probes WHERE monitor_id = ?1", MONITOR);
  /** One cron tick (200 JSON, whatever the probe met); returns the monitor's view after its probe. */
  async function probeOnce() {
    const before = await probes();
    const res = await mesh.fetch("monitoring", "/__test/tick", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tick: ++tick }),
    });
    assert.equal(res.status, 200, await res.text());
    await waitFor("the probe", async () => (await probes()) > before);
    const res2 = await mesh.fetch("monitoring", "/v1/monitors", { headers: mesh.tenantHeaders("bakery") });
    assert.equal(res2.status, 200);
    return (await res2.json()).monitors.find((m) => m.id === MONITOR);
  }

  it('{"service":"events","path":"/health"}: a call failing, answering too late or hanging past the timeout is a failed probe, never a 500', async () => {
    const put = await mesh.fetch("monitoring", `/admin/monitors/${MONITOR}`, {
      method: "PUT",
      headers: tenantAdmin({ "content-type": "application/json" }),
      body: JSON.stringify({ service: "events", path: "/health", timeoutMs: 1000 }),
    });
    assert.equal(put.status, 201, await put.text());
    let m = await probeOnce();
    assert.deepEqual([m.state, m.lastProbe.status], ["up", 200]);

    const cases = [
      [{ when: "before" }, "network_error"], // the binding refused the call
      [{ when: "after" }, "network_error"], // the ledger answered, the answer was lost
      [{ when: "before", delayMs: 5000 }, "timeout"], // no answer within the monitor's 1 s
    ];
    for (const [rule, reason] of cases) {
      await faults("monitoring", [{ kind: "service", match: "EVENTS_SERVICE", rate: 1, ...rule }]);
      m = await probeOnce();
      await faults("monitoring", null);
      assert.equal(m.state, "down", JSON.stringify(rule));
      assert.deepEqual(
        { ...m.lastProbe, at: undefined, latencyMs: undefined },
        {
          at: undefined,
          ok: false,
          status: null,
          latencyMs: undefined,
          reason,
        },
      );
    }
    assert.equal(m.lastProbe.latencyMs, 1000, "a timeout takes the monitor's whole budget");
    m = await probeOnce();
    assert.deepEqual([m.state, m.lastProbe.status], ["up", 200], "recovered once the binding answers");
    const removed = await mesh.fetch("monitoring", `/admin/monitors/${MONITOR}`, {
      method: "DELETE",
      headers: tenantAdmin(),
    });
    assert.equal(removed.status, 200);
  });
});

describe("leads' lead.received on its way to the ledger (EVENTS_QUEUE)", () => {
  it("a refused send: the lead is 202, stored and delivered once; its lead.received is lost, as documented (best effort)", async () => {
    await faults("leads", [{ kind: "queue.send", match: "EVENTS_QUEUE", rate: 1 }]);
    const res = await submit(30);
    assert.equal(res.status, 202);
    const { leadId } = await res.json();
    await waitFor("the webhook delivery", async () => hookCallsFor(leadId).length === 1);
    await faults("leads", null);
    await sleep(1500);
    assert.equal(await storedFor(30), 1);
    assert.equal(hookCallsFor(leadId).length, 1, "delivered once");
    assert.equal(await receivedEvents(leadId), 0, "not re-sent: the ledger event is best effort");
  });

  it("a slow send whose answer is lost after it was queued: 202, and lead.received lands once", async () => {
    await faults("leads", [{ kind: "queue.send", match: "EVENTS_QUEUE", rate: 1, when: "after", delayMs: 3000 }]);
    const res = await submit(31);
    assert.equal(res.status, 202);
    const { leadId } = await res.json();
    await waitFor("lead.received in the ledger", async () => (await receivedEvents(leadId)) === 1);
    await waitFor("the webhook delivery", async () => hookCallsFor(leadId).length === 1);
    await faults("leads", null);
    await sleep(1500);
    assert.equal(await storedFor(31), 1);
    assert.equal(await receivedEvents(leadId), 1);
    assert.equal(hookCallsFor(leadId).length, 1);
  });
});

describe("KV faults outside cms", () => {
  const flags = (worker) => mesh.mf.getKVNamespace("FLAGS", worker);
  const killSwitch = async (name, enabled) => {
    const res = await ledgerAdmin("PUT", `/admin/kill-switches/${name}`, { enabled });
    assert.equal(res.status, 200, await res.clone().text());
    return res.json();
  };

  it("leads: a FLAGS read that fails counts as off (kill:notifications on, yet the lead is delivered once)", async () => {
    assert.equal((await killSwitch("kill:notifications", true)).shared, true);
    assert.notEqual(await (await flags("siteswarm-leads-service")).get("kill:notifications"), null);
    await faults("leads", [{ kind: "kv.get", match: "kill:notifications", rate: 1 }]);
    try {
      const res = await submit(40);
      assert.equal(res.status, 202);
      const { leadId } = await res.json();
      await waitFor("the webhook delivery", async () => hookCallsFor(leadId).length === 1);
      assert.ok((await fired("leads"))[0] >= 1, "the switch was read, and the read failed");
      const row = await (await leadsDb())
        .prepare("SELECT status, held_at FROM lead_deliveries WHERE lead_id = ?1")
        .bind(leadId)
        .first();
      assert.deepEqual({ ...row }, { status: "delivered", held_at: null });
      await sleep(1000);
      assert.equal(hookCallsFor(leadId).length, 1, "delivered once");
    } finally {
      await faults("leads", null);
      await killSwitch("kill:notifications", false);
    }
  });

  it('events: a kill switch whose FLAGS write fails is still on in the ledger ("shared": false); a failed delete likewise, and the repeated PUT mends it', async () => {
    const name = "kill:timeline_indexer";
    const kv = await flags("siteswarm-events-service");
    const timeline = async () =>
      (await (await ledgerAdmin("POST", "/admin/events/drain?consumer=timeline_indexer")).json()).consumers
        .timeline_indexer;
    await faults("events", [{ kind: "kv.put", match: name, rate: 1 }]);
    let answer = await killSwitch(name, true);
    await faults("events", null);
    assert.deepEqual([answer.enabled, answer.shared], [true, false]);
    assert.equal(await kv.get(name), null, "nothing written to FLAGS");
    assert.equal((await timeline()).killed, true, "the ledger's own switch applies");

    answer = await killSwitch(name, true);
    assert.equal(answer.shared, true, "repeating the PUT mirrors it");
    assert.notEqual(await kv.get(name), null);

    await faults("events", [{ kind: "kv.delete", match: name, rate: 1 }]);
    answer = await killSwitch(name, false);
    await faults("events", null);
    assert.deepEqual([answer.enabled, answer.shared], [false, false]);
    assert.notEqual(await kv.get(name), null, "FLAGS still says on: the answer said so");
    assert.notEqual((await timeline()).killed, true, "the ledger's switch is off");
    answer = await killSwitch(name, false);
    assert.equal(answer.shared, true);
    assert.equal(await kv.get(name), null);
  });

  it("monitoring: the status page with its KV cache failing is built fresh (200), and cached again once KV answers", async () => {
    const kv = await mesh.mf.getKVNamespace("MONITORING_CACHE", "siteswarm-synthetic-monitoring");
    const key = "status:v1:bakery";
    await kv.delete(key);
    await faults("monitoring", [{ kind: "kv.*", match: key, rate: 1 }]);
    const res = await mesh.fetch("monitoring", "/status/bakery.json");
    const fired2 = await fired("monitoring");
    await faults("monitoring", null);
    assert.equal(res.status, 200);
    assert.equal((await res.json()).tenantId, "bakery");
    assert.deepEqual(fired2, [2], "the read and the write both failed");
    assert.equal(await kv.get(key), null, "nothing cached");
    assert.equal((await mesh.fetch("monitoring", "/status/bakery.json")).status, 200);
    assert.notEqual(await kv.get(key), null, "cached once KV answers");
  });

  it("diagnostics: a KV outage is reported as a failed check (503 JSON), not a 500", async () => {
    await faults("monitoring", [{ kind: "kv.*", match: "__siteswarm_diagnostics", rate: 1 }]);
    const res = await mesh.fetch("monitoring", "/admin/diagnostics", { headers: mesh.operator() });
    await faults("monitoring", null);
    assert.equal(res.status, 503);
    const body = await res.json();
    assert.equal(body.ok, false);
    assert.equal(body.checks.kv.ok, false);
    assert.equal(body.checks.d1.ok, true);
    const healthy = await mesh.fetch("monitoring", "/admin/diagnostics", { headers: mesh.operator() });
    assert.equal(healthy.status, 200);
  });
});
