// scripts/bench, the intake comparison: the leads worker (leads.wasm) beside its plain-JS peer
// (tests/bench/leads-js.js), at the same concurrency, each alone in its own phase of one Miniflare that
// holds only these two workers (so workerd's CPU in a phase is that worker's own: its intake plus the
// local queue broker's share of its sends). Both do the same work per lead: tenant auth, the D1 rate
// limit, validation, Turnstile (siteverify on the stub server, in this Node process), one D1 batch,
// the 202, then one webhook notification on the notify queue and lead.received on the events queue
// under waitUntil. The queues have no consumer here: the figure is intake, delivery is measured by the
// main load run (leads-load.mjs).
//   node tests/bench/leads-peer.mjs [--leads 2000] [--leads-concurrency 20] [--leads-rounds 6] [--leads-warmup 100] [--json FILE]
// With SS_INSPECTOR_PORT=9339: every timed phase also profiled inside workerd (its worker's busy time
// and top SS_PROFILE_TOP functions; docs/performance.md "Profiles inside workerd").
// Rounds come in pairs of both orders, the ratio the median over the pairs of their geometric mean
// (peer-run.mjs pairedRounds; docs/performance.md, "Answers known in advance, and the bench's order").
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";

import {
  loadPhase,
  ms,
  pairedRounds,
  pairedFigures,
  peerCli,
  printPeerTable,
  provisionTenantInBoth,
  sideFigures,
  socketClient,
} from "./peer-run.mjs";
import { profileLine, profiled } from "./inspector.mjs";
import { platformWorkerOptions } from "./worker-options.mjs";
import { option, round } from "./json-out.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CPP = "siteswarm-leads-service";
const JS = "bench-leads-js";
const TENANT = "bakery";
const DUMMY_TOKEN = "XXXX.DUMMY.TOKEN.XXXX";
// Submissions per side and order before the timed rounds (C++, JS, JS, C++), untimed.
const WARMUP = option("leads-warmup", 100);
const PROFILE_PORT = Number(process.env.SS_INSPECTOR_PORT || 0);
// The load goes straight to each worker's own socket (Miniflare `unsafeDirectSockets`, node:http
// with keep-alive): Miniflare's proxy (`getWorker().fetch`) costs the box ~0.8 ms of workerd CPU per
// request on top of the worker's own, on the same 2 cores, and its latency is not the worker's
// (docs/performance.md, "The intake's load without Miniflare's proxy"). SS_BENCH_CLIENT=proxy: the
// proxy, as the runs before 2026-12-05 13:20 UTC measured it.
const SOCKETS = process.env.SS_BENCH_CLIENT !== "proxy";
const DIRECT = SOCKETS ? { unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }] } : {};

async function workerOptions(stubsUrl, adminToken) {
  const { MODULE_RULES } = await import("../../scripts/lib/local-mesh.mjs");
  const { localVars } = await import("../../scripts/lib/workers.mjs");
  const vars = localVars("leads", { stubsUrl, adminToken });
  return [
    await platformWorkerOptions("leads", {
      name: CPP,
      bindings: { ...vars, PLATFORM_ADMIN_TOKEN: adminToken },
      queueConsumers: {},
    }),
    {
      name: JS,
      modules: true,
      scriptPath: path.join(ROOT, "tests/bench/leads-js.js"),
      modulesRoot: ROOT,
      modulesRules: MODULE_RULES,
      compatibilityDate: "2026-04-20",
      d1Databases: { LEADS_DB: "bench-leads-js" },
      queueProducers: {
        NOTIFY_QUEUE: { queueName: "bench-leads-js-notify" },
        EVENTS_QUEUE: { queueName: "bench-leads-js-events" },
      },
      bindings: {
        TURNSTILE_SECRET_KEY: vars.TURNSTILE_SECRET_KEY,
        TURNSTILE_VERIFY_URL: vars.TURNSTILE_VERIFY_URL,
      },
    },
  ];
}

/** Runs both intakes; figures per implementation and `ratio` (C++ throughput over JS throughput). */
export async function runIntakePeers({ submissions = 2000, concurrency = 20, rounds: requested = 6 } = {}) {
  const { Miniflare } = await import("miniflare");
  const { applyMigrations } = await import("../../scripts/lib/local-mesh.mjs");
  const { startStubs } = await import("../stubs/stub-server.mjs");
  const stubs = await startStubs();
  const adminToken = randomBytes(24).toString("hex");
  const mf = new Miniflare({
    cf: false,
    ...(PROFILE_PORT ? { inspectorPort: PROFILE_PORT } : {}),
    workers: (await workerOptions(stubs.url, adminToken)).map((w) => ({ ...w, ...DIRECT })),
  });
  try {
    await mf.ready;
    const workers = { cpp: await mf.getWorker(CPP), js: await mf.getWorker(JS) };
    const direct = SOCKETS
      ? {
          cpp: socketClient((await mf.unsafeGetDirectURL(CPP)).href, concurrency),
          js: socketClient((await mf.unsafeGetDirectURL(JS)).href, concurrency),
        }
      : null;
    const dbs = { cpp: await mf.getD1Database("LEADS_DB", CPP), js: await mf.getD1Database("LEADS_DB", JS) };
    for (const db of Object.values(dbs)) await applyMigrations(db, path.join(ROOT, "migrations/leads"));

    // The same tenant in both: through the C++ worker's own route, and the row it wrote copied.
    const token = randomBytes(24).toString("hex");
    const config = {
      turnstile: "required",
      notify: { webhook: { url: `${stubs.url}/webhook/peer`, secret: `whsec-${token}` } },
    };
    await provisionTenantInBoth({
      cpp: workers.cpp,
      origin: "http://leads",
      jsDb: dbs.js,
      tenant: TENANT,
      adminToken,
      token,
      config,
      now: new Date().toISOString(),
    });

    let ipSeq = 0;
    const load = async (impl, count) => {
      const name = impl === "cpp" ? CPP : JS;
      const { result, profiles } = await profiled(PROFILE_PORT, [name], () => phaseOf(impl, count));
      if (profiles && count > WARMUP) {
        console.log(`${impl} phase of ${count}:`);
        console.log(profileLine(name, profiles[name], Number(process.env.SS_PROFILE_TOP || 12)));
      }
      return result;
    };
    const phaseOf = (impl, count) =>
      loadPhase({
        count,
        concurrency,
        send: () => {
          const n = ipSeq++;
          const fetcher = direct
            ? (p, init) => direct[impl](p, init)
            : (p, init) => workers[impl].fetch(`http://leads${p}`, init);
          return fetcher("/api/leads/submit", {
            method: "POST",
            headers: {
              "content-type": "application/json",
              "x-siteswarm-tenant-id": TENANT,
              "x-siteswarm-tenant-token": token,
              "x-siteswarm-capability-version": "1.0.0",
              "cf-connecting-ip": `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
            },
            body: JSON.stringify({
              name: `Peer ${n}`,
              email: `peer-${n}@load.example`,
              phone: "(555) 010-2000",
              message: `Submission ${n} of the peer run.`,
              turnstileToken: DUMMY_TOKEN,
            }),
          });
        },
      });

    const storedCount = async (impl) =>
      (await dbs[impl].prepare("SELECT COUNT(*) AS n FROM leads WHERE payload LIKE '%@load.example%'").first()).n;
    // Compile, JIT, first D1 pages, then the rounds in pairs of both orders (peer-run.mjs pairedRounds).
    const { rounds, phases, ratios, pairRatios, ratio } = await pairedRounds({
      requested,
      warmup: WARMUP,
      count: submissions,
      phase: load,
    });
    const out = {};
    for (const impl of ["cpp", "js"]) {
      const { cpu, ...figures } = sideFigures(phases[impl]);
      out[impl] = { ...figures, stored: (await storedCount(impl)) - 2 * WARMUP, workerdCpuMsPerLead: cpu };
    }
    return { submissions, concurrency, rounds, ...out, ratio, ratios, pairRatios };
  } finally {
    await mf.dispose();
    await stubs.close?.();
  }
}

export function printIntakePeers(r, log = console.log) {
  const header = [
    `\nLead intake, C++ (leads.wasm) beside the plain-JS peer (tests/bench/leads-js.js): ${r.submissions}`,
    `submissions per phase at concurrency ${r.concurrency}, straight to each worker, alone in its phase; Turnstile on;`,
    `${r.rounds} alternating rounds (round ratios ${r.ratios.map((x) => x.toFixed(2)).join(", ")}; the ratio: the median over`,
    `pairs of rounds, one each order, of their geometric mean: ${r.pairRatios.map((x) => x.toFixed(2)).join(", ")}).\n`,
  ];
  printPeerTable(
    r,
    header,
    [
      ["accepted (202) / stored", (x) => `${x.accepted} / ${x.stored}`],
      ["throughput", (x) => `${x.rps.toFixed(0)} submissions/s`],
      ["latency p50 / p99", (x) => `${ms(x.p50)} / ${ms(x.p99)}`],
      ["workerd CPU / intake", (x) => ms(x.workerdCpuMsPerLead)],
    ],
    log,
  );
}

export const peerProblems = (r) =>
  ["cpp", "js"].flatMap((impl) =>
    r[impl].accepted !== r.submissions * r.rounds || r[impl].stored !== r.submissions * r.rounds
      ? [`${impl}: ${r[impl].accepted} accepted, ${r[impl].stored} stored of ${r.submissions * r.rounds}`]
      : [],
  );

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await peerCli({
    run: () =>
      runIntakePeers({
        submissions: option("leads", 2000),
        concurrency: option("leads-concurrency", 20),
        rounds: option("leads-rounds", 6),
      }),
    print: printIntakePeers,
    problems: peerProblems,
    figures: (result) => ({
      ratios: { leads_intake: round(result.ratio, 3) },
      leads_intake: pairedFigures(result, "submissions", {
        leads_cpu_ms_per_intake: round(result.cpp.workerdCpuMsPerLead),
      }),
    }),
  });
}
