#!/usr/bin/env node
// /health req/s of the platform workers beside the plain-JS hello-world worker, interleaved: each round
// measures hello, then every variant of every worker, so a machine whose load drifts (docs/performance.md)
// hits all of them alike; medians over the rounds. Beside req/s, the CPU the workerd process used per
// request (tests/bench/workerd-cpu.mjs), which a loaded machine distorts far less than req/s. A variant is a directory holding bindings/ (a copy of
// the JS host) and the wasm modules, e.g. a copy of main's for a before/after comparison:
//   node tests/bench/health-ab.mjs [--workers leads,events] [--rounds 5] [--requests 1000]
//        [--concurrency 16] [--variant name=DIR[:WASMDIR]] …   (default: "current" = this checkout)
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { applyMigrations } from "../../scripts/lib/local-mesh.mjs";
import { PLATFORM_WORKERS } from "../../scripts/lib/workers.mjs";
import { arg, benchWorkers, median, variantsFromArgs } from "./variants.mjs";
import { platformWorkerOptions } from "./worker-options.mjs";
import { workerdCpuMs } from "./workerd-cpu.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const WORKERS = benchWorkers();
const ROUNDS = Number(arg("rounds", 5));
const REQUESTS = Number(arg("requests", 1000));
const CONCURRENCY = Number(arg("concurrency", 16));
const variants = variantsFromArgs();

async function load(url) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) {
        const res = await fetch(url);
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
      }
    }),
  );
  return REQUESTS / ((performance.now() - started) / 1000);
}

// One shim per worker and variant, under build/ab/shims (modulesRoot is the checkout).
const SHIMS = path.join(ROOT, "build/ab/shims");
mkdirSync(SHIMS, { recursive: true });
function shim(variant, key) {
  const file = path.join(SHIMS, `${variant.name}-${key}.js`);
  const rel = (p) => path.relative(SHIMS, p).split(path.sep).join("/");
  writeFileSync(
    file,
    `import wasm from "${rel(path.join(variant.wasm, PLATFORM_WORKERS[key].wasm))}";\n` +
      `import { defineWorker } from "${rel(path.join(variant.bindings, "host.js"))}";\n` +
      `export default defineWorker(wasm, { service: "${PLATFORM_WORKERS[key].name}" });\n`,
  );
  return file;
}

const { Miniflare } = await import("miniflare");
const servers = [];
// Each worker's D1 gets its migrations first, as deployed (and as bench.mjs does): the ledger's /health
// reads its drain state, and on an empty database it would measure an error path.
async function serve(label, options, key) {
  const mf = new Miniflare({ cf: false, host: "127.0.0.1", port: 0, workers: [{ name: label, ...options }] });
  const url = new URL("/health", await mf.ready);
  const migrations = key && path.join(ROOT, "migrations", key);
  for (const binding of Object.keys(options.d1Databases ?? {})) {
    if (existsSync(migrations)) await applyMigrations(await mf.getD1Database(binding, label), migrations);
  }
  await load(url); // warm-up
  servers.push({ label, mf, url, rps: [], cpu: [] });
}
await serve("hello", { modules: true, scriptPath: path.join(ROOT, "tests/bench/hello.js") });
for (const key of WORKERS) {
  for (const variant of variants) {
    await serve(`${key}/${variant.name}`, await platformWorkerOptions(key, { scriptPath: shim(variant, key) }), key);
  }
}
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const s of servers) {
      // Only this server is busy meanwhile: the delta of all workerd CPU is its own (an upper bound).
      const before = workerdCpuMs();
      s.rps.push(await load(s.url));
      s.cpu.push(((workerdCpuMs() - before) * 1000) / REQUESTS);
    }
    const hello = servers[0].rps.at(-1);
    console.log(
      `round ${r + 1}: ${servers.map((s) => `${s.label} ${s.rps.at(-1).toFixed(0)} (${(s.rps.at(-1) / hello).toFixed(2)}; ${s.cpu.at(-1).toFixed(0)} µs)`).join(", ")}`,
    );
  }
  const hello = servers[0].rps;
  console.log(`\nmedians over ${ROUNDS} rounds, ${REQUESTS} requests at concurrency ${CONCURRENCY}:`);
  for (const s of servers) {
    const ratio = median(s.rps.map((v, i) => v / hello[i]));
    console.log(
      `  ${s.label.padEnd(22)} ${median(s.rps).toFixed(0).padStart(6)} req/s, over hello ${ratio.toFixed(2)} (per-round ratio, median); workerd CPU ${median(s.cpu).toFixed(0)} µs per request`,
    );
  }
} finally {
  for (const s of servers) await s.mf.dispose();
}
