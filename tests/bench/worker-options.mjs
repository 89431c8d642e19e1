// A platform worker as the benches run it in Miniflare: its wrangler config (workers/workers.json names
// it) read by wrangler, its JS shim and the repository's modules, with what a bench changes on top.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MODULE_RULES } from "../../scripts/lib/local-mesh.mjs";
import { PARTS, partsOf, WORKERS } from "../../scripts/lib/workers.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Miniflare worker options for platform worker (or part) `key`. `bindings` are added to its vars; service
 * bindings are only the given ones (a bench runs the worker alone); `queueConsumers: {}` leaves its
 * queues unconsumed; `name`, `scriptPath` and `d1Databases` replace the config's.
 */
export async function platformWorkerOptions(
  key,
  { name, scriptPath, bindings = {}, serviceBindings = {}, queueConsumers, d1Databases } = {},
) {
  const { unstable_getMiniflareWorkerOptions } = await import("wrangler");
  // The local-only cron routes (bindings/host.js) stay off: a bench measures requests as deployed.
  const { LOCAL_CRON_TRIGGERS: _localOnly, ...given } = bindings;
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(path.join(ROOT, WORKERS[key].wrangler));
  return {
    ...workerOptions,
    ...(name ? { name } : {}),
    modules: true,
    scriptPath: scriptPath ?? main,
    modulesRoot: ROOT,
    modulesRules: MODULE_RULES,
    bindings: { ...workerOptions.bindings, ...given },
    serviceBindings,
    queueConsumers: queueConsumers ?? workerOptions.queueConsumers,
    ...(d1Databases ? { d1Databases } : {}),
  };
}

/**
 * The ledger as it is deployed (docs/architecture.md "The ledger's three workers"): the entry
 * (`name`, default siteswarm-events-service) and its parts, the runner and the config worker, each
 * with `bindings`; `serviceBindings` (the bench's workflow targets) go to the parts, which check and
 * start workflows; the entry and the config worker bind the parts by their own names. The parts share
 * the entry's D1 database unless `d1Databases` replaces it on all three.
 * @returns {Promise<object[]>} Miniflare worker options: the entry first
 */
export async function ledgerWorkerOptions({
  name = WORKERS.events.name,
  bindings = {},
  serviceBindings = {},
  d1Databases,
} = {}) {
  const parts = Object.fromEntries(partsOf("events").map((p) => [p.serviceBinding, p.name]));
  return [
    await platformWorkerOptions("events", { name, bindings, serviceBindings: parts, d1Databases }),
    ...(await Promise.all(
      partsOf("events").map((p) =>
        platformWorkerOptions(p.key, {
          name: p.name,
          bindings,
          serviceBindings: {
            ...serviceBindings,
            ...(p.key === "events_config" && { EVENTS_RUNNER: PARTS.events_runner.name }),
          },
          d1Databases,
        }),
      ),
    )),
  ];
}
