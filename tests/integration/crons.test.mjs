// Local Cron Triggers (scripts/lib/crons.mjs): scripts/dev fires each worker's wrangler `triggers.crons`
// on schedule, as Cloudflare does in production, instead of leaving the drainers and probes idle.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Cron } from "croner";
import { cronTriggers, startCrons } from "../../scripts/lib/crons.mjs";

describe("local cron triggers", () => {
  it("reads every worker's crons from its wrangler config", async () => {
    const byWorker = {};
    for (const t of await cronTriggers()) {
      byWorker[t.key] ??= [];
      byWorker[t.key].push(t.cron);
    }
    // The ledger's five drainers each on their own schedule, the monitors every 5 minutes, the
    // leads sweeper and purge, the analytics rollup, the cms event outbox.
    assert.deepEqual(
      [...byWorker.events].sort(),
      ["*/15 * * * *", "*/2 * * * *", "*/30 * * * *", "*/5 * * * *", "0 * * * *"].sort(),
    );
    assert.deepEqual(byWorker.monitoring, ["*/5 * * * *"]);
    assert.ok(byWorker.leads.includes("*/10 * * * *"));
    assert.ok(byWorker.analytics.length >= 1);
    assert.deepEqual(byWorker.cms, ["*/10 * * * *"]);
    assert.equal(byWorker.bakery, undefined, "client apps have no crons");
  });

  it("fires a due trigger with its pattern and time, logs failures, and stops", async () => {
    // croner's own scheduler, its jobs kept here; the test waits for the first firing of each trigger
    // (croner's seconds field: every second), not for a length of time.
    const jobs = [];
    class KeptCron extends Cron {
      constructor(...args) {
        super(...args);
        jobs.push(this);
      }
    }
    const fired = [];
    const logs = [];
    const logged = (pattern) => {
      let seen;
      const promise = new Promise((resolve) => {
        seen = resolve;
      });
      return { pattern, seen, promise };
    };
    const ok = logged('cron ev "* * * * * *": ok');
    const failure = logged('cron bad "* * * * * *" failed: handler threw');
    const triggers = [
      { key: "events", name: "ev", cron: "* * * * * *" },
      { key: "leads", name: "bad", cron: "* * * * * *" },
    ];
    const stop = startCrons(
      triggers,
      async (t) => {
        if (t.name === "bad") throw new Error("handler threw");
        fired.push(t);
        return "ok";
      },
      (line) => {
        logs.push(line);
        for (const w of [ok, failure]) if (line === w.pattern) w.seen();
      },
      { Cron: KeptCron },
    );
    try {
      await Promise.all([ok.promise, failure.promise]);
    } finally {
      stop();
    }
    assert.equal(jobs.length, 2, "one job per trigger");
    assert.deepEqual(
      jobs.map((j) => [j.getPattern(), j.options.timezone]),
      [
        ["* * * * * *", "UTC"],
        ["* * * * * *", "UTC"],
      ],
    );
    assert.deepEqual(
      { ...fired[0], scheduledTime: undefined },
      { key: "events", name: "ev", cron: "* * * * * *", scheduledTime: undefined },
    );
    assert.ok(fired[0].scheduledTime instanceof Date);
    assert.equal(fired[0].scheduledTime.getMilliseconds(), 0, "the time it was due, on the second");
    assert.ok(
      logs.every((l) => l === ok.pattern || l === failure.pattern),
      logs.join("\n"),
    );
    // Stopped: no job has a next run, so nothing fires after stop().
    for (const job of jobs) {
      assert.equal(job.isStopped(), true);
      assert.equal(job.nextRun(), null);
    }
  });
});
