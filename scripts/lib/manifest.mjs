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
