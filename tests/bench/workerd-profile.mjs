// V8's sampling profile of one worker inside workerd while a load runs, summed by function: where a
// request's CPU goes in the real runtime (docs/performance.md "Profiles inside workerd").
//   node tests/bench/workerd-profile.mjs [--worker cms] [--path /v1/content] [--tenant bakery] [--inspector-port 9339]
//     [--requests 4000] [--concurrency 16] [--interval-us 100] [--top 40] [--out FILE.cpuprofile]
// Wasm frames are named only when the module carries a name section (the recipe in the doc above);
// otherwise they add up under "wasm-function[N]" and the "(wasm, all)" line sums them.
import { writeFileSync } from "node:fs";
import { profileWhile, selfTimes } from "./inspector.mjs";
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

const mesh = await startMesh();
try {
  const worker = await mesh.mf.getWorker(`siteswarm-${WORKER}-service`);
  const headers = mesh.tenantHeaders(TENANT);
  const url = `http://localhost${PATH}`;
  for (let i = 0; i < 200; i++) await (await worker.fetch(url, { headers })).arrayBuffer(); // warm-up
  const targets = await (await fetch(`http://127.0.0.1:${PORT}/json`)).json();
  const target = targets.find((t) => t.title.includes(`core:user:siteswarm-${WORKER}`));
  if (!target) throw new Error(`no inspector target for ${WORKER}: ${targets.map((t) => t.title).join(", ")}`);
  let next = 0;
  const profile = await profileWhile(target, INTERVAL, () =>
    Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < REQUESTS) {
          const res = await worker.fetch(url, { headers });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`${PATH}: ${res.status}`);
        }
      }),
    ),
  );
  if (OUT) writeFileSync(OUT, JSON.stringify(profile));
  const { total, wasm, idle, rows } = selfTimes(profile);
  const per = (us) => (us / REQUESTS).toFixed(1);
  console.log(
    `${WORKER} ${PATH}: ${REQUESTS} requests, busy ${per(total)} µs per request (sampled), idle ${per(idle)}`,
  );
  console.log(`  (wasm, all)  ${per(wasm)} µs/req  ${((wasm / total) * 100).toFixed(1)} %`);
  for (const [name, us] of rows.slice(0, TOP))
    console.log(`  ${per(us).padStart(7)} µs  ${((us / total) * 100).toFixed(1).padStart(5)} %  ${name}`);
} finally {
  await mesh.dispose();
}
