#!/usr/bin/env node
// scripts/bench, cms part: requests per second on local workerd (Miniflare, the whole mesh) for
//   GET /v1/content served from KV, GET /v1/status, and a plain-JS worker that reads the same KV key
//   and returns it (the baseline), in the same run, in interleaved rounds (JS, content, status, then
//   content, status, JS, …: load that comes and goes on a shared machine hits all three alike, and no
//   phase always runs first; each figure is the
//   median over the rounds, each ratio the median of the per-round ratios); then the CPU time of one
//   status computation in the cms core (dist/wasm/cms.wasm in Node, through the test hook
//   POST /__test/zone).
//   node tests/bench/cms-bench.mjs [--cms-requests 1000] [--cms-rounds 5] [--concurrency 16] [--no-replay]
//     [--json FILE]
//   (--cms-requests per phase and round)
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startMesh } from "../integration/mesh.mjs";
import { mergeFigures, option, round } from "./json-out.mjs";
import { workerdCpuMs } from "./workerd-cpu.mjs";
import { rawCoreExports } from "../integration/raw-core.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const REQUESTS = option("cms-requests", 1000);
const ROUNDS = option("cms-rounds", 5);
const CONCURRENCY = option("concurrency", 16);
const KV_ID = "00000000-0000-4000-8000-000000000006"; // CMS_CACHE in wrangler/cms.jsonc

const BASELINE = {
  name: "cms-js-baseline",
  modules: true,
  compatibilityDate: "2026-04-20",
  kvNamespaces: { CMS_CACHE: KV_ID },
  script: `export default {
    async fetch(request, env) {
      const doc = await env.CMS_CACHE.get("content:v1:bakery");
      return new Response(doc, { headers: { "content-type": "application/json" } });
    },
  };`,
};

async function load(fetchOnce) {
  let next = 0;
  let failures = 0;
  const cpuBefore = workerdCpuMs();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) {
        const res = await fetchOnce();
        await res.arrayBuffer();
        if (res.status !== 200) failures++;
      }
    }),
  );
  const rps = Math.round(REQUESTS / ((performance.now() - started) / 1000));
  const cpuAfter = workerdCpuMs();
  // workerd CPU per request (every workerd process of the mesh; null off Linux): steadier than req/s
  // when other work shares the machine.
  const cpuMs = cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) / REQUESTS;
  return { rps, failures, cpuMs };
}

function statusCpu() {
  const ex = rawCoreExports(path.join(ROOT, "dist/wasm/cms.wasm"));
  const manifest = JSON.parse(readFileSync(path.join(ROOT, "examples/bakery/swarm.config.json"), "utf8"));
  const instants = Array.from({ length: 2000 }, (_, i) => Date.UTC(2026, 0, 1) / 1000 + i * 7919);
  const body = JSON.stringify({ zone: "America/New_York", weekly: manifest.fallback.hours.weekly, instants });
  const message = new TextEncoder().encode(
    JSON.stringify({
      op: "fetch",
      now: Date.now(),
      entropy: randomBytes(32).toString("hex"),
      env: { SITESWARM_TEST_HOOKS: "1" },
      request: { method: "POST", url: "https://cms.internal/__test/zone", headers: {}, body },
    }),
  );
  const run = () => {
    const ptr = ex.ss_alloc(message.length);
    new Uint8Array(ex.memory.buffer, ptr, message.length).set(message);
    const id = ex.ss_start(ptr, message.length);
    ex.ss_free(ptr);
    ex.ss_drop(id);
  };
  run(); // warm-up
  const t = performance.now();
  run();
  return ((performance.now() - t) * 1000) / instants.length;
}

// --no-replay: SS_REPLAY=0 for the cms worker, so every request runs the core (bindings/replay.js):
// the figure of the core path alone, beside the default run's (docs/performance.md).
const NO_REPLAY = process.argv.includes("--no-replay");
const mesh = await startMesh({
  extraWorkers: [BASELINE],
  bindings: NO_REPLAY ? { cms: { SS_REPLAY: "0" } } : {},
});
try {
  const headers = mesh.tenantHeaders("bakery");
  const cms = await mesh.mf.getWorker("siteswarm-cms-service");
  const baseline = await mesh.mf.getWorker(BASELINE.name);
  const first = await (await cms.fetch("http://localhost/v1/content", { headers })).json(); // fills KV
  const check = await (await cms.fetch("http://localhost/v1/content", { headers })).json();
  if (first.tenantId !== "bakery" || check.source !== "kv")
    throw new Error(`cms did not serve from KV: ${check.source}`);
  const rounds = [];
  const phases = {
    js: () => baseline.fetch("http://localhost/"),
    content: () => cms.fetch("http://localhost/v1/content", { headers }),
    status: () => cms.fetch("http://localhost/v1/status", { headers }),
  };
  const order = Object.keys(phases);
  for (let i = 0; i < ROUNDS; i++) {
    // The phases' order rotates from round to round, so none always runs first or after another.
    const round = {};
    for (let k = 0; k < order.length; k++) {
      const name = order[(i + k) % order.length];
      round[name] = await load(phases[name]);
    }
    rounds.push(round);
  }
  const median = (xs) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  };
  const rps = (key) => Math.round(median(rounds.map((r) => r[key].rps)));
  const failures = (key) => rounds.reduce((n, r) => n + r[key].failures, 0);
  const ratio = (key) => median(rounds.map((r) => r[key].rps / r.js.rps));
  const range = (key) => {
    const xs = rounds.map((r) => r[key].rps / r.js.rps);
    return `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  };
  const cpu = (key) => (rounds.every((r) => r[key].cpuMs !== null) ? median(rounds.map((r) => r[key].cpuMs)) : null);
  const cpuRatio = (key) =>
    rounds.every((r) => r[key].cpuMs && r.js.cpuMs) ? median(rounds.map((r) => r.js.cpuMs / r[key].cpuMs)) : null;
  const cpuText = (key) =>
    cpu(key) === null
      ? ""
      : `  workerd CPU ${cpu(key).toFixed(3)} ms/req${key === "js" ? "" : ` (JS/C++ ${cpuRatio(key).toFixed(2)}×)`}`;
  console.log(
    `cms bench: ${ROUNDS} interleaved rounds of ${REQUESTS} requests per phase, concurrency ${CONCURRENCY}, local workerd (median round)${NO_REPLAY ? ", replays off (every request runs the core)" : ""}`,
  );
  console.log(
    `  plain-JS KV read        ${String(rps("js")).padStart(6)} req/s  (failures ${failures("js")})${cpuText("js")}`,
  );
  console.log(
    `  cms /v1/content (kv)    ${String(rps("content")).padStart(6)} req/s  ${ratio("content").toFixed(2)}× JS (rounds ${range("content")})  (failures ${failures("content")})${cpuText("content")}`,
  );
  console.log(
    `  cms /v1/status          ${String(rps("status")).padStart(6)} req/s  ${ratio("status").toFixed(2)}× JS (rounds ${range("status")})  (failures ${failures("status")})${cpuText("status")}`,
  );
  const statusUs = statusCpu();
  console.log(`  status computation      ${statusUs.toFixed(1)} µs CPU each (wasm in Node, incl. nextChange)`);
  mergeFigures({
    ratios: NO_REPLAY ? {} : { cms_content_kv: round(ratio("content"), 3), cms_status: round(ratio("status"), 3) },
    [NO_REPLAY ? "cms_no_replay" : "cms"]: {
      rounds: ROUNDS,
      js_kv_rps: rps("js"),
      content_rps: rps("content"),
      status_rps: rps("status"),
      status_cpu_us: round(statusUs),
      workerd_cpu_ms: { js: cpu("js"), content: cpu("content"), status: cpu("status") },
      workerd_cpu_ratio: { content: cpuRatio("content"), status: cpuRatio("status") },
    },
  });
} finally {
  await mesh.dispose();
}
