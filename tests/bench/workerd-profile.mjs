// V8's sampling profile of one worker inside workerd while a load runs, summed by function: where a
// request's CPU goes in the real runtime (docs/performance.md "Profiles inside workerd").
//   node tests/bench/workerd-profile.mjs [--worker cms] [--path /v1/content] [--tenant bakery] [--inspector-port 9339]
//     [--requests 4000] [--concurrency 16] [--interval-us 100] [--top 40] [--out FILE.cpuprofile]
// Wasm frames are named only when the module carries a name section (the recipe in the doc above);
// otherwise they add up under "wasm-function[N]" and the "(wasm, all)" line sums them.
import { writeFileSync } from "node:fs";
import { WebSocket } from "ws";
import { option } from "./json-out.mjs";
import { arg as stringOption } from "./variants.mjs";

const PORT = option("inspector-port", 9339);
process.env.SS_INSPECTOR_PORT = String(PORT);
const { startMesh } = await import("../integration/mesh.mjs");

const WORKER = stringOption("worker", "cms");
const PATH = stringOption("path", "/v1/content");
const TENANT = stringOption("tenant", "bakery");
const REQUESTS = option("requests", 4000);
const CONCURRENCY = option("concurrency", 16);
const INTERVAL = option("interval-us", 100);
const TOP = option("top", 40);
const OUT = stringOption("out", "");

function cdp(url) {
  const ws = new WebSocket(url);
  let id = 0;
  const waiting = new Map();
  ws.on("message", (data) => {
    const msg = JSON.parse(data);
    if (msg.id && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg);
      waiting.delete(msg.id);
    }
  });
  const opened = new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  return {
    opened,
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const n = ++id;
        waiting.set(n, resolve);
        ws.send(JSON.stringify({ id: n, method, params }));
      }),
    close: () => ws.close(),
  };
}

const mesh = await startMesh();
let session = null;
try {
  const worker = await mesh.mf.getWorker(`siteswarm-${WORKER}-service`);
  const headers = mesh.tenantHeaders(TENANT);
  const url = `http://localhost${PATH}`;
  for (let i = 0; i < 200; i++) await (await worker.fetch(url, { headers })).arrayBuffer(); // warm-up
  const targets = await (await fetch(`http://127.0.0.1:${PORT}/json`)).json();
  const target = targets.find((t) => t.title.includes(`core:user:siteswarm-${WORKER}`));
  if (!target) throw new Error(`no inspector target for ${WORKER}: ${targets.map((t) => t.title).join(", ")}`);
  session = cdp(target.webSocketDebuggerUrl);
  await session.opened;
  await session.send("Profiler.enable");
  await session.send("Profiler.setSamplingInterval", { interval: INTERVAL });
  await session.send("Profiler.start");
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) {
        const res = await worker.fetch(url, { headers });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${PATH}: ${res.status}`);
      }
    }),
  );
  const { result } = await session.send("Profiler.stop");
  const profile = result.profile;
  if (OUT) writeFileSync(OUT, JSON.stringify(profile));
  const self = new Map();
  for (const node of profile.nodes) self.set(node.id, { node, us: 0 });
  for (let i = 0; i < profile.samples.length; i++) self.get(profile.samples[i]).us += profile.timeDeltas[i];
  const byName = new Map();
  let total = 0;
  let wasm = 0;
  let idle = 0;
  for (const { node, us } of self.values()) {
    const f = node.callFrame;
    const name = `${f.functionName || "(anonymous)"} ${f.url ? f.url.split("/").pop() : ""}`.trim();
    if (f.functionName === "(idle)") idle += us;
    if (f.functionName !== "(idle)") total += us;
    if (f.url.startsWith("wasm://") || /^wasm-function|^\$/.test(f.functionName)) wasm += us;
    byName.set(name, (byName.get(name) ?? 0) + us);
  }
  const per = (us) => (us / REQUESTS).toFixed(1);
  console.log(
    `${WORKER} ${PATH}: ${REQUESTS} requests, busy ${per(total)} µs per request (sampled), idle ${per(idle)}`,
  );
  console.log(`  (wasm, all)  ${per(wasm)} µs/req  ${((wasm / total) * 100).toFixed(1)} %`);
  const rows = [...byName.entries()]
    .filter(([n]) => n !== "(idle)")
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP);
  for (const [name, us] of rows)
    console.log(`  ${per(us).padStart(7)} µs  ${((us / total) * 100).toFixed(1).padStart(5)} %  ${name}`);
} finally {
  session?.close();
  await mesh.dispose();
}
