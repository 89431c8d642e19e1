// D1 load of the analytics pipeline, counted (not timed): 1,000 beacons of a realistic mix (three
// tenants, bots, DNT/GPC; tests/bench/analytics-d1-count.mjs) through the real analytics worker in
// workerd, its D1 binding wrapped by a counting harness (tests/bench/analytics-counted.js), the real
// queue consumer rolling them up. What the design promises (docs/analytics.md "Scaling") is asserted:
// - the beacon path never writes D1 and does not read it per beacon: each tenant's row is read once
//   per instance and 30 s (shared/tenant_cache.h) — at most once per beacon in flight before the
//   first read answers — and today's salt likewise once per instance and day; no batch;
// - the consumer makes exactly one D1 round trip — one batch() of at most four statements — per
//   message batch, so D1 writes follow message batches, not pageviews;
// - every beacon is counted once (pageviews + filtered bots), bots as filtered.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { measureD1PerPageviews, mixedBeacon, perThousand, printD1Count } from "../bench/analytics-d1-count.mjs";

const BEACONS = 1000;
const CONCURRENCY = 8;
const MAX_ROLLUP_STATEMENTS = 4; // daily_totals, daily_dims, visitor_days, visitor_dims
const MAX_MESSAGE_BATCH = 100; // wrangler/analytics.jsonc max_batch_size
const TENANTS = 3; // analytics-d1-count.mjs's mix
const TENANT_CACHE_SECONDS = 30; // kTenantCacheTtlMs

describe("analytics: D1 statements per 1,000 pageviews", () => {
  it("the beacon path reads each tenant once per instance and 30 s; the consumer writes one D1 batch per message batch", async () => {
    const r = await measureD1PerPageviews({ pageviews: BEACONS, concurrency: CONCURRENCY });
    printD1Count(r, (line) => console.log(line));
    assert.deepEqual(r.refused, []);

    const bots = Array.from({ length: BEACONS }, (_, n) => mixedBeacon(n)).filter((b) => b.bot).length;
    assert.ok(bots > 0 && bots < BEACONS);
    assert.deepEqual(r.counted, { pageviews: BEACONS - bots, filtered: bots });

    // The beacon path: reads only, one statement per round trip.
    assert.equal(r.beacon.writes, 0);
    assert.equal(r.beacon.batches, 0);
    assert.equal(r.beacon.roundTrips, r.beacon.statements);
    // Each tenant's row: read at least once, and at most once per beacon in flight per 30 s period
    // the run lasted (the cache's lifetime, on workerd's wall clock).
    const periods = 1 + Math.ceil(r.beaconSeconds / TENANT_CACHE_SECONDS);
    const tenantReads = r.beacon.tables.tenants ?? 0;
    assert.ok(tenantReads >= TENANTS && tenantReads <= TENANTS * CONCURRENCY * periods, JSON.stringify(r.beacon));
    assert.ok((r.beacon.tables.salts ?? 0) >= 1 && r.beacon.tables.salts <= CONCURRENCY, JSON.stringify(r.beacon));
    assert.equal(r.beacon.statements, tenantReads + r.beacon.tables.salts);

    // The consumer: every message delivered, one batch() per message batch, ≤ 4 statements each.
    assert.equal(
      r.queueBatches.reduce((a, b) => a + b, 0),
      BEACONS,
    );
    assert.ok(r.queueBatches.every((n) => n >= 1 && n <= MAX_MESSAGE_BATCH));
    assert.equal(r.rollup.roundTrips, r.queueBatches.length);
    assert.equal(r.rollup.batches, r.queueBatches.length);
    assert.ok(r.rollup.largestBatch <= MAX_ROLLUP_STATEMENTS);
    assert.ok(r.rollup.statements <= MAX_ROLLUP_STATEMENTS * r.queueBatches.length);
    // So at most 4 statements per 100 messages once batches fill, whatever the traffic.
    const p = perThousand(r);
    assert.ok(p.rollup_round_trips >= 1000 / MAX_MESSAGE_BATCH);
  });
});
