// The core's own JSON parse in wasm, A/B: each given events.wasm parses the same messages through
// ss_start (the message wrapped in an array, so it is parsed and then refused as a run: id 0, as
// tests/bench/profile.mjs probes it), in interleaved rounds, the order alternating; CPU time of this
// process per parse (docs/performance.md "RapidJSON in front of nlohmann").
//
//   node tests/bench/json-parse-wasm.mjs [--rounds 9] A.wasm B.wasm …
// Messages: the resume of a d1.all of 500 event rows in D1's compact form (~125 KB), a fetch start
// message (an emit) and one stored event payload.
import { readFileSync } from "node:fs";
import { wasmImports } from "../../bindings/instance.js";
import { option } from "./json-out.mjs";
import { EVENT_COLUMNS } from "./ledger-columns.mjs";

const rounds = option("rounds", 9);
const files = process.argv.slice(2).filter((a, i, all) => a.endsWith(".wasm") && all[i - 1] !== "--rounds");

const two = (n) => String(n).padStart(2, "0");
const payload = (n) => JSON.stringify({ amount: n % 1000, n, note: "bench", sku: `SKU-${n}` });
const columns = EVENT_COLUMNS;
const rows = [];
for (let n = 0; n < 500; n++) {
  const at = `2026-12-01T05:${two(Math.floor(n / 60) % 60)}:${two(n % 60)}.123Z`;
  rows.push([
    1000 + n,
    `01KBC${"Q".repeat(15)}${100000 + n}`,
    "bench-tenant",
    "order.created",
    "order",
    `order-${n}`,
    payload(n),
    `idem-${n}`,
    null,
    null,
    "bench",
    at,
    at,
    null,
    null,
  ]);
}
const messages = {
  "resume, d1.all of 500 event rows": { now: 1764565200000, results: [{ id: 3, ok: true, value: { columns, rows } }] },
  "fetch start message (emit)": {
    op: "fetch",
    now: 1764565200000,
    entropy: "a".repeat(64),
    bodyApart: true,
    env: { PLATFORM_ADMIN_TOKEN: "bench-admin-token", DRAIN_WORK_BUDGET: "5000", RETENTION_DAYS: "730" },
    request: {
      method: "POST",
      url: "https://events.internal/api/events",
      bodyTooLarge: false,
      cf: { country: "US", colo: "DFW" },
      headers: {
        "content-type": "application/json",
        authorization: "Bearer bench-tenant-token-0123456789",
        "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36",
        accept: "*/*",
      },
      body: JSON.stringify({
        event_type: "order.created",
        entity_type: "order",
        entity_id: "order-42",
        idempotency_key: "idem-42",
        payload: { n: 42, amount: 42.5, sku: "SKU-42", note: "bench é" },
      }),
    },
  },
  "one event payload": JSON.parse(payload(42)),
};

const cores = files.map((file) => {
  const module = new WebAssembly.Module(readFileSync(file));
  let instance;
  instance = new WebAssembly.Instance(
    module,
    wasmImports(module, () => instance.exports.memory),
  );
  instance.exports._initialize?.();
  return { file, ex: instance.exports };
});

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const [name, message] of Object.entries(messages)) {
  const bytes = new TextEncoder().encode(`[${JSON.stringify(message)}]`);
  const iterations = Math.max(20, Math.round(4e6 / bytes.length));
  const times = cores.map(() => []);
  const once = ({ ex }) => {
    const ptr = ex.ss_alloc(bytes.length);
    new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
    if (ex.ss_start(ptr, bytes.length) !== 0) throw new Error("the parse probe was accepted as a run");
    ex.ss_free(ptr);
  };
  for (const core of cores) for (let i = 0; i < 5; i++) once(core); // warm-up
  for (let r = 0; r < rounds; r++) {
    const order = cores.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) {
      const t = cpuMs();
      for (let k = 0; k < iterations; k++) once(cores[i]);
      times[i].push((cpuMs() - t) / iterations);
    }
  }
  console.log(`${name} (${bytes.length} bytes, ${iterations} parses × ${rounds} rounds):`);
  for (const [i, core] of cores.entries()) console.log(`  ${median(times[i]).toFixed(4)} ms  ${core.file}`);
}
