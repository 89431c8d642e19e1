// The whole platform as Miniflare worker options, built from the list of workers
// (workers/workers.json) and their wrangler configs: used by the integration tests
// (tests/integration/mesh.mjs) and by scripts/dev (scripts/dev-mesh.mjs).
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { APPS, localVars, ROOT, WORKERS } from "./workers.mjs";

export { ROOT, WORKERS } from "./workers.mjs";
// Cloudflare's always-pass Turnstile test secret; the local stub mirrors its semantics.
export const TURNSTILE_PASS_SECRET = WORKERS.leads.localVars.TURNSTILE_SECRET_KEY;

// Miniflare's default rules treat an imported *.js as CommonJS (docs/toolchain.md, Miniflare): every
// user of workerd in this repo loads our ES modules and the compiled cores with these rules.
export const MODULE_RULES = [
  { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
  { type: "CompiledWasm", include: ["**/*.wasm"] },
];

/**
 * Vars and placeholder secrets pointing every third-party API at the stubs, per worker key, from
 * the localVars of workers/workers.json.
 * @param tenantTokens `{ [appId]: token }`: each client app gets its own tenant's token
 */
export function localBindings({ stubsUrl, adminToken, tenantTokens = {}, testHooks = false }) {
  return Object.fromEntries(
    Object.keys(WORKERS).map((key) => [key, localVars(key, { stubsUrl, adminToken, tenantTokens, testHooks })]),
  );
}

/**
 * @param bindings per worker key, merged over the config's vars
 * @param scratch a directory for the client apps' bundles
 * @param extra per worker key, more Miniflare worker options (e.g. unsafeDirectSockets)
 * @returns `{ workers, migrations: [[workerName, binding, dir]] }`
 */
export async function meshWorkerOptions({ bindings = {}, scratch, extra = {} }) {
  const wrangler = await import("wrangler");
  const workers = [];
  const migrations = [];
  for (const [key, { name, wrangler: config }] of Object.entries(WORKERS)) {
    const configPath = path.join(ROOT, config);
    const { workerOptions, main } = wrangler.unstable_getMiniflareWorkerOptions(configPath);
    // Client apps import @siteswarm/sdk and JSON: Miniflare does not bundle.
    const bundled = APPS[key]?.bundle === true;
    workers.push({
      ...workerOptions,
      name,
      modules: true,
      scriptPath: bundled ? await bundle(key, main, scratch) : main,
      modulesRoot: bundled ? scratch : ROOT,
      modulesRules: [...MODULE_RULES, ...(workerOptions.modulesRules ?? [])],
      bindings: { ...workerOptions.bindings, ...bindings[key] },
      ...extra[key],
    });
    const { d1 } = WORKERS[key];
    if (d1) migrations.push([name, d1.binding, path.join(ROOT, d1.migrations)]);
  }
  return { workers, migrations };
}

/** Applies `dir/*.sql` in order (D1's exec() splits on newlines, so split properly and batch). */
export async function applyMigrations(db, dir) {
  const { unstable_splitSqlQuery } = await import("wrangler");
  const files = (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  for (const file of files) {
    const statements = unstable_splitSqlQuery(await readFile(path.join(dir, file), "utf8"));
    if (statements.length) await db.batch(statements.map((sql) => db.prepare(sql)));
  }
}

async function bundle(key, entry, outdir) {
  const esbuild = await import("esbuild");
  const outfile = path.join(outdir, `${key}.js`);
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*"],
    // This checkout's SDK, even when node_modules is shared with another checkout.
    alias: { "@siteswarm/sdk": path.join(ROOT, "bindings/sdk/src/index.js") },
    logLevel: "silent",
  });
  return outfile;
}
