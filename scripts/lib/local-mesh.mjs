// The whole platform as Miniflare worker options, built from the list of workers
// (workers/workers.json) and their wrangler configs: used by the integration tests
// (tests/integration/mesh.mjs) and by scripts/dev (scripts/dev-mesh.mjs).
import { readdir, readFile, stat } from "node:fs/promises";
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
    // Miniflare 4.20260426 names every worker's asset storage service "assets:storage", so with two
    // or more apps in one Miniflare every app would be served the first app's files. Each app's
    // ASSETS binding is therefore a small file server of its own directory here (the worker itself
    // answers every request first and falls back to ASSETS, as with run_worker_first).
    const { assets, ...options } = workerOptions;
    const serviceBindings = { ...options.serviceBindings };
    if (assets) serviceBindings[assets.binding ?? "ASSETS"] = staticFiles(assets.directory);
    workers.push({
      ...options,
      serviceBindings,
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

const CONTENT_TYPES = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
};

/** An ASSETS-like binding serving `dir`: `/` → index.html, `/about` → about.html, else 404. */
function staticFiles(dir) {
  const root = path.resolve(dir);
  return async (request) => {
    const { Response } = await import("miniflare");
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("method not allowed", { status: 405, headers: { allow: "GET, HEAD" } });
    }
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(request.url).pathname);
    } catch {
      // A path that is not percent-encoded UTF-8 (/%FF) names no file: 404 like any other missing
      // one, which the site answers in JSON (was a plain-text 400 the site passed on).
      return new Response("not found", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
    }
    if (pathname.endsWith("/")) pathname += "index.html";
    for (const candidate of [pathname, `${pathname}.html`]) {
      const file = path.resolve(root, `.${candidate}`);
      if (!file.startsWith(`${root}${path.sep}`)) break; // no way out of the directory
      const info = await stat(file).catch(() => null);
      if (!info?.isFile()) continue;
      const type = CONTENT_TYPES[path.extname(file)] ?? "application/octet-stream";
      const body = request.method === "HEAD" ? null : await readFile(file);
      return new Response(body, { headers: { "content-type": type } });
    }
    return new Response("not found", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
  };
}

/**
 * A worker's entry bundled for Miniflare (which does not bundle): esbuild, ES module, the workerd
 * conditions, `@siteswarm/sdk` from this checkout. Resolves to the bundle's path, `<outdir>/<key>.js`.
 */
export async function bundle(key, entry, outdir) {
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
