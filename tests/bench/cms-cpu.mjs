#!/usr/bin/env node
// The cms read's CPU without workerd: the real dist/wasm/cms.wasm through the real bindings/host.js in
// Node (V8, the engine workerd embeds) beside a plain-JS handler that reads the same KV key and returns
// it, both against the same in-memory KV (and, for the cms, D1's tenant row), each answered after a
// macrotask as real I/O would be. What is left is each side's own CPU per request — the figure
// cms-bench.mjs measures as throughput inside workerd — and, for the C++ side, the host's profile of a
// run (bindings/instance.js newProfile: JSON both ways, copies, the core). Rounds alternate (C++ first,
// then JS first, …) so a drifting load weighs on both; a machine shared with other work moves both
// sides alike, so the ratio is steadier than req/s.
//
//   node tests/bench/cms-cpu.mjs [--requests 2000] [--rounds 6] [--wasm FILE]
// --wasm runs another build of cms.wasm (a before/after comparison) instead of dist/wasm's.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineWorker, setProfileSink } from "../../bindings/host.js";
import { option, round } from "./json-out.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const REQUESTS = option("requests", 2000);
const ROUNDS = option("rounds", 6);
const TENANT = "bakery";
const TOKEN = randomBytes(24).toString("hex");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sha = (s) => createHash("sha256").update(s).digest("hex");
const io = () => new Promise((resolve) => setImmediate(resolve));

const manifest = JSON.parse(readFileSync(path.join(ROOT, "examples/bakery/swarm.config.json"), "utf8"));
const now = new Date().toISOString();
const tenantRow = {
  tenant_id: TENANT,
  token_hash: sha(TOKEN),
  admin_token_hash: sha(`${TOKEN}-admin`),
  config_json: JSON.stringify({ timezone: manifest.fallback.hours.timezone, fallback: manifest.fallback }),
  enabled: 1,
  created_at: now,
  updated_at: now,
};
// D1: the tenant row; the content tables are empty (version 0: the manifest snapshot).
const fakeD1 = {
  prepare(sql) {
    const row = /FROM tenants/.test(sql) ? tenantRow : null;
    const stmt = {
      bind: () => stmt,
      async first() {
        await io();
        return row;
      },
      async raw() {
        await io();
        return row ? [Object.keys(row), Object.values(row)] : [];
      },
      async run() {
        await io();
        return { meta: { changes: 0 } };
      },
    };
    return stmt;
  },
  async batch(stmts) {
    await io();
    return stmts.map(() => ({ results: [], meta: { changes: 0 } }));
  },
};
const kv = new Map();
const fakeKv = {
  async get(key) {
    await io();
    return kv.get(key) ?? null;
  },
  async put(key, value) {
    await io();
    kv.set(key, value);
  },
  async delete(key) {
    await io();
    kv.delete(key);
  },
};
const env = { CMS_DB: fakeD1, CMS_CACHE: fakeKv };

const wasmArg = process.argv.indexOf("--wasm");
const WASM = wasmArg > 0 ? path.resolve(process.argv[wasmArg + 1]) : path.join(ROOT, "dist/wasm/cms.wasm");
const cpp = defineWorker(new WebAssembly.Module(readFileSync(WASM)), { service: "siteswarm-cms-service" });
const js = {
  async fetch(_request, env) {
    const doc = await env.CMS_CACHE.get(`content:v1:${TENANT}`);
    return new Response(doc, { headers: { "content-type": "application/json" } });
  },
};
const headers = { "X-SiteSwarm-Tenant-Id": TENANT, "X-SiteSwarm-Tenant-Token": TOKEN };

// CPU ms per request (user + system of this process) over `count` requests, one at a time.
async function phase(worker, url, count, phaseEnv = env) {
  const t = process.cpuUsage();
  for (let n = 0; n < count; n++) {
    const res = await worker.fetch(new Request(url, { headers }), phaseEnv, { waitUntil() {} });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${body}`);
  }
  const used = process.cpuUsage(t);
  return (used.user + used.system) / 1000 / count;
}

const profiles = [];
setProfileSink((r) => profiles.push(r));
await phase(cpp, "http://cms/v1/content", 1); // fills KV from D1
const first = await (await cpp.fetch(new Request("http://cms/v1/content", { headers }), env, {})).json();
if (first.source !== "kv") throw new Error(`cms did not serve from KV: ${first.source}`);
const phases = {
  content: () => phase(cpp, "http://cms/v1/content", REQUESTS),
  status: () => phase(cpp, "http://cms/v1/status", REQUESTS),
  js: () => phase(js, "http://js/", REQUESTS),
};
for (const run of Object.values(phases)) await run(); // compile, tier up
profiles.length = 0;

const figures = { content: [], status: [], js: [] };
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? ["content", "status", "js"] : ["js", "status", "content"];
  for (const key of order) figures[key].push(await phases[key]());
}
// One profiled /v1/content phase at the end (the profile's own timing costs CPU, so it is kept apart).
await phase(cpp, "http://cms/v1/content", REQUESTS, { ...env, SS_PROFILE: "1" });
const buckets = Object.keys(profiles[0]).filter((k) => typeof profiles[0][k] === "number" && k !== "io_wait_ms");
const profile = Object.fromEntries(
  buckets.map((k) => [k, round(profiles.reduce((sum, p) => sum + p[k], 0) / profiles.length, 4)]),
);

const ms = (key) => median(figures[key]);
const list = (key) => figures[key].map((x) => x.toFixed(3)).join(", ");
console.log(`\ncms read CPU in Node (${ROUNDS} alternating rounds of ${REQUESTS}; median ms per request):`);
console.log(`  ${path.relative(ROOT, WASM)}`);
console.log(
  `  cms /v1/content (kv): ${ms("content").toFixed(3)}  [${list("content")}]  JS/C++ ${(ms("js") / ms("content")).toFixed(2)}×`,
);
console.log(
  `  cms /v1/status:       ${ms("status").toFixed(3)}  [${list("status")}]  JS/C++ ${(ms("js") / ms("status")).toFixed(2)}×`,
);
console.log(`  plain-JS KV read:     ${ms("js").toFixed(3)}  [${list("js")}]`);
console.log("  /v1/content run profile, mean per request (ms; io_wait left out):");
for (const [k, v] of Object.entries(profile)) console.log(`    ${k.padEnd(16)} ${v}`);
