#!/usr/bin/env node
// The boundary profile (docs/performance.md): where the time of a run goes between the JS host and a
// C++ core, for a lead intake, a ledger read of 500 events and a ledger drain batch.
//
// Why in Node and not in workerd: inside workerd performance.now() only advances across I/O (a
// Spectre mitigation), so CPU spans inside a request read 0. Here the real bindings/host.js drives
// the real dist/wasm/*.wasm in V8 (the engine workerd embeds), with SS_PROFILE=1 (bindings/instance.js
// newProfile), against real D1 databases served by Miniflare. D1 calls cross a process boundary
// (Node → workerd) here, so io_wait is larger than inside workerd; the CPU buckets are what matter.
// Queue sends and service calls are local stubs that resolve at once.
//
// Core parse: the core's own share of ss_resume is split out by feeding the core the same resume
// message wrapped in an array — ss_start parses it completely, then rejects it (not an object)
// without running anything — so `core parse` is measured on the real bytes.
//
//   node tests/bench/profile.mjs [--runs 20] [--drains 1] [--json FILE]
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineWorker, setProfileSink } from "../../bindings/host.js";
import { wasmImports } from "../../bindings/instance.js";
import { applyMigrations } from "../../scripts/lib/local-mesh.mjs";
import { mergeFigures, option, round } from "./json-out.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const RUNS = option("runs", 20);
const ADMIN = "profile-admin-token";
const TENANT = "profile-tenant";
const TOKEN = "profile-tenant-token-0123456789";
const SUBSCRIPTIONS = 8;
const BATCH = 500;
const DRAINS = option("drains", 1);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const wasmModule = (name) => new WebAssembly.Module(readFileSync(path.join(ROOT, "dist/wasm", name)));

// Records every profiled run; `take()` hands back and forgets them.
const records = [];
setProfileSink((r) => records.push(r));
const take = () => records.splice(0);

// Records the largest d1.all result of the read-500 runs (for the core-parse probe).
let largestResult = null;
function recordingD1(db) {
  const wrap = (stmt) =>
    new Proxy(stmt, {
      get(target, prop) {
        const v = target[prop];
        if (prop === "bind") return (...args) => wrap(target.bind(...args));
        if (prop === "raw") {
          return async (options) => {
            const out = await target.raw(options);
            const size = JSON.stringify(out).length;
            if (!largestResult || size > largestResult.size) largestResult = { size, raw: out };
            return out;
          };
        }
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql) => wrap(target.prepare(sql));
      const v = target[prop];
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

const noopQueue = { send: async () => {}, sendBatch: async () => {} };
const target = {
  fetch: async (req) => {
    await new Request(req).arrayBuffer();
    return new Response('{"accepted":true}', { status: 202, headers: { "content-type": "application/json" } });
  },
};

// ms per bucket, median over the runs of one kind.
function summarise(list) {
  const keys = Object.keys(list[0]).filter((k) => typeof list[0][k] === "number");
  return Object.fromEntries(keys.map((k) => [k, round(median(list.map((r) => r[k])), 3)]));
}

// ss_start on `[message]`: the core parses all of it, then rejects it (not an object) and runs nothing.
function coreParseMs(module, message, repeats = 20) {
  let instance;
  instance = new WebAssembly.Instance(
    module,
    wasmImports(module, () => instance.exports.memory),
  );
  instance.exports._initialize?.();
  const ex = instance.exports;
  const bytes = new TextEncoder().encode(`[${JSON.stringify(message)}]`);
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const ptr = ex.ss_alloc(bytes.length);
    new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
    const t = performance.now();
    const id = ex.ss_start(ptr, bytes.length);
    times.push(performance.now() - t);
    ex.ss_free(ptr);
    if (id !== 0) throw new Error("the parse probe was accepted as a run");
  }
  const t = performance.now();
  for (let i = 0; i < repeats; i++) JSON.parse(JSON.stringify(message));
  return { bytes: bytes.length, core_parse_ms: median(times), v8_roundtrip_ms: (performance.now() - t) / repeats };
}

const { Miniflare } = await import("miniflare");
const mf = new Miniflare({
  cf: false,
  modules: true,
  script: "export default { fetch() { return new Response('') } }",
  compatibilityDate: "2026-04-20",
  d1Databases: { EVENTS_DB: "profile-events", LEADS_DB: "profile-leads" },
});
try {
  await mf.ready;
  const eventsDb = await mf.getD1Database("EVENTS_DB");
  const leadsDb = await mf.getD1Database("LEADS_DB");
  await applyMigrations(eventsDb, path.join(ROOT, "migrations/events"));
  await applyMigrations(leadsDb, path.join(ROOT, "migrations/leads"));

  const eventsWasm = wasmModule("events.wasm");
  const leadsWasm = wasmModule("leads.wasm");
  const events = defineWorker(eventsWasm, { service: "siteswarm-events-service" });
  // The ledger's other two workers (docs/architecture.md "The ledger's three workers"): the config
  // routes run in one, workflow_runner's drain in the other; each is called here directly, so each
  // profile is the work of the core that does it.
  const runner = defineWorker(wasmModule("events-runner.wasm"), { service: "siteswarm-events-runner" });
  const config = defineWorker(wasmModule("events-config.wasm"), { service: "siteswarm-events-config" });
  const leads = defineWorker(leadsWasm, { service: "siteswarm-leads-service" });
  const eventsEnv = {
    EVENTS_DB: eventsDb,
    EVENTS_QUEUE: noopQueue,
    BENCH_TARGET: target,
    WORKFLOW_SERVICES: "BENCH_TARGET",
    PLATFORM_ADMIN_TOKEN: ADMIN,
    SS_PROFILE: "1",
  };
  eventsEnv.EVENTS_RUNNER = { fetch: (request) => runner.fetch(request, eventsEnv, ctx) };
  eventsEnv.EVENTS_CONFIG = { fetch: (request) => config.fetch(request, eventsEnv, ctx) };
  const leadsEnv = {
    LEADS_DB: leadsDb,
    NOTIFY_QUEUE: noopQueue,
    EVENTS_QUEUE: noopQueue,
    PLATFORM_ADMIN_TOKEN: ADMIN,
    ALLOW_LOCAL_OUTBOUND: "1",
    NOTIFY_BACKOFF_SECONDS: "5",
    SS_PROFILE: "1",
  };
  const ctx = { waitUntil() {} };
  const json = { "content-type": "application/json" };
  const operator = { authorization: `Bearer ${ADMIN}`, ...json };
  const call = async (worker, env, url, init) => {
    const res = await worker.fetch(new Request(`https://x${url}`, init), env, ctx);
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${init?.method ?? "GET"} ${url}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };

  // ---- the ledger: tenant, 8 workflows + subscriptions, events ----
  const tenantBody = JSON.stringify({ token: TOKEN, adminToken: `${TOKEN}-admin`, config: {} });
  await call(events, eventsEnv, `/admin/tenants/${TENANT}`, { method: "PUT", headers: operator, body: tenantBody });
  for (let i = 0; i < SUBSCRIPTIONS; i++) {
    const body = JSON.stringify({ target: { service: "BENCH_TARGET", path: "/start" } });
    await call(config, eventsEnv, `/admin/workflows/profile_wf_${i}`, { method: "PUT", headers: operator, body });
    const sub = JSON.stringify({ event_type_glob: "profile.dr*", workflow_type: `profile_wf_${i}` });
    await call(config, eventsEnv, "/admin/subscriptions", { method: "POST", headers: operator, body: sub });
  }
  const tenantHeaders = {
    "X-SiteSwarm-Tenant-Id": TENANT,
    "X-SiteSwarm-Tenant-Token": TOKEN,
    "X-SiteSwarm-Capability-Version": "1.0.0",
    ...json,
  };
  // 500 events at once by SQL (one D1 call; each call here crosses into workerd, ~20 ms): the same
  // rows the ledger writes for an emit, for the read and the drain to work on.
  const seedEvents = (type, tag) =>
    eventsDb
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${BATCH})
         INSERT INTO events (event_id, tenant_id, event_type, entity_type, entity_id, payload_json,
                             idempotency_key, occurred_at, recorded_at)
         SELECT printf('01J0000%s%018d', ?1, i), ?2, ?3, 'item', CAST(i % 97 AS TEXT),
                json_object('n', i, 'amount', i % 1000, 'sku', 'SKU-' || i, 'note', 'bench'),
                ?3 || ':' || ?1 || i, ?4, ?4
         FROM n`,
      )
      .bind(tag, TENANT, type, new Date().toISOString())
      .run();
  let seq = 0;
  const emit = (type) => {
    const n = seq++;
    const body = JSON.stringify({
      event_type: type,
      entity_ref: `item:${n % 97}`,
      payload: { n, amount: n % 1000, sku: `SKU-${n}`, note: "bench" },
      idempotency_key: `${type}:${n}`,
    });
    return call(events, eventsEnv, "/api/events", { method: "POST", headers: tenantHeaders, body });
  };
  await seedEvents("profile.other", "A");
  take();
  for (let i = 0; i < RUNS; i++) await emit("profile.other");
  const emitProfile = summarise(take().filter((r) => r.op === "fetch"));

  console.error("profile: emits done");
  // Read 500.
  largestResult = null;
  // Only here through the recording wrapper (Miniflare's D1 proxy refuses wrapped statements in batch()).
  const readEnv = { ...eventsEnv, EVENTS_DB: recordingD1(eventsDb) };
  for (let i = 0; i < RUNS; i++) await call(events, readEnv, "/api/events?limit=500", { headers: operator });
  const readProfile = summarise(take());
  // The read's D1 answer in both forms a core can read, compact and as objects: since the views are
  // held by the host (docs/abi.md "Held columns") the core gets only the last row of it, so this is
  // what the core would parse from a host that holds nothing.
  const [columns, ...rowArrays] = largestResult.raw;
  const resume = (value) => ({ now: Date.now(), results: [{ id: 1, ok: true, value }] });
  const objects = rowArrays.map((row) => Object.fromEntries(columns.map((c, i) => [c, row[i]])));
  const readParse = {
    compact: coreParseMs(eventsWasm, resume({ columns, rows: rowArrays })),
    objects: coreParseMs(eventsWasm, resume({ results: objects })),
  };

  // A drain batch: cursor to the end, 500 matching events, one drain (× 2 rounds, median).
  const drains = [];
  for (let round = 0; round < DRAINS; round++) {
    const last = await eventsDb.prepare("SELECT MAX(event_id) AS id, MAX(seq) AS seq FROM events").first();
    await eventsDb
      .prepare(
        "INSERT INTO event_drain_state (consumer, cursor, cursor_seq, events_read) VALUES ('workflow_runner', ?1, ?2, 0) " +
          "ON CONFLICT (consumer) DO UPDATE SET cursor = ?1, cursor_seq = ?2",
      )
      .bind(last.id, last.seq)
      .run();
    await seedEvents("profile.drain", String.fromCharCode(66 + round));
    take();
    const out = await call(runner, eventsEnv, "/admin/events/drain?consumer=workflow_runner", {
      method: "POST",
      headers: operator,
    });
    if (out.consumers.workflow_runner.read !== BATCH)
      throw new Error(`drain read ${out.consumers.workflow_runner.read}`);
    drains.push(...take().filter((r) => r.op === "fetch"));
  }
  const drainProfile = drains.length ? summarise(drains) : null; // --drains 0: not measured

  console.error("profile: read and drain done");
  // ---- a lead intake (Turnstile off, one webhook delivery: enqueued to a local stub queue) ----
  const leadsTenant = JSON.stringify({
    token: TOKEN,
    adminToken: `${TOKEN}-admin`,
    config: {
      turnstile: "off",
      notify: { webhook: { url: "http://127.0.0.1:9/hook", secret: "whsec-profile-0123456789" } },
    },
  });
  await call(leads, leadsEnv, `/admin/tenants/${TENANT}`, { method: "PUT", headers: operator, body: leadsTenant });
  const lead = (i) =>
    call(leads, leadsEnv, "/api/leads/submit", {
      method: "POST",
      headers: { ...tenantHeaders, "CF-Connecting-IP": `10.0.${i >> 8}.${i & 255}` },
      body: JSON.stringify({ name: `P ${i}`, email: `p-${i}@profile.example`, message: `Lead ${i}.` }),
    });
  for (let i = 0; i < 10; i++) await lead(i);
  take();
  for (let i = 10; i < 10 + RUNS; i++) await lead(i);
  const intakeProfile = summarise(take());

  const profiles = { lead_intake: intakeProfile, ledger_emit: emitProfile, ledger_read_500: readProfile };
  if (drainProfile) profiles.ledger_drain_500 = drainProfile;
  const cols = [
    "total_ms",
    "io_wait_ms",
    "core_ms",
    "host_stringify_ms",
    "copy_in_ms",
    "copy_out_ms",
    "host_parse_ms",
    "perform_ms",
    "core_calls",
    "effects",
    "bytes_in",
    "bytes_out",
  ];
  console.log(
    `\nBoundary profile: bindings/host.js + dist/wasm in Node ${process.version} (V8), D1 via Miniflare; medians of ${RUNS} runs (drain: ${DRAINS})\n`,
  );
  console.log(["run".padEnd(18), ...cols.map((c) => c.replace(/_ms$/, "").padStart(11))].join(" "));
  for (const [name, p] of Object.entries(profiles)) {
    console.log([name.padEnd(18), ...cols.map((c) => String(p[c]).padStart(11))].join(" "));
  }
  for (const [form, p] of Object.entries(readParse)) {
    console.log(
      `read of 500, its D1 answer ${form === "compact" ? "in the compact form" : "as objects"}: ${p.bytes} bytes of JSON;` +
        ` a core that got it all would parse it in ${p.core_parse_ms.toFixed(2)} ms (V8 stringify + parse: ${p.v8_roundtrip_ms.toFixed(2)} ms)`,
    );
    for (const k of ["core_parse_ms", "v8_roundtrip_ms"]) p[k] = round(p[k], 3);
  }
  mergeFigures({ profile: { ...profiles, read_500_parse: readParse } });
} finally {
  await mf.dispose();
}
