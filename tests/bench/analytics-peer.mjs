// scripts/bench, the beacon comparison: the analytics worker (analytics.wasm) beside its plain-JS peer
// (tests/bench/analytics-js.js), at the same concurrency, each alone in its own phase of one Miniflare
// that holds only these two workers (so workerd's CPU in a phase is that worker's own: its intake, the
// local queue broker's share of its sends, and D1). Both do the same work per beacon: tenant auth,
// parsing and checks, user-agent classification and the crawler match, page dimensions, the salted
// visitor hash, one Analytics Engine point and one queue message, then 202. The queue has no consumer
// here: the rollup is measured by analytics-bench.mjs. One beacon in ten carries a crawler's user
// agent (filtered: no hash), the rest a desktop Chrome's.
//   node tests/bench/analytics-peer.mjs [--beacons 2000] [--beacon-concurrency 16] [--beacon-rounds 6] [--beacon-warmup 500] [--json FILE]
// With --beacon-rounds N (rounded up to an even number) each side runs N phases of --beacons, alternating
// which goes first; the figures are the medians over the rounds, the ratio the median over pairs of rounds
// (one of each order) of the geometric mean of their two ratios.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { beaconInit } from "./beacon-mix.mjs";
import {
  loadPhase,
  ms,
  pairedRounds,
  pairedFigures,
  peerCli,
  printPeerTable,
  provisionTenantInBoth,
  sideFigures,
} from "./peer-run.mjs";
import { platformWorkerOptions } from "./worker-options.mjs";
import { option, round } from "./json-out.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CPP = "siteswarm-analytics-service";
const JS = "bench-analytics-js";
const TENANT = "bakery";
// Beacons per side and per order before the timed rounds (an untimed round each way: C++, JS, JS,
// C++): compile and instantiate, JIT and wasm tier-up, the salt cached, and each side once right after
// the other. Until 2026-12-02 this was 100 beacons, C++ then JS, and the first timed round (C++ first)
// was every run's lowest: docs/performance.md "Answers known in advance, and the bench's order".
const WARMUP = option("beacon-warmup", 500);

export async function workerOptions(adminToken) {
  const { MODULE_RULES } = await import("../../scripts/lib/local-mesh.mjs");
  const crawlers = JSON.parse(
    readFileSync(path.join(ROOT, "node_modules/crawler-user-agents/crawler-user-agents.json")),
  );
  return [
    await platformWorkerOptions("analytics", {
      name: CPP,
      bindings: { PLATFORM_ADMIN_TOKEN: adminToken },
      queueConsumers: {},
    }),
    {
      name: JS,
      modules: true,
      scriptPath: path.join(ROOT, "tests/bench/analytics-js.js"),
      modulesRoot: ROOT,
      modulesRules: MODULE_RULES,
      compatibilityDate: "2026-04-20",
      d1Databases: { ANALYTICS_DB: "bench-analytics-js" },
      analyticsEngineDatasets: { PAGEVIEWS: { dataset: "bench_analytics_js" } },
      queueProducers: { PAGEVIEWS_QUEUE: { queueName: "bench-analytics-js-pageviews" } },
      bindings: { CRAWLER_PATTERNS: JSON.stringify(crawlers.map((c) => c.pattern)) },
    },
  ];
}

/**
 * The same tenant in both workers of `mf` (through the C++ worker's own route, the row copied into the
 * peer's D1) and the same day's salt: `{ workers: {cpp, js}, token }`. With `cppOnly`, only the C++
 * worker named `cppName` (beacon-ab.mjs provisions several builds of it this way).
 */
export async function provisionPeers(mf, adminToken, { cppName = CPP, cppOnly = false } = {}) {
  const { applyMigrations } = await import("../../scripts/lib/local-mesh.mjs");
  const workers = { cpp: await mf.getWorker(cppName), js: cppOnly ? null : await mf.getWorker(JS) };
  const dbs = { cpp: await mf.getD1Database("ANALYTICS_DB", cppName) };
  if (!cppOnly) dbs.js = await mf.getD1Database("ANALYTICS_DB", JS);
  for (const db of Object.values(dbs)) await applyMigrations(db, path.join(ROOT, "migrations/analytics"));
  const token = randomBytes(24).toString("hex");
  const config = { hosts: ["crumbandcrust.example"] };
  const now = new Date().toISOString();
  const salt = randomBytes(32).toString("hex");
  await provisionTenantInBoth({
    cpp: workers.cpp,
    origin: "http://analytics",
    jsDb: dbs.js,
    tenant: TENANT,
    adminToken,
    token,
    config,
    now,
  });
  for (const db of Object.values(dbs)) {
    await db
      .prepare("INSERT OR IGNORE INTO salts (day, salt_hex, created_at) VALUES (?1, ?2, ?3)")
      .bind(now.slice(0, 10), salt, now)
      .run();
  }
  return { workers, token };
}

/** Runs both intakes; figures per implementation and `ratio` (C++ throughput over JS throughput). */
export async function runBeaconPeers({ beacons = 2000, concurrency = 16, rounds: requested = 6 } = {}) {
  const { Miniflare } = await import("miniflare");
  const adminToken = randomBytes(24).toString("hex");
  const mf = new Miniflare({ cf: false, workers: await workerOptions(adminToken) });
  try {
    await mf.ready;
    const { workers, token } = await provisionPeers(mf, adminToken);

    const load = (impl, count) =>
      loadPhase({
        count,
        concurrency,
        send: (n) => workers[impl].fetch("http://analytics/beacon", beaconInit(n, TENANT, token)),
      });

    const { rounds, phases, ratios, pairRatios, ratio } = await pairedRounds({
      requested,
      warmup: WARMUP,
      count: beacons,
      phase: load,
    });
    const out = {};
    for (const impl of ["cpp", "js"]) {
      const { cpu, ...figures } = sideFigures(phases[impl]);
      out[impl] = { ...figures, workerdCpuMsPerBeacon: cpu };
    }
    return { beacons, concurrency, rounds, ...out, ratio, ratios, pairRatios };
  } finally {
    await mf.dispose();
  }
}

export function printBeaconPeers(r, log = console.log) {
  const header = [
    `\nBeacons, C++ (analytics.wasm) beside the plain-JS peer (tests/bench/analytics-js.js): ${r.beacons}`,
    `each at concurrency ${r.concurrency}, straight to each worker, alone in its phase; 1 in 10 a crawler (goal ≥ 0.9×);`,
    `${r.rounds} alternating rounds, medians (round ratios ${r.ratios.map((x) => x.toFixed(2)).join(", ")};`,
    `the ratio: the median over pairs of rounds, one each order, of their geometric mean: ${r.pairRatios.map((x) => x.toFixed(2)).join(", ")}).\n`,
  ];
  printPeerTable(
    r,
    header,
    [
      ["accepted (202)", (x) => `${x.accepted}`],
      ["throughput", (x) => `${x.rps.toFixed(0)} beacons/s`],
      ["latency p50 / p99", (x) => `${ms(x.p50)} / ${ms(x.p99)}`],
      ["workerd CPU / beacon", (x) => ms(x.workerdCpuMsPerBeacon)],
    ],
    log,
  );
}

export const beaconPeerProblems = (r) =>
  ["cpp", "js"].flatMap((impl) =>
    r[impl].accepted !== r.beacons * r.rounds
      ? [`${impl}: ${r[impl].accepted} of ${r.beacons * r.rounds} beacons answered 202`]
      : [],
  );

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await peerCli({
    run: () =>
      runBeaconPeers({
        beacons: option("beacons", 2000),
        concurrency: option("beacon-concurrency", 16),
        rounds: option("beacon-rounds", 6),
      }),
    print: printBeaconPeers,
    problems: beaconPeerProblems,
    figures: (result) => ({
      ratios: { analytics_beacon: round(result.ratio, 3) },
      analytics_beacon: pairedFigures(result, "beacons"),
    }),
  });
}
