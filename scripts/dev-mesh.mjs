#!/usr/bin/env node
// scripts/dev (default mode): every worker of workers/workers.json in ONE Miniflare, each on its port, sharing
// scripts/dev's persisted state (.wrangler/state). Unlike one `wrangler dev` per worker, queues work
// across workers here (wrangler 4.86 does not deliver a queue message to a consumer in another
// `wrangler dev` process, so EVENTS_QUEUE → events only works in this mode). No live reload.
// Each worker's Cron Triggers fire on their schedule (UTC), as deployed (scripts/lib/crons.mjs);
// --no-crons leaves them to /cdn-cgi/handler/scheduled?cron=… by hand.
//   node scripts/dev-mesh.mjs --tenants .wrangler/dev-tenants.json [--stubs http://127.0.0.1:<stubs port>] [--no-crons]
import { readFile } from "node:fs/promises";
import { Log, LogLevel, Miniflare } from "miniflare";
import { cronTriggers, startCrons } from "./lib/crons.mjs";
import { localBindings, meshWorkerOptions, ROOT, WORKERS } from "./lib/local-mesh.mjs";
import { STUB_PORT } from "./lib/workers.mjs";
import { cmsFallbackSeedsFor } from "./provision.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
process.env.WRANGLER_HIDE_BANNER = "true";

const HOST = "127.0.0.1";
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const tenants = JSON.parse(await readFile(arg("tenants", ".wrangler/dev-tenants.json"), "utf8"));
const bindings = localBindings({
  stubsUrl: arg("stubs", `http://${HOST}:${STUB_PORT}`),
  adminToken: process.env.PLATFORM_ADMIN_TOKEN ?? "dev-platform-admin-token",
  tenantTokens: Object.fromEntries(Object.entries(tenants).map(([appId, t]) => [appId, t.token])),
});
// cms's bundled snapshot (docs/cms.md, zero lockout), as a deploy sets it: the demo tenants' manifests.
bindings.cms = { ...bindings.cms, CMS_FALLBACK_SEEDS: await cmsFallbackSeedsFor(tenants) };
// The first worker (the first client app) is the entry on Miniflare's own port; every other worker
// gets its own socket.
const [entry, ...others] = Object.keys(WORKERS);
const sockets = Object.fromEntries(
  others.map((key) => [key, { unsafeDirectSockets: [{ host: HOST, port: WORKERS[key].port }] }]),
);
const { workers } = await meshWorkerOptions({
  bindings,
  scratch: `${ROOT}/.wrangler/tmp`,
  extra: sockets,
});

const mf = new Miniflare({
  host: HOST,
  port: WORKERS[entry].port,
  cf: false,
  log: new Log(LogLevel.INFO),
  defaultPersistRoot: `${ROOT}/.wrangler/state/v3`, // where `wrangler d1 migrations apply --persist-to` wrote
  d1Persist: true,
  kvPersist: true,
  cachePersist: true,
  unsafeTriggerHandlers: true, // /cdn-cgi/handler/scheduled?cron=… like wrangler dev
  workers,
});
await mf.ready;
for (const [key, { name, port }] of Object.entries(WORKERS)) {
  console.log(`${name} on http://${HOST}:${port}${key === entry ? " (entry)" : ""}`);
}

let stopCrons = () => {};
if (!process.argv.includes("--no-crons")) {
  const triggers = await cronTriggers();
  stopCrons = startCrons(triggers, async ({ name, cron, scheduledTime }) => {
    const worker = await mf.getWorker(name);
    const result = await worker.scheduled({ cron, scheduledTime });
    return result.outcome;
  });
  console.log(`crons: ${triggers.map((t) => `${t.name} "${t.cron}"`).join(", ")} (UTC)`);
}

const stop = async () => {
  stopCrons();
  await mf.dispose();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
