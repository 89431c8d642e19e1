#!/usr/bin/env node
// The analytics beacon through two or more builds of the C++ worker side by side (a host or core
// change before and after), through the same Miniflare and the same requests analytics-peer.mjs sends:
// each variant is a worker of its own, provisioned alike, and each round runs every variant once, in
// an order that rotates round by round, so each variant is first, second, … equally often (the first
// phase after another's is measurably slower: docs/performance.md). Per variant: medians of beacons/s
// and of workerd CPU per beacon over the rounds, and per round the CPU difference from the first
// variant, whose median is the figure to read (one workerd, so a round's load weighs on all alike).
//   node tests/bench/beacon-ab.mjs --variant old=DIR[:WASMDIR] --variant new=DIR[:WASMDIR]
//        [--beacons 2000] [--concurrency 16] [--rounds 6] [--warmup 500]
// A variant is a directory holding bindings/ and the wasm modules (variants.mjs); without any, this
// checkout alone.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { provisionPeers } from "./analytics-peer.mjs";
import { beaconInit } from "./beacon-mix.mjs";
import { loadPhase, middle } from "./peer-run.mjs";
import { arg, variantsFromArgs } from "./variants.mjs";
import { platformWorkerOptions } from "./worker-options.mjs";
import { workerdCpuMs } from "./workerd-cpu.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BEACONS = Number(arg("beacons", 2000));
const CONCURRENCY = Number(arg("concurrency", 16));
// Rounded up to a multiple of the builds, so that each is first, second, … equally often.
const variants = variantsFromArgs();
const ROUNDS = Math.ceil(Number(arg("rounds", 6)) / variants.length) * variants.length;
const WARMUP = Number(arg("warmup", 500));

// One shim per variant under build/ab/shims (modulesRoot is the checkout), as workers/analytics/worker.js.
const SHIMS = path.join(ROOT, "build/ab/shims");
mkdirSync(SHIMS, { recursive: true });
function shim(variant) {
  const file = path.join(SHIMS, `beacon-${variant.name}.js`);
  const rel = (p) => path.relative(SHIMS, p).split(path.sep).join("/");
  writeFileSync(
    file,
    `import wasm from "${rel(path.join(variant.wasm, "analytics.wasm"))}";\n` +
      `import { defineWorker } from "${rel(path.join(variant.bindings, "host.js"))}";\n` +
      `export default defineWorker(wasm, { service: "siteswarm-analytics-service", cf: ["country", "colo"] });\n`,
  );
  return file;
}

const { Miniflare } = await import("miniflare");
const { randomBytes } = await import("node:crypto");
const adminToken = randomBytes(24).toString("hex");
const names = variants.map((v) => `beacon-${v.name}`);
const options = [];
for (const [i, variant] of variants.entries()) {
  options.push(
    await platformWorkerOptions("analytics", {
      name: names[i],
      scriptPath: shim(variant),
      bindings: { PLATFORM_ADMIN_TOKEN: adminToken },
      queueConsumers: {},
      d1Databases: { ANALYTICS_DB: `bench-ab-${variant.name}` },
    }),
  );
}
if (workerdCpuMs() === null) throw new Error("beacon-ab.mjs reads workerd's CPU from /proc: Linux only");
const mf = new Miniflare({ cf: false, workers: options });
try {
  await mf.ready;
  const tokens = [];
  for (const cppName of names) tokens.push((await provisionPeers(mf, adminToken, { cppName, cppOnly: true })).token);
  const workers = await Promise.all(names.map((name) => mf.getWorker(name)));
  const phase = (i, count) =>
    loadPhase({
      count,
      concurrency: CONCURRENCY,
      send: (n) => workers[i].fetch("http://analytics/beacon", beaconInit(n, "bakery", tokens[i])),
    });
  for (const i of variants.keys()) await phase(i, WARMUP);
  const figures = variants.map(() => ({ rps: [], cpu: [] }));
  const diffs = variants.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    const order = variants.map((_, k) => (k + r) % variants.length);
    const cpu = [];
    for (const i of order) {
      const done = await phase(i, BEACONS);
      if ((done.statuses.get(202) ?? 0) !== BEACONS) throw new Error(`${names[i]}: ${[...done.statuses]}`);
      figures[i].rps.push(done.rps);
      figures[i].cpu.push(done.workerdCpuMsPerRequest);
      cpu[i] = done.workerdCpuMsPerRequest;
    }
    for (const i of variants.keys()) diffs[i].push(cpu[i] - cpu[0]);
  }
  console.log(
    `\nbeacons through ${variants.length} builds, ${ROUNDS} rotating rounds of ${BEACONS} at c=${CONCURRENCY}:`,
  );
  for (const [i, v] of variants.entries()) {
    const f = figures[i];
    const d =
      i === 0
        ? ""
        : `  CPU vs ${variants[0].name}: ${(middle(diffs[i]) * 1000).toFixed(0)} µs [${diffs[i].map((x) => (x * 1000).toFixed(0)).join(" ")}]`;
    console.log(
      `  ${v.name.padEnd(10)} ${middle(f.rps).toFixed(0).padStart(5)} beacons/s  CPU ${(middle(f.cpu) * 1000).toFixed(0)} µs/beacon [${f.cpu.map((x) => (x * 1000).toFixed(0)).join(" ")}]${d}`,
    );
  }
} finally {
  await mf.dispose();
}
