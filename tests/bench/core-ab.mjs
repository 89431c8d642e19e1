// CPU of the core alone, two or more builds of one module side by side (e.g. main's events.wasm and a
// branch's), through the raw ABI of docs/abi.md in Node's V8 with no host, no HTTP and effects answered
// synchronously — what a change to the core's own code or its libc (the allocator) costs or saves,
// without workerd's or the JS host's share diluting it. Rounds alternate the builds (A B, then B A, …)
// so a drifting load weighs on each alike; each figure is this process's CPU time (process.cpuUsage)
// per operation, median over the rounds, and the linear memory each instance ended with.
//   node tests/bench/core-ab.mjs --variant main=DIR/events.wasm --variant new=dist/wasm/events.wasm
//        [--rounds 9] [--scale 1]
// Operations (each a full ss_start … ss_drop):
//   parse500  ss_start on `[resume message]` holding 500 ledger rows as objects (~125 KB): the core
//             parses all of it into a DOM and frees it, then rejects it (not an object), as profile.mjs
//   health    GET /health (the ledger's reads one D1 row, answered empty)
//   tenant    GET /v1/tenant: the tenant row from D1 and the token's SHA-256 (precomputed here)
//   read500   (events.wasm) GET /api/events?limit=500 as the operator: one D1 page of 500 rows in, ~240 KB out
//   beacon    (analytics.wasm) POST /beacon as analytics-peer.mjs sends it (a desktop Chrome): after the
//             first, the tenant row, the token's digest and the day's salt are the instance's, so a beacon
//             is the visitor hash, then the Analytics Engine point and the queue message (202)
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import { rawCoreExports } from "../integration/raw-core.mjs";
import { beaconInit } from "./beacon-mix.mjs";
import { EVENT_COLUMNS } from "./ledger-columns.mjs";

const { values } = parseArgs({
  options: {
    variant: { type: "string", multiple: true },
    rounds: { type: "string", default: "9" },
    scale: { type: "string", default: "1" },
  },
});
const variants = (values.variant ?? []).map((v) => {
  const i = v.indexOf("=");
  return { name: v.slice(0, i), file: v.slice(i + 1) };
});
if (variants.length < 2) throw new Error("give two or more --variant name=FILE.wasm");
const ROUNDS = Number(values.rounds);
const SCALE = Number(values.scale);

const enc = new TextEncoder();
const dec = new TextDecoder();

function instantiate(file) {
  const ex = rawCoreExports(file);
  const put = (bytes) => {
    const ptr = ex.ss_alloc(bytes.length);
    new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
    return ptr;
  };
  const data = (id) => dec.decode(new Uint8Array(ex.memory.buffer, ex.ss_data_ptr(id), ex.ss_data_len(id)));
  return {
    ex,
    // ss_start on bytes the core must reject after parsing them.
    probe(bytes) {
      const ptr = put(bytes);
      const id = ex.ss_start(ptr, bytes.length);
      ex.ss_free(ptr);
      if (id !== 0) throw new Error("the parse probe was accepted as a run");
    },
    run(messageText, perform) {
      const bytes = enc.encode(messageText);
      let ptr = put(bytes);
      const id = ex.ss_start(ptr, bytes.length);
      ex.ss_free(ptr);
      while (ex.ss_state(id) === 0) {
        // The list may be followed by an answer known in advance (docs/abi.md): this loop always resumes.
        const list = data(id);
        const end = list.indexOf("\n");
        const results = JSON.parse(end < 0 ? list : list.slice(0, end)).map((e) => ({ id: e.id, ...perform(e) }));
        const r = enc.encode(JSON.stringify({ now: Date.now(), results }));
        ptr = put(r);
        ex.ss_resume(id, ptr, r.length);
        ex.ss_free(ptr);
      }
      if (ex.ss_state(id) !== 1) throw new Error("run failed");
      const out = data(id);
      ex.ss_drop(id);
      return out;
    },
  };
}

const rows = Array.from({ length: 500 }, (_, n) => ({
  id: `01J0000A${String(n).padStart(18, "0")}`,
  tenant_id: "bench",
  event_type: "profile.read",
  entity_type: "item",
  entity_id: String(n % 97),
  payload_json: JSON.stringify({ n, amount: n % 1000, sku: `SKU-${n}`, note: "bench" }),
  idempotency_key: `profile.read:A${n}`,
  occurred_at: "2026-12-01T00:00:00.000Z",
  recorded_at: "2026-12-01T00:00:00.000Z",
}));
const parseBytes = enc.encode(
  `[${JSON.stringify({ now: 1, results: [{ id: 1, ok: true, value: { results: rows } }] })}]`,
);

const token = "bench-token-0123456789";
const digest = createHash("sha256").update(token).digest("hex");
const tenantRow = {
  tenant_id: "bench",
  token_hash: digest,
  admin_token_hash: "x",
  config_json: "{}",
  enabled: 1,
  created_at: "2026-01-01T00:00:00Z",
  updated_at: "2026-01-01T00:00:00Z",
};
const fetchMessage = (path, headers = {}) =>
  JSON.stringify({
    op: "fetch",
    now: 1767225600000,
    entropy: "00".repeat(32),
    env: {},
    request: { method: "GET", url: `https://svc.internal${path}`, headers, body: "" },
  });
const healthMessage = fetchMessage("/health");
const tenantMessage = fetchMessage("/v1/tenant", {
  "x-siteswarm-tenant-id": "bench",
  "x-siteswarm-tenant-token": token,
});
const emptyD1 = (e) => ({ ok: true, value: e.kind === "d1.first" ? { row: null } : { results: [] } });
const tenantEffects = (e) => {
  if (e.kind === "d1.first") return { ok: true, value: { row: tenantRow } };
  if (e.kind === "crypto.sha256") return { ok: true, value: { hex: digest } };
  return { ok: false, error: { code: "unsupported_effect", message: e.kind } };
};

// The ledger's read of 500 (events.wasm only): the operator's two token digests, then one D1 page of
// 500 rows in the compact form the host passes (docs/abi.md), decoded, and 500 events written out.
const opToken = "op-token";
const opDigest = createHash("sha256").update(opToken).digest("hex");
const columns = EVENT_COLUMNS;
const page = rows.map((r, n) => [
  n + 1,
  r.id,
  r.tenant_id,
  r.event_type,
  r.entity_type,
  r.entity_id,
  r.payload_json,
  r.idempotency_key,
  null,
  null,
  null,
  r.occurred_at,
  r.recorded_at,
  n + 1,
  null,
]);
const readMessage = JSON.stringify({
  op: "fetch",
  now: 1767225600000,
  entropy: "00".repeat(32),
  env: { PLATFORM_ADMIN_TOKEN: opToken },
  request: {
    method: "GET",
    url: "https://svc.internal/api/events?limit=500",
    headers: { authorization: `Bearer ${opToken}` },
    body: "",
  },
});
// The read asks D1 for one row past the page (whether another follows): the page and one more.
const pageRead = [...page, [page.length + 1, ...page[page.length - 1].slice(1)]];
const readEffects = (e) => {
  if (e.kind === "crypto.sha256") return { ok: true, value: { hex: opDigest } };
  // A ledger asking to hold the views (docs/abi.md "Held columns") gets the rest of each row and a
  // handle, as from bindings/host.js; one that does not, every column.
  if (e.kind === "d1.all" && e.hold) {
    const rest = pageRead.map((r) => [r[0], r[1]]);
    const tail = Number.isInteger(e.tail) ? rest.slice(rest.length - e.tail) : rest;
    return { ok: true, value: { columns: ["seq", "event_id"], rows: tail, held: 1, count: rest.length } };
  }
  if (e.kind === "d1.all") return { ok: true, value: { columns, rows: pageRead } };
  return { ok: false, error: { code: "unsupported_effect", message: e.kind } };
};
const isLedger = variants.every((v) => v.file.endsWith("events.wasm"));

// The beacon (analytics.wasm only): the bench's desktop Chrome beacon, its tenant row and salt in D1.
const beaconRequest = beaconInit(0, "bench", token);
const beaconMessage = JSON.stringify({
  op: "fetch",
  now: 1767225600000,
  entropy: "00".repeat(32),
  env: {},
  request: {
    method: "POST",
    url: "https://svc.internal/beacon",
    headers: beaconRequest.headers,
    body: beaconRequest.body,
    cf: { country: "US", colo: "DFW" },
  },
  bodyApart: true,
});
const beaconEffects = (e) => {
  // D1 rows in the compact form the JS host passes (docs/abi.md).
  if (e.kind === "d1.first" && e.sql.includes("FROM tenants"))
    return { ok: true, value: { columns: Object.keys(tenantRow), rows: [Object.values(tenantRow)] } };
  if (e.kind === "d1.first" && e.sql.includes("FROM salts"))
    return { ok: true, value: { columns: ["salt_hex"], rows: [["ab".repeat(32)]] } };
  if (e.kind === "crypto.sha256") return { ok: true, value: { hex: e.data === token ? digest : "cd".repeat(32) } };
  if (e.kind === "ae.write" || e.kind === "queue.send") return { ok: true, value: {} };
  return { ok: false, error: { code: "unsupported_effect", message: e.kind } };
};
const isAnalytics = variants.every((v) => v.file.endsWith("analytics.wasm"));

const ops = {
  parse500: { n: 40 * SCALE, fn: (m) => m.probe(parseBytes) },
  health: { n: 2000 * SCALE, fn: (m) => m.run(healthMessage, emptyD1) },
  tenant: { n: 1000 * SCALE, fn: (m) => m.run(tenantMessage, tenantEffects) },
};
if (isLedger) ops.read500 = { n: 20 * SCALE, fn: (m) => m.run(readMessage, readEffects) };
if (isAnalytics) ops.beacon = { n: 1000 * SCALE, fn: (m) => m.run(beaconMessage, beaconEffects) };

// A fresh instance per variant and operation, warmed up, as a worker's instance is after its first requests.
const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const samples = {};
for (const v of variants) samples[v.name] = Object.fromEntries(Object.keys(ops).map((k) => [k, []]));
const instances = new Map();
// Each operation answers what it should (so the figures are of real work, not of an error path).
{
  const m = instantiate(variants[0].file);
  if (!JSON.parse(m.run(healthMessage, emptyD1)).body.includes('"ok":true')) throw new Error("health failed");
  if (JSON.parse(m.run(tenantMessage, tenantEffects)).status !== 200) throw new Error("tenant failed");
  const read = isLedger && JSON.parse(m.run(readMessage, readEffects));
  // Held views: the body has its place for them, and the page's cursor (operator: id.seq) is the 500th row's.
  const body = isLedger && JSON.parse(read.body);
  const heldAll = read?.splice?.length === 1 && read.splice[0].held === 1;
  const events = read?.splice ? (heldAll ? 500 : 0) : body?.events?.length;
  if (isLedger && (events !== 500 || body.next !== `${page[499][1]}.${page[499][0]}`)) {
    throw new Error("read500 did not answer 500 events");
  }
  if (isAnalytics) {
    const out = m.run(beaconMessage, beaconEffects);
    if (JSON.parse(out.split("\n")[0]).status !== 202) throw new Error(`beacon failed: ${out}`);
  }
}
for (const v of variants) {
  for (const [name, op] of Object.entries(ops)) {
    const m = instantiate(v.file);
    for (let i = 0; i < Math.max(5, op.n / 10); i++) op.fn(m);
    instances.set(`${v.name}/${name}`, m);
  }
}
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const [name, op] of Object.entries(ops)) {
    for (const v of order) {
      const m = instances.get(`${v.name}/${name}`);
      const t = cpuMicros();
      for (let i = 0; i < op.n; i++) op.fn(m);
      samples[v.name][name].push((cpuMicros() - t) / op.n);
    }
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
console.log(`core CPU µs per operation, median of ${ROUNDS} alternating rounds (load ${load})`);
console.log(
  ["op", ...variants.map((v) => v.name), ...variants.slice(1).map((v) => `${v.name}/${variants[0].name}`)].join("\t"),
);
for (const name of Object.keys(ops)) {
  const med = variants.map((v) => median(samples[v.name][name]));
  // Per-round ratios, then their median: steadier than the ratio of medians on a drifting machine.
  const ratios = variants.slice(1).map((v) => {
    const r = samples[v.name][name].map((x, i) => x / samples[variants[0].name][name][i]);
    return median(r).toFixed(3);
  });
  console.log([name, ...med.map((x) => x.toFixed(1)), ...ratios].join("\t"));
}
// Linear memory each instance ended with (the allocator's footprint after the same work).
console.log(
  [
    "memory KiB",
    ...variants.map((v) =>
      Object.keys(ops)
        .map((name) => instances.get(`${v.name}/${name}`).ex.memory.buffer.byteLength / 1024)
        .join("/"),
    ),
  ].join("\t"),
);
