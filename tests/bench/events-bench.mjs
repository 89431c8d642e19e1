// scripts/bench, the ledger part: emit latency and drain throughput of the events-service in local
// workerd (Miniflare), the real events.wasm beside a plain-JS Worker doing the same SQL against the
// same schema (tests/bench/events-js.js), both in one Miniflare, measured in the same run.
//
//   (a) emit: sequential tenant-authenticated POST /api/events (each with an idempotency_key),
//       alternating between the two implementations request by request; p50 / p99.
//   (b) read: GET /api/events?limit=500 (operator), median.
//   (c) drain: 500 events, each matched by 8 subscriptions whose workflow target is a service
//       binding ({"service":"BENCH_TARGET","path":"/start"}) to a tiny JS worker answering 202;
//       one POST /admin/events/drain?consumer=workflow_runner → events/s and workflow starts/s;
//       --rounds drains per side (default 5, alternating which side goes first), the median one.
//
//   node tests/bench/events-bench.mjs [--emits 300] [--batch 500] [--reads 40] [--rounds 5]
//   SS_INSPECTOR_PORT=9339 node tests/bench/events-bench.mjs …: each drain also profiled (V8's
//       sampling profiler over the inspector, docs/performance.md "Profiles inside workerd"): the
//       draining isolate's and the workflow target's busy time, and the drainer's top functions
//       (SS_PROFILE_TOP of them, default 12).
// or from tests/bench/bench.mjs (scripts/bench), which runs it after the /health table.
import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { profileLine, profiled } from "./inspector.mjs";
import { option } from "./json-out.mjs";
import { PARTS } from "../../scripts/lib/workers.mjs";
import { ledgerWorkerOptions } from "./worker-options.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
process.env.WRANGLER_HIDE_BANNER = "true";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const ADMIN_TOKEN = "bench-admin-token";
const TENANT = "bench-tenant";
const TENANT_TOKEN = "bench-tenant-token-0123456789";
const SUBSCRIPTIONS = 8;
// Reads of 500 before the timed ones, per side: a side's first reads are its slowest (workerd
// compiles and tiers up both sides' code, SQLite warms its page cache), docs/performance.md.
const READ_WARMUP = 6;
const CPP = "siteswarm-events-service";
const JS = "bench-events-js";
const TARGET = "bench-target";
// What the ledger this service replaces reported for itself.
const SEED = { emitMs: "~5 ms", readMs: "~100 ms" };

const TARGET_SCRIPT = `let starts = 0;
export default {
  async fetch(request) {
    if (request.method === "GET") return Response.json({ starts });
    await request.arrayBuffer();
    starts++;
    return new Response('{"accepted":true}', { status: 202, headers: { "content-type": "application/json" } });
  },
};`;

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const median = (xs) => percentile(xs, 0.5);
const PROFILE_PORT = Number(process.env.SS_INSPECTOR_PORT || 0);

const eventsWorkerOptions = () =>
  ledgerWorkerOptions({
    name: CPP,
    bindings: { PLATFORM_ADMIN_TOKEN: ADMIN_TOKEN, WORKFLOW_SERVICES: "BENCH_TARGET" },
    serviceBindings: { BENCH_TARGET: TARGET }, // the only workflow target of the bench
  });

/**
 * Runs the ledger bench and prints its table.
 * @returns {Promise<object>} the figures, per implementation
 */
export async function runEventsBench({ emits = 300, batch = 500, reads = 40, rounds = 5, log = console.log } = {}) {
  const { Miniflare } = await import("miniflare");
  const { applyMigrations, MODULE_RULES } = await import("../../scripts/lib/local-mesh.mjs");
  const mf = new Miniflare({
    cf: false,
    ...(PROFILE_PORT ? { inspectorPort: PROFILE_PORT } : {}),
    workers: [
      ...(await eventsWorkerOptions()),
      {
        name: JS,
        modules: true,
        scriptPath: path.join(ROOT, "tests/bench/events-js.js"),
        modulesRoot: ROOT,
        modulesRules: MODULE_RULES, // it imports peer-common.js
        compatibilityDate: "2026-04-20",
        d1Databases: { EVENTS_DB: "bench-events-js" },
        serviceBindings: { BENCH_TARGET: TARGET },
        bindings: { PLATFORM_ADMIN_TOKEN: ADMIN_TOKEN },
      },
      { name: TARGET, modules: true, script: TARGET_SCRIPT, compatibilityDate: "2026-04-20" },
    ],
  });
  try {
    await mf.ready;
    const workers = { cpp: await mf.getWorker(CPP), js: await mf.getWorker(JS) };
    const dbs = { cpp: await mf.getD1Database("EVENTS_DB", CPP), js: await mf.getD1Database("EVENTS_DB", JS) };
    const target = await mf.getWorker(TARGET);
    const targetStarts = async () => (await (await target.fetch("http://target/")).json()).starts;
    const migrations = path.join(ROOT, "migrations/events");
    await applyMigrations(dbs.cpp, migrations);
    await applyMigrations(dbs.js, migrations);

    const operator = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const json = { "content-type": "application/json" };
    const call = async (impl, pathname, init = {}) => {
      const res = await workers[impl].fetch(`http://ledger${pathname}`, init);
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    };
    const expect = (what, res, ...statuses) => {
      if (!statuses.includes(res.status)) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };

    // The tenant: through the C++ worker's own route; for the JS worker, the same row by SQL.
    expect(
      "provision",
      await call("cpp", `/admin/tenants/${TENANT}`, {
        method: "PUT",
        headers: { ...operator, ...json },
        body: JSON.stringify({ token: TENANT_TOKEN, adminToken: `${TENANT_TOKEN}-admin`, config: {} }),
      }),
      201,
    );
    const sha = (s) => createHash("sha256").update(s).digest("hex");
    const now = new Date().toISOString();
    await dbs.js
      .prepare(
        "INSERT INTO tenants (tenant_id, token_hash, admin_token_hash, config_json, enabled, created_at, updated_at) VALUES (?1, ?2, ?3, '{}', 1, ?4, ?4)",
      )
      .bind(TENANT, sha(TENANT_TOKEN), sha(`${TENANT_TOKEN}-admin`), now)
      .run();

    // 8 workflows on the in-mesh target, 8 subscriptions matching bench.drain.
    const target_json = { service: "BENCH_TARGET", path: "/start" };
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const type = `bench_wf_${i}`;
      expect(
        "workflow",
        await call("cpp", `/admin/workflows/${type}`, {
          method: "PUT",
          headers: { ...operator, ...json },
          body: JSON.stringify({ target: target_json }),
        }),
        201,
      );
      expect(
        "subscription",
        await call("cpp", "/admin/subscriptions", {
          method: "POST",
          headers: { ...operator, ...json },
          body: JSON.stringify({ event_type_glob: "bench.dr*", workflow_type: type }),
        }),
        201,
      );
      await dbs.js.batch([
        dbs.js
          .prepare("INSERT INTO workflow_definitions (workflow_type, target_json, updated_at) VALUES (?1, ?2, ?3)")
          .bind(type, JSON.stringify(target_json), now),
        dbs.js
          .prepare(
            "INSERT INTO event_subscriptions (subscription_id, event_type_glob, workflow_type, filter_expr, input_mapper, enabled, created_at) VALUES (?1, 'bench.dr*', ?2, NULL, NULL, 1, ?3)",
          )
          .bind(`sub_${i}`, type, now),
      ]);
    }

    const tenantHeaders = {
      "X-SiteSwarm-Tenant-Id": TENANT,
      "X-SiteSwarm-Tenant-Token": TENANT_TOKEN,
      "X-SiteSwarm-Capability-Version": "1.0.0",
      ...json,
    };
    let seq = 0;
    const emit = async (impl, type) => {
      const n = seq++;
      const body = JSON.stringify({
        event_type: type,
        entity_ref: `item:${n % 97}`,
        payload: { n, amount: n % 1000, sku: `SKU-${n}`, note: "bench" },
        idempotency_key: `${type}:${n}`,
      });
      const t = performance.now();
      const res = await workers[impl].fetch("http://ledger/api/events", {
        method: "POST",
        headers: tenantHeaders,
        body,
      });
      await res.arrayBuffer();
      const ms = performance.now() - t;
      if (res.status !== 201) throw new Error(`${impl} emit: ${res.status}`);
      return ms;
    };

    // (a) emit latency: warm-up, then alternate request by request.
    for (let i = 0; i < 20; i++) for (const impl of ["cpp", "js"]) await emit(impl, "bench.emit");
    const emitMs = { cpp: [], js: [] };
    for (let i = 0; i < emits; i++) {
      for (const impl of i % 2 ? ["js", "cpp"] : ["cpp", "js"]) emitMs[impl].push(await emit(impl, "bench.emit"));
    }

    // (c) drain: skip what came before (cursor to the end), then 500 matching events per round.
    // Before every round: the emits above, and each runner's own workflow.run_started events of the
    // previous round (4,000, written in the drain's commits), would otherwise be the next batch.
    const drainMs = { cpp: [], js: [] };
    const skipToEnd = async (impl) => {
      // Both drain by insertion order (cursor_seq).
      const last = await dbs[impl].prepare("SELECT MAX(event_id) AS id, MAX(seq) AS seq FROM events").first();
      await dbs[impl]
        .prepare(
          "INSERT INTO event_drain_state (consumer, cursor, cursor_seq, events_read) VALUES ('workflow_runner', ?1, ?2, 0) ON CONFLICT (consumer) DO UPDATE SET cursor = excluded.cursor, cursor_seq = excluded.cursor_seq",
        )
        .bind(last.id, last.seq)
        .run();
    };
    for (let round = 0; round < rounds; round++) {
      for (const impl of round % 2 ? ["js", "cpp"] : ["cpp", "js"]) {
        await skipToEnd(impl);
        const pending = Array.from({ length: batch }, () => () => emit(impl, "bench.drain"));
        while (pending.length) await Promise.all(pending.splice(0, 16).map((f) => f()));
        const before = await targetStarts();
        const t = performance.now();
        // The C++ ledger drains workflow_runner in its runner worker: that is the isolate to profile.
        const drainer = impl === "cpp" ? PARTS.events_runner.name : JS;
        const drained = await profiled(PROFILE_PORT, [drainer, TARGET], () =>
          call(impl, "/admin/events/drain?consumer=workflow_runner", { method: "POST", headers: operator }),
        );
        const out = expect("drain", drained.result, 200);
        const ms = performance.now() - t;
        if (drained.profiles) {
          const own = drainer;
          log(
            `${impl} drain ${ms.toFixed(0)} ms; target busy ${(drained.profiles[TARGET].total / 1000).toFixed(0)} ms`,
          );
          log(profileLine(own, drained.profiles[own], Number(process.env.SS_PROFILE_TOP || 12)));
        }
        const report = out.consumers.workflow_runner;
        const starts = (await targetStarts()) - before;
        if (report.read !== batch || report.started !== batch * SUBSCRIPTIONS || starts !== batch * SUBSCRIPTIONS) {
          throw new Error(`${impl} drain: ${JSON.stringify(report)}, target saw ${starts} starts`);
        }
        drainMs[impl].push(ms);
      }
    }

    // (b) read a batch of 500 (after the drains, so that there are more than 500 events).
    const readMs = { cpp: [], js: [] };
    // Order alternating by iteration, as the emits: neither side always reads right after the other.
    for (let i = 0; i < reads + READ_WARMUP; i++) {
      for (const impl of i % 2 ? ["js", "cpp"] : ["cpp", "js"]) {
        const t = performance.now();
        const res = expect("read", await call(impl, "/api/events?limit=500", { headers: operator }), 200);
        const ms = performance.now() - t;
        if (res.events.length !== 500) throw new Error(`${impl} read: ${res.events.length} events`);
        if (i >= READ_WARMUP) readMs[impl].push(ms);
      }
    }

    const figures = {};
    for (const impl of ["cpp", "js"]) {
      // The median drain, not the best: one drain of 500 is a noisy sample (the same module spans
      // 1.2-2.0x its peer within minutes), and the best of a few favours the noisier side.
      const mid = median(drainMs[impl]);
      figures[impl] = {
        emitP50: median(emitMs[impl]),
        emitP99: percentile(emitMs[impl], 0.99),
        readP50: median(readMs[impl]),
        drainMs: mid,
        drainRoundsMs: drainMs[impl],
        eventsPerSecond: batch / (mid / 1000),
        startsPerSecond: (batch * SUBSCRIPTIONS) / (mid / 1000),
      };
    }
    printTable(figures, { emits, batch, reads, rounds }, log);
    return figures;
  } finally {
    await mf.dispose();
  }
}

function printTable(f, { emits, batch, reads, rounds }, log) {
  const ms = (n) => `${n.toFixed(2)} ms`;
  const rate = (n) => `${n.toFixed(0)}/s`;
  const rows = [
    ["emit p50", SEED.emitMs, ms(f.cpp.emitP50), ms(f.js.emitP50)],
    ["emit p99", "-", ms(f.cpp.emitP99), ms(f.js.emitP99)],
    ["read a batch of 500 (p50)", SEED.readMs, ms(f.cpp.readP50), ms(f.js.readP50)],
    [`drain ${batch} events × ${SUBSCRIPTIONS} starts`, "-", ms(f.cpp.drainMs), ms(f.js.drainMs)],
    ["drain throughput, events", "-", rate(f.cpp.eventsPerSecond), rate(f.js.eventsPerSecond)],
    ["drain throughput, workflow starts", "-", rate(f.cpp.startsPerSecond), rate(f.js.startsPerSecond)],
  ];
  const header = ["ledger", "seed", "events.wasm", "plain JS"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  log(`\nThe ledger on local workerd (Miniflare; one process, one run; plain JS = tests/bench/events-js.js, same SQL`);
  log(`less the ledger's claim-before-start, fan-out cap records, schemas and quarantine):`);
  log(`emit = ${emits} sequential tenant-authenticated POST /api/events each (with idempotency_key), interleaved;`);
  log(`read = GET /api/events?limit=500, median of ${reads}; drain = one POST /admin/events/drain of ${batch} events,`);
  log(
    `each started on ${SUBSCRIPTIONS} subscriptions through a service binding to a JS worker answering 202 (median of ${rounds})\n`,
  );
  log(line(header));
  log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) log(line(row));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runEventsBench({
    emits: option("emits", 300),
    batch: option("batch", 500),
    reads: option("reads", 40),
    rounds: option("rounds", 5),
  });
}
