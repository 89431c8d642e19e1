#!/usr/bin/env node
// scripts/bench: per worker, the wasm size (raw and gzip -9), the instantiate time in Node (median of
// new WebAssembly.Instance + _initialize) and /health throughput on local workerd (Miniflare over
// HTTP), beside a plain-JS hello-world worker measured in the same run; then the ledger's emit latency,
// batch read and drain throughput beside a plain-JS implementation (tests/bench/events-bench.mjs).
//   node tests/bench/bench.mjs [--requests 2000] [--rounds 9] [--concurrency 16] [--instantiations 25]
//                              [--emits 300] [--batch 500] [--no-ledger] [--json FILE]
// With --json FILE: every figure into FILE (tests/bench/json-out.mjs), the later parts merging theirs.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { wasmImports } from "../../bindings/instance.js";
import { applyMigrations } from "../../scripts/lib/local-mesh.mjs";
import { PARTS, PLATFORM_WORKERS } from "../../scripts/lib/workers.mjs";
import { option, round, startFigures } from "./json-out.mjs";
import { platformWorkerOptions } from "./worker-options.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
process.env.WRANGLER_HIDE_BANNER = "true";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const WORKERS = Object.keys(PLATFORM_WORKERS);
const REQUESTS = option("requests", 2000);
const CONCURRENCY = option("concurrency", 16);
const INSTANTIATIONS = option("instantiations", 25);
const ROUNDS = option("rounds", 9);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

function wasmFigures(file) {
  const bytes = readFileSync(file);
  const compileMs = [];
  const instantiateMs = [];
  for (let i = 0; i < INSTANTIATIONS; i++) {
    let t = performance.now();
    const module = new WebAssembly.Module(bytes);
    compileMs.push(performance.now() - t);
    t = performance.now();
    let instance;
    instance = new WebAssembly.Instance(
      module,
      wasmImports(module, () => instance.exports.memory),
    );
    instance.exports._initialize?.();
    instantiateMs.push(performance.now() - t);
  }
  return {
    raw: bytes.length,
    gzip: gzipSync(bytes, { level: 9 }).length,
    compileMs: compileMs[0], // later compiles of the same bytes hit V8's module cache
    instantiateMs: median(instantiateMs),
  };
}

async function load(url, requests = REQUESTS) {
  const latencies = [];
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < requests) {
        const t = performance.now();
        const res = await fetch(url);
        await res.arrayBuffer();
        if (res.status !== 200) failures++;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    rps: requests / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    failures,
    seconds,
    latencies,
  };
}

// Two half loads as one: req/s over their summed time, percentiles over both halves' latencies.
function joined(a, b) {
  const latencies = [...a.latencies, ...b.latencies];
  return {
    rps: latencies.length / (a.seconds + b.seconds),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    failures: a.failures + b.failures,
  };
}

// One Miniflare per worker, alone (no service bindings: /health needs none), reached over HTTP. Its D1
// databases get their migrations (migrations/<key>/) first, as deployed: the ledger's /health reads its
// drain state, and on an empty database it would measure an error path.
async function startServer(name, options, key = name) {
  const { Miniflare } = await import("miniflare");
  const mf = new Miniflare({ cf: false, host: "127.0.0.1", port: 0, workers: [{ name, ...options }] });
  const base = await mf.ready;
  const migrations = path.join(ROOT, "migrations", key);
  for (const binding of Object.keys(options.d1Databases ?? {})) {
    if (existsSync(migrations)) await applyMigrations(await mf.getD1Database(binding, name), migrations);
  }
  const url = new URL("/health", base);
  const t = performance.now();
  const first = await fetch(url);
  await first.arrayBuffer();
  const coldMs = performance.now() - t;
  if (first.status !== 200) throw new Error(`${name}: /health answered ${first.status}`);
  return { name, mf, url, coldMs, rounds: [], pairedHello: [] };
}

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const ms = (n) => `${n.toFixed(2)} ms`;

const rows = [];
const figures = { wasm: {}, health: {} };
// The shared floor (only the platform routes; scripts/build writes it): size only, it serves nothing.
const FLOOR = path.join(ROOT, "dist/bench/floor.wasm");
if (existsSync(FLOOR)) {
  const wasm = wasmFigures(FLOOR);
  figures.wasm.floor = wasm;
  rows.push(["floor (shared only)", kib(wasm.raw), kib(wasm.gzip), ms(wasm.compileMs), ms(wasm.instantiateMs)]);
  rows.at(-1).push("-", "-", "-", "-");
}
for (const key of WORKERS) figures.wasm[key] = wasmFigures(path.join(ROOT, "dist/wasm", PLATFORM_WORKERS[key].wasm));
// The parts (the ledger's runner and config, each under the same 128 KiB gzipped line as a platform
// worker): size and instantiation only; their /health runs beside their platform worker's.
for (const part of Object.values(PARTS)) {
  const wasm = wasmFigures(path.join(ROOT, "dist/wasm", part.wasm));
  figures.wasm[part.key] = wasm;
  rows.push([`${part.key} (part)`, kib(wasm.raw), kib(wasm.gzip), ms(wasm.compileMs), ms(wasm.instantiateMs)]);
  rows.at(-1).push("-", "-", "-", "-");
}

// /health: every server up at once, then ROUNDS rounds; in each, every worker in turn (the order
// rotating) is measured right beside the hello-world, in four half loads ordered hello, worker,
// worker, hello (or worker, hello, hello, worker in odd rounds). A machine whose speed drifts
// (docs/performance.md: 2 shared cores; the hello-world alone has run at 1,400 and 2,000 req/s
// within one run) weighs on both sides of a pair alike. A worker's ratio is the median over the
// rounds of its pair's req/s over the hello-world's; the figures printed are each side's median round.
const servers = [
  await startServer("hello", {
    modules: true,
    scriptPath: path.join(ROOT, "tests/bench/hello.js"),
    compatibilityDate: "2026-04-20",
  }),
];
try {
  for (const key of WORKERS) servers.push(await startServer(key, await platformWorkerOptions(key)));
  for (const s of servers) await load(s.url); // warm-up round, not reported
  const [helloAtStart, ...workersAtStart] = servers;
  const half = Math.ceil(REQUESTS / 2);
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < workersAtStart.length; i++) {
      const s = workersAtStart[(i + r) % workersAtStart.length];
      const [first, second] = r % 2 ? [s, helloAtStart] : [helloAtStart, s];
      const a1 = await load(first.url, half);
      const b1 = await load(second.url, half);
      const b2 = await load(second.url, half);
      const a2 = await load(first.url, half);
      const [ownHalves, helloHalves] =
        r % 2
          ? [
              [a1, a2],
              [b1, b2],
            ]
          : [
              [b1, b2],
              [a1, a2],
            ];
      s.rounds[r] = joined(...ownHalves);
      s.pairedHello[r] = joined(...helloHalves);
      helloAtStart.rounds.push(s.pairedHello[r]);
    }
  }
} finally {
  for (const s of servers) await s.mf.dispose();
}
const [helloServer, ...workerServers] = servers;
const medianRound = (s) => [...s.rounds].sort((a, b) => a.rps - b.rps)[Math.floor(s.rounds.length / 2)];
const healthOf = (s) => ({
  coldMs: s.coldMs,
  ...medianRound(s),
  failures: s.rounds.reduce((n, x) => n + x.failures, 0),
  roundsRps: s.rounds.map((x) => x.rps),
});
const hello = healthOf(helloServer);
figures.health.hello = hello;
const ratios = {};
for (const s of workerServers) {
  const http = healthOf(s);
  if (http.failures) console.error(`${s.name}: ${http.failures} non-200 answers`);
  figures.health[s.name] = http;
  ratios[`health_${s.name}`] = round(median(s.rounds.map((x, r) => x.rps / s.pairedHello[r].rps)), 3);
  http.pairRatios = s.rounds.map((x, r) => round(x.rps / s.pairedHello[r].rps, 3));
  const wasm = figures.wasm[s.name];
  rows.push([
    s.name,
    kib(wasm.raw),
    kib(wasm.gzip),
    ms(wasm.compileMs),
    ms(wasm.instantiateMs),
    ms(http.coldMs),
    http.rps.toFixed(0),
    ms(http.p50),
    ms(http.p99),
  ]);
}
rows.unshift([
  "hello (plain JS)",
  "-",
  "-",
  "-",
  "-",
  ms(hello.coldMs),
  hello.rps.toFixed(0),
  ms(hello.p50),
  ms(hello.p99),
]);

const header = ["worker", "wasm", "gzip -9", "compile", "instantiate", "1st /health", "req/s", "p50", "p99"];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
const line = (cells) => cells.map((c, i) => String(c).padStart(widths[i])).join("  ");
console.log(
  `\n/health on local workerd (Miniflare, HTTP), ${ROUNDS} rounds; in each, every worker ${REQUESTS} requests beside the hello-world's ${REQUESTS} (halves ABBA) at concurrency ${CONCURRENCY} (median round);`,
);
console.log(`in Node ${process.version}: compile = first new WebAssembly.Module (V8 compiles lazily), instantiate =`);
console.log(
  `median of ${INSTANTIATIONS} new WebAssembly.Instance + _initialize; 1st /health includes workerd's instantiation\n`,
);
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const row of rows) console.log(line(row));

// The ratios of the /health table: each worker's req/s over the hello-world worker's, median of the rounds.
console.log(
  `\n/health req/s over hello-world (goal >= 0.9): ${WORKERS.map((k) => `${k} ${ratios[`health_${k}`]}`).join(", ")}`,
);
const gzipKib = Object.fromEntries(Object.entries(figures.wasm).map(([k, w]) => [k, round(w.gzip / 1024, 1)]));

// null until measured: the ledger below; the intake and beacon ratios by the leads and analytics parts.
Object.assign(ratios, {
  ledger_read: null,
  ledger_drain: null,
  ledger_emit_p50: null,
  leads_intake: null,
  analytics_beacon: null,
});

// The ledger: emit latency, a batch read and drain throughput, beside the same SQL in plain JS.
let ledger = null;
if (!process.argv.includes("--no-ledger")) {
  const { runEventsBench } = await import("./events-bench.mjs");
  ledger = await runEventsBench({ emits: option("emits", 300), batch: option("batch", 500) });
  ratios.ledger_read = round(ledger.js.readP50 / ledger.cpp.readP50, 3);
  ratios.ledger_drain = round(ledger.cpp.eventsPerSecond / ledger.js.eventsPerSecond, 3);
  ratios.ledger_emit_p50 = round(ledger.js.emitP50 / ledger.cpp.emitP50, 3);
}

const roundAll = (o) =>
  Array.isArray(o)
    ? o.map((v) => (typeof v === "number" ? round(v) : v))
    : Object.fromEntries(
        Object.entries(o).map(([k, v]) => [
          k,
          typeof v === "number" ? round(v) : v && typeof v === "object" ? roundAll(v) : v,
        ]),
      );
startFigures({
  ratios,
  gzip_kib: gzipKib,
  leads_p99_ms: null, // filled in by the leads part (tests/bench/leads-load.mjs) when it runs
  settings: { requests: REQUESTS, rounds: ROUNDS, concurrency: CONCURRENCY, instantiations: INSTANTIATIONS },
  wasm: roundAll(figures.wasm),
  health: roundAll(figures.health),
  ledger: ledger && roundAll(ledger),
});
