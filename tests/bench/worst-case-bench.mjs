#!/usr/bin/env node
// scripts/bench, worst-case part: the CPU time of every operator-supplied program of the ledger on the
// worst input its documented caps allow (docs/runbook-events.md, workers/events/*.h): subscription
// globs, filter expressions (contains() on a 60 KB payload string), input mappers, payload schemas
// (the largest enum against 20,000 items; the issue's 20,001-value enum, refused when registered).
//
// Measured in the shipped ledger core that serves it (dist/wasm/events-config.wasm, wasm-opt -Oz; the
// ledger is three workers: docs/architecture.md) in Node's V8, the engine
// workerd runs, through the test hook POST /__test/programs: the same parse/evaluate functions the
// ledger's admin routes and fan-out call, without D1 or the mesh around them, so the figure is the
// program's own cost. Each case runs the request with `run` (or `compile`) = 1 and with 1 + N, N
// grown until the difference is at least --worst-min-ms; the median of three differences over N is
// one evaluation (or compilation), free of the request's fixed cost (parsing the 60 KB message).
// Nothing here is asserted on time; a wrong answer fails the bench.
// The filter and mapper cases also read the work units the drain counts for the same evaluation
// (workers/events/work_budget.h; the hook answers filter_work / mapper_work): their ratio converts a
// unit to CPU time, and the last lines price a whole pathological drain batch with and without the
// drain's work budget (DRAIN_WORK_BUDGET).
//   node tests/bench/worst-case-bench.mjs [--worst-min-ms 100] [--json FILE]
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { mergeFigures, option, round } from "./json-out.mjs";
import { rawCoreExports } from "../integration/raw-core.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const MIN_MS = option("worst-min-ms", 100);
const MAX_REPEATS = 9999; // 1 + N within kMaxProgramRepeats (workers/events/test_programs.h)

// The documented caps (workers/events/ledger.h, filter_expr.h, input_mapper.h, json_schema.h,
// shared/glob.h). The bench checks the inputs it builds stay within them.
const CAPS = {
  payloadBytes: 64 * 1024,
  eventTypeLength: 128,
  globLength: 128,
  filterLength: 1024,
  filterNodes: 256,
  mapperKeys: 64,
  enumValues: 4096,
};

function instantiate() {
  const ex = rawCoreExports(path.join(ROOT, "dist/wasm/events-config.wasm")); // where /__test/programs runs
  return ex;
}

const ex = instantiate();
const decoder = new TextDecoder();

/** One POST of `body` to a test hook `url` through a core's raw ABI; returns {ms, status, body}. */
function coreCall(core, url, body) {
  const message = new TextEncoder().encode(
    JSON.stringify({
      op: "fetch",
      now: Date.now(),
      entropy: randomBytes(32).toString("hex"),
      env: { SITESWARM_TEST_HOOKS: "1" },
      request: { method: "POST", url, headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    }),
  );
  const started = performance.now();
  const ptr = core.ss_alloc(message.length);
  new Uint8Array(core.memory.buffer, ptr, message.length).set(message);
  const id = core.ss_start(ptr, message.length);
  core.ss_free(ptr);
  const ms = performance.now() - started;
  if (core.ss_state(id) !== 1) throw new Error(`${url} waited on an effect`);
  const out = JSON.parse(
    decoder.decode(new Uint8Array(core.memory.buffer, core.ss_data_ptr(id), core.ss_data_len(id))),
  );
  core.ss_drop(id);
  return { ms, status: out.status, body: JSON.parse(out.body) };
}
const call = (program) => coreCall(ex, "https://events.internal/__test/programs", program);

/** Milliseconds of one evaluation (what = "run") or compilation (what = "compile"). */
function measure(program, what, expect) {
  const one = { ...program, compile: 1, run: 1 };
  expect(call(one)); // the answer checked
  for (let i = 0; i < 3; i++) call(one); // V8 tiers the hot code up in the first calls
  const extra = (n) => call({ ...one, [what]: 1 + n }).ms - call(one).ms;
  let n = 4;
  while (n < MAX_REPEATS && extra(n) < MIN_MS) n = Math.min(MAX_REPEATS, n * 4);
  const per = [0, 1, 2].map(() => extra(n) / n).sort((a, b) => a - b);
  return Math.max(0, per[1]);
}

function check(condition, what) {
  if (!condition) throw new Error(`worst-case bench: ${what}`);
}

// ---- the worst inputs
const bigString = "a".repeat(60_000);
const event = (payload, type = "price.changed") => ({
  event_id: "01JD0000000000000000000000",
  event_type: type,
  entity_type: "item",
  entity_id: "1",
  tenant_id: "bench",
  payload,
  source_system: "platform",
  caused_by: null,
});
const sizeOf = (x) => Buffer.byteLength(JSON.stringify(x));

// contains() with the needle a naive search is quadratic on: "aaa…ab" against "aaa…a".
const needle = `${"a".repeat(CAPS.filterLength - 24)}b`;
const oneContains = `contains(payload.s, "${needle}")`;
// As many contains() over the 60 KB string as the length cap allows.
const manyContains = Array.from({ length: 60 }, () => 'contains(payload.s,"ab")')
  .join("||")
  .slice(0, CAPS.filterLength)
  .replace(/\|*[^|]*$/, (tail) => (tail.endsWith(")") ? tail : ""));
const stringEvent = event({ s: bigString });
check(sizeOf(stringEvent.payload) <= CAPS.payloadBytes, "payload over the cap");
check(oneContains.length <= CAPS.filterLength && manyContains.length <= CAPS.filterLength, "filter over the cap");

// A mapper copying the whole event into each of its 64 keys.
const mapper = Object.fromEntries(Array.from({ length: CAPS.mapperKeys }, (_, i) => [`k${i}`, "$"]));

// Enums: the cap (numbers 0…4095) and the issue's 20,001 values; 20,000 items in the payload.
const enumSchema = (n) => ({
  type: "object",
  properties: { items: { type: "array", items: { enum: Array.from({ length: n }, (_, i) => i) } } },
});
const itemsIn = event({ items: Array.from({ length: 20_000 }, (_, i) => i % 10) });
const itemsOut = event({ items: Array.from({ length: 20_000 }, () => -1) });
check(sizeOf(itemsOut.payload) <= CAPS.payloadBytes, "items payload over the cap");

// The glob the single-backtrack matcher is slowest on (shared/glob.h, O(pattern × text)): one star
// then a literal that fails at its last character, retried from every position of "aaa…a" it fits
// at: (text - literal) × literal steps, largest with the literal half the 128-character type.
const glob = `*${"a".repeat(CAPS.eventTypeLength / 2 - 1)}b`;
const globEvent = event({}, "a".repeat(CAPS.eventTypeLength));

const ok200 = (key, value) => (r) =>
  check(r.status === 200 && r.body[key] === value, `${key}: got ${r.status} ${JSON.stringify(r.body)}`);
// The work units of the checked evaluation, by case key.
const work = {};
const counting = (key, field, expect) => (r) => {
  expect(r);
  check(Number.isInteger(r.body[field]) && r.body[field] > 0, `${field} missing: ${JSON.stringify(r.body)}`);
  work[key] = r.body[field];
};

const cases = [
  {
    key: "filter_contains_60kb_us",
    label: `filter contains() 60 KB × ${needle.length}-char needle`,
    us:
      1000 *
      measure(
        { filter: oneContains, event: stringEvent },
        "run",
        counting("filter_contains_60kb_us", "filter_work", ok200("filter", false)),
      ),
  },
  {
    key: "filter_many_contains_60kb_us",
    label: `filter ${manyContains.split("||").length} × contains() on 60 KB`,
    us:
      1000 *
      measure(
        { filter: manyContains, event: stringEvent },
        "run",
        counting("filter_many_contains_60kb_us", "filter_work", ok200("filter", false)),
      ),
  },
  {
    key: "filter_compile_us",
    label: `filter compile (${oneContains.length} chars)`,
    us: 1000 * measure({ filter: oneContains, event: {} }, "compile", ok200("filter", false)),
  },
  {
    key: "mapper_64_whole_event_us",
    label: `input mapper 64 × "$" on a 60 KB event`,
    us:
      1000 *
      measure(
        { mapper, event: stringEvent },
        "run",
        counting("mapper_64_whole_event_us", "mapper_work", (r) =>
          check(r.status === 200 && r.body.mapper_bytes > 64 * 60_000, `mapper: ${JSON.stringify(r.body)}`),
        ),
      ),
  },
  {
    key: "schema_enum_compile_us",
    label: `schema compile, ${CAPS.enumValues}-value enum (the cap)`,
    us: 1000 * measure({ schema: enumSchema(CAPS.enumValues), event: itemsIn }, "compile", ok200("violations", 0)),
  },
  {
    key: "schema_enum_20000_items_us",
    label: `schema ${CAPS.enumValues}-value enum × 20,000 items (valid)`,
    us: 1000 * measure({ schema: enumSchema(CAPS.enumValues), event: itemsIn }, "run", ok200("violations", 0)),
  },
  {
    key: "schema_enum_20000_bad_items_us",
    label: `schema ${CAPS.enumValues}-value enum × 20,000 items (none in it)`,
    us: 1000 * measure({ schema: enumSchema(CAPS.enumValues), event: itemsOut }, "run", ok200("violations", 10)),
  },
  {
    key: "glob_128_us",
    label: `glob *a…ab (${glob.length} chars) × ${CAPS.eventTypeLength}-char type`,
    us: 1000 * measure({ glob, event: globEvent }, "run", ok200("glob", false)),
  },
];

// The issue's case: a 20,001-value enum is refused when the schema is registered (400), so no payload
// is ever checked against it; the figure is the whole request that refuses it.
const refused = call({ schema: enumSchema(20_001), event: itemsIn });
check(refused.status === 400, `a 20,001-value enum must be refused, got ${refused.status}`);
const refusedMs = Math.min(...[0, 1, 2].map(() => call({ schema: enumSchema(20_001), event: itemsIn }).ms));

console.log("worst cases of operator-supplied programs (events-config.wasm in Node, CPU per evaluation):");
for (const c of cases) console.log(`  ${c.label.padEnd(52)} ${c.us.toFixed(1).padStart(9)} µs`);
console.log(
  `  ${"schema 20,001-value enum: refused (400), whole request".padEnd(52)} ${(1000 * refusedMs).toFixed(1).padStart(9)} µs`,
);

// ---- work units → CPU time, and a whole pathological drain batch
const DEFAULT_WORK_BUDGET = 100_000_000; // kDefaultDrainWorkBudget (workers/events/work_budget.h)
const ENVELOPE_WORK = 512; // kEventEnvelopeWork
const BATCH = 500; // kDrainBatchSize
const FANOUT = 8; // kMaxFanout
const usOf = Object.fromEntries(cases.map((c) => [c.key, c.us]));
const nsPerUnit = Object.fromEntries(Object.keys(work).map((k) => [k, (1000 * usOf[k]) / work[k]]));
const slowest = Math.max(...Object.values(nsPerUnit));
console.log("work units (DRAIN_WORK_BUDGET) → CPU time:");
for (const [k, ns] of Object.entries(nsPerUnit)) {
  console.log(`  ${`${k.replace(/_us$/, "")}: ${work[k]} units`.padEnd(52)} ${ns.toFixed(1).padStart(9)} ns/unit`);
}
// A batch of 500 events with a 60 KB payload, each matching 8 subscriptions whose filter is the
// longest contains() chain and whose mapper copies the whole event 64 times (every cap at its worst).
const payloadBytes = sizeOf(stringEvent.payload);
const filterWork = work.filter_many_contains_60kb_us;
const mapperWork = work.mapper_64_whole_event_us;
const eventWork = payloadBytes + FANOUT * (filterWork + payloadBytes + ENVELOPE_WORK + mapperWork);
const eventMs = (FANOUT * (usOf.filter_many_contains_60kb_us + usOf.mapper_64_whole_event_us)) / 1000;
const perRun = Math.max(1, Math.floor(DEFAULT_WORK_BUDGET / eventWork));
const budgetMs = (DEFAULT_WORK_BUDGET * slowest) / 1e6;
console.log(
  `  ${`pathological batch, ${BATCH} events × ${FANOUT} subs, no budget`.padEnd(52)} ${(BATCH * eventMs).toFixed(0).padStart(9)} ms`,
);
console.log(
  `  ${`same, default budget: ${perRun} events a run`.padEnd(52)} ${(perRun * eventMs).toFixed(0).padStart(9)} ms`,
);
console.log(`  ${"default budget at the slowest rate (upper bound)".padEnd(52)} ${budgetMs.toFixed(0).padStart(9)} ms`);
// ---- a tenant's opening hours (cms GET /v1/status, RPC getStatus): the schedule's nextChange scan
// over up to 400 days (workers/cms/schedule.h) on the worst contents the Studio caps allow: open
// around the clock in six back-to-back ranges a day, so nothing ever flips and the scan runs to its
// end, with 100 overrides (the cap) of six ranges each — dated past the scan at minutes of their own
// (every override's minutes were once tried on every day), or covering the whole scan fifty a day
// (each day's override is looked up among the 100). Through cms.wasm's test hook POST /__test/zone,
// one instant vs 1 + N instants.
const cms = rawCoreExports(path.join(ROOT, "dist/wasm/cms.wasm"));
const cmsCall = (body) => coreCall(cms, "https://cms.internal/__test/zone", body);
const pad = (n) => String(n).padStart(2, "0");
const allDay = Array.from({ length: 6 }, (_, r) => ({ open: `${pad(4 * r)}:00`, close: `${pad(4 * r + 4)}:00` }));
const weekly = Object.fromEntries(["sun", "mon", "tue", "wed", "thu", "fri", "sat"].map((d) => [d, allDay]));
const farOverrides = Array.from({ length: 100 }, (_, i) => ({
  id: `far${i}`,
  from: `2035-${pad(1 + Math.floor(i / 28))}-${pad(1 + (i % 28))}`,
  hours: Array.from({ length: 6 }, (_, r) => ({
    open: `${pad(2 * r + 1)}:${pad((i + r) % 60)}`,
    close: `${pad(2 * r + 2)}:${pad((i * 7 + r) % 60)}`,
  })),
}));
// An override spans at most 366 days: two halves of 50, one after the other, cover the scan.
const coveringOverrides = Array.from({ length: 100 }, (_, i) => ({
  id: `all${pad(i)}`,
  from: i < 50 ? "2026-05-01" : "2027-05-01",
  to: i < 50 ? "2027-04-30" : "2028-04-29",
  hours: allDay,
}));
const at = Math.floor(Date.parse("2026-06-01T10:00:00Z") / 1000);
/** µs of one status answer (with its nextChange) for `overrides`, checked always open. */
function statusCost(overrides, what) {
  const statusOf = (n) => cmsCall({ zone: "Europe/Paris", weekly, overrides, instants: Array(n).fill(at) });
  const first = statusOf(1);
  check(
    first.status === 200 && first.body.open[0] === true && first.body.nextChange[0] === null,
    `cms worst schedule (${what}): got ${first.status} ${JSON.stringify(first.body)}`,
  );
  for (let i = 0; i < 3; i++) statusOf(1);
  let n = 1;
  while (n < 4096 && statusOf(1 + n).ms - statusOf(1).ms < MIN_MS) n *= 4;
  const us = [0, 1, 2].map(() => (1000 * (statusOf(1 + n).ms - statusOf(1).ms)) / n).sort((a, b) => a - b)[1];
  console.log(`  ${`cms /v1/status, 400-day scan, ${what}`.padEnd(52)} ${Math.max(0, us).toFixed(1).padStart(9)} µs`);
  return Math.max(0, us);
}
const statusFarUs = statusCost(farOverrides, "100 overrides after it");
const statusCoveringUs = statusCost(coveringOverrides, "100 overrides over it");

mergeFigures({
  worst_case: {
    cms_status_far_overrides_us: round(statusFarUs, 1),
    cms_status_covering_overrides_us: round(statusCoveringUs, 1),
    ...Object.fromEntries(cases.map((c) => [c.key, round(c.us, 1)])),
    schema_enum_20001_refused_request_us: round(1000 * refusedMs, 1),
    min_ms: MIN_MS,
    ...Object.fromEntries(
      Object.entries(nsPerUnit).map(([k, ns]) => [`${k.replace(/_us$/, "")}_ns_per_unit`, round(ns, 2)]),
    ),
    pathological_batch_unbudgeted_ms: round(BATCH * eventMs, 0),
    pathological_events_per_run: perRun,
    pathological_run_ms: round(perRun * eventMs, 0),
    default_budget_upper_bound_ms: round(budgetMs, 0),
  },
});
