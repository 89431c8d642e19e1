// Cron Triggers for local development: Miniflare (and `wrangler dev`) never fire a worker's
// `triggers.crons` by themselves, so without this the ledger's drainers, the monitoring probes, the
// leads sweeper, cms's event outbox and the analytics salts and retention would sit still under
// scripts/dev. Each worker's crons are
// read from its wrangler config and scheduled in UTC (as Cloudflare runs them) with croner; each due
// cron calls the worker's scheduled() handler with the pattern as `controller.cron`, like production.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Cron } from "croner";
import { ROOT, WORKERS } from "./workers.mjs";

/** `[{ key, name, cron }]` for every worker of workers.json with Cron Triggers in its wrangler config. */
export async function cronTriggers() {
  const wrangler = await import("wrangler");
  const out = [];
  for (const [key, { name, wrangler: config }] of Object.entries(WORKERS)) {
    const { triggers } = wrangler.unstable_readConfig({ config: path.join(ROOT, config) });
    for (const cron of triggers?.crons ?? []) out.push({ key, name, cron });
  }
  return out;
}

/**
 * Schedules every trigger; `fire({ key, name, cron, scheduledTime })` runs one (errors are logged, a
 * slow run never overlaps its own next firing). Returns a function that stops them all.
 * @param options.Cron the scheduler class (croner's Cron; a test passes a subclass that keeps its jobs)
 */
export function startCrons(triggers, fire, log = console.log, { Cron: Scheduler = Cron } = {}) {
  const jobs = triggers.map(
    (t) =>
      new Scheduler(t.cron, { timezone: "UTC", protect: true }, async (job) => {
        const scheduledTime = job.currentRun() ?? new Date();
        try {
          const outcome = await fire({ ...t, scheduledTime });
          log(`cron ${t.name} "${t.cron}": ${outcome ?? "ok"}`);
        } catch (err) {
          log(`cron ${t.name} "${t.cron}" failed: ${err?.message ?? err}`);
        }
      }),
  );
  return () => {
    for (const job of jobs) job.stop();
  };
}

// `node scripts/lib/crons.mjs --host 127.0.0.1` (scripts/dev --wrangler: one `wrangler dev` per worker):
// fires each trigger through the worker's /cdn-cgi/handler/scheduled?cron=… on its port.
if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  const i = process.argv.indexOf("--host");
  const host = i > 0 ? process.argv[i + 1] : "127.0.0.1";
  const triggers = await cronTriggers();
  startCrons(triggers, async ({ key, cron }) => {
    const url = `http://${host}:${WORKERS[key].port}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent(cron)}`;
    const res = await fetch(url);
    await res.arrayBuffer();
    return `HTTP ${res.status}`;
  });
  console.log(`crons: ${triggers.map((t) => `${t.name} "${t.cron}"`).join(", ")} (UTC)`);
}
