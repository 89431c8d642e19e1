// Client manifests: `swarm.config.json`, or `swarm.config.ts` typed with the SDK's SwarmConfig (its
// default export; bundled here with esbuild, the bundler wrangler itself uses, so a manifest reads
// the same here as in the app). Used by scripts/provision, scripts/dev and the integration mesh.
//
// Strings may hold `${NAME}` or `${NAME:-default}`: what differs between a deployment and a local run
// (the site's own URL for its monitors, a CRM's URL and its signing secret), filled in at
// provisioning time so that no secret and no local port is written into a manifest.
//   node scripts/lib/manifest.mjs app-id <manifest>   # prints its appId (for bash)
import { readFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { capabilityVersionProblem } from "../../bindings/sdk/src/client.js";
import { APP_ID, SERVICES } from "../../bindings/sdk/src/delegate.js";

const PLACEHOLDER = /\$\{([A-Z][A-Z0-9_]*)(?::-([^}]*))?\}/g;

/** The manifest at `file` as a plain object, placeholders left as they are. */
export async function loadManifest(file) {
  if (file.endsWith(".json")) return JSON.parse(await readFile(file, "utf8"));
  const esbuild = await import("esbuild");
  const out = await esbuild.build({
    entryPoints: [file],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    external: ["@siteswarm/sdk"], // type-only imports; nothing of the SDK is needed at run time
    logLevel: "silent",
  });
  const code = out.outputFiles[0].text;
  const module = await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
  if (typeof module.default !== "object" || module.default === null) {
    throw new Error(`${path.basename(file)}: the manifest must be the default export`);
  }
  return structuredClone(module.default);
}

const CAPABILITIES = new Set(Object.values(SERVICES).map((s) => s.capability));
const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * What makes `manifest` unfit to provision, one line each (none: fit), checked before anything is
 * sent: an `appId` the workers know a tenant by (a missing one would register a tenant named
 * "undefined"); capabilities the SDK knows, at versions the services speak (else every call of the
 * app would be 400 unsupported_capability_version); `config` parts named by the workers they are
 * for (a misspelt `lead` would leave leads with an empty config). Each worker checks its own part.
 * @param {string[]} workers the keys `config` may hold
 */
export function manifestProblems(manifest, workers) {
  if (!isObject(manifest)) return ["the manifest must be a JSON object"];
  const problems = [];
  if (typeof manifest.appId !== "string" || !APP_ID.test(manifest.appId)) {
    problems.push(`appId must be a string matching ${APP_ID.source}`);
  }
  if (manifest.capabilities !== undefined && !isObject(manifest.capabilities)) {
    problems.push("capabilities must be an object");
  }
  for (const [name, declared] of Object.entries(isObject(manifest.capabilities) ? manifest.capabilities : {})) {
    if (!CAPABILITIES.has(name)) {
      problems.push(`capabilities.${name}: not a capability (${[...CAPABILITIES].join(", ")})`);
    } else if (!isObject(declared) || !["string", "undefined"].includes(typeof declared.version)) {
      problems.push(`capabilities.${name}: must be {"version": "MAJOR.MINOR.PATCH"}`);
    } else if (declared.version) {
      // No version (or an empty one) is the SDK's default, as the app's calls will send it.
      const problem = capabilityVersionProblem(declared.version);
      if (problem) problems.push(`capabilities.${name}: ${problem}`);
    }
  }
  if (manifest.config !== undefined && !isObject(manifest.config)) problems.push("config must be an object");
  for (const [key, part] of Object.entries(isObject(manifest.config) ? manifest.config : {})) {
    if (!workers.includes(key)) problems.push(`config.${key}: not a platform worker (${workers.join(", ")})`);
    else if (!isObject(part)) problems.push(`config.${key} must be an object`);
  }
  return problems;
}

/** The names a manifest's placeholders use, with their defaults (`undefined`: required). */
export function placeholders(manifest) {
  const found = new Map();
  walk(manifest, (text) => {
    for (const [, name, fallback] of text.matchAll(PLACEHOLDER)) {
      if (!found.has(name) || found.get(name) === undefined) found.set(name, fallback);
    }
    return text;
  });
  return found;
}

/**
 * A copy of `manifest` with every `${NAME}` / `${NAME:-default}` filled from `vars`; throws naming
 * each required variable that is missing.
 * @param {Record<string, string | undefined>} vars
 */
export function resolveManifest(manifest, vars = {}) {
  const missing = new Set();
  const resolved = walk(structuredClone(manifest), (text) =>
    text.replace(PLACEHOLDER, (all, name, fallback) => {
      const value = vars[name];
      if (typeof value === "string" && value !== "") return value;
      if (fallback !== undefined) return fallback;
      missing.add(name);
      return all;
    }),
  );
  if (missing.size) {
    throw new Error(
      `${manifest.appId}: the manifest needs ${[...missing].join(", ")} (scripts/provision --var NAME=value)`,
    );
  }
  return resolved;
}

function walk(value, onString) {
  if (typeof value === "string") return onString(value);
  if (Array.isArray(value)) return value.map((v) => walk(v, onString));
  if (value && typeof value === "object") {
    for (const key of Object.keys(value)) value[key] = walk(value[key], onString);
  }
  return value;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [command, file] = process.argv.slice(2);
  if (command !== "app-id" || !file) {
    console.error("usage: node scripts/lib/manifest.mjs app-id <manifest>");
    process.exit(2);
  }
  process.stdout.write((await loadManifest(path.resolve(file))).appId);
}
