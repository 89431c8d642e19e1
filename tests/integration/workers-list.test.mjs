// The one list of workers (workers/workers.json) agrees with what it names: each platform worker's
// folder, wrangler config (name, D1 binding and migrations, KV, queues), migrations and ports; each
// part's (the ledger's runner and config) config, shim and bindings against its platform worker's.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { loadManifest, placeholders } from "../../scripts/lib/manifest.mjs";
import { APPS, LIST, localVars, PARTS, PLATFORM_WORKERS, partsOf, ROOT, WORKERS } from "../../scripts/lib/workers.mjs";

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

  for (const part of Object.values(PARTS)) {
    const owner = PLATFORM_WORKERS[part.partOf];
    const services = (c) => Object.fromEntries((c.services ?? []).map((s) => [s.binding, s.service]));

    it(`${part.key}: a part of ${part.partOf}, its own worker: config, shim and wasm name`, () => {
      assert.ok(owner, `${part.key}.partOf names a platform worker`);
      assert.ok(!(part.key in PLATFORM_WORKERS), "not a platform worker (never provisioned, no migrations)");
      assert.equal(WORKERS[part.key], part);
      assert.ok(partsOf(part.partOf).includes(part));
      assert.match(part.wasm, /^[a-z][a-z0-9_-]*\.wasm$/);
      assert.match(part.wasmFactory, /^make_[a-z0-9_]+_app$/);
      assert.equal(part.d1, undefined, "its D1 database is its platform worker's");
      const c = read(part);
      const o = read(owner);
      assert.equal(c.name, part.name);
      assert.equal(c.compatibility_date, o.compatibility_date);
      assert.equal(c.workers_dev, false, "not public");
      assert.deepEqual(c.routes ?? [], [], "no routes");
      assert.equal(c.observability?.enabled, true);
      // Its main is a shim in the platform worker's folder that imports the part's own wasm.
      assert.match(c.main, new RegExp(`workers/${part.partOf}/[a-z-]+.js$`));
      assert.notEqual(c.main, o.main);
      const shim = readFileSync(c.main, "utf8");
      assert.ok(shim.includes(`from "../../dist/wasm/${part.wasm}"`), `${c.main} imports dist/wasm/${part.wasm}`);
      assert.ok(shim.includes(`service: "${part.name}"`), `${c.main} names ${part.name}`);
    });

    it(`${part.key}: shares ${part.partOf}'s D1 database and KV; no crons, no queue consumers`, () => {
      const c = read(part);
      const o = read(owner);
      const db = o.d1_databases.find((d) => d.binding === owner.d1.binding);
      assert.deepEqual(
        c.d1_databases.map((d) => [d.binding, d.database_name, d.database_id, d.migrations_dir]),
        [[db.binding, db.database_name, db.database_id, undefined]],
        "the same database, migrated once through the platform worker's config",
      );
      assert.deepEqual(
        c.kv_namespaces.map((k) => [k.binding, k.id]),
        o.kv_namespaces.filter((k) => owner.kv.includes(k.binding)).map((k) => [k.binding, k.id]),
      );
      assert.deepEqual(c.triggers?.crons ?? [], [], "no Cron Triggers: the platform worker fires them");
      assert.deepEqual(c.queues?.consumers ?? [], [], "no queue consumer");
      assert.deepEqual(c.queues?.producers ?? [], []);
      // The platform worker binds the part; the part never binds its platform worker (no cycle).
      assert.equal(services(o)[part.serviceBinding], part.name);
      assert.equal(services(c)[owner.serviceBinding], undefined);
    });

    it(`${part.key}: local vars are a platform worker's (operator token, test hooks)`, () => {
      const vars = localVars(part.key, { stubsUrl: "http://s", adminToken: "a", testHooks: true });
      assert.equal(vars.PLATFORM_ADMIN_TOKEN, "a");
      assert.equal(vars.SITESWARM_TEST_HOOKS, "1");
      assert.equal(localVars(part.key, { adminToken: "a" }).SITESWARM_TEST_HOOKS, undefined);
    });
  }

  it("the ledger's parts: the runner binds the workflow targets, the config part the runner and the targets", () => {
    const { events_runner: runner, events_config: config } = PARTS;
    assert.equal(runner?.partOf, "events");
    assert.equal(config?.partOf, "events");
    const services = (w) => Object.fromEntries((read(w).services ?? []).map((s) => [s.binding, s.service]));
    // The workflow targets: every other platform worker, bound by the runner, which starts workflows.
    const targets = Object.fromEntries(
      Object.values(PLATFORM_WORKERS)
        .filter((w) => w.key !== "events")
        .map((w) => [w.serviceBinding, w.name]),
    );
    assert.deepEqual(Object.keys(targets).sort(), [
      "ANALYTICS_SERVICE",
      "CMS_SERVICE",
      "LEADS_SERVICE",
      "MONITOR_SERVICE",
    ]);
    assert.deepEqual(services(runner), targets);
    // A workflow's target.service is checked against the config part's own bindings.
    assert.deepEqual(services(config), { [runner.serviceBinding]: runner.name, ...targets });
    // The entry starts none: it binds its parts only.
    assert.deepEqual(services(PLATFORM_WORKERS.events), {
      [runner.serviceBinding]: runner.name,
      [config.serviceBinding]: config.name,
    });
    // The entry passes its test hooks on to both parts (bindings/host.js `parts`).
    const shim = readFileSync(path.join(ROOT, "workers/events/worker.js"), "utf8");
    assert.match(shim, /parts: \["EVENTS_RUNNER", "EVENTS_CONFIG"\]/);
  });

  it("bash order (scripts/lib/workers.mjs shell): the parts start and deploy before the workers binding them", () => {
    const out = execFileSync(process.execPath, [path.join(ROOT, "scripts/lib/workers.mjs"), "shell"], {
      encoding: "utf8",
    });
    const array = (name) => out.match(new RegExp(`^${name}=\\((.*)\\)$`, "m"))[1].split(" ");
    assert.deepEqual(array("PLATFORM"), Object.keys(PLATFORM_WORKERS));
    assert.deepEqual(array("PARTS"), Object.keys(PARTS));
    const all = array("ALL");
    assert.deepEqual([...all].sort(), Object.keys(WORKERS).sort());
    for (const part of Object.values(PARTS)) {
      assert.ok(all.indexOf(part.key) < all.indexOf(part.partOf), `${part.key} before ${part.partOf}`);
      assert.match(out, new RegExp(`\\[${part.key}\\]='${part.wasm.replace(".", "\\.")}'`), "WASM names it");
    }
    assert.ok(all.indexOf("events_runner") < all.indexOf("events_config"), "the config part binds the runner");
  });

  for (const a of Object.values(APPS)) {
    it(`${a.key}: its manifest is a provisioned tenant with the app's appId; byte budget set`, async () => {
      assert.ok(LIST.tenants.includes(a.manifest), `${a.manifest} in tenants`);
      const manifest = await loadManifest(path.join(ROOT, a.manifest));
      assert.equal(manifest.appId, a.appId);
      assert.match(a.name, /^client-[a-z0-9-]+$/, "named client-<app>, like client-bakery");
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

  it("what only local runs may turn on (their local vars) is never on in a deployed config", () => {
    for (const w of [...Object.values(PLATFORM_WORKERS), ...Object.values(PARTS)]) {
      const c = read(w);
      for (const local of ["ALLOW_LOCAL_OUTBOUND", "LOCAL_CRON_TRIGGERS", "SITESWARM_TEST_HOOKS"]) {
        assert.notEqual(c.vars?.[local], "1", `${w.wrangler} turns ${local} on`);
      }
    }
  });

  it("ports, inspector ports, names and service bindings are unique", () => {
    const all = Object.values(WORKERS);
    for (const field of ["key", "name", "port", "inspectorPort"]) {
      const values = all.map((w) => w[field]);
      assert.equal(new Set(values).size, values.length, field);
    }
    const ports = [...all.map((w) => w.port), ...all.map((w) => w.inspectorPort), LIST.stubs.port];
    assert.equal(new Set(ports).size, ports.length, "no port used twice");
    const bindings = [...Object.values(PLATFORM_WORKERS), ...Object.values(PARTS)].map((w) => w.serviceBinding);
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
