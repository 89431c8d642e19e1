#!/usr/bin/env node
// CPU per GET /health through the JS host (bindings/host.js) in Node's V8, no HTTP: what a /health hit
// costs the worker itself (this process's CPU time, which other processes' load distorts less than wall time),
// beside a plain-JS handler answering the same JSON, interleaved rounds and
// medians (a loaded machine moves absolute figures; the difference between the columns is the host and
// the core). D1 bindings are a stub answering no rows at once (events' /health reads one query).
//   node tests/bench/health-host.mjs [--workers leads,events] [--requests 2000] [--rounds 7]
//        [--variant name=DIR[:WASMDIR]] …   (default "current": this checkout's bindings/ and dist/wasm/)
// With SS_PROFILE=1 also the median time split of a run (bindings/instance.js newProfile), in µs.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { PLATFORM_WORKERS } from "../../scripts/lib/workers.mjs";
import { arg, benchWorkers, median, variantsFromArgs } from "./variants.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const WORKERS = benchWorkers();
const REQUESTS = Number(arg("requests", 2000));
const ROUNDS = Number(arg("rounds", 7));
const variants = variantsFromArgs();
const hello = { fetch: () => Response.json({ ok: true, service: "hello", version: "0.1.0" }) };
// What a request carries in workerd: its headers and a request.cf (Miniflare's placeholder, the shape of
// production's; Node's Request has none).
const CF = {
  asOrganization: "",
  asn: 395747,
  colo: "DFW",
  city: "Austin",
  region: "Texas",
  regionCode: "TX",
  metroCode: "635",
  postalCode: "78701",
  country: "US",
  continent: "NA",
  timezone: "America/Chicago",
  latitude: "30.27130",
  longitude: "-97.74260",
  clientTcpRtt: 0,
  httpProtocol: "HTTP/1.1",
  requestPriority: "weight=192;exclusive=0",
  tlsCipher: "AEAD-AES128-GCM-SHA256",
  tlsVersion: "TLSv1.3",
  tlsClientAuth: { certPresented: "0", certVerified: "NONE", certRevoked: "0" },
  edgeRequestKeepAliveStatus: 0,
  clientTrustScore: 99,
  botManagement: { corporateProxy: false, verifiedBot: false, staticResource: false, detectionIds: [], score: 99 },
  clientAcceptEncoding: "gzip, deflate",
};
const HEADERS = {
  accept: "*/*",
  "accept-encoding": "br, gzip",
  "accept-language": "*",
  "cf-connecting-ip": "127.0.0.1",
  connection: "keep-alive",
  host: "127.0.0.1:8788",
  "sec-fetch-mode": "cors",
  "user-agent": "node",
};
const newRequest = () => {
  const request = new Request("http://127.0.0.1/health", { headers: HEADERS });
  Object.defineProperty(request, "cf", { value: CF });
  return request;
};
const ctx = { waitUntil() {} };

async function perRequestUs(handler, env, n) {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const res = await handler.fetch(newRequest(), env, ctx);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`/health answered ${res.status}`);
  }
  const used = process.cpuUsage(t);
  return (used.user + used.system) / n;
}

const statement = () => {
  const s = {
    bind: () => s,
    all: async () => ({ results: [], meta: {} }),
    first: async () => null,
    raw: async () => [[]],
    run: async () => ({ meta: {} }),
  };
  return s;
};
const stubD1 = { prepare: statement, batch: async (list) => list.map(() => ({ results: [], meta: {} })) };

const { unstable_getMiniflareWorkerOptions } = await import("wrangler");
for (const key of WORKERS) {
  const { workerOptions } = unstable_getMiniflareWorkerOptions(path.join(ROOT, PLATFORM_WORKERS[key].wrangler));
  const env = { ...(workerOptions.bindings ?? {}) };
  for (const binding of Object.keys(workerOptions.d1Databases ?? {})) env[binding] = stubD1;
  if (process.env.SS_PROFILE === "1") env.SS_PROFILE = "1";
  const runs = [{ name: "hello", handler: hello, us: [] }];
  for (const v of variants) {
    const host = await import(pathToFileURL(path.join(v.bindings, "host.js")).href);
    const records = [];
    host.setProfileSink((r) => records.push(r));
    const module = new WebAssembly.Module(readFileSync(path.join(v.wasm, PLATFORM_WORKERS[key].wasm)));
    runs.push({ name: v.name, handler: host.defineWorker(module, { service: key }), us: [], records });
  }
  for (const r of runs) await perRequestUs(r.handler, env, 300); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const r of runs) r.us.push(await perRequestUs(r.handler, env, REQUESTS));
  }
  const base = median(runs[0].us);
  console.log(`${key}: µs per /health, median of ${ROUNDS} rounds of ${REQUESTS}`);
  for (const r of runs) {
    const us = median(r.us);
    console.log(`  ${r.name.padEnd(10)} ${us.toFixed(1).padStart(7)} µs  (+${(us - base).toFixed(1)} over hello)`);
    if (r.records?.length) {
      const split = {};
      for (const k of Object.keys(r.records[0]).filter((x) => x.endsWith("_ms"))) {
        split[k.replace(/_ms$/, "")] = Number((median(r.records.map((x) => x[k])) * 1000).toFixed(1));
      }
      console.log(
        `             run split (µs): ${JSON.stringify(split)}; bytes in ${r.records.at(-1).bytes_in}, out ${r.records.at(-1).bytes_out}`,
      );
    }
  }
}
