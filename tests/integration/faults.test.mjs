// Faults survived, in workerd: the host's test-only fault layer (bindings/faults.js, SITESWARM_TEST_HOOKS)
// makes D1, queue sends or the ledger's D1 fail before or after they happen, and the stubs make providers
// fail. For each: the client gets the contract's answer (503 JSON with nothing half-written, or a 202
// that is later delivered), and afterwards nothing is lost and nothing happened twice.
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
      `UPDATE lead_deliveries SET created_at = '2000-01-01T00:00:00.000Z' WHERE lead_id = ?1${untriedOnly ? " AND attempts = 0" : ""}`,
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

before(async () => {
  mesh = await startMesh();
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
    const before = mesh.stubs.find(HOOK, "POST").length;
    await contractError(await submit(1), 503, "dependency_unavailable");
    await faults("leads", null);
    assert.equal(await storedFor(1), 0, "nothing half-written");
    await sleep(300);
    assert.equal(mesh.stubs.find(HOOK, "POST").length, before, "no notification for a refused lead");

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
    // Committed but never enqueued (the run stopped at the lost answer): the sweeper is the backstop.
    await sweepAndExpectOnce(leadId, "the webhook delivery", { untriedOnly: true });
  });

  it("the notify queue refusing sends: 202, and the sweeper delivers the lead once", async () => {
    await faults("leads", [{ kind: "queue.send", match: "NOTIFY_QUEUE", rate: 1 }]);
    const res = await submit(3);
    await faults("leads", null);
    assert.equal(res.status, 202);
    const { leadId } = await res.json();
    await sleep(500);
    assert.equal(hookCallsFor(leadId).length, 0, "nothing was queued");
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
