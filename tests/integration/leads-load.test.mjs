// The leads pipeline under concurrent load, on every CI run: 200 submissions at concurrency 20 through
// the bakery's delegated route (Turnstile on, one webhook per lead through the notify queue), then
// none lost and none doubled — every accepted lead stored exactly once and delivered exactly once.
// The same run at 2,000 submissions, with latency and CPU figures, is part of scripts/bench
// (tests/bench/leads-load.mjs).
import assert from "node:assert/strict";
import { it } from "node:test";
import { runLeadsLoad } from "../bench/leads-load.mjs";

it("200 concurrent submissions: every accepted lead stored once and delivered once", { timeout: 120_000 }, async () => {
  const r = await runLeadsLoad({ submissions: 200, concurrency: 20, settleTimeoutMs: 60_000 });
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.refused, {}, "the rate limiter or anything else refused a submission");
  assert.equal(r.accepted, 200);
  assert.equal(r.stored, 200);
  assert.equal(r.distinctDeliveries, 200);
  assert.equal(r.webhookCalls, 200);
  assert.equal(r.siteverify, 200);
});
