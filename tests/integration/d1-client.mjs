// A test's own reads and writes of a worker's D1, without Miniflare's synchronous proxy.
//
// `mf.getD1Database()` hands Node a proxy whose synchronous calls (`prepare`, `bind`) each block on
// Miniflare's SynchronousFetcher; once one of its answers is missed, every later call on that
// Miniflare reads the previous call's answer (`assert(message?.id === id)`), and every test after it
// fails. Here `prepare` and `bind` only record the statement, and each `all`/`first`/`run`/`raw`/
// `batch`/`exec` is one ordinary request to a small worker in the same Miniflare bound to the same
// database (d1ProbeWorker below), which runs it on the real D1 binding and answers its result as
// JSON.
// Columns that are BLOBs would come back as JSON; the tests read none.

/** The probe worker: `DB_<n>` bindings to the databases of `databases` ([[binding, id]]). */
export function d1ProbeWorker(databases) {
  return {
    name: "d1-probe",
    modules: true,
    compatibilityDate: "2026-04-20",
    // Its own 127.0.0.1 port: the tests reach it with Node's fetch, not through Miniflare's proxy.
    unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
    d1Databases: Object.fromEntries(databases.map(([binding, id]) => [binding, { id }])),
    script: `export default {
      async fetch(request, env) {
        const { db, op, statements, sql, column, columnNames } = await request.json();
        const d1 = env[db];
        const prepared = (s) => d1.prepare(s.sql).bind(...s.params);
        try {
          let out;
          if (op === "batch") out = await d1.batch(statements.map(prepared));
          else if (op === "exec") out = await d1.exec(sql);
          else if (op === "first") out = await (column === null ? prepared(statements[0]).first() : prepared(statements[0]).first(column));
          else if (op === "raw") out = await prepared(statements[0]).raw({ columnNames });
          else out = await prepared(statements[0])[op]();
          return Response.json({ out: out ?? null });
        } catch (err) {
          return Response.json({ error: String(err?.message ?? err) });
        }
      },
    };`,
  };
}

// What D1 takes as a parameter and JSON carries alike; D1 refuses `undefined` (D1_TYPE_ERROR), and a
// BLOB would arrive as an object: refused here rather than sent as something else.
function bindable(value) {
  const type = typeof value;
  if (value === null || type === "string" || type === "boolean" || (type === "number" && Number.isFinite(value))) {
    return value;
  }
  throw new TypeError(`d1-client: cannot bind ${type === "object" ? "an object" : type}`);
}

/**
 * A D1Database-like client of one database: `prepare(sql).bind(...).all()/first(col)/run()/raw()`,
 * `batch([...])`, `exec(sql)`; a D1 error is thrown as an Error with D1's message.
 * @param send (body) → Promise<Response>, a request to the probe worker (POST, JSON body)
 * @param db the probe's binding name of the database
 */
export function d1Client(send, db) {
  const call = async (body) => {
    const res = await send(JSON.stringify({ db, ...body }));
    const answer = await res.json();
    if (answer.error !== undefined) throw new Error(answer.error);
    return answer.out;
  };
  const statement = (sql, params = []) => ({
    sql,
    params,
    bind: (...values) => statement(sql, values.map(bindable)),
    all: () => call({ op: "all", statements: [{ sql, params }] }),
    run: () => call({ op: "run", statements: [{ sql, params }] }),
    first: (column) => call({ op: "first", column: column ?? null, statements: [{ sql, params }] }),
    raw: ({ columnNames = false } = {}) => call({ op: "raw", columnNames, statements: [{ sql, params }] }),
  });
  return {
    prepare: (sql) => statement(sql),
    batch: (statements) => call({ op: "batch", statements: statements.map(({ sql, params }) => ({ sql, params })) }),
    exec: (sql) => call({ op: "exec", sql }),
  };
}
