// The ledger deployed as three workers (docs/architecture.md "The ledger's three workers"): the public
// siteswarm-events-service, and the internal siteswarm-events-runner and siteswarm-events-config,
// one D1 database between them. What a client or operator sees must be what one worker answered:
// each operator route through the entry, its errors as the part gave them, one drain answer for all
// five consumers, the crons driving the parts. events.test.mjs and events-consumers.test.mjs run
// every ledger guarantee through the entry on top of this.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import { errorOf, jsonOf, startMesh } from "./mesh.mjs";

const CONSUMERS = [
  "workflow_runner",
  "timeline_indexer",
  "anomaly_detector",
  "reflexion_analyzer",
  "customer_health_watcher",
];
const JSON_TYPE = { "content-type": "application/json" };

/** A workflow target that records each start. */
async function startTarget() {
  const calls = [];
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    calls.push({ path: req.url, key: req.headers["idempotency-key"], body: JSON.parse(text || "null") });
    res.writeHead(202, JSON_TYPE).end('{"accepted":true}');
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    calls,
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

let mesh;
let target;
before(async () => {
  const tenants = [{ appId: "bakery", config: {} }];
  [mesh, target] = await Promise.all([
    startMesh({ tenants, bindings: { events: { WORKFLOW_RUN_EVENTS: "0" } } }),
    startTarget(),
  ]);
});
after(async () => {
  await mesh?.dispose();
  await target?.close();
});

const admin = (key, method, pathname, body, headers = mesh.operator(body === undefined ? {} : JSON_TYPE)) =>
  mesh.fetch(key, pathname, {
    method,
    headers,
    ...(body !== undefined && { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
async function emit(eventType, payload = {}) {
  const res = await mesh.fetch("events", "/api/events", {
    method: "POST",
    headers: { ...mesh.tenantHeaders("bakery"), ...JSON_TYPE },
    body: JSON.stringify({ event_type: eventType, entity_ref: "order:1", payload }),
  });
  return (await jsonOf(res, 201)).event_id;
}

describe("the ledger's three workers", () => {
  it("each answers /health as itself", async () => {
    for (const [key, service] of [
      ["events", "siteswarm-events-service"],
      ["events_runner", "siteswarm-events-runner"],
      ["events_config", "siteswarm-events-config"],
    ]) {
      const body = await jsonOf(await mesh.fetch(key, "/health"), 200);
      assert.equal(body.ok, true);
      assert.equal(body.service, service, key);
    }
  });

  it("the entry's /admin/diagnostics checks that both parts answer, each as itself", async () => {
    const body = await jsonOf(await admin("events", "GET", "/admin/diagnostics"), 200);
    assert.equal(body.ok, true);
    assert.equal(body.checks.services.EVENTS_RUNNER.service, "siteswarm-events-runner");
    assert.equal(body.checks.services.EVENTS_CONFIG.service, "siteswarm-events-config");
  });

  it("a config route sent through the entry is written by the config worker into the one database", async () => {
    const put = await jsonOf(
      await admin("events", "PUT", "/admin/workflows/parts_notify", { target: { webhook: `${target.url}/hooks/n` } }),
      201,
    );
    assert.equal(put.workflow_type, "parts_notify");
    // The config worker itself has it, and so has the database the entry and the runner read.
    const direct = await jsonOf(await admin("events_config", "GET", "/admin/workflows/parts_notify"), 200);
    assert.equal(direct.workflow_type, "parts_notify");
    const db = await mesh.d1("events", "EVENTS_DB");
    const row = await db
      .prepare("SELECT workflow_type FROM workflow_definitions WHERE workflow_type = ?1")
      .bind("parts_notify")
      .first();
    assert.equal(row?.workflow_type, "parts_notify");
    // The entry does not run it itself: its answer is the config worker's, query string included.
    const listed = await jsonOf(await admin("events", "GET", "/admin/workflows?limit=5"), 200);
    assert.ok(listed.workflows.some((w) => w.workflow_type === "parts_notify"));
  });

  it("a forwarded route's errors are the config worker's, and a body too large never leaves the entry", async () => {
    await errorOf(
      await admin("events", "POST", "/admin/subscriptions", { event_type_glob: "*" }, JSON_TYPE),
      401,
      "unauthorized",
    );
    await errorOf(await admin("events", "POST", "/admin/subscriptions", "{not json"), 400, "invalid_json");
    const bad = await errorOf(
      await admin("events", "POST", "/admin/subscriptions", { event_type_glob: "*", workflow_type: "Not A Name" }),
      400,
      "invalid_request",
    );
    assert.equal(bad.field, "workflow_type");
    await errorOf(await admin("events", "DELETE", "/admin/workflows"), 405, "method_not_allowed");
    // The config worker binds the runner, but the ledger's own workers are never workflow targets.
    for (const service of ["EVENTS_RUNNER", "EVENTS_CONFIG"]) {
      const refused = await errorOf(
        await admin("events", "PUT", "/admin/workflows/parts_self", {
          target: { service, path: "/admin/events/release" },
        }),
        400,
        "invalid_request",
      );
      assert.equal(refused.field, "target.service", service);
    }
    const huge = JSON.stringify({ event_type_glob: "*", workflow_type: "x".repeat(2 * 1024 * 1024) });
    const res = await admin("events", "POST", "/admin/subscriptions", huge);
    assert.equal(res.status, 413);
    const error = (await res.json()).error;
    assert.equal(error.code, "payload_too_large");
    assert.match(error.message, /larger than the 1048576 bytes/); // says what the limit is
  });

  it("an answer over 1 MiB from the config worker reaches the operator whole through the entry", async () => {
    // 20 schemas of ~60 KB: the list is ~1.2 MB, over the host's 1 MiB cap on what it reads. The entry
    // hands the request on and streams the config worker's answer (docs/abi.md "Handing a request on").
    for (let i = 0; i < 20; i++) {
      const schema = { type: "object", description: `${i}:${"x".repeat(60_000)}` };
      await jsonOf(await admin("events", "PUT", `/admin/schemas/parts.big${i}`, { schema }), 201);
    }
    const res = await admin("events", "GET", "/admin/schemas");
    const text = await res.text();
    assert.equal(res.status, 200);
    assert.ok(text.length > 1024 * 1024, `${text.length} bytes`);
    const names = JSON.parse(text).schemas.map((x) => x.event_type);
    for (let i = 0; i < 20; i++) assert.ok(names.includes(`parts.big${i}`), `parts.big${i}`);
    for (let i = 0; i < 20; i++) {
      const gone = await admin("events", "DELETE", `/admin/schemas/parts.big${i}`);
      assert.equal(gone.status, 204);
    }
  });

  it("POST /admin/events/drain answers for all five consumers; workflow_runner's drain ran in the runner", async () => {
    await jsonOf(
      await admin("events", "PUT", "/admin/workflows/parts_start", {
        target: { webhook: `${target.url}/hooks/start` },
      }),
      201,
    );
    await jsonOf(
      await admin("events", "POST", "/admin/subscriptions", {
        event_type_glob: "parts.*",
        workflow_type: "parts_start",
      }),
      201,
    );
    const id = await emit("parts.placed", { n: 1 });
    const body = await jsonOf(await admin("events", "POST", "/admin/events/drain"), 200);
    assert.deepEqual(Object.keys(body.consumers).sort(), [...CONSUMERS].sort());
    assert.equal(body.consumers.workflow_runner.started, 1);
    assert.equal(body.consumers.timeline_indexer.read >= 1, true);
    const starts = target.calls.filter((c) => c.path === "/hooks/start");
    assert.equal(starts.length, 1);
    assert.equal(starts[0].key, `workflow_runner:${id}:parts_start`);
    // The runner drains workflow_runner alone: asked for an analyser, it refuses and names the field.
    const refused = await errorOf(
      await admin("events_runner", "POST", "/admin/events/drain?consumer=timeline_indexer"),
      400,
      "invalid_request",
    );
    assert.match(JSON.stringify(refused), /consumer/);
  });

  it("the */2 cron on the entry starts workflows through the runner; the parts' own routes take the operator token", async () => {
    const id = await emit("parts.shipped");
    const worker = await mesh.mf.getWorker("siteswarm-events-service");
    const result = await worker.scheduled({ cron: "*/2 * * * *", scheduledTime: new Date() });
    assert.equal(result.outcome, "ok");
    assert.ok(target.calls.some((c) => c.key === `workflow_runner:${id}:parts_start`));
    for (const [key, path] of [
      ["events_runner", "/admin/events/runner-cron"],
      ["events_runner", "/admin/events/release"],
      ["events_config", "/admin/events/retention-run"],
      ["events_config", "/admin/alerts/deliver"],
    ]) {
      await errorOf(await mesh.fetch(key, path, { method: "POST" }), 401, "unauthorized");
    }
  });
});

describe("a part that does not answer, or refuses the entry's token", () => {
  let broken;
  before(async () => {
    // The runner is down (every call over EVENTS_RUNNER throws); the config worker answers, but holds
    // another operator token than the entry (a rotation half done).
    const down = () => {
      throw new Error("part down");
    };
    broken = await startMesh({
      tenants: [{ appId: "bakery", config: {} }],
      serviceBindings: { events: { EVENTS_RUNNER: down } },
      bindings: { events_config: { PLATFORM_ADMIN_TOKEN: "another-operator-token" } },
    });
  });
  after(async () => broken?.dispose());

  it("a cron whose alert pass the config worker refuses fails, and says why", async () => {
    const worker = await broken.mf.getWorker("siteswarm-events-service");
    const result = await worker.scheduled({ cron: "*/5 * * * *", scheduledTime: new Date() });
    assert.notEqual(result.outcome, "ok", "alerting that is down is a failed run, not a green one");
    // The operator's own call to the pass (handed on) is the config worker's to refuse.
    await errorOf(
      await broken.fetch("events", "/admin/alerts/deliver", { method: "POST", headers: broken.operator() }),
      401,
      "unauthorized",
    );
  });

  it("the entry's /admin/diagnostics says the runner is down", async () => {
    const res = await broken.fetch("events", "/admin/diagnostics", { headers: broken.operator() });
    const body = await jsonOf(res, 503);
    assert.equal(body.ok, false);
    assert.equal(body.checks.services.EVENTS_RUNNER.ok, false);
    assert.equal(body.checks.services.EVENTS_CONFIG.ok, true);
  });

  it("a part down answers 503 dependency_unavailable as JSON; the data path is not touched", async () => {
    const forwarded = await broken.fetch(
      "events",
      "/admin/quarantine/workflow_runner/01J0000000000000000000000A/retry",
      {
        method: "POST",
        headers: broken.operator(),
      },
    );
    assert.equal(forwarded.status, 503);
    assert.equal((await forwarded.json()).error.code, "dependency_unavailable");
    const drained = await broken.fetch("events", "/admin/events/drain?consumer=workflow_runner", {
      method: "POST",
      headers: broken.operator(),
    });
    assert.equal(drained.status, 503);
    assert.equal((await drained.json()).error.code, "dependency_unavailable");
    // The analysers drain in the entry itself.
    const analysed = await jsonOf(
      await broken.fetch("events", "/admin/events/drain?consumer=timeline_indexer", {
        method: "POST",
        headers: broken.operator(),
      }),
      200,
    );
    assert.ok(analysed.consumers.timeline_indexer);
    const res = await broken.fetch("events", "/api/events", {
      method: "POST",
      headers: { ...broken.tenantHeaders("bakery"), ...JSON_TYPE },
      body: JSON.stringify({ event_type: "parts.placed", entity_ref: "order:2", payload: {} }),
    });
    assert.equal(res.status, 201);
    await res.arrayBuffer();
    // A drain of every consumer still drains the analysers in the entry, then answers 503 for the
    // runner: the outage of one part does not hold the others' work back.
    const all = await broken.fetch("events", "/admin/events/drain", { method: "POST", headers: broken.operator() });
    assert.equal(all.status, 503);
    const { error } = await all.json();
    assert.equal(error.code, "dependency_unavailable");
    assert.match(error.message, /^workflow_runner: EVENTS_RUNNER /, "the message names the consumer, then the part");
    assert.deepEqual(Object.keys(error.failed), ["workflow_runner"]);
    assert.ok(error.consumers.timeline_indexer, "the reports of the consumers that drained come with it");
    assert.equal(error.consumers.timeline_indexer.read, 1);
    const again = await jsonOf(
      await broken.fetch("events", "/admin/events/drain?consumer=timeline_indexer", {
        method: "POST",
        headers: broken.operator(),
      }),
      200,
    );
    assert.equal(again.consumers.timeline_indexer.read, 0, "the drain of every consumer read the new event already");
  });
});

describe("a part that holds another operator token than the entry", () => {
  let rotating;
  before(async () => {
    rotating = await startMesh({
      tenants: [{ appId: "bakery", config: {} }],
      bindings: { events_runner: { PLATFORM_ADMIN_TOKEN: "another-operator-token" } },
    });
  });
  after(async () => rotating?.dispose());

  it("the entry's own call to it is 503 dependency_unavailable naming the token, not a 401", async () => {
    const res = await rotating.fetch("events", "/admin/events/drain?consumer=workflow_runner", {
      method: "POST",
      headers: rotating.operator(),
    });
    const body = await jsonOf(res, 503);
    assert.equal(body.error.code, "dependency_unavailable");
    assert.match(body.error.message, /EVENTS_RUNNER refused the operator token: PLATFORM_ADMIN_TOKEN/);
  });
});
