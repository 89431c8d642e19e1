// The whole platform in ONE Miniflare: the five platform workers and the bakery, built from their
// wrangler configs, D1 migrated, third-party APIs pointed at the local stubs, tenants provisioned.
//
//   const mesh = await startMesh();
//   const res = await mesh.fetch("leads", "/health");
//   await mesh.dispose();
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fetch as miniflareFetch, Miniflare, Response } from "miniflare";
import { PLATFORM_WORKERS, provisionManifest } from "../../scripts/provision.mjs";
import { startStubs } from "../stubs/stub-server.mjs";

// No request to the internet from any test (TOOLCHAIN §7).
process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
process.env.WRANGLER_HIDE_BANNER = "true";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const ADMIN_TOKEN = "test-admin-token";
export const WORKERS = { bakery: { name: "siteswarm-example-bakery" }, ...PLATFORM_WORKERS };
const MODULE_RULES = [
  { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
  { type: "CompiledWasm", include: ["**/*.wasm"] },
];
// Cloudflare's always-pass Turnstile test secret; the stub mirrors its semantics.
export const TURNSTILE_PASS_SECRET = "1x0000000000000000000000000000000AA";

export const secret = () => randomBytes(24).toString("hex");

/**
 * @param options.bindings extra bindings per worker key, e.g. `{ leads: { TURNSTILE_SECRET_KEY } }`
 * @param options.tenants manifests to provision (default: examples/bakery and examples/auto-repair)
 */
export async function startMesh({ bindings = {}, tenants } = {}) {
  const wrangler = await import("wrangler");
  const stubs = await startStubs();
  const scratch = await mkdtemp(path.join(tmpdir(), "siteswarm-mesh-"));
  const manifests = tenants ?? [
    JSON.parse(await readFile(path.join(ROOT, "examples/bakery/swarm.config.json"), "utf8")),
    JSON.parse(await readFile(path.join(ROOT, "examples/auto-repair/swarm.config.json"), "utf8")),
  ];
  const tokens = Object.fromEntries(
    manifests.map((m) => [m.appId, { token: secret(), adminToken: secret() }]),
  );

  const common = {
    PLATFORM_ADMIN_TOKEN: ADMIN_TOKEN,
    SITESWARM_TEST_HOOKS: "1",
    ALLOW_LOCAL_OUTBOUND: "1",
  };
  const stubBindings = {
    leads: {
      TURNSTILE_VERIFY_URL: `${stubs.url}/turnstile/v0/siteverify`,
      RESEND_API_URL: stubs.url,
      SENDGRID_API_URL: stubs.url,
      TWILIO_API_URL: stubs.url,
      TURNSTILE_SECRET_KEY: TURNSTILE_PASS_SECRET,
      RESEND_API_KEY: "re_test_0000000000000000",
      SENDGRID_API_KEY: "SG.test-0000000000000000",
      TWILIO_ACCOUNT_SID: "AC00000000000000000000000000000000",
      TWILIO_AUTH_TOKEN: "test-twilio-auth-token",
    },
    monitoring: { PAGERDUTY_EVENTS_URL: `${stubs.url}/v2/enqueue` },
    bakery: { SITESWARM_TENANT_TOKEN: tokens.bakery?.token ?? "" },
  };

  const workers = [];
  const migrations = []; // [workerName, binding, dir]
  for (const [key, { name }] of Object.entries(WORKERS)) {
    const configPath = path.join(ROOT, "wrangler", `${key}.jsonc`);
    const { workerOptions, main } = wrangler.unstable_getMiniflareWorkerOptions(configPath);
    const scriptPath = key === "bakery" ? await bundle(main, scratch) : main;
    workers.push({
      ...workerOptions,
      name,
      modules: true,
      scriptPath,
      modulesRoot: key === "bakery" ? scratch : ROOT,
      modulesRules: [...MODULE_RULES, ...(workerOptions.modulesRules ?? [])],
      bindings: {
        ...workerOptions.bindings,
        ...(key === "bakery" ? {} : common),
        ...stubBindings[key],
        ...bindings[key],
      },
      outboundService: loopbackOnly,
    });
    for (const db of wrangler.unstable_readConfig({ config: configPath }).d1_databases) {
      const dir = path.resolve(path.dirname(configPath), db.migrations_dir ?? "migrations");
      migrations.push([name, db.binding, dir]);
    }
  }

  const mf = new Miniflare({ cf: false, workers });
  await mf.ready;
  for (const [name, binding, dir] of migrations) {
    await applyMigrations(await mf.getD1Database(binding, name), dir, wrangler.unstable_splitSqlQuery);
  }

  const mesh = {
    mf,
    stubs,
    tokens,
    adminToken: ADMIN_TOKEN,
    /** fetch() on one worker (key: bakery, leads, cms, monitoring, analytics, events). */
    async fetch(key, pathname, init = {}) {
      const worker = await mf.getWorker(WORKERS[key].name);
      return worker.fetch(new URL(pathname, "http://localhost").href, init);
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
    d1: (key, binding) => mf.getD1Database(binding, WORKERS[key].name),
    async dispose() {
      await mf.dispose();
      await stubs.close();
      await rm(scratch, { recursive: true, force: true });
    },
  };

  for (const manifest of manifests) {
    await provisionManifest(manifest, {
      ...tokens[manifest.appId],
      operatorToken: ADMIN_TOKEN,
      send: (worker, p, init) => mesh.fetch(worker, p, init),
    });
  }
  return mesh;
}

/** Applies `dir/*.sql` in order (D1's exec() splits on newlines, so split properly and batch). */
export async function applyMigrations(db, dir, splitSqlQuery) {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  for (const file of files) {
    const statements = splitSqlQuery(await readFile(path.join(dir, file), "utf8"));
    if (statements.length) await db.batch(statements.map((sql) => db.prepare(sql)));
  }
}

// The bakery imports @siteswarm/sdk and its JSON manifest; Miniflare does not bundle, wrangler does.
async function bundle(entry, outdir) {
  const esbuild = await import("esbuild");
  const outfile = path.join(outdir, "bakery.js");
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*"],
    logLevel: "silent",
  });
  return outfile;
}

// Outbound fetch() of every worker: loopback (the stubs) only, never the internet.
async function loopbackOnly(request) {
  const { hostname } = new URL(request.url);
  if (hostname === "127.0.0.1" || hostname === "localhost") return miniflareFetch(request);
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
