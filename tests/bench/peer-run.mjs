// The load loop the C++-beside-plain-JS benches share (leads-peer.mjs, analytics-peer.mjs): `count`
// requests at `concurrency`, each made by `send(n)` (n = 0, 1, …), timed one by one, with the CPU the
// workerd processes spent meanwhile (workerd-cpu.mjs: the worker, its queues' local broker and D1).
import { createHash } from "node:crypto";
import http from "node:http";
import { mergeFigures, round, roundedFigures } from "./json-out.mjs";
import { workerdCpuMs, workerdThreadCpuMs } from "./workerd-cpu.mjs";

export const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

/**
 * A client straight to a worker's own socket (Miniflare `unsafeDirectSockets`, `unsafeGetDirectURL`),
 * through node:http with keep-alive connections: `send(pathname, init)` → `{ status, arrayBuffer() }`.
 */
export function socketClient(baseUrl, concurrency) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const { hostname, port } = new URL(baseUrl);
  const send = (pathname, { method = "GET", headers = {}, body } = {}, retried = false) =>
    new Promise((resolve, reject) => {
      const all = body === undefined ? headers : { ...headers, "content-length": Buffer.byteLength(body) };
      const req = http.request({ host: hostname, port, path: pathname, method, headers: all, agent }, (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => resolve({ status: res.statusCode, arrayBuffer: async () => Buffer.concat(chunks) }));
      });
      req.on("error", (err) => {
        // A kept-alive connection the server closed while it sat idle (between two phases) is
        // reset on its next request before any answer: sent again once on a new connection, as
        // Node's http documentation advises. Any other error, or a second reset, fails the run.
        if (!retried && req.reusedSocket && err.code === "ECONNRESET") {
          send(pathname, { method, headers, body }, true).then(resolve, reject);
        } else {
          reject(err);
        }
      });
      req.end(body);
    });
  return (pathname, init) => send(pathname, init);
}

/** { seconds, rps, p50, p99, statuses (status → count), workerdCpuMsPerRequest (null off Linux) }. */
export async function loadPhase({ count, concurrency, send }) {
  const latencies = [];
  const statuses = new Map();
  let next = 0;
  const cpu0 = workerdCpuMs();
  const threads0 = THREADS ? workerdThreadCpuMs() : null;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let n = next++; n < count; n = next++) {
        const started = performance.now();
        const res = await send(n);
        await res.arrayBuffer();
        latencies.push(performance.now() - started);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = workerdCpuMs();
  if (threads0) printThreadSplit(threads0, workerdThreadCpuMs(), count);
  return {
    seconds,
    rps: count / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    statuses,
    workerdCpuMsPerRequest: cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) / count,
  };
}

// SS_THREADS=1: each phase's workerd CPU per request by thread name (tests/bench/workerd-cpu.mjs).
const THREADS = process.env.SS_THREADS === "1";
function printThreadSplit(before, after, count) {
  const parts = Object.entries(after ?? {})
    .map(([name, ms]) => [name, (ms - (before[name] ?? 0)) / count])
    .filter(([, per]) => per > 0)
    .sort((a, b) => b[1] - a[1]);
  console.log(
    `  workerd CPU per request by thread: ${parts.map(([n, per]) => `${n} ${per.toFixed(3)} ms`).join(", ")}`,
  );
}

/** The median; of an even count, the mean of the two middle values. */
export function middle(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const h = Math.floor(s.length / 2);
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}

/**
 * The two sides' timed phases in a fair order (docs/performance.md, "Answers known in advance, and the
 * bench's order"): the phase that runs right after the other side's is the slower one, so rounds come in
 * pairs, C++ first then JS first (`requested` is rounded up to even, at least 2), and the ratio is the
 * median over the pairs of the geometric mean of their two throughput ratios. Before them, an untimed
 * phase of `warmup` each way (C++, JS, JS, C++). `phase(impl, count)` runs one phase (loadPhase's result).
 */
export async function pairedRounds({ requested, warmup, count, phase }) {
  for (const impl of ["cpp", "js", "js", "cpp"]) await phase(impl, warmup);
  const pairs = Math.max(1, Math.ceil(requested / 2));
  const phases = { cpp: [], js: [] };
  const ratios = [];
  for (let round = 0; round < 2 * pairs; round++) {
    const order = round % 2 === 0 ? ["cpp", "js"] : ["js", "cpp"];
    const done = {};
    for (const impl of order) done[impl] = await phase(impl, count);
    for (const impl of order) phases[impl].push(done[impl]);
    ratios.push(done.cpp.rps / done.js.rps);
  }
  const pairRatios = Array.from({ length: pairs }, (_, p) => Math.sqrt(ratios[2 * p] * ratios[2 * p + 1]));
  return { rounds: 2 * pairs, phases, ratios, pairRatios, ratio: middle(pairRatios) };
}

/**
 * One side's figures over its phases: statuses summed (`accepted` = its 202s), and the medians of
 * throughput, p50, p99 and workerd CPU per request (null when workerd's CPU could not be read).
 */
export function sideFigures(list) {
  const statuses = new Map();
  for (const r of list) for (const [status, n] of r.statuses) statuses.set(status, (statuses.get(status) ?? 0) + n);
  const cpu = list.map((r) => r.workerdCpuMsPerRequest);
  return {
    accepted: statuses.get(202) ?? 0,
    statuses: Object.fromEntries(statuses),
    rps: middle(list.map((r) => r.rps)),
    p50: middle(list.map((r) => r.p50)),
    p99: middle(list.map((r) => r.p99)),
    cpu: cpu.includes(null) ? null : middle(cpu),
  };
}

/** Milliseconds with two decimals, or "n/a". */
export const ms = (x) => (x === null || x === undefined ? "n/a" : `${x.toFixed(2)} ms`);

/**
 * Prints the side-by-side table of a peer run `r` ({cpp, js, ratio}): `header` lines, then one row per
 * [label, format(side)] of `rows`, then the throughput ratio.
 */
export function printPeerTable(r, header, rows, log = console.log) {
  for (const line of header) log(line);
  log(`${"".padEnd(30)}  ${"C++ (wasm)".padEnd(22)}  plain JS`);
  for (const [label, format] of rows) log(`${label.padEnd(30)}  ${format(r.cpp).padEnd(22)}  ${format(r.js)}`);
  const how = r.pairRatios
    ? "the median over pairs of rounds of their geometric mean"
    : "C++ throughput / JS throughput";
  log(`\nratio (${how}): ${r.ratio.toFixed(2)}×`);
}

/**
 * The figures of a paired peer run for the --json file: its count (under `countKey`), concurrency,
 * rounds, each round's and pair's ratio and both sides' rounded figures, plus `extra`.
 */
export function pairedFigures(result, countKey, extra = {}) {
  return {
    [countKey]: result[countKey],
    concurrency: result.concurrency,
    rounds: result.rounds,
    round_ratios: result.ratios.map((x) => round(x, 3)),
    pair_ratios: result.pairRatios.map((x) => round(x, 3)),
    cpp: roundedFigures(result.cpp),
    js: roundedFigures(result.js),
    ...extra,
  };
}

/** A peer bench run from the command line: run, print, list problems, merge the figures, exit 1 on a problem. */
export async function peerCli({ run, print, problems, figures }) {
  const result = await run();
  print(result);
  const found = problems(result);
  if (found.length) console.log(`\nPROBLEMS:\n  ${found.join("\n  ")}`);
  mergeFigures(figures(result));
  process.exitCode = found.length ? 1 : 0;
}

/**
 * The same tenant in both workers of a peer bench: created through the C++ worker's own admin route
 * (`cpp`, a Miniflare worker, reached at `origin`), and its row copied into the plain-JS peer's D1
 * (`jsDb`, migrated from the same migrations/), with `token` and `${token}-admin` as its tokens.
 */
export async function provisionTenantInBoth({ cpp, origin, jsDb, tenant, adminToken, token, config, now }) {
  const put = await cpp.fetch(`${origin}/admin/tenants/${tenant}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ token, adminToken: `${token}-admin`, config }),
  });
  if (put.status !== 201) throw new Error(`provisioning failed: ${put.status} ${await put.text()}`);
  await put.arrayBuffer();
  if (!jsDb) return; // the C++ worker alone (beacon-ab.mjs)
  const sha = (s) => createHash("sha256").update(s).digest("hex");
  await jsDb
    .prepare(
      "INSERT INTO tenants (tenant_id, token_hash, admin_token_hash, config_json, enabled, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)",
    )
    .bind(tenant, sha(token), sha(`${token}-admin`), JSON.stringify(config), now)
    .run();
}
