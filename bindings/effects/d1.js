// D1: d1.all / d1.first / d1.run / d1.batch. Params are `?1`-style, bound in order.
// Rows go to the core in D1's compact form (docs/abi.md): the column names once, then each row as
// an array of values. That is what D1 itself holds (`raw({ columnNames: true })` skips building one
// object per row), about half the bytes of rows as objects, and several times cheaper for the core
// to parse than one map per row with the key names repeated.
import { binding } from "./errors.js";

const database = (env, effect) => binding(env, effect.binding, "D1", "prepare", "batch");

// D1 binds null, numbers, strings and booleans; anything structured goes in as its JSON text.
const param = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : v);
const statement = (db, { sql, params = [] }) => db.prepare(sql).bind(...params.map(param));

// raw({ columnNames: true }) → [columns, ...rows]; an empty result may come without the names.
async function compact(stmt) {
  const [columns = [], ...rows] = await stmt.raw({ columnNames: true });
  return { columns, rows };
}

// A batch entry: its rows as objects (batch() has no raw form) in the compact form, and its meta.
// An entry without rows (every INSERT, UPDATE and DELETE without RETURNING) is its meta alone.
function batchEntry({ results, meta }) {
  if (!results?.length) return { meta: coreMeta(meta) };
  const columns = Object.keys(results[0]);
  return { columns, rows: results.map((row) => columns.map((c) => row[c])), meta: coreMeta(meta) };
}

// The meta fields the core reads (shared/effects.cpp decode_meta). D1 answers with a dozen more
// (served_by, duration, timings, size_after, changed_db, …) that would only be stringified, copied
// into wasm and parsed into the core's DOM for nothing, on every write (docs/abi.md).
const coreMeta = (meta) => ({
  changes: meta?.changes ?? 0,
  last_row_id: meta?.last_row_id ?? 0,
  rows_read: meta?.rows_read ?? 0,
  rows_written: meta?.rows_written ?? 0,
});

// d1.all's options (docs/abi.md "Held columns"): `hold` takes one column's values out of the rows —
// handed apart as `heldValues`, which bindings/host.js keeps for the run's answer and replaces by a
// handle — `holdLimit` keeps only the first n of those values (a page read one row past its size,
// to know whether another follows), and `tail` answers only the last n rows, with `count` of them
// all (a page's cursor).
function shape(result, { hold, tail, holdLimit }) {
  const index = typeof hold === "string" ? result.columns.indexOf(hold) : -1;
  const count = result.rows.length;
  if (index >= 0) {
    const kept = Number.isInteger(holdLimit) && holdLimit >= 0 ? result.rows.slice(0, holdLimit) : result.rows;
    result.heldValues = kept.map((row) => (typeof row[index] === "string" ? row[index] : JSON.stringify(row[index])));
    result.columns.splice(index, 1);
  }
  if (Number.isInteger(tail) && tail >= 0) {
    result.rows = tail === 0 ? [] : result.rows.slice(-tail);
    result.count = count;
  }
  if (index >= 0) for (const row of result.rows) row.splice(index, 1);
  return result;
}

export default {
  async "d1.all"(effect, env) {
    return shape(await compact(statement(database(env, effect), effect)), effect);
  },
  async "d1.first"(effect, env) {
    const { columns, rows } = await compact(statement(database(env, effect), effect));
    return { columns, rows: rows.slice(0, 1) };
  },
  async "d1.run"(effect, env) {
    return { meta: coreMeta((await statement(database(env, effect), effect).run()).meta) };
  },
  async "d1.batch"(effect, env) {
    const db = database(env, effect);
    const results = await db.batch(effect.statements.map((s) => statement(db, s)));
    return results.map(batchEntry);
  },
};
