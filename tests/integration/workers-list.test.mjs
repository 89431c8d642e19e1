// The one list of workers (workers/workers.json) agrees with what it names: each platform worker's
// folder, wrangler config (name, D1 binding and migrations, KV, queues), migrations and ports.
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { loadManifest, placeholders } from "../../scripts/lib/manifest.mjs";
import { APPS, LIST, localVars, PLATFORM_WORKERS, ROOT, WORKERS } from "../../scripts/lib/workers.mjs";

const { unstable_readConfig } = await import("wrangler");
const read = (w) => unstable_readConfig({ config: path.join(ROOT, w.wrangler) });

describe("workers/workers.json", () => {
  for (const w of Object.values(PLATFORM_WORKERS)) {
    it(`${w.key}: folder, wrangler config, D1, KV and queues agree with the list`, () => {
      assert.ok(existsSync(path.join(ROOT, "workers", w.key, "worker.js")), `workers/${w.key}/worker.js`);
      assert.ok(existsSync(path.join(ROOT, "workers", w.key, "app.cpp")), `workers/${w.key}/app.cpp`);
      assert.match(w.wasm, /^[a-z][a-z0-9_-]*\.wasm$/);
      assert.ok(["complete", "in progress"].includes(w.status), `${w.key}.status ${w.status}`);
      const c = read(w);
      assert.equal(c.name, w.name);
      const configDir = path.dirname(path.join(ROOT, w.wrangler));
      assert.deepEqual(
        c.d1_databases.map((d) => [d.binding, path.relative(ROOT, path.resolve(configDir, d.migrations_dir))]),
        [[w.d1.binding, w.d1.migrations]],
      );
      const sql = readdirSync(path.join(ROOT, w.d1.migrations)).filter((f) => f.endsWith(".sql"));
      assert.ok(sql.length > 0, `${w.d1.migrations} has migrations`);
      assert.deepEqual(c.kv_namespaces.map((k) => k.binding).sort(), [...w.kv].sort());
      assert.deepEqual((c.queues.producers ?? []).map((q) => q.binding).sort(), [...w.queues.producers].sort());
      assert.deepEqual((c.queues.consumers ?? []).map((q) => q.queue).sort(), [...w.queues.consumers].sort());
      // Its main imports the wasm the build produces under the list's name.
      assert.match(c.main, new RegExp(`workers/${w.key}/worker\\.js$`));
    });
  }

  for (const a of Object.values(APPS)) {
    it(`${a.key}: its manifest is a provisioned tenant with the app's appId; byte budget set`, async () => {
      assert.ok(LIST.tenants.includes(a.manifest), `${a.manifest} in tenants`);
      const manifest = await loadManifest(path.join(ROOT, a.manifest));
      assert.equal(manifest.appId, a.appId);
      assert.match(a.name, /^client-[a-z0-9-]+$/, "named like the seed's client-bakery");
      assert.ok(Number.isInteger(a.byteBudget) && a.byteBudget > 0);
      // Every placeholder without a default is one scripts/dev and the mesh fill in.
      const required = [...placeholders(manifest)].filter(([, fallback]) => fallback === undefined).map(([n]) => n);
      for (const name of required) assert.ok(["CRM_WEBHOOK_SECRET"].includes(name), `${a.key}: \${${name}}`);
    });

    it(`${a.key}: wrangler config named as listed, binds every platform worker`, () => {
      const c = read(a);
      assert.equal(c.name, a.name);
      const bound = Object.fromEntries(c.services.map((s) => [s.binding, s.service]));
      for (const w of Object.values(PLATFORM_WORKERS)) assert.equal(bound[w.serviceBinding], w.name);
    });
  }

  it("ports, inspector ports, names and service bindings are unique", () => {
    const all = Object.values(WORKERS);
    for (const field of ["key", "name", "port", "inspectorPort"]) {
      const values = all.map((w) => w[field]);
      assert.equal(new Set(values).size, values.length, field);
    }
    const ports = [...all.map((w) => w.port), ...all.map((w) => w.inspectorPort), LIST.stubs.port];
    assert.equal(new Set(ports).size, ports.length, "no port used twice");
    const bindings = Object.values(PLATFORM_WORKERS).map((w) => w.serviceBinding);
    assert.equal(new Set(bindings).size, bindings.length);
  });

  it("every tenant manifest exists and local vars fill every placeholder", () => {
    for (const manifest of LIST.tenants) assert.ok(existsSync(path.join(ROOT, manifest)), manifest);
    for (const key of Object.keys(WORKERS)) {
      const vars = localVars(key, {
        stubsUrl: "http://127.0.0.1:1",
        adminToken: "a",
        tenantTokens: { [WORKERS[key].appId]: "t" },
        testHooks: true,
      });
      for (const [name, value] of Object.entries(vars)) assert.doesNotMatch(value, /[{}]/, `${key}.${name}`);
    }
    assert.equal(localVars("leads", { stubsUrl: "http://s", adminToken: "a" }).RESEND_API_URL, "http://s");
    assert.equal(localVars("bakery", { tenantTokens: { bakery: "t" } }).SITESWARM_TENANT_TOKEN, "t");
  });
});
