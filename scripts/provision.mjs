#!/usr/bin/env node
// Pushes a client manifest (swarm.config.json or swarm.config.ts) to every platform worker:
// PUT /admin/tenants/{appId} with the tenant's token, its admin token and that worker's part of the
// manifest's config.
//
//   node scripts/provision.mjs examples/bakery/swarm.config.json \
//     [--admin-token OPERATOR] [--token TENANT_TOKEN --admin-token-tenant TENANT_ADMIN_TOKEN] [--json] \
//     [--var NAME=value ...]
//
// `${NAME}` / `${NAME:-default}` in the manifest's strings are filled from --var, then the environment
// (scripts/lib/manifest.mjs); a required one that is missing stops provisioning before anything is sent.
// Base URLs come from SITESWARM_<KEY>_URL, one per platform worker of workers/workers.json (e.g.
// SITESWARM_LEADS_URL; default: the local ports of scripts/dev). Missing tenant tokens are generated and printed. Also used as a module by
// the integration tests (provisionManifest).
import { createHash, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";

import { loadManifest, resolveManifest } from "./lib/manifest.mjs";
import { PLATFORM_WORKERS, TENANT_MANIFESTS } from "./lib/workers.mjs";

export { PLATFORM_WORKERS } from "./lib/workers.mjs";

export const newSecret = () => randomBytes(32).toString("hex");

/** The part of a manifest one worker keeps; cms also gets the manifest's fallback snapshot. */
export function tenantConfigFor(manifest, worker) {
  const config = { ...(manifest.config?.[worker] ?? {}) };
  if (worker === "cms" && manifest.fallback) config.fallback = manifest.fallback;
  return config;
}

/**
 * The cms worker's bundled fallback seeds (its CMS_FALLBACK_SEEDS variable, docs/cms.md): per
 * tenant the SHA-256 of its token and the manifest's snapshot, so cms can still verify the tenant
 * and answer when D1 and KV are both unreachable. Only a hash of the token is included.
 * @param tenants `[{ manifest, token }]`
 */
export function cmsFallbackSeeds(tenants) {
  const seeds = {};
  for (const { manifest, token } of tenants) {
    if (!manifest?.appId || typeof token !== "string" || token === "") continue;
    seeds[manifest.appId] = {
      tokenHash: createHash("sha256").update(token).digest("hex"),
      timezone: manifest.config?.cms?.timezone ?? manifest.fallback?.hours?.timezone ?? "UTC",
      content: manifest.fallback ?? {},
    };
  }
  return JSON.stringify(seeds);
}

/**
 * The seeds for every manifest of workers/workers.json whose tenant has a token in `tokens`
 * (`{ appId: { token } }`, the shape of scripts/dev's tenants file). Used by scripts/dev and by
 * `provision.mjs --cms-seeds FILE` before a deploy.
 */
export async function cmsFallbackSeedsFor(tokens, manifests = TENANT_MANIFESTS) {
  const loaded = await Promise.all(manifests.map(loadManifest));
  return cmsFallbackSeeds(
    loaded
      .filter((manifest) => tokens[manifest.appId])
      .map((manifest) => ({ manifest, token: tokens[manifest.appId].token })),
  );
}

/**
 * @param send `(worker, path, init) => Promise<Response>` reaching one platform worker
 * @returns `{ [worker]: { status, body } }`; throws when any worker refused.
 */
export async function provisionManifest(manifest, { token, adminToken, operatorToken, send }) {
  const appId = manifest.appId;
  const results = {};
  await Promise.all(
    Object.keys(PLATFORM_WORKERS).map(async (worker) => {
      const response = await send(worker, `/admin/tenants/${encodeURIComponent(appId)}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${operatorToken}`, "content-type": "application/json" },
        body: JSON.stringify({ token, adminToken, config: tenantConfigFor(manifest, worker) }),
      });
      const text = await response.text();
      let body = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the text
      }
      results[worker] = { status: response.status, body };
    }),
  );
  const failed = Object.entries(results).filter(([, r]) => r.status !== 200 && r.status !== 201);
  if (failed.length) {
    const detail = failed.map(([w, r]) => `${w}: ${r.status} ${JSON.stringify(r.body)}`).join("; ");
    throw new Error(`provisioning ${appId} failed: ${detail}`);
  }
  return results;
}

function parseArgs(argv) {
  const args = { manifest: null, json: false, vars: {} };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${flag} needs a value`);
      return argv[++i];
    };
    if (flag === "--admin-token") args.operatorToken = value();
    else if (flag === "--token") args.token = value();
    else if (flag === "--admin-token-tenant") args.adminToken = value();
    else if (flag === "--json") args.json = true;
    else if (flag === "--cms-seeds") args.cmsSeeds = value();
    else if (flag === "--var") {
      const [name, ...rest] = value().split("=");
      if (!/^[A-Z][A-Z0-9_]*$/.test(name) || rest.length === 0) throw new Error("--var needs NAME=value");
      args.vars[name] = rest.join("=");
    } else if (flag === "-h" || flag === "--help") args.help = true;
    else if (!args.manifest && !flag.startsWith("-")) args.manifest = flag;
    else throw new Error(`unknown argument ${flag}`);
  }
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.cmsSeeds) {
    // CMS_FALLBACK_SEEDS for the manifests of workers/workers.json, from a `{appId: {token}}` file:
    //   node scripts/provision.mjs --cms-seeds tokens.json | npx wrangler secret put CMS_FALLBACK_SEEDS -c wrangler/cms.jsonc
    const tokens = JSON.parse(await readFile(args.cmsSeeds, "utf8"));
    process.stdout.write(await cmsFallbackSeedsFor(tokens));
    return;
  }
  if (args.help || !args.manifest) {
    console.error(
      "usage: scripts/provision <manifest.json|.ts> [--admin-token T] [--token T --admin-token-tenant T] [--json] [--var NAME=value]\n" +
        "       scripts/provision --cms-seeds tokens.json   (prints CMS_FALLBACK_SEEDS for the workers.json tenants)",
    );
    process.exit(args.help ? 0 : 2);
  }
  const manifest = resolveManifest(await loadManifest(args.manifest), { ...process.env, ...args.vars });
  const operatorToken = args.operatorToken ?? process.env.PLATFORM_ADMIN_TOKEN ?? "dev-platform-admin-token";
  const token = args.token ?? newSecret();
  const adminToken = args.adminToken ?? newSecret();
  const baseUrl = (worker) =>
    process.env[`SITESWARM_${worker.toUpperCase()}_URL`] ?? `http://127.0.0.1:${PLATFORM_WORKERS[worker].port}`;

  const results = await provisionManifest(manifest, {
    token,
    adminToken,
    operatorToken,
    send: (worker, path, init) =>
      fetch(new URL(path, baseUrl(worker)), { ...init, signal: AbortSignal.timeout(10_000) }),
  });
  if (args.json) {
    console.log(JSON.stringify({ appId: manifest.appId, token, adminToken, results }, null, 2));
    return;
  }
  for (const [worker, { status }] of Object.entries(results)) {
    console.log(`${manifest.appId} → ${PLATFORM_WORKERS[worker].name}: ${status === 201 ? "created" : "updated"}`);
  }
  console.log(`tenant ${manifest.appId}`);
  console.log(`  token:       ${token}`);
  console.log(`  admin token: ${adminToken}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(`provision: ${err.message}`);
    process.exit(1);
  });
}
