// scripts/bench, the analytics part: the tracker's gzipped size, the analytics wasm's gzipped size,
// beacon throughput through the bakery's delegated route (/_sa/beacon → analytics.wasm, AE + queue),
// a rollup run: N pageview messages through the queue consumer into D1, wall time until every
// one is counted, and D1 statements per 1,000 pageviews, measured: a realistic mix of beacons through
// the worker and its consumer with every D1 call counted (analytics-d1-count.mjs; 0 skips it).
//   node tests/bench/analytics-bench.mjs [--beacons 2000] [--beacon-concurrency 16] [--pageviews 200000]
//     [--d1-pageviews 1000] [--json FILE]
//
// The plain-JS beacon worker beside this one, and CPU per beacon, are analytics-peer.mjs.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { startMesh } from "../integration/mesh.mjs";
import { measureD1PerPageviews, perThousand, printD1Count } from "./analytics-d1-count.mjs";
import { mergeFigures, option, round } from "./json-out.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BEACONS = option("beacons", 2000);
const CONCURRENCY = option("beacon-concurrency", 16);
const PAGEVIEWS = option("pageviews", 200_000);
const D1_PAGEVIEWS = option("d1-pageviews", 1000);
const MESSAGES_PER_SEND = 100;
const CHROME =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

const mesh = await startMesh();
try {
  const tracker = await (await mesh.fetch("bakery", "/_sa/script.js")).text();
  const wasm = readFileSync(path.join(ROOT, "dist/wasm/analytics.wasm"));
  console.log("\nanalytics");
  console.log(`  tracker: ${tracker.length} B, ${gzipSync(tracker, { level: 9 }).length} B gzipped (goal < 1024)`);
  console.log(
    `  analytics.wasm: ${kib(wasm.length)}, ${kib(gzipSync(wasm, { level: 9 }).length)} gzipped (goal < 128 KiB)`,
  );

  // Beacons through the site's delegation, as browsers send them.
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < BEACONS) {
        const i = next++;
        const res = await mesh.fetch("bakery", "/_sa/beacon", {
          method: "POST",
          headers: {
            "content-type": "text/plain;charset=UTF-8",
            "user-agent": CHROME,
            "cf-connecting-ip": `198.51.100.${i % 250}`,
          },
          body: JSON.stringify({
            u: `https://crumbandcrust.example/p/${i % 50}`,
            r: "https://www.google.com/",
            w: 1280,
          }),
        });
        await res.arrayBuffer();
        if (res.status !== 202) failures++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `  beacons: ${BEACONS} at concurrency ${CONCURRENCY}: ${(BEACONS / seconds).toFixed(0)}/s, ${failures} not 202`,
  );

  // The rollup: PAGEVIEWS messages on a day of their own, sent in batches, consumed by analytics.wasm.
  const producer = await mesh.mf.getQueueProducer("PAGEVIEWS_QUEUE", "siteswarm-analytics-service");
  const day = "2031-01-01";
  const db = await mesh.d1("analytics", "ANALYTICS_DB");
  const counted = async () =>
    (await db.prepare("SELECT COALESCE(SUM(pageviews), 0) AS n FROM daily_totals WHERE day = ?1").bind(day).first()).n;
  const rollupStart = performance.now();
  for (let sent = 0; sent < PAGEVIEWS; sent += MESSAGES_PER_SEND) {
    const batch = [];
    for (let i = sent; i < Math.min(PAGEVIEWS, sent + MESSAGES_PER_SEND); i++) {
      batch.push({
        body: {
          t: "bakery",
          d: day,
          v: (i % 5000).toString(16).padStart(16, "0"),
          m: {
            path: `/p/${i % 200}`,
            referrer: "(direct)",
            country: "DE",
            colo: "FRA",
            device: "desktop",
            browser: "Chrome",
          },
        },
      });
    }
    await producer.sendBatch(batch);
  }
  const deadline = Date.now() + 30 * 60_000;
  let n = await counted();
  while (n < PAGEVIEWS && Date.now() < deadline) {
    await sleep(250);
    n = await counted();
  }
  const rollupSeconds = (performance.now() - rollupStart) / 1000;
  console.log(
    `  rollup: ${n}/${PAGEVIEWS} pageviews counted in ${rollupSeconds.toFixed(1)} s ` +
      `(${(n / rollupSeconds).toFixed(0)}/s); design bound: 1 D1 batch of ≤ 4 statements per message batch of ≤ 100`,
  );
  mergeFigures({
    analytics: {
      tracker_gzip_bytes: gzipSync(tracker, { level: 9 }).length,
      beacons_per_s: round(BEACONS / seconds),
      beacon_failures: failures,
      rollup_pageviews: n,
      rollup_per_s: round(n / rollupSeconds),
    },
  });
} finally {
  await mesh.dispose();
}

// D1 statements per 1,000 pageviews, counted in a Miniflare of its own.
if (D1_PAGEVIEWS > 0) {
  const r = await measureD1PerPageviews({ pageviews: D1_PAGEVIEWS });
  printD1Count(r);
  const p = perThousand(r);
  mergeFigures({
    analytics: {
      d1_per_1000_pageviews: {
        beacons: r.beacons,
        bots: r.bots,
        message_batches: r.queueBatches.length,
        rollup_statements: round(p.rollup_statements),
        rollup_round_trips: round(p.rollup_round_trips),
        beacon_statements: round(p.beacon_statements),
        beacon_round_trips: round(p.beacon_round_trips),
        beacon_writes: round(p.beacon_writes),
        total_statements: round(p.total_statements),
        total_round_trips: round(p.total_round_trips),
      },
    },
  });
  if (r.refused.length) process.exitCode = 1;
}
