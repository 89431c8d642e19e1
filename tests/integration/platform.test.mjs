// The routes every platform worker shares (docs/contract.md "Common rules", "Tenant context",
// "Tenant provisioning"), run on the real wasm builds in one Miniflare.
import assert from "node:assert/strict";
import net from "node:net";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { PLATFORM_WORKERS } from "../../scripts/provision.mjs";
import { errorOf, jsonOf, ROOT, secret, startMesh } from "./mesh.mjs";

const PLATFORM = Object.keys(PLATFORM_WORKERS);
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const ulid = () =>
  Date.now()
    .toString(32)
    .toUpperCase()
    .padStart(10, "0")
    .replace(/./g, (c) => CROCKFORD[parseInt(c, 32)]) +
  Array.from({ length: 16 }, () => CROCKFORD[Math.floor(Math.random() * 32)]).join("");

/** Polls `probe` until it returns something truthy (queue consumers run asynchronously). */
async function waitFor(probe, timeoutMs = 8000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("waitFor: timed out");
    await new Promise((r) => setTimeout(r, 100));
  }
}
let mesh;
before(async () => {
  mesh = await startMesh();
});
after(() => mesh?.dispose());

const put = (key, id, body, headers = mesh.operator({ "content-type": "application/json" })) =>
  mesh.fetch(key, `/admin/tenants/${id}`, {
    method: "PUT",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

describe("health", () => {
  for (const key of PLATFORM) {
    it(`${PLATFORM_WORKERS[key].name} answers /health`, async () => {
      const { ok, service, version } = await jsonOf(await mesh.fetch(key, "/health"), 200);
      assert.deepEqual({ ok, service, version }, { ok: true, service: PLATFORM_WORKERS[key].name, version: "0.1.0" });
    });
  }

  it("answers 404 not_found for an unknown route and 405 with Allow for a wrong method", async () => {
    for (const key of PLATFORM) {
      await errorOf(await mesh.fetch(key, "/no/such/route"), 404, "not_found");
      const res = await mesh.fetch(key, "/health", { method: "POST" });
      await errorOf(res, 405, "method_not_allowed");
      assert.match(res.headers.get("allow") ?? "", /GET/);
    }
  });
});

// A config each worker takes, in two versions (every worker refuses a key it does not know; the
// ledger keeps whatever it is sent).
const SAMPLE_CONFIG = {
  leads: (n) => ({ storeSubmissions: n % 2 === 1 }),
  cms: (n) => ({ timezone: n % 2 === 1 ? "Europe/Paris" : "America/New_York" }),
  monitoring: (n) => ({ monitors: n % 2 === 1 ? [] : [{ id: "home", url: "https://site.example/" }] }),
  analytics: (n) => ({ hosts: [`site${n}.example`] }),
};
const sampleConfig = (key, n) => (SAMPLE_CONFIG[key] ?? ((m) => ({ a: m })))(n);

describe("tenant provisioning", () => {
  it("creates (201), reads without secrets, updates (200) and disables a tenant on every worker", async () => {
    for (const key of PLATFORM) {
      const id = `prov-${key}`;
      const token = secret();
      const adminToken = secret();
      const created = await jsonOf(await put(key, id, { token, adminToken, config: sampleConfig(key, 1) }), 201);
      assert.equal(created.tenantId, id);
      assert.equal(created.enabled, true);
      assert.deepEqual(created.config, sampleConfig(key, 1));

      const read = await mesh.fetch(key, `/admin/tenants/${id}`, { headers: mesh.operator() });
      const text = await read.text();
      assert.equal(read.status, 200, text);
      assert.deepEqual(JSON.parse(text).config, sampleConfig(key, 1));
      for (const leak of [token, adminToken, "token_hash", "adminToken", '"token"']) {
        assert.ok(!text.includes(leak), `GET must not return ${leak}: ${text}`);
      }

      const updated = await jsonOf(await put(key, id, { token, adminToken, config: sampleConfig(key, 2) }), 200);
      assert.deepEqual(updated.config, sampleConfig(key, 2));

      const whoami = () => mesh.fetch(key, "/v1/tenant", { headers: mesh.tenantHeaders(id, { token }) });
      assert.equal((await whoami()).status, 200);
      const disabled = await mesh.fetch(key, `/admin/tenants/${id}`, {
        method: "DELETE",
        headers: mesh.operator(),
      });
      assert.deepEqual(await jsonOf(disabled, 200), { tenantId: id, enabled: false });
      await errorOf(await whoami(), 401, "unauthenticated_tenant");
    }
  });

  it("answers one 201 to concurrent creations of one tenant, 200 to the others, on every worker", async () => {
    for (const key of PLATFORM) {
      const id = `race-${key}`;
      const bodies = Array.from({ length: 4 }, () => ({ token: secret(), adminToken: secret(), config: {} }));
      const answers = await Promise.all(bodies.map((b) => put(key, id, b)));
      const statuses = answers.map((r) => r.status).sort();
      await Promise.all(answers.map((r) => r.arrayBuffer()));
      assert.deepEqual(statuses, [200, 200, 200, 201], `${key}: ${statuses}`);
    }
  });

  it("keeps the stored secret a partial update leaves out, and refuses a new tenant without both", async () => {
    for (const key of PLATFORM) {
      const id = `partial-${key}`;
      const token = secret();
      const adminToken = secret();
      const missing = await errorOf(await put(key, id, { token, config: {} }), 400, "invalid_request");
      assert.equal(missing.field, "adminToken");
      const read = await mesh.fetch(key, `/admin/tenants/${id}`, { headers: mesh.operator() });
      await errorOf(read, 404, "not_found");

      await jsonOf(await put(key, id, { token, adminToken, config: {} }), 201);
      const db = await mesh.d1(key, PLATFORM_WORKERS[key].d1.binding);
      const digests = () =>
        db.prepare("SELECT token_hash, admin_token_hash FROM tenants WHERE tenant_id = ?1").bind(id).first();
      const before = await digests();
      const newToken = secret();
      await jsonOf(await put(key, id, { token: newToken, config: sampleConfig(key, 3) }), 200);
      const whoami = (t) => mesh.fetch(key, "/v1/tenant", { headers: mesh.tenantHeaders(id, { token: t }) });
      assert.equal((await whoami(newToken)).status, 200);
      await errorOf(await whoami(token), 401, "unauthenticated_tenant");
      const after = await digests();
      assert.equal(after.admin_token_hash, before.admin_token_hash, "the admin token left out is kept");
      assert.notEqual(after.token_hash, before.token_hash);
      // A misspelt key is a 400 naming it, not an update that silently keeps the old secret.
      const typo = await errorOf(await put(key, id, { tokne: secret(), config: {} }), 400, "invalid_request");
      assert.equal(typo.field, "tokne");
      assert.equal((await whoami(newToken)).status, 200);
      // And the other way round: only adminToken sent keeps the token.
      await jsonOf(await put(key, id, { adminToken: secret(), config: {} }), 200);
      assert.equal((await whoami(newToken)).status, 200);
      assert.notEqual((await digests()).admin_token_hash, before.admin_token_hash);
    }
  });

  it("refuses a missing or wrong operator token with 401 unauthorized", async () => {
    const body = { token: secret(), adminToken: secret(), config: {} };
    for (const key of PLATFORM) {
      const json = { "content-type": "application/json" };
      await errorOf(await put(key, "nope", body, json), 401, "unauthorized");
      await errorOf(
        await put(key, "nope", body, { ...json, authorization: "Bearer wrong-token" }),
        401,
        "unauthorized",
      );
      await errorOf(await mesh.fetch(key, "/admin/tenants/bakery"), 401, "unauthorized");
    }
  });

  it("refuses a bad tenant id (400), bad JSON (400 invalid_json) and a non-JSON body (415)", async () => {
    const body = { token: secret(), adminToken: secret(), config: {} };
    for (const key of PLATFORM) {
      for (const id of ["Bad_Id", "-leading-dash", "x".repeat(64)]) {
        const res = await put(key, id, body);
        assert.equal(res.status, 400, `${key} ${id}`);
        assert.ok((await res.json()).error.code);
      }
      await errorOf(await put(key, "json-test", "{not json"), 400, "invalid_json");
      // A raw NUL ended the text for the JSON reader: what followed it was never read (was 201).
      await errorOf(await put(key, "json-test", `${JSON.stringify(body)}\u0000junk`), 400, "invalid_json");
      // A secret a header cannot carry back (a control character, spaces only, non-ASCII) would
      // lock the tenant out for good (was 201).
      for (const token of ["a\u0000b", "a\u0001b", "   ", "t\u00e9st", "a b"]) {
        const res = await put(key, "json-test", { ...body, token });
        assert.equal((await errorOf(res, 400, "invalid_request")).field, "token", `${key} ${JSON.stringify(token)}`);
      }
      await errorOf(
        await put(key, "json-test", "token=x", mesh.operator({ "content-type": "text/plain" })),
        415,
        "unsupported_media_type",
      );
    }
  });
});

describe("a request body cut short", () => {
  // Over a real socket: the client declares 100 bytes, sends 12 and closes its side. workerd hands
  // the worker a body stream that fails; the host answers 400 before the core runs (was 500).
  const cutShort = (url, pathname, headers) =>
    new Promise((resolve, reject) => {
      const { hostname, port } = new URL(url);
      const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
      const socket = net.connect(Number(port), hostname, () =>
        socket.end(
          `PUT ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\n${lines.join("")}` +
            'content-type: application/json\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{"token":"t"',
        ),
      );
      let out = "";
      socket.on("data", (chunk) => (out += chunk));
      socket.on("error", reject);
      socket.on("close", () => resolve(out));
    });

  it("is 400 invalid_request JSON on every worker, writes nothing, and the worker goes on", async () => {
    for (const key of PLATFORM) {
      const raw = await cutShort(await mesh.url(key), "/admin/tenants/cut-short", mesh.operator());
      assert.match(raw, /^HTTP\/1\.1 400 /, `${key}: ${raw.slice(0, 200)}`);
      assert.match(raw, /content-type: application\/json/i, key);
      assert.match(raw, /"code":"invalid_request"/, key);
      await errorOf(await mesh.fetch(key, "/admin/tenants/cut-short", { headers: mesh.operator() }), 404, "not_found");
      assert.equal((await mesh.fetch(key, "/health")).status, 200, key);
    }
  });
});

describe("tenant context", () => {
  for (const key of PLATFORM) {
    it(`${key}: /v1/tenant authenticates the tenant headers`, async () => {
      const ok = await jsonOf(
        await mesh.fetch(key, "/v1/tenant", { headers: mesh.tenantHeaders("bakery", { version: "1.2.0" }) }),
        200,
      );
      assert.deepEqual(ok, { tenantId: "bakery", capabilityVersion: "1.2.0" });

      await errorOf(await mesh.fetch(key, "/v1/tenant"), 401, "unauthenticated_tenant");
      const idOnly = { "X-SiteSwarm-Tenant-Id": "bakery", "X-SiteSwarm-Capability-Version": "1.0.0" };
      await errorOf(await mesh.fetch(key, "/v1/tenant", { headers: idOnly }), 401, "unauthenticated_tenant");
      const unknown = mesh.tenantHeaders("no-such-tenant", { token: secret() });
      await errorOf(await mesh.fetch(key, "/v1/tenant", { headers: unknown }), 401, "unauthenticated_tenant");
      const stolen = mesh.tenantHeaders("bakery", { token: mesh.tokens["auto-repair"].token });
      await errorOf(await mesh.fetch(key, "/v1/tenant", { headers: stolen }), 401, "unauthenticated_tenant");
      const v2 = mesh.tenantHeaders("bakery", { version: "2.0.0" });
      await errorOf(await mesh.fetch(key, "/v1/tenant", { headers: v2 }), 400, "unsupported_capability_version");
      // Only semantic versions (MAJOR.MINOR.PATCH): a malformed one is refused even when it starts with 1.
      for (const version of ["1", "1.0", "1.x", "1.0.0garbage", "01.0.0", "1.2.3.4", "1.0.0-"]) {
        const odd = mesh.tenantHeaders("bakery", { version });
        const e = await errorOf(
          await mesh.fetch(key, "/v1/tenant", { headers: odd }),
          400,
          "unsupported_capability_version",
        );
        assert.match(e.message, /semantic version/, version);
      }
      const pre = mesh.tenantHeaders("bakery", { version: "1.4.0-beta.2+build.7" });
      assert.equal((await mesh.fetch(key, "/v1/tenant", { headers: pre })).status, 200);
    });
  }

  it("reads a header value without the whitespace an HTTP/1.1 client left after it", async () => {
    // Over a real socket: fetch trims header values, workerd passed on "bakery \t" (was 401, and a
    // capability version "1.2.0 " was 400).
    const headers = mesh.tenantHeaders("bakery", { version: "1.2.0" });
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v} \t\r\n`);
    for (const key of PLATFORM) {
      const { hostname, port } = new URL(await mesh.url(key));
      const raw = await new Promise((resolve, reject) => {
        const socket = net.connect(Number(port), hostname, () =>
          socket.end(`GET /v1/tenant HTTP/1.1\r\nHost: ${hostname}\r\n${lines.join("")}connection: close\r\n\r\n`),
        );
        let out = "";
        socket.on("data", (chunk) => (out += chunk));
        socket.on("error", reject);
        socket.on("close", () => resolve(out));
      });
      assert.match(raw, /^HTTP\/1\.1 200 /, `${key}: ${raw.slice(0, 300)}`);
      assert.match(raw, /"capabilityVersion":"1\.2\.0","tenantId":"bakery"/, key);
    }
  });

  it("serves many concurrent tenant requests on one instance", async () => {
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        mesh.fetch("leads", "/v1/tenant", {
          headers: mesh.tenantHeaders(i % 2 ? "bakery" : "auto-repair"),
        }),
      ),
    );
    const bodies = await Promise.all(results.map((r) => jsonOf(r, 200)));
    for (const [i, b] of bodies.entries()) assert.equal(b.tenantId, i % 2 ? "bakery" : "auto-repair");
  });
});

describe("diagnostics", () => {
  it("cms checks D1, KV and the events service concurrently", async () => {
    const body = await jsonOf(await mesh.fetch("cms", "/admin/diagnostics", { headers: mesh.operator() }), 200);
    assert.equal(body.ok, true);
    assert.equal(body.checks.d1.ok, true);
    assert.ok(body.checks.d1.tenants >= 2, JSON.stringify(body));
    assert.equal(body.checks.kv.ok, true);
    assert.equal(body.checks.services.EVENTS_SERVICE.ok, true);
    assert.equal(body.checks.services.EVENTS_SERVICE.status, 200);
  });

  it("needs the operator token", async () => {
    await errorOf(await mesh.fetch("cms", "/admin/diagnostics"), 401, "unauthorized");
  });
});

describe("traps", () => {
  for (const key of PLATFORM) {
    it(`${key}: a trap answers 500 internal JSON and the next request is served by a fresh instance`, async () => {
      await errorOf(await mesh.fetch(key, "/__test/trap"), 500, "internal");
      await jsonOf(await mesh.fetch(key, "/health"), 200);
      await jsonOf(await mesh.fetch(key, "/v1/tenant", { headers: mesh.tenantHeaders("bakery") }), 200);
    });
  }
});

describe("Workers RPC", () => {
  it("cms exposes getContent and getStatus over RPC (CmsRpc and default entrypoints)", async () => {
    for (const [binding, method] of [
      ["CMS_RPC", "getContent"],
      ["CMS_RPC", "getStatus"],
      ["CMS_SERVICE", "getContent"],
    ]) {
      const wrong = await mesh.cmsRpc(binding, method, { tenantId: "bakery", token: "wrong-token-0000000000" });
      assert.equal(wrong.ok, false, "a wrong tenant token is refused");
      assert.equal(wrong.error.code, "unauthenticated_tenant", JSON.stringify(wrong));
      assert.equal(wrong.status, 401);
      const out = await mesh.cmsRpc(binding, method, { tenantId: "bakery", token: mesh.tokens.bakery.token });
      assert.equal(out.ok, true, JSON.stringify(out));
      if (method === "getContent") {
        assert.equal(out.value.tenantId, "bakery");
        assert.ok(["kv", "d1", "fallback"].includes(out.value.source), JSON.stringify(out.value));
      } else {
        assert.equal(typeof out.value.open, "boolean", JSON.stringify(out.value));
      }
    }
  });
});

describe("queues", () => {
  it("the events worker's queue consumer ingests a message from the ledger queue", async () => {
    const eventId = ulid();
    const producer = await mesh.mf.getQueueProducer("EVENTS_QUEUE", PLATFORM_WORKERS.leads.name);
    await producer.send({
      event_id: eventId,
      event_type: "lead.received",
      entity_ref: `lead:${eventId}`,
      payload: { via: "queue-test" },
      source_system: PLATFORM_WORKERS.leads.name,
      occurred_at: new Date().toISOString(),
      tenant_id: "bakery",
    });
    const db = await mesh.d1("events", "EVENTS_DB");
    const row = await waitFor(() =>
      db.prepare("SELECT tenant_id, event_type FROM events WHERE event_id = ?1").bind(eventId).first(),
    );
    assert.deepEqual(row, { tenant_id: "bakery", event_type: "lead.received" });
  });
});

describe("cron", async () => {
  // Every cron a wrangler config declares runs (tests/integration/wasm-smoke.test.mjs checks that a
  // worker declares crons exactly when its core has a cron handler).
  const { unstable_readConfig } = await import("wrangler");
  for (const { key, name, wrangler } of Object.values(PLATFORM_WORKERS)) {
    const crons = unstable_readConfig({ config: path.join(ROOT, wrangler) }).triggers?.crons ?? [];
    for (const cron of crons) {
      it(`${key} runs "${cron}"`, async () => {
        const worker = await mesh.mf.getWorker(name);
        const result = await worker.scheduled({ cron, scheduledTime: new Date() });
        assert.equal(result.outcome, "ok");
      });
    }
  }
});
