// The one list of workers (workers/workers.json) for the JS side: scripts, the integration mesh, the
// bench. Also a small CLI for the bash scripts, which cannot read JSON themselves:
//   eval "$(node scripts/lib/workers.mjs shell)"   # arrays PLATFORM APPS ALL, maps PORT NAME …
//   node scripts/lib/workers.mjs vars leads --stubs URL --admin-token T [--tenant-token T]
//                                                   # one NAME:value per line, for `wrangler dev --var`
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const LIST = JSON.parse(readFileSync(path.join(ROOT, "workers/workers.json"), "utf8"));

/** Platform workers by key, in start order (events first). */
export const PLATFORM_WORKERS = Object.fromEntries(LIST.platform.map((w) => [w.key, w]));
/** Client apps by key (examples/), the first one being the local entry. */
export const APPS = Object.fromEntries(LIST.apps.map((a) => [a.key, a]));
/** Every worker, apps first (the bakery is the mesh's entry), then the platform. */
export const WORKERS = { ...APPS, ...PLATFORM_WORKERS };
export const isApp = (key) => key in APPS;
export const STUB_PORT = LIST.stubs.port;
/** Manifests (absolute paths) provisioned by scripts/dev and the integration mesh. */
export const TENANT_MANIFESTS = LIST.tenants.map((p) => path.join(ROOT, p));

/**
 * The local vars of one worker with {stubs}, {adminToken} and {tenantToken} filled in.
 * @param tenantTokens `{ [appId]: token }`; an app gets its own appId's token
 * @param testHooks adds platformTestVars and the worker's testVars (integration tests only)
 */
export function localVars(key, { stubsUrl, adminToken, tenantTokens = {}, testHooks = false }) {
  const worker = WORKERS[key];
  if (!worker) throw new Error(`unknown worker ${key} (see workers/workers.json)`);
  const platform = !isApp(key);
  const vars = {
    ...(platform ? LIST.platformLocalVars : {}),
    ...worker.localVars,
    ...(testHooks && platform ? LIST.platformTestVars : {}),
    ...(testHooks ? (worker.testVars ?? {}) : {}),
  };
  const fill = {
    stubs: stubsUrl,
    adminToken,
    tenantToken: isApp(key) ? (tenantTokens[worker.appId] ?? "") : "",
  };
  return Object.fromEntries(
    Object.entries(vars).map(([name, value]) => [
      name,
      value.replace(/\{(\w+)\}/g, (all, field) => {
        if (!(field in fill)) throw new Error(`workers.json: unknown placeholder ${all} in ${key}.${name}`);
        return fill[field];
      }),
    ]),
  );
}

// --- CLI for bash ------------------------------------------------------------------------------------
const quote = (s) => `'${String(s).replaceAll("'", `'\\''`)}'`;

function shell() {
  const all = Object.values(WORKERS);
  const map = (name, pick, items = all) =>
    `declare -A ${name}=(${items
      .filter((w) => pick(w) !== undefined)
      .map((w) => `[${w.key}]=${quote(pick(w))}`)
      .join(" ")})`;
  const platform = LIST.platform;
  return [
    `PLATFORM=(${platform.map((w) => w.key).join(" ")})`,
    `APPS=(${LIST.apps.map((a) => a.key).join(" ")})`,
    `ALL=(${[...platform, ...LIST.apps].map((w) => w.key).join(" ")})`, // start/deploy order
    `TENANT_MANIFESTS=(${LIST.tenants.map(quote).join(" ")})`,
    `STUB_PORT=${STUB_PORT}`,
    map("NAME", (w) => w.name),
    map("PORT", (w) => w.port),
    map("INSPECTOR", (w) => w.inspectorPort),
    map("WRANGLER", (w) => w.wrangler),
    map("WASM", (w) => w.wasm, platform),
    map("DB_BINDING", (w) => w.d1?.binding, platform),
    map("APP_ID", (w) => w.appId, LIST.apps),
  ].join("\n");
}

function main(argv) {
  const [command, ...rest] = argv;
  const arg = (name) => {
    const i = rest.indexOf(`--${name}`);
    return i >= 0 ? rest[i + 1] : undefined;
  };
  if (command === "shell") {
    console.log(shell());
  } else if (command === "vars" && rest[0]) {
    const vars = localVars(rest[0], {
      stubsUrl: arg("stubs") ?? `http://127.0.0.1:${STUB_PORT}`,
      adminToken: arg("admin-token") ?? "",
      tenantTokens: { [WORKERS[rest[0]]?.appId]: arg("tenant-token") ?? "" },
    });
    for (const [name, value] of Object.entries(vars)) console.log(`${name}:${value}`);
  } else {
    console.error(
      "usage: node scripts/lib/workers.mjs shell | vars <key> [--stubs URL] [--admin-token T] [--tenant-token T]",
    );
    process.exit(2);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) main(process.argv.slice(2));
