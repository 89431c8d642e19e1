// V8's sampling profile of the analytics beacon inside workerd, the C++ worker (analytics.wasm) and its
// plain-JS peer (tests/bench/analytics-js.js) in one Miniflare, each under the same load in turn, summed
// by function: where each implementation's CPU per beacon goes in the real runtime.
//   node tests/bench/beacon-profile.mjs [--beacons 4000] [--concurrency 16] [--interval-us 100] [--top 30]
//     [--inspector-port 9339] [--side cpp|js|both]
// Wasm frames are named only when the module carries a name section (docs/performance.md "Profiles
// inside workerd"); otherwise they add up under "(wasm, all)".
import { randomBytes } from "node:crypto";
import { beaconInit } from "./beacon-mix.mjs";
import { profileWhile, selfTimes } from "./inspector.mjs";
import { option } from "./json-out.mjs";
import { arg as stringOption } from "./variants.mjs";

const PORT = option("inspector-port", 9339);
const BEACONS = option("beacons", 4000);
const CONCURRENCY = option("concurrency", 16);
const INTERVAL = option("interval-us", 100);
const TOP = option("top", 30);
const SIDE = stringOption("side", "both");
const { workerOptions, provisionPeers } = await import("./analytics-peer.mjs");

const { Miniflare } = await import("miniflare");
const adminToken = randomBytes(24).toString("hex");
const mf = new Miniflare({ cf: false, inspectorPort: PORT, workers: await workerOptions(adminToken) });
try {
  await mf.ready;
  const { workers, token } = await provisionPeers(mf, adminToken);
  const targets = await (await fetch(`http://127.0.0.1:${PORT}/json`)).json();
  for (const side of SIDE === "both" ? ["cpp", "js"] : [SIDE]) {
    const name = side === "cpp" ? "siteswarm-analytics-service" : "bench-analytics-js";
    const worker = workers[side];
    const send = async (n) => {
      const res = await worker.fetch("http://analytics/beacon", beaconInit(n, "bakery", token));
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`${side}: beacon ${res.status}`);
    };
    for (let i = 0; i < 500; i++) await send(i); // warm-up: compile, tier up, the salt cached
    const target = targets.find((t) => t.title.includes(`core:user:${name}`));
    if (!target) throw new Error(`no inspector target for ${name}: ${targets.map((t) => t.title).join(", ")}`);
    let next = 0;
    const profile = await profileWhile(target, INTERVAL, () =>
      Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let n = next++; n < BEACONS; n = next++) await send(n);
        }),
      ),
    );
    const { total, wasm, rows } = selfTimes(profile);
    const per = (us) => (us / BEACONS).toFixed(1);
    console.log(`\n${side} (${name}): ${BEACONS} beacons, busy ${per(total)} µs per beacon (sampled)`);
    console.log(`  (wasm, all)  ${per(wasm)} µs  ${((wasm / total) * 100).toFixed(1)} %`);
    for (const [fn, us] of rows.slice(0, TOP))
      console.log(`  ${per(us).padStart(7)} µs  ${((us / total) * 100).toFixed(1).padStart(5)} %  ${fn}`);
  }
} finally {
  await mf.dispose();
}
