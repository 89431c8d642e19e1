// The analytics beacon's own CPU inside workerd, part by part: tests/bench/beacon-loop-worker.js runs
// a loop of beacons inside one request, and workerd's CPU (/proc) around that request, divided by the
// count, is the worker's own work per beacon — the C++ path (host + core), the plain-JS peer, and the
// parts of the C++ path measured alone. Without the HTTP, the Miniflare routing and the bindings'
// services that analytics-peer.mjs measures around the same work, what is left is the difference the
// two implementations make (docs/performance.md, "The beacon inside workerd"). Parts alternate in
// order round by round; figures are medians (µs per beacon, the request part subtracted from the rest).
//   node tests/bench/beacon-loop.mjs [--beacons 5000] [--rounds 5] [--parts host,peer,core,+message,...]
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { option } from "./json-out.mjs";
import { arg } from "./variants.mjs";
import { workerdCpuMs } from "./workerd-cpu.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BEACONS = option("beacons", 5000);
const ROUNDS = option("rounds", 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const { Miniflare } = await import("miniflare");
const { MODULE_RULES } = await import("../../scripts/lib/local-mesh.mjs");
const mf = new Miniflare({
  cf: false,
  modules: true,
  scriptPath: path.join(ROOT, "tests/bench/beacon-loop-worker.js"),
  modulesRoot: ROOT,
  modulesRules: MODULE_RULES,
  compatibilityDate: "2026-04-20",
});
try {
  await mf.ready;
  const worker = await mf.getWorker();
  const token = randomBytes(24).toString("hex");
  const sha = (s) => createHash("sha256").update(s).digest("hex");
  const now = new Date().toISOString();
  const crawlers = JSON.parse(
    readFileSync(path.join(ROOT, "node_modules/crawler-user-agents/crawler-user-agents.json")),
  );
  const setup = await worker.fetch("http://loop/setup", {
    method: "POST",
    body: JSON.stringify({
      token,
      digest: sha(token),
      salt: randomBytes(32).toString("hex"),
      crawlers: JSON.stringify(crawlers.map((c) => c.pattern)),
      row: {
        tenant_id: "bakery",
        token_hash: sha(token),
        admin_token_hash: sha(`${token}-admin`),
        config_json: JSON.stringify({ hosts: ["crumbandcrust.example"] }),
        enabled: 1,
        created_at: now,
        updated_at: now,
      },
    }),
  });
  const all = (await setup.json()).parts;
  const parts = ["request", ...arg("parts", all.filter((p) => p !== "request").join(",")).split(",")];
  const cpuPerBeacon = async (part, n) => {
    const before = workerdCpuMs();
    const res = await worker.fetch(`http://loop/?part=${encodeURIComponent(part)}&n=${n}`);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${part}: ${text}`);
    return ((workerdCpuMs() - before) / n) * 1000;
  };
  for (const part of parts) await cpuPerBeacon(part, 2000); // compile, tier up, caches
  const us = Object.fromEntries(parts.map((p) => [p, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const part of round % 2 ? [...parts].reverse() : parts) us[part].push(await cpuPerBeacon(part, BEACONS));
  }
  const base = median(us.request);
  console.log(
    `workerd CPU per beacon inside one request, ${ROUNDS} rounds of ${BEACONS} (medians; request = ${base.toFixed(0)} µs, subtracted):`,
  );
  for (const part of parts.slice(1)) {
    console.log(
      `  ${part.padEnd(12)} ${(median(us[part]) - base).toFixed(0).padStart(5)} µs   [${us[part].map((x) => (x - base).toFixed(0)).join(" ")}]`,
    );
  }
  if (us.host && us.peer)
    console.log(`  peer / host: ${((median(us.peer) - base) / (median(us.host) - base)).toFixed(2)}×`);
} finally {
  await mf.dispose();
}
