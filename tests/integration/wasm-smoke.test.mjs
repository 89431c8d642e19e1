// The same smoke test for both wasm builds (wasm32-wasi and Emscripten), in plain Node: each worker's
// module instantiates, answers /health, and runs a request that awaits effects through the raw ABI of
// docs/abi.md (with a fake performer standing in for D1 and WebCrypto).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createHash, randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { PARTS, PLATFORM_WORKERS } from "../../scripts/lib/workers.mjs";
import { rawCoreExports } from "./raw-core.mjs";

// Awaited before any test is declared: under --test-force-exit (scripts/test), tests declared after a
// top-level await would never run.
const { unstable_readConfig } = await import("wrangler");
const root = fileURLToPath(new URL("../..", import.meta.url));
const WORKERS = Object.fromEntries(Object.values(PLATFORM_WORKERS).map((w) => [w.key, w.name]));

function instantiate(path) {
  const ex = rawCoreExports(path);
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const call = (fn, id, text) => {
    const bytes = enc.encode(text);
    const ptr = ex.ss_alloc(bytes.length);
    new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
    const r = id === null ? fn(ptr, bytes.length) : fn(id, ptr, bytes.length);
    ex.ss_free(ptr);
    return r;
  };
  const data = (id) => JSON.parse(dec.decode(new Uint8Array(ex.memory.buffer, ex.ss_data_ptr(id), ex.ss_data_len(id))));
  return async function run(message, perform) {
    const id = call(
      ex.ss_start,
      null,
      JSON.stringify({ now: Date.now(), entropy: randomBytes(32).toString("hex"), env: {}, ...message }),
    );
    assert.notEqual(id, 0);
    try {
      while (ex.ss_state(id) === 0) {
        const effects = data(id);
        const results = await Promise.all(effects.map(async (e) => ({ id: e.id, ...(await perform(e)) })));
        call(ex.ss_resume, id, JSON.stringify({ now: Date.now(), results }));
      }
      assert.equal(ex.ss_state(id), 1);
      return data(id);
    } finally {
      ex.ss_drop(id);
      assert.equal(ex.ss_state(id), -1);
    }
  };
}

const request = (method, path, headers = {}, body = "") => ({
  op: "fetch",
  request: { method, url: `https://svc.internal${path}`, headers, body },
});

for (const build of ["wasm", "wasm-emscripten"]) {
  for (const [worker, service] of Object.entries(WORKERS)) {
    const path = `${root}dist/${build}/${PLATFORM_WORKERS[worker].wasm}`;
    test(`${build}: ${worker} answers /health and awaits effects`, async () => {
      assert.ok(existsSync(path), `${path} is built`);
      const run = instantiate(path);
      // The ledger's /health also reports consumer lag from D1; the others answer without effects.
      const emptyD1 = async (e) => {
        assert.equal(worker, "events", `unexpected ${e.kind} effect`);
        return { ok: true, value: e.kind === "d1.first" ? { row: null } : { results: [] } };
      };
      const health = await run(request("GET", "/health"), emptyD1);
      assert.equal(health.status, 200);
      const body = JSON.parse(health.body);
      assert.equal(body.ok, true);
      assert.equal(body.service, service);
      assert.equal(body.version, "0.1.0");

      // A tenant call: the core asks for the tenant row and the token's SHA-256 concurrently.
      const token = "bakery-token-0123456789";
      const digest = createHash("sha256").update(token).digest("hex");
      const kinds = [];
      const perform = async (e) => {
        kinds.push(e.kind);
        if (e.kind === "d1.first") {
          assert.deepEqual(e.params, ["bakery"]);
          return {
            ok: true,
            value: {
              row: {
                tenant_id: "bakery",
                token_hash: digest,
                admin_token_hash: "x",
                config_json: "{}",
                enabled: 1,
                created_at: "2026-01-01T00:00:00Z",
                updated_at: "2026-01-01T00:00:00Z",
              },
            },
          };
        }
        if (e.kind === "crypto.sha256") {
          return { ok: true, value: { hex: createHash("sha256").update(e.data).digest("hex") } };
        }
        return { ok: false, error: { code: "unsupported_effect", message: e.kind } };
      };
      const headers = { "x-siteswarm-tenant-id": "bakery", "x-siteswarm-tenant-token": token };
      const ok = await run(request("GET", "/v1/tenant", headers), perform);
      assert.equal(ok.status, 200, ok.body);
      assert.equal(JSON.parse(ok.body).tenantId, "bakery");
      assert.deepEqual(kinds.sort(), ["crypto.sha256", "d1.first"]);
      // Again with the same token: the instance's cached row and the token's known digest answer it,
      // no effect at all (shared/tenant_cache.h).
      kinds.length = 0;
      const again = await run(request("GET", "/v1/tenant", headers), perform);
      assert.equal(again.status, 200, again.body);
      assert.deepEqual(kinds, []);

      const bad = await run(request("GET", "/v1/tenant", { ...headers, "x-siteswarm-tenant-token": "wrong" }), perform);
      assert.equal(bad.status, 401);
      assert.equal(JSON.parse(bad.body).error.code, "unauthenticated_tenant");

      // Another tenant (the bakery's row and token are now in the instance's tenant cache, which
      // answers without D1: shared/tenant_cache.h), with D1 and the hash failing.
      const otherTenant = { ...headers, "x-siteswarm-tenant-id": "auto-repair" };
      const down = await run(request("GET", "/v1/tenant", otherTenant), async () => ({
        ok: false,
        error: { code: "d1_error", message: "D1 is down" },
      }));
      assert.equal(down.status, 503);
      assert.equal(JSON.parse(down.body).error.code, "dependency_unavailable");
      assert.ok(!down.body.includes("D1 is down"), "host error details stay in logs");
    });
  }
}

// The parts (the ledger's runner and config): their own modules, built beside their platform
// worker's, instantiate and answer /health, each naming itself (its own core, not its worker's whole).
const anyD1 = async (e) => {
  assert.match(e.kind, /^d1\./, `unexpected ${e.kind} effect`);
  return { ok: true, value: e.kind === "d1.first" ? { row: null } : { results: [] } };
};
async function partHealth(part, build) {
  const path = `${root}dist/${build}/${part.wasm}`;
  assert.ok(existsSync(path), `${path} is built`);
  const health = await instantiate(path)(request("GET", "/health"), anyD1);
  assert.equal(health.status, 200, health.body);
  const body = JSON.parse(health.body);
  assert.equal(body.ok, true);
  assert.equal(body.version, "0.1.0");
  assert.equal(body.service, part.name, "the part's own core, not its worker's whole one");
}
for (const build of ["wasm", "wasm-emscripten"]) {
  for (const part of Object.values(PARTS)) {
    test(`${build}: ${part.key} (a part of ${part.partOf}) is built and answers /health`, async () => {
      await partHealth(part, build);
    });
  }
}

// A worker declares crons in its wrangler config exactly when its core has a cron handler: a core
// without one answers a scheduled run with `skipped`, which workerd would report as a green run.
// A part has no crons (its platform worker fires them): its core must skip a scheduled run.
for (const part of Object.values(PARTS)) {
  test(`wasm: ${part.key} declares no cron and its core skips scheduled runs`, async () => {
    assert.deepEqual(unstable_readConfig({ config: `${root}${part.wrangler}` }).triggers?.crons ?? [], []);
    await partHealth(part, "wasm");
    const down = async () => ({ ok: false, error: { code: "d1_error", message: "D1 is down" } });
    const out = await instantiate(`${root}dist/wasm/${part.wasm}`)(
      { op: "scheduled", cron: "*/2 * * * *", scheduledTime: Date.now() },
      down,
    );
    assert.equal(out.skipped, true, JSON.stringify(out));
  });
}
for (const w of Object.values(PLATFORM_WORKERS)) {
  test(`wasm: ${w.key} declares a cron exactly when its core handles scheduled runs`, async () => {
    const path = `${root}dist/wasm/${w.wasm}`;
    assert.ok(existsSync(path), `${path} is built`);
    const crons = unstable_readConfig({ config: `${root}${w.wrangler}` }).triggers?.crons ?? [];
    const run = instantiate(path);
    const down = async () => ({ ok: false, error: { code: "d1_error", message: "D1 is down" } });
    for (const cron of crons.length ? crons : ["*/5 * * * *"]) {
      const out = await run({ op: "scheduled", cron, scheduledTime: Date.now() }, down);
      assert.equal(out.skipped === true, crons.length === 0, `${w.key} "${cron}": ${JSON.stringify(out)}`);
    }
  });
}
