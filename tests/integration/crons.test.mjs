// Local Cron Triggers (scripts/lib/crons.mjs): scripts/dev fires each worker's wrangler `triggers.crons`
// on schedule, as Cloudflare does in production, instead of leaving the drainers and probes idle.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cronTriggers, startCrons } from "../../scripts/lib/crons.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe("local cron triggers", () => {
  it("reads every worker's crons from its wrangler config", async () => {
    const byWorker = {};
    for (const t of await cronTriggers()) {
      byWorker[t.key] ??= [];
      byWorker[t.key].push(t.cron);
    }
    // The ledger's five drainers each on their own schedule, the monitors every 5 minutes, the
    // leads sweeper and purge, the analytics rollup.
    assert.deepEqual(
      [...byWorker.events].sort(),
      ["*/15 * * * *", "*/2 * * * *", "*/30 * * * *", "*/5 * * * *", "0 * * * *"].sort(),
    );
    assert.deepEqual(byWorker.monitoring, ["*/5 * * * *"]);
    assert.ok(byWorker.leads.includes("*/10 * * * *"));
    assert.ok(byWorker.analytics.length >= 1);
    assert.equal(byWorker.bakery, undefined, "client apps have no crons");
  });

  it("fires a due trigger with its pattern and time, logs failures, and stops", async () => {
    const fired = [];
    const logs = [];
    const triggers = [
      { key: "events", name: "ev", cron: "* * * * * *" }, // croner's seconds field: every second
      { key: "leads", name: "bad", cron: "* * * * * *" },
    ];
    const stop = startCrons(
      triggers,
      async (t) => {
        if (t.name === "bad") throw new Error("handler threw");
        fired.push(t);
        return "ok";
      },
      (line) => logs.push(line),
    );
    await sleep(2500);
    stop();
    const count = fired.length;
    assert.ok(count >= 1, "fired at least once in 2.5 s");
    assert.equal(fired[0].cron, "* * * * * *");
    assert.ok(fired[0].scheduledTime instanceof Date);
    assert.ok(logs.some((l) => l.includes('cron bad "* * * * * *" failed: handler threw')));
    await sleep(1500);
    assert.equal(fired.length, count, "nothing fires after stop()");
  });
});
