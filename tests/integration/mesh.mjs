// The whole platform in ONE Miniflare: every worker of workers/workers.json (the platform workers and
// the client apps), built from their wrangler configs, D1 migrated, third-party APIs pointed at the
// local stubs, tenants provisioned.
//
//   const mesh = await startMesh();
//   const res = await mesh.fetch("leads", "/health");
//   await mesh.dispose();
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fetch as miniflareFetch, Miniflare, Response } from "miniflare";
import { applyMigrations, localBindings, meshWorkerOptions, WORKERS } from "../../scripts/lib/local-mesh.mjs";
import { loadManifest, resolveManifest } from "../../scripts/lib/manifest.mjs";
import { APPS, PARTS, TENANT_MANIFESTS } from "../../scripts/lib/workers.mjs";
import { cmsFallbackSeeds, provisionManifest } from "../../scripts/provision.mjs";
import { startStubs } from "../stubs/stub-server.mjs";
import { d1Client, d1ProbeWorker } from "./d1-client.mjs";

// No request to the internet from any test (docs/toolchain.md, offline).
process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
process.env.WRANGLER_HIDE_BANNER = "true";

export { ROOT, TURNSTILE_PASS_SECRET, WORKERS } from "../../scripts/lib/local-mesh.mjs";
export const ADMIN_TOKEN = "test-admin-token";
export const secret = () => randomBytes(24).toString("hex");

/**
 * A platform worker's parts (workers.json `parts`: the ledger's runner and config) are that worker
 * split up: `bindings` and `serviceBindings` given for it apply to its parts too (a part's own key
 * adds to them), so `{ events: { DRAIN_CHUNK_STARTS: "2" } }` reaches the runner, which drains.
 * @param options.bindings extra bindings per worker key, e.g. `{ leads: { TURNSTILE_SECRET_KEY } }`
 * @param options.extraWorkers more Miniflare worker options (e.g. a plain-JS baseline in scripts/bench)
 * @param options.serviceBindings extra service bindings per worker key, e.g. `{ events: { WORKFLOW_TARGET:
 *   "workflow-target" } }` (a test's own worker among `extraWorkers`)
 * @param options.tenants manifests to provision (default: the tenants of workers/workers.json)
 * @param options.localSites fill each app manifest's `${SITE_URL}` with the app's own local URL (its
 *   monitors then probe the real page); by default the manifest's production default stays, so a
 *   deployment that refuses local targets (ALLOW_LOCAL_OUTBOUND=0) can still be provisioned
 * @param options.queueBatchTimeout every queue consumer's max_batch_timeout in seconds, in place of
 *   the wrangler configs' (1–2 s): a test whose steps each wait for a queue delivery (a monitor's
 *   probe, then its alert) runs in a fraction of the time. Batching is then what Miniflare flushes
 *   in that window: tests of batch sizes keep the configs' timeouts (docs/testing.md)
 */
export async function startMesh({
  bindings: ownBindings = {},
  tenants,
  extraWorkers = [],
  serviceBindings: ownServiceBindings = {},
  localSites = false,
  queueBatchTimeout,
} = {}) {
  const bindings = withParts(ownBindings);
  const serviceBindings = withParts(ownServiceBindings);
  // The CRM stub verifies the webhook signatures made with the software agency's secret.
  const crmSecret = secret();
  const stubs = await startStubs({ crmSecret });
  const scratch = await mkdtemp(path.join(tmpdir(), "siteswarm-mesh-"));
  const manifests = tenants ?? (await Promise.all(TENANT_MANIFESTS.map(loadManifest)));
  const tokens = Object.fromEntries(manifests.map((m) => [m.appId, { token: secret(), adminToken: secret() }]));

  const local = localBindings({
    stubsUrl: stubs.url,
    adminToken: ADMIN_TOKEN,
    tenantTokens: Object.fromEntries(Object.entries(tokens).map(([appId, t]) => [appId, t.token])),
    testHooks: true,
  });
  // What a deployment bundles into cms for zero lockout (scripts/provision.mjs cmsFallbackSeeds).
  local.cms = {
    ...local.cms,
    CMS_FALLBACK_SEEDS: cmsFallbackSeeds(
      manifests.map((manifest) => ({ manifest, token: tokens[manifest.appId].token })),
    ),
  };
  const merged = Object.fromEntries(Object.keys(WORKERS).map((key) => [key, { ...local[key], ...bindings[key] }]));
  // Each worker also listens on its own 127.0.0.1 port (picked by the OS), so a real browser can
  // open its pages: mesh.url(key).
  const outbound = Object.fromEntries(
    Object.keys(WORKERS).map((key) => [
      key,
      { outboundService: loopbackOnly, unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }] },
    ]),
  );
  const { workers, migrations } = await meshWorkerOptions({ bindings: merged, scratch, extra: outbound });
  for (const [key, more] of Object.entries(serviceBindings)) {
    const worker = workers.find((w) => w.name === WORKERS[key].name);
    worker.serviceBindings = { ...worker.serviceBindings, ...more };
  }
  if (queueBatchTimeout !== undefined) {
    for (const worker of workers) {
      for (const consumer of Object.values(worker.queueConsumers ?? {})) consumer.maxBatchTimeout = queueBatchTimeout;
    }
  }
  // Each database once, as DB_<n> of the probe the tests' own D1 reads go through (d1-client.mjs).
  const all = [...workers, ...extraWorkers];
  const databaseIds = [...new Set(all.flatMap((w) => Object.values(w.d1Databases ?? {}).map((d) => d.id)))];
  const probeBinding = (workerName, binding) => {
    const id = all.find((w) => w.name === workerName)?.d1Databases?.[binding]?.id;
    if (id === undefined) throw new Error(`mesh: ${workerName} has no D1 binding ${binding}`);
    return `DB_${databaseIds.indexOf(id)}`;
  };
  workers.push(RPC_PROBE, d1ProbeWorker(databaseIds.map((id, i) => [`DB_${i}`, id])), ...extraWorkers);
  // SS_INSPECTOR_PORT: V8's inspector on that port, for profiles inside workerd
  // (tests/bench/workerd-profile.mjs).
  const inspector = process.env.SS_INSPECTOR_PORT ? { inspectorPort: Number(process.env.SS_INSPECTOR_PORT) } : {};
  const mf = new Miniflare({ cf: false, workers, ...inspector });
  await mf.ready;
  const probeUrl = (await mf.unsafeGetDirectURL("d1-probe")).href;
  const d1 = (workerName, binding) =>
    d1Client((body) => fetch(probeUrl, { method: "POST", body }), probeBinding(workerName, binding));
  for (const [name, binding, dir] of migrations) await applyMigrations(d1(name, binding), dir);

  const mesh = {
    mf,
    stubs,
    crmSecret,
    tokens,
    adminToken: ADMIN_TOKEN,
    /**
     * fetch() on one worker (key: bakery, software-agency, auto-repair, leads, cms, monitoring,
     * analytics, events, or one of events' parts: events_runner, events_config).
     */
    async fetch(key, pathname, init = {}) {
      const worker = await mf.getWorker(WORKERS[key].name);
      return worker.fetch(new URL(pathname, "http://localhost").href, init);
    },
    /** The http://127.0.0.1:<port>/ a browser can open for one worker. */
    async url(key) {
      return (await mf.unsafeGetDirectURL(WORKERS[key].name)).href;
    },
    /** Calls cms over Workers RPC (binding CMS_RPC: the CmsRpc entrypoint; CMS_SERVICE: default). */
    async cmsRpc(binding, method, ...args) {
      const probe = await mf.getWorker("rpc-probe");
      const body = JSON.stringify({ binding, method, args });
      return (await probe.fetch("http://localhost/", { method: "POST", body })).json();
    },
    /** The three tenant headers of a provisioned tenant. */
    tenantHeaders(appId, { token = tokens[appId]?.token, version = "1.0.0" } = {}) {
      return {
        "X-SiteSwarm-Tenant-Id": appId,
        "X-SiteSwarm-Tenant-Token": token,
        "X-SiteSwarm-Capability-Version": version,
      };
    },
    operator: (extra = {}) => ({ authorization: `Bearer ${ADMIN_TOKEN}`, ...extra }),
    /** A worker's D1 database, read and written as a test would (d1-client.mjs: no synchronous proxy). */
    d1: (key, binding) => d1(WORKERS[key].name, binding),
    async dispose() {
      await mf.dispose();
      await stubs.close();
      await rm(scratch, { recursive: true, force: true });
    },
  };

  try {
    for (const raw of manifests) {
      const vars = { CRM_WEBHOOK_URL: `${stubs.url}/crm/inquiries`, CRM_WEBHOOK_SECRET: crmSecret };
      const app = Object.values(APPS).find((a) => a.appId === raw.appId);
      if (localSites && app) vars.SITE_URL = (await mesh.url(app.key)).replace(/\/$/, "");
      const manifest = resolveManifest(raw, vars);
      await provisionManifest(manifest, {
        ...tokens[manifest.appId],
        operatorToken: ADMIN_TOKEN,
        send: (worker, p, init) => mesh.fetch(worker, p, init),
      });
    }
  } catch (err) {
    await mesh.dispose(); // a failed setup must not leave workerd running (the test would hang)
    throw err;
  }
  return mesh;
}

/** `perKey` (options per worker key) with each platform worker's entry merged under its parts' own. */
function withParts(perKey) {
  const out = { ...perKey };
  for (const { key, partOf } of Object.values(PARTS)) {
    if (perKey[partOf]) out[key] = { ...perKey[partOf], ...perKey[key] };
  }
  return out;
}

// Calls the cms worker over Workers RPC: POST {binding, method, args} → the RPC output.
const RPC_PROBE = {
  name: "rpc-probe",
  modules: true,
  compatibilityDate: "2026-04-20",
  serviceBindings: {
    CMS_RPC: { name: "siteswarm-cms-service", entrypoint: "CmsRpc" },
    CMS_SERVICE: "siteswarm-cms-service",
  },
  script: `export default {
    async fetch(request, env) {
      const { binding, method, args } = await request.json();
      return Response.json(await env[binding][method](...args));
    },
  };`,
};

// Outbound fetch() of every worker: loopback (the stubs) only, never the internet. One hop each:
// workerd applies the worker's redirect mode itself (bindings/effects/fetch.js asks for "manual"), so
// following a 30x here would follow redirects the worker never asked for.
export async function loopbackOnly(request) {
  const { hostname } = new URL(request.url);
  if (hostname === "127.0.0.1" || hostname === "localhost") {
    return miniflareFetch(request, { redirect: "manual" });
  }
  return new Response(`mesh: outbound request to ${hostname} blocked in tests`, { status: 502 });
}

/** Reads a JSON answer and checks status and content type; returns the parsed body. */
export async function jsonOf(res, status) {
  const text = await res.text();
  if (status !== undefined && res.status !== status) {
    throw new Error(`expected ${status}, got ${res.status}: ${text.slice(0, 500)}`);
  }
  if (!/^application\/json/.test(res.headers.get("content-type") ?? "")) {
    throw new Error(`expected JSON, got ${res.headers.get("content-type")}: ${text.slice(0, 200)}`);
  }
  return JSON.parse(text);
}

/** Checks an error answer of the contract: `{"error":{"code","message"}}` with the status given. */
export async function errorOf(res, status, code) {
  const body = await jsonOf(res, status);
  if (body?.error?.code !== code || typeof body.error.message !== "string") {
    throw new Error(`expected error ${code}, got ${JSON.stringify(body)}`);
  }
  return body.error;
}
