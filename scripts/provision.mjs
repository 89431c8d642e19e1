#!/usr/bin/env node
// Pushes a client manifest (swarm.config.json or swarm.config.ts) to every platform worker:
// PUT /admin/tenants/{appId} with the tenant's token, its admin token and that worker's part of the
// manifest's config.
//
//   node scripts/provision.mjs examples/bakery/swarm.config.json \
//     [--admin-token OPERATOR] [--token TENANT_TOKEN] [--admin-token-tenant TENANT_ADMIN_TOKEN] [--rotate] \
//     [--json] [--var NAME=value ...]
//
// `${NAME}` / `${NAME:-default}` in the manifest's strings are filled from --var, then the environment
// (scripts/lib/manifest.mjs); a required one that is missing stops provisioning before anything is sent.
// Base URLs come from SITESWARM_<KEY>_URL, one per platform worker of workers/workers.json (e.g.
// SITESWARM_LEADS_URL; default: the local ports of scripts/dev).
// The tenant's secrets: a secret given is set; one not given is kept as it is (the workers keep its
// hash), so pushing a changed manifest again does not lock the live site out. A tenant that is new on
// every worker gets both made here and printed; one that exists on some workers only cannot (its
// secrets are known there only as hashes): give them, or --rotate to make new ones everywhere.
// Every PUT runs to its end. When a worker refuses or does not answer, the exit code is 1 and stderr
// names what each worker did; secrets the operator does not have yet (--rotate's, a new tenant's)
// that some workers took are printed anyway (stdout, --json too) with the flags to run again with
// (`--token … --admin-token-tenant …`) once the cause is mended, so every worker ends with the same.
// Also used as a module by the integration tests (provisionManifest).
import { createHash, randomBytes } from "node:crypto";
import { readFile, rename, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";

import { loadManifest, manifestProblems, resolveManifest } from "./lib/manifest.mjs";
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
 * and answer when D1 and KV are both unreachable. Only a hash of the token is included. `timezone`
 * is the zone of snapshot hours that name none: the manifest's `config.cms.timezone`, else UTC —
 * what cms applies to the snapshot provisioned (its config's `timezone`) and the SDK's fallback to
 * the manifest's, so the three read one snapshot alike (never the hours' own zone: hours that name
 * one keep it, and hours left out as a whole are a closed week in the tenant's zone).
 * @param tenants `[{ manifest, token }]`
 */
export function cmsFallbackSeeds(tenants) {
  const seeds = {};
  for (const { manifest, token } of tenants) {
    if (!manifest?.appId || typeof token !== "string" || token === "") continue;
    seeds[manifest.appId] = {
      tokenHash: createHash("sha256").update(token).digest("hex"),
      timezone: manifest.config?.cms?.timezone ?? "UTC",
      content: manifest.fallback ?? {},
    };
  }
  return JSON.stringify(seeds);
}

/**
 * The seeds for every manifest of workers/workers.json whose tenant has a token in `tokens`
 * (`{ appId: { token } }`, the shape of scripts/dev's tenants file). Used by scripts/dev and by
 * `provision.mjs --cms-seeds FILE` before a deploy. Each manifest's `${NAME}` / `${NAME:-default}`
 * are filled from `vars` as provisioning fills them (resolveManifest, `--var` over the environment),
 * in the part cms gets (its config and the snapshot), so the seed is the snapshot cms was
 * provisioned with; a variable that part needs and `vars` lacks (with no default) is an error.
 * @param {Record<string, string | undefined>} [vars]
 */
export async function cmsFallbackSeedsFor(tokens, manifests = TENANT_MANIFESTS, vars = process.env) {
  const loaded = await Promise.all(manifests.map(loadManifest));
  return cmsFallbackSeeds(
    loaded
      .filter((manifest) => tokens[manifest.appId])
      .map((manifest) => ({ manifest: cmsPartResolved(manifest, vars), token: tokens[manifest.appId].token })),
  );
}

/** `manifest`'s appId and the parts cms gets (tenantConfigFor), placeholders filled from `vars`. */
function cmsPartResolved(manifest, vars) {
  const part = { appId: manifest.appId, config: { cms: manifest.config?.cms }, fallback: manifest.fallback };
  return resolveManifest(part, vars);
}

/**
 * Sends each platform worker its PUT and waits for every one to end, whatever the others answer: a
 * worker that refuses, or that `send` cannot reach (its result then has status 0 and the error's
 * message as body), never cuts short the PUTs still on their way, so the error names what every
 * worker did.
 * @param send `(worker, path, init) => Promise<Response>` reaching one platform worker
 * @param newSecrets whether `token` / `adminToken` were made for this run (the operator does not
 *   have them yet): a partial failure then says to run again with exactly these
 * @returns `{ [worker]: { status, body } }`; throws when any worker refused or did not answer, the
 *   error carrying `results` (and `secrets`, `{ token, adminToken }`, when newSecrets).
 */
export async function provisionManifest(manifest, { token, adminToken, operatorToken, send, newSecrets = false }) {
  const problems = manifestProblems(manifest, Object.keys(PLATFORM_WORKERS));
  if (problems.length) throw new Error(`the manifest cannot be provisioned: ${problems.join("; ")}`);
  const appId = manifest.appId;
  const results = {};
  const put = async (worker) => {
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
    return { status: response.status, body };
  };
  // Every PUT to its end: one that throws is that worker's result, not a rejection of them all.
  await Promise.all(
    Object.keys(PLATFORM_WORKERS).map(async (worker) => {
      try {
        results[worker] = await put(worker);
      } catch (err) {
        results[worker] = { status: 0, body: err instanceof Error ? err.message : String(err) };
      }
    }),
  );
  const failed = Object.entries(results).filter(([, r]) => r.status !== 200 && r.status !== 201);
  if (failed.length) {
    const detail = failed
      .map(([w, r]) => (r.status === 0 ? `${w}: ${r.body}` : `${w}: ${r.status} ${JSON.stringify(r.body)}`))
      .join("; ");
    // Each worker checks its own part, so the others may have taken theirs: say which, so the
    // operator knows the tenant's state, and how to bring every worker to the same one.
    const taken = Object.keys(results).filter((w) => !failed.some(([f]) => f === w));
    const sent = token !== undefined || adminToken !== undefined;
    const state = taken.length ? ` (taken by ${taken.join(", ")}: ${againAdvice(sent, newSecrets)})` : "";
    const error = new Error(`provisioning ${appId} failed: ${detail}${state}`);
    throw Object.assign(error, { results, ...(newSecrets ? { secrets: { token, adminToken } } : {}) });
  }
  return results;
}

// How to bring every worker to the same state once what failed is mended.
function againAdvice(sent, newSecrets) {
  if (!sent) {
    return "mend the manifest (or wait for the worker to answer) and run it again, which sets every worker alike (the secrets are kept)";
  }
  if (newSecrets) {
    return (
      "they hold the new secrets printed on stdout, which nobody else has: once the manifest is mended (or the worker answers), run " +
      "again with --token <token> --admin-token-tenant <admin token> as printed, so every worker ends with the same secrets"
    );
  }
  return "once the manifest is mended (or the worker answers), run it again with the same --token / --admin-token-tenant, so every worker ends with the same secrets";
}

// A worker's answer to a PUT without secrets for a tenant it does not know yet.
const needsSecrets = (r) =>
  r.status === 400 && ["token", "adminToken"].includes(r.body?.error?.field) && !r.body?.error?.reason;

/**
 * Provisions with the secrets given (either may be undefined: kept as stored). Without any, a tenant
 * new on every worker gets both made (`made: true`); one new on some workers only is an error.
 * When the made secrets reach some workers but not all, the error carries them as `secrets` (as it
 * does for secrets the caller made, `newSecrets`: --rotate's), so they can be printed and given again.
 * @returns `{ results, token, adminToken, made }`
 */
export async function provisionKeepingSecrets(manifest, { token, adminToken, operatorToken, send, newSecrets }) {
  try {
    const results = await provisionManifest(manifest, { token, adminToken, operatorToken, send, newSecrets });
    return { results, made: false };
  } catch (err) {
    const results = err.results;
    if (!results || token !== undefined || adminToken !== undefined) throw err;
    const fresh = Object.keys(results).filter((w) => needsSecrets(results[w]));
    const other = Object.keys(results).filter((w) => !needsSecrets(results[w]));
    // Anything but "new here" and "done" (a 503, a wrong operator token, a config refused) is that
    // error, whatever the others said.
    if (fresh.length === 0 || other.some((w) => results[w].status !== 200 && results[w].status !== 201)) throw err;
    if (other.length > 0) {
      throw new Error(
        `${manifest.appId} is new on ${fresh.join(", ")} but not on ${other.join(", ")}: its secrets are ` +
          "stored there only as hashes, so they cannot be set here from them. Run again with --token and " +
          "--admin-token-tenant (the site's current secrets), or with --rotate to make new ones everywhere " +
          "(then update the site's SITESWARM_TENANT_TOKEN).",
      );
    }
    const made = { token: newSecret(), adminToken: newSecret() };
    const again = await provisionManifest(manifest, { ...made, operatorToken, send, newSecrets: true });
    return { results: again, ...made, made: true };
  }
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
    else if (flag === "--rotate") args.rotate = true;
    else if (flag === "--module") args.module = true;
    else if (flag === "--out") args.out = value();
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
    // The cms fallback seeds for the manifests of workers/workers.json, from a `{appId: {token}}` file,
    // as the module the cms worker bundles (--module; any number of tenants):
    //   node scripts/provision.mjs --cms-seeds tokens.json --out dist/cms-seeds.js && scripts/deploy
    // (--out writes the module, replacing the file only once it is complete; --module prints it)
    // `${NAME}` in their cms parts are filled as provisioning fills them (--var, then the environment).
    // Or as the CMS_FALLBACK_SEEDS variable (at most 5 KB: about ten tenants):
    //   node scripts/provision.mjs --cms-seeds tokens.json | npx wrangler secret put CMS_FALLBACK_SEEDS -c wrangler/cms.jsonc
    const tokens = JSON.parse(await readFile(args.cmsSeeds, "utf8"));
    const seeds = await cmsFallbackSeedsFor(tokens, TENANT_MANIFESTS, { ...process.env, ...args.vars });
    const module = `export default ${JSON.stringify(seeds)};\n`;
    if (args.out) {
      const partial = `${args.out}.partial`;
      await writeFile(partial, module);
      await rename(partial, args.out);
      console.error(`provision: ${Object.keys(JSON.parse(seeds)).length} tenants' seeds in ${args.out}`);
      return;
    }
    process.stdout.write(args.module ? module : seeds);
    return;
  }
  if (args.help || !args.manifest) {
    console.error(
      "usage: scripts/provision <manifest.json|.ts> [--admin-token T] [--token T] [--admin-token-tenant T] [--rotate] [--json] [--var NAME=value]\n" +
        "       scripts/provision --cms-seeds tokens.json [--module | --out dist/cms-seeds.js] [--var NAME=value]   (the cms fallback seeds for\n" +
        "         the workers.json tenants: CMS_FALLBACK_SEEDS, or the module the cms worker bundles)",
    );
    process.exit(args.help ? 0 : 2);
  }
  const manifest = resolveManifest(await loadManifest(args.manifest), { ...process.env, ...args.vars });
  const operatorToken = args.operatorToken ?? process.env.PLATFORM_ADMIN_TOKEN ?? "dev-platform-admin-token";
  let token = args.token;
  let adminToken = args.adminToken;
  if (args.rotate) {
    token ??= newSecret();
    adminToken ??= newSecret();
  }
  const baseUrl = (worker) =>
    process.env[`SITESWARM_${worker.toUpperCase()}_URL`] ?? `http://127.0.0.1:${PLATFORM_WORKERS[worker].port}`;

  const send = async (worker, path, init) => {
    const url = new URL(path, baseUrl(worker));
    try {
      return await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      // "fetch failed" alone names neither the worker nor where it was looked for.
      const why = err.cause?.code ?? err.cause?.message ?? err.message;
      throw new Error(`${worker} at ${url.origin} did not answer (${why}); set SITESWARM_${worker.toUpperCase()}_URL`);
    }
  };
  let outcome;
  try {
    outcome = await provisionKeepingSecrets(manifest, {
      token,
      adminToken,
      operatorToken,
      send,
      // Only what --rotate made is new: a secret the operator gave is theirs already.
      newSecrets: Boolean(args.rotate) && (args.token === undefined || args.adminToken === undefined),
    });
  } catch (err) {
    // Secrets the operator does not have (--rotate's, or made for a new tenant) reached some workers:
    // printed, or they would be lost with the workers that took them holding their hashes.
    if (err.secrets) {
      // A secret the operator gave is never printed (they have it); the one made here is.
      const shown = {
        token: args.token === undefined ? err.secrets.token : GIVEN,
        adminToken: args.adminToken === undefined ? err.secrets.adminToken : GIVEN,
      };
      report(manifest.appId, shown, err.results, args.json, true);
    }
    throw err;
  }
  if (outcome.made) ({ token, adminToken } = outcome);
  report(manifest.appId, { token, adminToken }, outcome.results, args.json, false);
}

// Shown in place of a secret the operator gave.
const GIVEN = "(as you gave it)";

/** What provisioning did, on stdout; `failed`: some worker did not take the new secrets printed. */
function report(appId, { token, adminToken }, results, json, failed) {
  const flag = (value) => (value === GIVEN ? "<as you gave it>" : value);
  const again = failed ? `--token ${flag(token)} --admin-token-tenant ${flag(adminToken)}` : undefined;
  if (json) {
    const shown = { appId, token: token ?? null, adminToken: adminToken ?? null };
    console.log(JSON.stringify({ ...shown, results, ...(failed ? { failed: true, again } : {}) }, null, 2));
    return;
  }
  for (const [worker, { status }] of Object.entries(results)) {
    const done = status === 201 ? "created" : status === 200 ? "updated" : `failed (${status || "no answer"})`;
    console.log(`${appId} → ${PLATFORM_WORKERS[worker].name}: ${done}`);
  }
  console.log(`tenant ${appId}`);
  console.log(`  token:       ${token ?? "(unchanged)"}`);
  console.log(`  admin token: ${adminToken ?? "(unchanged)"}`);
  if (failed) {
    console.log("  not every worker took these secrets: once the manifest is mended (or the worker answers),");
    console.log(`  run again with ${again}`);
    console.log("  so every worker ends with the same secrets");
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(`provision: ${err.message}`);
    process.exit(1);
  });
}
