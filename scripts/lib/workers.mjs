// The one list of workers (workers/workers.json) for the JS side: scripts, the integration mesh, the
// bench. Also a small CLI for the bash scripts, which cannot read JSON themselves:
//   eval "$(node scripts/lib/workers.mjs shell)"   # arrays PLATFORM PARTS APPS ALL, maps PORT NAME …
//   node scripts/lib/workers.mjs vars leads --stubs URL --admin-token T [--tenant-token T]
//                                                   # one NAME:value per line, for `wrangler dev --var`
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const LIST = JSON.parse(readFileSync(path.join(ROOT, "workers/workers.json"), "utf8"));

/**
 * Platform workers by key, in start order (events first): the five services that are provisioned,
 * have D1 migrations and are in the native harness. Their parts are not among them (PARTS).
 */
export const PLATFORM_WORKERS = Object.fromEntries(LIST.platform.map((w) => [w.key, w]));
/**
 * Parts by key: more workers deployed from a platform worker's library (`parts` in workers.json; the
 * ledger's runner and config, docs/architecture.md "The ledger's three workers"). Each has `partOf`,
 * its platform worker's key. Deployed, started and tested as workers, but never provisioned: they
 * share their platform worker's D1 database (migrated once, by it) and FLAGS, have no crons and no
 * queue consumers, and answer the operator with the same PLATFORM_ADMIN_TOKEN.
 */
export const PARTS = Object.fromEntries(
  LIST.platform.flatMap((w) => (w.parts ?? []).map((part) => [part.key, { ...part, partOf: w.key }])),
);
/** Client apps by key (examples/), the first one being the local entry. */
export const APPS = Object.fromEntries(LIST.apps.map((a) => [a.key, a]));
/** Every worker, apps first (the bakery is the mesh's entry), then the platform, then the parts. */
export const WORKERS = { ...APPS, ...PLATFORM_WORKERS, ...PARTS };
export const isApp = (key) => key in APPS;
export const isPart = (key) => key in PARTS;
/** The parts of platform worker `key` (none for most). */
export const partsOf = (key) => Object.values(PARTS).filter((p) => p.partOf === key);
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
  const platform = LIST.platform;
  const parts = Object.values(PARTS);
  // Start/deploy order: the parts first (their platform worker binds them; a part binds the other
  // platform workers, whose placeholders `scripts/deploy --first` uploads before), the platform in
  // its order, then the apps.
  const order = [...parts, ...platform, ...LIST.apps];
  const map = (name, pick, items = order) =>
    `declare -A ${name}=(${items
      .filter((w) => pick(w) !== undefined)
      .map((w) => `[${w.key}]=${quote(pick(w))}`)
      .join(" ")})`;
  return [
    `PLATFORM=(${platform.map((w) => w.key).join(" ")})`,
    `PARTS=(${parts.map((w) => w.key).join(" ")})`,
    `APPS=(${LIST.apps.map((a) => a.key).join(" ")})`,
    `ALL=(${order.map((w) => w.key).join(" ")})`, // start/deploy order
    `TENANT_MANIFESTS=(${LIST.tenants.map(quote).join(" ")})`,
    `STUB_PORT=${STUB_PORT}`,
    map("NAME", (w) => w.name),
    map("PORT", (w) => w.port),
    map("INSPECTOR", (w) => w.inspectorPort),
    map("WRANGLER", (w) => w.wrangler),
    map("WASM", (w) => w.wasm, [...platform, ...parts]),
    map("PART_OF", (w) => w.partOf, parts),
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
