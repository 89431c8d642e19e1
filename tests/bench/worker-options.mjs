// A platform worker as the benches run it in Miniflare: its wrangler config (workers/workers.json names
// it) read by wrangler, its JS shim and the repository's modules, with what a bench changes on top.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MODULE_RULES } from "../../scripts/lib/local-mesh.mjs";
import { PLATFORM_WORKERS } from "../../scripts/lib/workers.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Miniflare worker options for platform worker `key`. `bindings` are added to its vars; service
 * bindings are only the given ones (a bench runs the worker alone); `queueConsumers: {}` leaves its
 * queues unconsumed; `name`, `scriptPath` and `d1Databases` replace the config's.
 */
export async function platformWorkerOptions(
  key,
  { name, scriptPath, bindings = {}, serviceBindings = {}, queueConsumers, d1Databases } = {},
) {
  const { unstable_getMiniflareWorkerOptions } = await import("wrangler");
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(path.join(ROOT, PLATFORM_WORKERS[key].wrangler));
  return {
    ...workerOptions,
    ...(name ? { name } : {}),
    modules: true,
    scriptPath: scriptPath ?? main,
    modulesRoot: ROOT,
    modulesRules: MODULE_RULES,
    bindings: { ...workerOptions.bindings, ...bindings },
    serviceBindings,
    queueConsumers: queueConsumers ?? workerOptions.queueConsumers,
    ...(d1Databases ? { d1Databases } : {}),
  };
}
