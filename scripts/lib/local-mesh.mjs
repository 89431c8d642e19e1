// The whole platform as Miniflare worker options, built from the wrangler configs: used by the
// integration tests (tests/integration/mesh.mjs) and by `scripts/dev --one-process`.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PLATFORM_WORKERS } from "../provision.mjs";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const WORKERS = { bakery: { name: "siteswarm-example-bakery", port: 8787 }, ...PLATFORM_WORKERS };
// Cloudflare's always-pass Turnstile test secret; the local stub mirrors its semantics.
export const TURNSTILE_PASS_SECRET = "1x0000000000000000000000000000000AA";

// Miniflare's default rules treat imported *.js as CommonJS (TOOLCHAIN.md §2): every user of
// workerd in this repo loads our ES modules and the compiled cores with these rules.
export const MODULE_RULES = [
  { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
  { type: "CompiledWasm", include: ["**/*.wasm"] },
];

/** Vars and placeholder secrets pointing every third-party API at the stubs, per worker key. */
export function localBindings({ stubsUrl, adminToken, tenantToken, testHooks = false }) {
  const platform = {
    PLATFORM_ADMIN_TOKEN: adminToken,
    ALLOW_LOCAL_OUTBOUND: "1",
    ...(testHooks && { SITESWARM_TEST_HOOKS: "1" }),
  };
  return {
    bakery: { SITESWARM_TENANT_TOKEN: tenantToken ?? "" },
    leads: {
      ...platform,
      TURNSTILE_VERIFY_URL: `${stubsUrl}/turnstile/v0/siteverify`,
      RESEND_API_URL: stubsUrl,
      SENDGRID_API_URL: stubsUrl,
      TWILIO_API_URL: stubsUrl,
      TURNSTILE_SECRET_KEY: TURNSTILE_PASS_SECRET,
      RESEND_API_KEY: "re_local_placeholder",
      SENDGRID_API_KEY: "SG.local-placeholder",
      TWILIO_ACCOUNT_SID: "AC00000000000000000000000000000000",
      TWILIO_AUTH_TOKEN: "local-twilio-placeholder",
      TWILIO_FROM_NUMBER: "+15550100999",
      NOTIFY_BACKOFF_SECONDS: testHooks ? "0" : "5",
    },
    cms: platform,
    monitoring: { ...platform, PAGERDUTY_EVENTS_URL: `${stubsUrl}/v2/enqueue` },
    analytics: platform,
    events: platform,
  };
}

/**
 * @param bindings per worker key, merged over the config's vars
 * @param scratch a directory for the bakery bundle
 * @param extra per worker key, more Miniflare worker options (e.g. unsafeDirectSockets)
 * @returns `{ workers, migrations: [[workerName, binding, dir]] }`
 */
export async function meshWorkerOptions({ bindings = {}, scratch, extra = {} }) {
  const wrangler = await import("wrangler");
  const workers = [];
  const migrations = [];
  for (const [key, { name }] of Object.entries(WORKERS)) {
    const configPath = path.join(ROOT, "wrangler", `${key}.jsonc`);
    const { workerOptions, main } = wrangler.unstable_getMiniflareWorkerOptions(configPath);
    const bundled = key === "bakery"; // it imports @siteswarm/sdk and JSON: Miniflare does not bundle
    workers.push({
      ...workerOptions,
      name,
      modules: true,
      scriptPath: bundled ? await bundle(main, scratch) : main,
      modulesRoot: bundled ? scratch : ROOT,
      modulesRules: [...MODULE_RULES, ...(workerOptions.modulesRules ?? [])],
      bindings: { ...workerOptions.bindings, ...bindings[key] },
      ...extra[key],
    });
    for (const db of wrangler.unstable_readConfig({ config: configPath }).d1_databases) {
      const dir = path.resolve(path.dirname(configPath), db.migrations_dir ?? "migrations");
      migrations.push([name, db.binding, dir]);
    }
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
