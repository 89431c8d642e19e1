// The wrangler configs as deployed: names, bindings, no secrets, and `scripts/deploy --dry-run`.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import { isApp, PARTS, PLATFORM_WORKERS } from "../../scripts/lib/workers.mjs";
import { ROOT, WORKERS } from "./mesh.mjs";

const run = promisify(execFile);
const SECRETS = [
  "PLATFORM_ADMIN_TOKEN",
  "TURNSTILE_SECRET_KEY",
  "RESEND_API_KEY",
  "SENDGRID_API_KEY",
  "TWILIO_ACCOUNT_SID",
  "TWILIO_AUTH_TOKEN",
  "SITESWARM_TENANT_TOKEN",
  "ALERT_PAGERDUTY_ROUTING_KEY",
  "ALERT_SLACK_WEBHOOK_URL",
];

describe("wrangler configs", async () => {
  const { unstable_readConfig } = await import("wrangler");
  const read = (key) => unstable_readConfig({ config: path.join(ROOT, WORKERS[key].wrangler) });

  for (const [key, { name }] of Object.entries(WORKERS)) {
    it(`${key}: named ${name}, no secrets, placeholder ids only`, () => {
      const config = read(key);
      assert.equal(config.name, name);
      assert.equal(config.compatibility_date, "2026-04-20");
      if (!isApp(key)) {
        assert.equal(config.workers_dev, false);
        // Nor a version's preview URL (<version>-<name>.<subdomain>.workers.dev): left unset, wrangler
        // keeps whatever the Worker had, and a Worker first uploaded with workers.dev has them on.
        assert.equal(config.preview_urls, false);
        assert.deepEqual(config.routes ?? [], []);
      }
      for (const secret of SECRETS) assert.ok(!(secret in (config.vars ?? {})), `${secret} in vars`);
      const text = readFileSync(path.join(ROOT, WORKERS[key].wrangler), "utf8");
      for (const id of text.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? []) {
        assert.match(id, /^00000000-0000-4000-8000-0000000000\d\d$/);
      }
    });
  }

  it("declares the binding names the C++ cores use", () => {
    const bindings = (key) => {
      const c = read(key);
      return [
        ...c.d1_databases.map((d) => d.binding),
        ...c.kv_namespaces.map((k) => k.binding),
        ...(c.queues.producers ?? []).map((q) => q.binding),
        ...c.services.map((s) => s.binding),
        ...c.analytics_engine_datasets.map((a) => a.binding),
        ...(c.ratelimits ?? []).map((r) => r.name),
      ].sort();
    };
    assert.deepEqual(bindings("leads"), ["EVENTS_QUEUE", "EVENTS_SERVICE", "FLAGS", "LEADS_DB", "NOTIFY_QUEUE"]);
    assert.deepEqual(bindings("cms"), ["CMS_CACHE", "CMS_DB", "EVENTS_QUEUE", "EVENTS_SERVICE", "FLAGS"]);
    // monitoring also binds every other platform worker: monitors may watch their /health (docs/monitoring.md).
    assert.deepEqual(bindings("monitoring"), [
      "ANALYTICS_SERVICE",
      "CMS_SERVICE",
      "EVENTS_QUEUE",
      "EVENTS_SERVICE",
      "FLAGS",
      "LEADS_SERVICE",
      "MONITORING_CACHE",
      "MONITORING_DB",
      "MONITOR_JOBS",
    ]);
    assert.deepEqual(bindings("analytics"), [
      "ANALYTICS_DB",
      "EVENTS_QUEUE",
      "EVENTS_SERVICE",
      "FLAGS",
      "PAGEVIEWS",
      "PAGEVIEWS_QUEUE",
    ]);
    // The entry starts no workflow (its runner does): it binds its two parts, not the targets.
    assert.deepEqual(bindings("events"), ["EVENTS_CONFIG", "EVENTS_DB", "EVENTS_QUEUE", "EVENTS_RUNNER", "FLAGS"]);
    // The ledger's parts (docs/architecture.md "The ledger's three workers"): events' database and
    // FLAGS; the runner starts workflows on the targets, the config part checks workflows against
    // the same targets and calls the runner.
    assert.deepEqual(bindings("events_runner"), [
      "ANALYTICS_SERVICE",
      "CMS_SERVICE",
      "EVENTS_DB",
      "FLAGS",
      "LEADS_SERVICE",
      "MONITOR_SERVICE",
    ]);
    assert.deepEqual(bindings("events_config"), [
      "ANALYTICS_SERVICE",
      "CMS_SERVICE",
      "EVENTS_DB",
      "EVENTS_RUNNER",
      "FLAGS",
      "LEADS_SERVICE",
      "MONITOR_SERVICE",
    ]);
    for (const key of Object.keys(PARTS)) {
      assert.deepEqual(read(key).triggers.crons ?? [], [], `${key}: no crons`);
      assert.deepEqual(read(key).queues.consumers ?? [], [], `${key}: no queue consumer`);
    }
    assert.deepEqual(bindings("bakery"), [
      "ANALYTICS_SERVICE",
      "CMS_SERVICE",
      "EVENTS_SERVICE",
      "LEADS_SERVICE",
      "MONITOR_SERVICE",
    ]);
    assert.deepEqual(read("monitoring").triggers.crons, ["*/5 * * * *"]);
    // The ledger's consumer outlasts an hour of its D1 being down before dead-lettering an event:
    // retries 5 s doubling to 300 s apart (docs/runbook-events.md), so at least 16 of them.
    const [ledgerConsumer] = read("events").queues.consumers;
    assert.ok(ledgerConsumer.max_retries >= 16, `events max_retries ${ledgerConsumer.max_retries}`);
    // cms: committed versions' cms.* events the queue refused, sent again (docs/cms.md).
    assert.deepEqual(read("cms").triggers.crons, ["*/10 * * * *"]);
    // analytics: hourly salts and retention (docs/analytics.md).
    assert.deepEqual(read("analytics").triggers.crons, ["0 * * * *"]);
    assert.deepEqual(read("events").triggers.crons, [
      "*/2 * * * *",
      "0 * * * *",
      "*/15 * * * *",
      "*/30 * * * *",
      "*/5 * * * *",
    ]);
  });
});

describe("scripts/deploy --first --dry-run", () => {
  it("bundles every worker offline, after a 503 placeholder under each platform worker's name", {
    timeout: 240_000,
  }, async () => {
    const { stdout } = await run(path.join(ROOT, "scripts/deploy"), ["--first", "--dry-run"], {
      cwd: "/",
      env: { ...process.env, CLOUDFLARE_API_TOKEN: "", CLOUDFLARE_ACCOUNT_ID: "" },
      maxBuffer: 16 * 1024 * 1024,
    });
    assert.match(stdout, new RegExp(`${Object.keys(WORKERS).length} workers bundled \\(dry run\\)`));
    // --first: every placeholder comes before the first real worker (the platform workers bind one
    // another in a cycle, and a binding to a Worker that does not exist is refused). The parts need
    // none: they go first, before events binds them (the config part after the runner it binds).
    const deployed = (key) => stdout.indexOf(`== ${key} (dry run`);
    const firstReal = Math.min(...Object.keys(WORKERS).map(deployed));
    for (const part of Object.values(PARTS)) {
      assert.ok(deployed(part.key) >= 0 && deployed(part.key) < deployed(part.partOf), `${part.key} first`);
      assert.ok(!stdout.includes(`== placeholder ${part.name} `), `no placeholder for ${part.key}`);
    }
    assert.ok(deployed("events_runner") < deployed("events_config"));
    for (const key of Object.keys(PLATFORM_WORKERS)) {
      const at = stdout.indexOf(`== placeholder ${WORKERS[key].name} (dry run`);
      assert.ok(at >= 0 && at < firstReal, `${key}'s placeholder first`);
      const bundled = readFileSync(path.join(ROOT, "dist/deploy", `placeholder-${key}`, "stub.js"), "utf8");
      assert.match(bundled, /status: 503/);
    }
    const { unstable_readConfig } = await import("wrangler");
    const read = (key) => unstable_readConfig({ config: path.join(ROOT, WORKERS[key].wrangler) });
    // --first creates every queue a config names, its consumers' dead-letter queues included
    // (wrangler refuses a binding to a missing queue; nothing else would create a DLQ), before
    // the first placeholder.
    const queues = new Set();
    for (const key of Object.keys(WORKERS)) {
      const { producers = [], consumers = [] } = read(key).queues;
      for (const p of producers) queues.add(p.queue);
      for (const c of consumers) queues.add(c.queue).add(c.dead_letter_queue);
    }
    queues.delete(undefined);
    for (const dlq of ["events", "leads-notify", "monitoring-jobs", "pageviews"]) {
      assert.ok(queues.has(`siteswarm-${dlq}-dlq`), `siteswarm-${dlq}-dlq in a config`);
    }
    const firstPlaceholder = stdout.indexOf("== placeholder ");
    for (const queue of queues) {
      const at = stdout.indexOf(`== queue ${queue} (dry run`);
      assert.ok(at >= 0 && at < firstPlaceholder, `queue ${queue} created first`);
    }
    for (const key of Object.keys(WORKERS)) {
      const dir = path.join(ROOT, "dist/deploy", key);
      // The bundle is named after the config's main: worker.js, or a part's own shim.
      const main = path.basename(read(key).main);
      assert.ok(existsSync(path.join(dir, main)), `${dir}/${main}`);
      if (!isApp(key)) {
        const { wasm } = WORKERS[key];
        assert.ok(
          readdirSync(dir).some((f) => f.endsWith(wasm)),
          `${wasm} bundled`,
        );
      }
    }
  });
});

describe("scripts/deploy with the configs' placeholder ids", () => {
  // The committed configs carry placeholder D1 and KV ids (README.md "Deploy it"). A real deploy must
  // stop before it creates a queue or uploads anything, naming each config and binding. Offline: an
  // `npx` first on PATH stands in for wrangler's account calls (it records them and fails), so
  // nothing is reached even if the check were missing.
  it("refuses to start, naming each file and binding, before anything is created", { timeout: 60_000 }, async () => {
    const bin = mkdtempSync(path.join(tmpdir(), "ss-deploy-"));
    const calls = path.join(bin, "calls");
    writeFileSync(path.join(bin, "npx"), `#!/bin/sh\necho "$*" >> '${calls}'\nexit 1\n`);
    chmodSync(path.join(bin, "npx"), 0o755);
    const env = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      CLOUDFLARE_API_TOKEN: "",
      CLOUDFLARE_ACCOUNT_ID: "",
      WRANGLER_SEND_METRICS: "false",
    };
    const { unstable_readConfig } = await import("wrangler");
    try {
      for (const args of [[], ["--first"]]) {
        const failed = await run(path.join(ROOT, "scripts/deploy"), args, { cwd: "/", env }).then(
          () => assert.fail(`scripts/deploy ${args.join(" ")} went through`),
          (err) => err,
        );
        assert.equal(failed.code, 1, failed.stderr);
        assert.match(failed.stderr, /still hold a placeholder id/);
        for (const { wrangler } of Object.values(WORKERS)) {
          const config = unstable_readConfig({ config: path.join(ROOT, wrangler) });
          for (const { binding } of config.d1_databases) {
            assert.ok(
              failed.stderr.includes(`${wrangler}: ${binding} (D1 database_id 00000000-`),
              `${wrangler} ${binding}`,
            );
          }
          for (const { binding } of config.kv_namespaces) {
            assert.ok(
              failed.stderr.includes(`${wrangler}: ${binding} (KV namespace id 00000000-`),
              `${wrangler} ${binding}`,
            );
          }
        }
        // The example apps set no TURNSTILE_SITE_KEY: each is warned about (their forms would keep
        // the test sitekey).
        for (const { wrangler } of Object.values(WORKERS)) {
          const config = unstable_readConfig({ config: path.join(ROOT, wrangler) });
          const warned = failed.stderr.includes(`warning: ${wrangler} sets no TURNSTILE_SITE_KEY`);
          assert.equal(warned, Boolean(config.assets && !config.vars?.TURNSTILE_SITE_KEY), wrangler);
        }
        assert.match(failed.stderr, /sets no TURNSTILE_SITE_KEY/);
        assert.doesNotMatch(failed.stdout, /^== /m, "no queue, placeholder or worker was started on");
        assert.ok(!existsSync(calls), "wrangler was never called");
      }
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
