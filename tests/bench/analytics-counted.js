// The analytics worker (the real dist/wasm/analytics.wasm behind the real bindings/host.js) with its
// D1 binding counted — a bench and test harness only (tests/bench/analytics-d1-count.mjs,
// tests/integration/analytics-d1.test.mjs), never deployed: workers/analytics/worker.js is the
// worker. Every D1 call the core's effects make is tallied under the handler that made it
// (`fetch <path>`, `queue`, `scheduled`), and per first table named: a statement per prepared statement executed, a round trip
// per call that reaches D1 (first/all/run/raw: one statement; batch([…]): one round trip of N
// statements), and writes (INSERT/UPDATE/DELETE/REPLACE) apart. Queue invocations and their message
// counts are tallied too, so that D1 round trips can be set against message batches.
//   GET /__d1-counts → the tallies; DELETE /__d1-counts → zero them.
import wasm from "../../dist/wasm/analytics.wasm";
import { defineWorker } from "../../bindings/host.js";

const worker = defineWorker(wasm, { service: "siteswarm-analytics-service", cf: ["country", "colo"] });
const WRITE = /^\s*(?:insert|update|delete|replace)\b/i;
const TABLE = /\b(?:from|into|update)\s+"?(\w+)/i; // the statement's first table, per-table counts

let tallies = {};
let queueBatches = [];
const tally = (phase) => {
  tallies[phase] ??= { statements: 0, roundTrips: 0, writes: 0, batches: 0, largestBatch: 0, tables: {} };
  return tallies[phase];
};

function counted(db, phase) {
  const record = (sqls, isBatch) => {
    const t = tally(phase);
    t.roundTrips++;
    t.statements += sqls.length;
    t.writes += sqls.filter((sql) => WRITE.test(sql)).length;
    for (const sql of sqls) {
      const table = TABLE.exec(sql)?.[1] ?? "?";
      t.tables[table] = (t.tables[table] ?? 0) + 1;
    }
    if (isBatch) {
      t.batches++;
      t.largestBatch = Math.max(t.largestBatch, sqls.length);
    }
  };
  // `method` of a statement or the database, recorded as one round trip of `sqls(args)`.
  const counting =
    (target, method, sqls, isBatch = false) =>
    (...args) => {
      record(sqls(args), isBatch);
      return target[method](...args);
    };
  const statement = (inner, sql) => {
    const one = () => [sql];
    return {
      inner,
      sql,
      bind: (...params) => statement(inner.bind(...params), sql),
      first: counting(inner, "first", one),
      all: counting(inner, "all", one),
      run: counting(inner, "run", one),
      raw: counting(inner, "raw", one),
    };
  };
  return {
    prepare: (sql) => statement(db.prepare(sql), sql),
    batch: (statements) => {
      record(
        statements.map((s) => s.sql),
        true,
      );
      return db.batch(statements.map((s) => s.inner));
    },
    exec: counting(db, "exec", ([sql]) => [sql]),
  };
}

// One wrapped env per (env, phase): workerd hands every call of an isolate the same env, and the
// host keys its per-env caches on the object.
const wrapped = new WeakMap();
function envFor(env, phase) {
  if (!wrapped.has(env)) wrapped.set(env, new Map());
  const byPhase = wrapped.get(env);
  if (!byPhase.has(phase)) byPhase.set(phase, { ...env, ANALYTICS_DB: counted(env.ANALYTICS_DB, phase) });
  return byPhase.get(phase);
}

export default {
  fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (pathname === "/__d1-counts") {
      if (request.method === "DELETE") {
        tallies = {};
        queueBatches = [];
      }
      return Response.json({ phases: tallies, queueBatches });
    }
    return worker.fetch(request, envFor(env, `fetch ${pathname}`), ctx);
  },
  queue(batch, env, ctx) {
    queueBatches.push(batch.messages.length);
    return worker.queue(batch, envFor(env, "queue"), ctx);
  },
  scheduled(controller, env, ctx) {
    return worker.scheduled(controller, envFor(env, "scheduled"), ctx);
  },
};
