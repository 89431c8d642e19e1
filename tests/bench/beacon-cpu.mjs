#!/usr/bin/env node
// Where the analytics beacon's CPU goes, without workerd: the real dist/wasm/analytics.wasm through the
// real bindings/host.js in Node (V8, the engine workerd embeds) beside the plain-JS peer
// (tests/bench/analytics-js.js) in the same process, both against the same in-memory stand-ins for D1
// (the tenant row and the day's salt, answered after a macrotask as real I/O would be), Analytics
// Engine and the queue. What is left is each implementation's own CPU per beacon — the work
// analytics-peer.mjs measures inside workerd among D1's and the queue broker's — and, for the C++ side,
// the host's profile of a run (bindings/instance.js newProfile: JSON both ways, copies, the core).
// Rounds alternate the two (C++ then JS, then JS then C++, …) so a drifting load weighs on both.
//
//   node tests/bench/beacon-cpu.mjs [--beacons 2000] [--rounds 6] [--wasm FILE] [--json FILE]
// --wasm runs another build of analytics.wasm (a before/after comparison) instead of dist/wasm's.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineWorker, setProfileSink } from "../../bindings/host.js";
import { beaconBindings } from "./beacon-fakes.mjs";
import { beaconInit } from "./beacon-mix.mjs";
import { mergeFigures, option, round } from "./json-out.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BEACONS = option("beacons", 2000);
const ROUNDS = option("rounds", 6);
const TENANT = "bakery";
const TOKEN = randomBytes(24).toString("hex");
const SALT = randomBytes(32).toString("hex");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sha = (s) => createHash("sha256").update(s).digest("hex");
const io = () => new Promise((resolve) => setImmediate(resolve));

// The two rows a beacon reads, by table; every other statement answers nothing.
const now = new Date().toISOString();
const tenantRow = {
  tenant_id: TENANT,
  token_hash: sha(TOKEN),
  admin_token_hash: sha(`${TOKEN}-admin`),
  config_json: JSON.stringify({ hosts: ["crumbandcrust.example"] }),
  enabled: 1,
  created_at: now,
  updated_at: now,
};
const saltRow = { salt_hex: SALT };
const rowFor = (sql) => (/FROM tenants/.test(sql) ? tenantRow : /FROM salts/.test(sql) ? saltRow : null);
const { bindings: baseEnv, counts } = beaconBindings(rowFor, io);
const cppEnv = { ...baseEnv, ANALYTICS_RETENTION_DAYS: "730" };
const crawlers = JSON.parse(readFileSync(path.join(ROOT, "node_modules/crawler-user-agents/crawler-user-agents.json")));
const jsEnv = { ...baseEnv, CRAWLER_PATTERNS: JSON.stringify(crawlers.map((c) => c.pattern)) };

const wasmArg = process.argv.indexOf("--wasm");
const WASM = wasmArg > 0 ? path.resolve(process.argv[wasmArg + 1]) : path.join(ROOT, "dist/wasm/analytics.wasm");
const cpp = defineWorker(new WebAssembly.Module(readFileSync(WASM)), {
  service: "siteswarm-analytics-service",
});
const js = (await import("./analytics-js.js")).default;

const beacon = (n) => new Request("http://analytics/beacon", beaconInit(n, TENANT, TOKEN));

// CPU ms per beacon (user + system of this process) over `count` beacons, one at a time.
async function phase(worker, env, count) {
  const t = process.cpuUsage();
  for (let n = 0; n < count; n++) {
    const res = await worker.fetch(beacon(n), env, { waitUntil() {} });
    if (res.status !== 202) throw new Error(`beacon ${n}: ${res.status} ${await res.text()}`);
  }
  const used = process.cpuUsage(t);
  return (used.user + used.system) / 1000 / count;
}

const profiles = [];
setProfileSink((r) => profiles.push(r));
await phase(cpp, cppEnv, 200); // compile, tier up, the salt and the crawler rules cached
await phase(js, jsEnv, 200);
profiles.length = 0;

const figures = { cpp: [], js: [] };
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? ["cpp", "js"] : ["js", "cpp"];
  for (const impl of order) {
    figures[impl].push(await phase(impl === "cpp" ? cpp : js, impl === "cpp" ? cppEnv : jsEnv, BEACONS));
  }
}
// One profiled C++ phase at the end (the profile's own timing costs CPU, so it is kept apart).
await phase(cpp, { ...cppEnv, SS_PROFILE: "1" }, BEACONS);
const buckets = Object.keys(profiles[0]).filter((k) => typeof profiles[0][k] === "number" && k !== "io_wait_ms");
const profile = Object.fromEntries(
  buckets.map((k) => [k, round(profiles.reduce((sum, p) => sum + p[k], 0) / profiles.length, 4)]),
);

const cppMs = median(figures.cpp);
const jsMs = median(figures.js);
console.log(`\nbeacon CPU in Node (${ROUNDS} alternating rounds of ${BEACONS}; median ms per beacon):`);
console.log(
  `  C++ (analytics.wasm + bindings/host.js): ${cppMs.toFixed(3)}  [${figures.cpp.map((x) => x.toFixed(3)).join(", ")}]`,
);
console.log(
  `  plain JS (analytics-js.js):               ${jsMs.toFixed(3)}  [${figures.js.map((x) => x.toFixed(3)).join(", ")}]`,
);
console.log(`  JS / C++: ${(jsMs / cppMs).toFixed(2)}×`);
console.log("  C++ run profile, mean per beacon (ms; io_wait left out):");
for (const [k, v] of Object.entries(profile)) console.log(`    ${k.padEnd(16)} ${v}`);
console.log(`  (${counts.points} AE points, ${counts.sent} queue sends in all)`);
mergeFigures({
  beacon_cpu: {
    beacons: BEACONS,
    rounds: ROUNDS,
    cpp_ms: round(cppMs, 4),
    js_ms: round(jsMs, 4),
    js_over_cpp: round(jsMs / cppMs, 3),
    cpp_profile: profile,
  },
});
