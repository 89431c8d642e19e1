// In-memory stand-ins for the analytics worker's bindings, for the benches that run a beacon without
// D1, Analytics Engine or a queue behind it (beacon-cpu.mjs in Node, beacon-loop-worker.js in
// workerd): D1 answers `rowFor(sql)` (a row object, or null) after `settle()` as real I/O would, in
// every form the host and the peer read (first, raw with column names, run, batch); the AE dataset and
// the queue count what they are given.
export function beaconBindings(rowFor, settle) {
  const counts = { points: 0, sent: 0 };
  const d1 = {
    prepare(sql) {
      const stmt = {
        bind: () => stmt,
        async first() {
          await settle();
          return rowFor(sql);
        },
        async raw() {
          await settle();
          const row = rowFor(sql);
          return row ? [Object.keys(row), Object.values(row)] : [];
        },
        async run() {
          await settle();
          return { meta: { changes: 0 } };
        },
      };
      return stmt;
    },
    async batch(statements) {
      await settle();
      return statements.map(() => ({ results: [], meta: { changes: 0 } }));
    },
  };
  const bindings = {
    ANALYTICS_DB: d1,
    PAGEVIEWS: { writeDataPoint: () => counts.points++ },
    PAGEVIEWS_QUEUE: {
      async send() {
        await settle();
        counts.sent++;
      },
    },
  };
  return { bindings, counts };
}
