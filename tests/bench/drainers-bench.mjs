// scripts/bench, the five-drainer part (issue 11): 10,000 events across several tenants and event
// types emitted through POST /api/events into the real ledger (events.wasm in local workerd,
// Miniflare), then each of the five drainers run until it has caught up, in the order the crons would
// leave them: workflow_runner (8 subscriptions whose workflow target is a service binding to a tiny
// JS worker answering 202), then timeline_indexer, anomaly_detector, reflexion_analyzer and
// customer_health_watcher, which also read the runner's own workflow.run_* events.
//
// Each drainer is driven through POST /admin/events/drain?consumer=<name> (the function every cron
// entry point of workers/events calls; one batch of 500 per call unless --drain-batches) until a call
// reads nothing. Printed per drainer: events read, calls, batches, wall time, events/s, D1 round trips
// per call and per event read, and workerd CPU
// per event read (from /proc, tests/bench/workerd-cpu.mjs: every workerd process, so D1 and the target
// worker are included — an upper bound). D1 round trips are counted by the events worker's JS host
// (SS_COUNT_D1=1, bindings/host.js): each answer names the calls its run made to D1 — one per
// all/first/run statement, one per batch() — summed here over the drainer's calls (and over the
// emits). Checked (the bench fails otherwise): every workflow start the subscriptions call for
// reached the target exactly once (by Idempotency-Key) and is marked started in the dedupe table;
// every event of the ledger is counted exactly once in its entity's timeline; every tenant has a
// health row; nothing is quarantined.
//
// --drain-batches N makes each call drain up to N batches back to back (`&batches=N`, what a cron run
// does under DRAIN_BATCHES_PER_RUN); the default, 1, is one batch per call.
//
//   node tests/bench/drainers-bench.mjs [--drain-events 10000] [--drain-tenants 10] [--drain-batches 1]
//                                       [--json FILE]
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { mergeFigures, option, round } from "./json-out.mjs";
import { workerdCpuMs } from "./workerd-cpu.mjs";
import { PARTS } from "../../scripts/lib/workers.mjs";
import { ledgerWorkerOptions } from "./worker-options.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
process.env.WRANGLER_HIDE_BANNER = "true";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const ADMIN_TOKEN = "bench-admin-token";
const CPP = "siteswarm-events-service";
const TARGET = "bench-target";
const CONCURRENCY = 16;
const DRAINERS = [
  "workflow_runner",
  "timeline_indexer",
  "anomaly_detector",
  "reflexion_analyzer",
  "customer_health_watcher",
];

// The traffic mix (weights out of 100): the platform's own event types, which the aggregate drainers
// read, and an order type only the subscriptions care about.
const MIX = [
  ["lead.received", 30],
  ["lead.delivered", 20],
  ["lead.delivery_failed", 5],
  ["lead.spam_absorbed", 5],
  ["monitor.probe_failed", 5],
  ["monitor.incident_opened", 3],
  ["monitor.incident_resolved", 2],
  ["order.placed", 25],
  ["analytics.rollup_completed", 5],
];
// 8 subscriptions, 8 workflows; `starts(type, payload)` is what each should start (checked).
const SUBSCRIPTIONS = [
  { glob: "lead.received", wf: "notify" },
  { glob: "lead.received", wf: "crm", input_mapper: { email: "$.payload.email", tenant: "$.tenant_id" } },
  { glob: "lead.delivery_failed", wf: "retry" },
  { glob: "lead.*", wf: "audit", filter_expr: 'payload.channel == "email"' },
  { glob: "order.placed", wf: "fulfil" },
  { glob: "order.placed", wf: "invoice", filter_expr: "payload.amount > 500" },
  { glob: "monitor.incident_*", wf: "page" },
  { glob: "monitor.*", wf: "status", filter_expr: 'startsWith(payload.monitor, "m-1")' },
];
const globMatch = (glob, type) => (glob.endsWith("*") ? type.startsWith(glob.slice(0, -1)) : glob === type);
const filterMatch = (sub, p) => {
  if (!sub.filter_expr) return true;
  if (sub.wf === "audit") return p.channel === "email";
  if (sub.wf === "invoice") return p.amount > 500;
  if (sub.wf === "status") return p.monitor.startsWith("m-1");
  throw new Error(`no model for ${sub.wf}`);
};

const TARGET_SCRIPT = `const keys = new Map();
export default {
  async fetch(request) {
    if (request.method === "GET") return Response.json(Object.fromEntries(keys));
    await request.arrayBuffer();
    const key = request.headers.get("idempotency-key");
    keys.set(key, (keys.get(key) ?? 0) + 1);
    return new Response('{"accepted":true}', { status: 202, headers: { "content-type": "application/json" } });
  },
};`;

const eventsWorkerOptions = () =>
  ledgerWorkerOptions({
    name: CPP,
    bindings: { PLATFORM_ADMIN_TOKEN: ADMIN_TOKEN, SS_COUNT_D1: "1", WORKFLOW_SERVICES: "BENCH_TARGET" },
    serviceBindings: { BENCH_TARGET: TARGET }, // the only workflow target of the bench
  });

/** Runs the five-drainer bench; returns its figures. */
export async function runDrainersBench({ events = 10_000, tenants = 10, drainBatches = 1, log = console.log } = {}) {
  const { Miniflare } = await import("miniflare");
  const { applyMigrations } = await import("../../scripts/lib/local-mesh.mjs");
  const mf = new Miniflare({
    cf: false,
    workers: [
      ...(await eventsWorkerOptions()),
      { name: TARGET, modules: true, script: TARGET_SCRIPT, compatibilityDate: "2026-04-20" },
    ],
  });
  try {
    await mf.ready;
    const ledger = await mf.getWorker(CPP);
    // The ledger is three workers (docs/architecture.md "The ledger's three workers"): each call goes
    // straight to the one that runs it, so its answer's D1 round trips are that work's own (the
    // entry's answer to a forwarded call would count only the entry's).
    const runnerWorker = await mf.getWorker(PARTS.events_runner.name);
    const configWorker = await mf.getWorker(PARTS.events_config.name);
    const workerFor = (pathname) => {
      if (pathname.includes("consumer=workflow_runner")) return runnerWorker;
      if (/^\/admin\/(workflows|subscriptions)/.test(pathname)) return configWorker;
      return ledger;
    };
    const target = await mf.getWorker(TARGET);
    const db = await mf.getD1Database("EVENTS_DB", CPP);
    await applyMigrations(db, path.join(ROOT, "migrations/events"));
    const operator = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const jsonType = { "content-type": "application/json" };
    // Every answer's D1 round trips (x-ss-d1-round-trips, set by the host), summed.
    let d1RoundTrips = 0;
    const call = async (pathname, init = {}, ...ok) => {
      const res = await workerFor(pathname).fetch(`http://ledger${pathname}`, init);
      const text = await res.text();
      if (!ok.includes(res.status)) throw new Error(`${init.method ?? "GET"} ${pathname}: ${res.status} ${text}`);
      const trips = Number(res.headers.get("x-ss-d1-round-trips"));
      if (!Number.isInteger(trips) || res.headers.get("x-ss-d1-round-trips") === null) {
        throw new Error(`${pathname}: no x-ss-d1-round-trips header (SS_COUNT_D1 is not reaching the host)`);
      }
      d1RoundTrips += trips;
      return text ? JSON.parse(text) : null;
    };
    const put = (pathname, body, ...ok) =>
      call(pathname, { method: "PUT", headers: { ...operator, ...jsonType }, body: JSON.stringify(body) }, ...ok);

    const tenantIds = Array.from({ length: tenants }, (_, i) => `bench-t${i}`);
    const tokenOf = (t) => `${t}-token-0123456789`;
    for (const t of tenantIds) {
      await put(`/admin/tenants/${t}`, { token: tokenOf(t), adminToken: `${tokenOf(t)}-admin`, config: {} }, 201);
    }
    for (const s of SUBSCRIPTIONS) {
      await put(`/admin/workflows/${s.wf}`, { target: { service: "BENCH_TARGET", path: `/start/${s.wf}` } }, 201, 200);
      const body = { event_type_glob: s.glob, workflow_type: s.wf };
      if (s.filter_expr) body.filter_expr = s.filter_expr;
      if (s.input_mapper) body.input_mapper = s.input_mapper;
      await call(
        "/admin/subscriptions",
        { method: "POST", headers: { ...operator, ...jsonType }, body: JSON.stringify(body) },
        201,
      );
    }

    // ---- emit: a deterministic mix, CONCURRENCY requests in flight
    const total = MIX.reduce((s, [, w]) => s + w, 0);
    const typeOf = (n) => {
      let r = (n * 37) % total;
      for (const [type, w] of MIX) {
        if (r < w) return type;
        r -= w;
      }
      return MIX[0][0];
    };
    let expectedStarts = 0;
    const payloadOf = (n, type) => ({
      n,
      email: `lead${n}@example.com`,
      channel: n % 3 === 0 ? "sms" : "email",
      amount: (n * 7919) % 1000,
      monitor: `m-${n % 20}`,
      error: type === "lead.delivery_failed" ? "provider answered 503" : undefined,
    });
    const emitted = performance.now();
    const emitD1Before = d1RoundTrips;
    for (let next = 0; next < events; ) {
      const wave = [];
      for (let k = 0; k < CONCURRENCY && next < events; k++, next++) {
        const n = next;
        const type = typeOf(n);
        const tenant = tenantIds[n % tenants];
        const payload = payloadOf(n, type);
        const matched = SUBSCRIPTIONS.filter((s) => globMatch(s.glob, type) && filterMatch(s, payload));
        expectedStarts += new Set(matched.map((s) => s.wf)).size;
        wave.push(
          call(
            "/api/events",
            {
              method: "POST",
              headers: {
                "X-SiteSwarm-Tenant-Id": tenant,
                "X-SiteSwarm-Tenant-Token": tokenOf(tenant),
                "X-SiteSwarm-Capability-Version": "1.0.0",
                ...jsonType,
              },
              body: JSON.stringify({
                event_type: type,
                entity_ref: `${type.split(".")[0]}:${n % 500}`,
                payload,
                idempotency_key: `bench:${n}`,
              }),
            },
            201,
          ),
        );
      }
      await Promise.all(wave);
    }
    const emitSeconds = (performance.now() - emitted) / 1000;
    const emitD1 = d1RoundTrips - emitD1Before;
    log(
      `\nfive drainers: ${events} events emitted across ${tenants} tenants in ${emitSeconds.toFixed(1)} s (${(emitD1 / events).toFixed(2)} D1 round trips per POST /api/events)`,
    );

    // ---- drain each consumer until it reads nothing; again while any drainer appended events
    // (anomaly.detected, tenant.health_changed) that the others have not read yet.
    const figures = {
      events,
      tenants,
      emit_per_second: events / emitSeconds,
      emit_d1_round_trips_per_event: emitD1 / events,
      drainers: {},
    };
    // --drain-batches N: each call drains up to N batches back to back, as a cron run does
    // (DRAIN_BATCHES_PER_RUN); 1 (the default) is one batch per call.
    const batchesParam = drainBatches > 1 ? `&batches=${drainBatches}` : "";
    figures.drain_batches_per_call = drainBatches;
    for (const name of DRAINERS) {
      figures.drainers[name] = { read: 0, calls: 0, batches: 0, started: 0, ms: 0, cpu: 0, d1: 0 };
    }
    let rounds = 0;
    for (let moved = true; moved; ) {
      moved = false;
      if (++rounds > 5) throw new Error("five-drainer bench: the drainers did not settle in 5 rounds");
      for (const name of DRAINERS) {
        const f = figures.drainers[name];
        const cpu0 = workerdCpuMs();
        const d10 = d1RoundTrips;
        const t0 = performance.now();
        for (;;) {
          const out = await call(
            `/admin/events/drain?consumer=${name}${batchesParam}`,
            {
              method: "POST",
              headers: operator,
            },
            200,
          );
          const report = out.consumers[name];
          f.calls++;
          f.batches += report.batches ?? 1;
          if (report.locked || report.killed) throw new Error(`${name}: ${JSON.stringify(report)}`);
          if (report.quarantined) throw new Error(`${name} quarantined: ${JSON.stringify(report)}`);
          f.read += report.read;
          f.started += report.started ?? 0;
          if (report.read === 0) break;
          moved = true;
        }
        f.ms += performance.now() - t0;
        f.d1 += d1RoundTrips - d10;
        f.cpu = cpu0 === null || f.cpu === null ? null : f.cpu + workerdCpuMs() - cpu0;
      }
    }
    for (const f of Object.values(figures.drainers)) {
      f.events_per_second = f.read / (f.ms / 1000);
      f.d1_per_event = f.d1 / f.read;
      f.workerd_cpu_ms_per_event = f.cpu === null || f.read === 0 ? null : f.cpu / f.read;
    }

    // ---- correctness
    const problems = [];
    const keys = await (await target.fetch("http://target/")).json();
    const sent = Object.values(keys);
    const twice = sent.filter((c) => c !== 1).length;
    if (sent.length !== expectedStarts) problems.push(`target saw ${sent.length} keys, expected ${expectedStarts}`);
    if (twice) problems.push(`${twice} starts reached the target more than once`);
    const runner = figures.drainers.workflow_runner;
    if (runner.started !== expectedStarts) problems.push(`runner reported ${runner.started} starts`);
    const one = async (sql) => Object.values(await db.prepare(sql).first())[0];
    const dedupe = await one("SELECT COUNT(*) FROM event_consumer_dedupe WHERE status = 'started'");
    if (dedupe !== expectedStarts) problems.push(`${dedupe} dedupe rows started`);
    const ledgerEvents = await one("SELECT COUNT(*) FROM events");
    for (const name of DRAINERS) {
      // Each drainer read every event once: the emitted ones and what the runner appended.
      if (figures.drainers[name].read !== ledgerEvents) {
        problems.push(`${name} read ${figures.drainers[name].read} of ${ledgerEvents} events`);
      }
    }
    const indexed = await one("SELECT SUM(event_count) FROM entity_timelines");
    if (indexed !== ledgerEvents) problems.push(`timelines count ${indexed} events of ${ledgerEvents}`);
    const wrong = await one(
      `SELECT COUNT(*) FROM entity_timelines t WHERE t.event_count != (SELECT COUNT(*) FROM events e
         WHERE e.entity_type = t.entity_type AND e.entity_id = t.entity_id AND COALESCE(e.tenant_id, '') = t.tenant_key)`,
    );
    if (wrong) problems.push(`${wrong} timelines whose count differs from their events`);
    const health = await one("SELECT COUNT(*) FROM tenant_health");
    if (health !== tenants) problems.push(`${health} tenant health rows of ${tenants}`);
    const quarantined = await one("SELECT COUNT(*) FROM events_quarantine");
    if (quarantined) problems.push(`${quarantined} quarantined`);
    if (problems.length) throw new Error(`five-drainer bench: ${problems.join("; ")}`);
    Object.assign(figures, { ledger_events: ledgerEvents, starts: expectedStarts });
    const all = Object.values(figures.drainers);
    const totalMs = all.reduce((s, f) => s + f.ms, 0);
    figures.total = {
      read: all.reduce((s, f) => s + f.read, 0),
      d1_round_trips: all.reduce((s, f) => s + f.d1, 0),
      seconds: totalMs / 1000,
    };
    // Per ledger event: what draining one event through all five costs (the column's sum).
    figures.total.d1_per_ledger_event = figures.total.d1_round_trips / ledgerEvents;
    figures.total.ledger_events_per_second = ledgerEvents / (totalMs / 1000);

    log(
      `  ${ledgerEvents} events in the ledger after the drains (the drainers' own workflow.run_*, anomaly and health events included), ${expectedStarts} workflow starts, ${rounds} rounds`,
    );
    log(`  checked: every start once (target and dedupe), every event once in its entity's timeline, no quarantine`);
    const runnerFigures = figures.drainers.workflow_runner;
    figures.starts_per_second = runnerFigures.started / (runnerFigures.ms / 1000);
    log(`  workflow_runner: ${runnerFigures.started} starts, ${figures.starts_per_second.toFixed(0)} starts/s`);
    log(
      `  ${"drainer".padEnd(24)} ${"read".padStart(6)} ${"calls".padStart(5)} ${"batches".padStart(7)} ${"s".padStart(7)} ${"events/s".padStart(9)} ${"D1 trips".padStart(8)} ${"D1/call".padStart(7)} ${"D1/event".padStart(8)} ${"CPU ms/event".padStart(13)}`,
    );
    for (const [name, f] of Object.entries(figures.drainers)) {
      const cpu = f.workerd_cpu_ms_per_event === null ? "n/a" : f.workerd_cpu_ms_per_event.toFixed(3);
      log(
        `  ${name.padEnd(24)} ${String(f.read).padStart(6)} ${String(f.calls).padStart(5)} ${String(f.batches).padStart(7)} ${(f.ms / 1000).toFixed(1).padStart(7)} ${f.events_per_second.toFixed(0).padStart(9)} ${String(f.d1).padStart(8)} ${(f.d1 / f.calls).toFixed(2).padStart(7)} ${f.d1_per_event.toFixed(4).padStart(8)} ${cpu.padStart(13)}`,
      );
    }
    const t = figures.total;
    log(
      `  ${"all five".padEnd(24)} ${String(t.read).padStart(6)} ${"".padStart(5)} ${"".padStart(7)} ${t.seconds.toFixed(1).padStart(7)} ${t.ledger_events_per_second.toFixed(0).padStart(9)} ${String(t.d1_round_trips).padStart(8)} ${"".padStart(7)} ${t.d1_per_ledger_event.toFixed(4).padStart(8)}   (per ledger event: each read it once)`,
    );
    log(
      `  workflow_runner: ${(runnerFigures.d1 / Math.max(1, runnerFigures.started)).toFixed(4)} D1 round trips per start`,
    );
    mergeFigures({
      drainers: {
        events,
        tenants,
        ledger_events: ledgerEvents,
        starts: expectedStarts,
        emit_per_second: round(figures.emit_per_second, 1),
        emit_d1_round_trips_per_event: round(figures.emit_d1_round_trips_per_event, 3),
        starts_per_second: round(figures.starts_per_second, 1),
        total: {
          read: figures.total.read,
          d1_round_trips: figures.total.d1_round_trips,
          d1_round_trips_per_ledger_event: round(figures.total.d1_per_ledger_event, 4),
          ledger_events_per_second: round(figures.total.ledger_events_per_second, 1),
        },
        ...Object.fromEntries(
          Object.entries(figures.drainers).map(([name, f]) => [
            name,
            {
              read: f.read,
              calls: f.calls,
              batches: f.batches,
              d1_round_trips_per_call: round(f.d1 / f.calls, 2),
              events_per_second: round(f.events_per_second, 1),
              d1_round_trips: f.d1,
              d1_round_trips_per_event: round(f.d1_per_event, 4),
              workerd_cpu_ms_per_event: round(f.workerd_cpu_ms_per_event, 3),
            },
          ]),
        ),
      },
    });
    return figures;
  } finally {
    await mf.dispose();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runDrainersBench({
    events: option("drain-events", 10_000),
    tenants: option("drain-tenants", 10),
    drainBatches: option("drain-batches", 1),
  });
}
