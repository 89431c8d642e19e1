// D1 statements per 1,000 pageviews, measured: `pageviews` beacons of a realistic mix (three tenants,
// 24 paths, five referrer kinds, desktop/mobile/tablet browsers, utm tags on some, 8 % bots of four
// kinds, 5 % DNT and 3 % Sec-GPC, 300 visitors) through the real analytics worker in workerd
// (Miniflare), its real queue consumer (the wrangler config's: batches of ≤ 100, 2 s) rolling them
// into D1, with every D1 call the worker makes counted by tests/bench/analytics-counted.js (the
// worker behind a counting wrapper of its D1 binding; production code is not touched). Used by
// tests/bench/analytics-bench.mjs (printed, and in --json) and tests/integration/analytics-d1.test.mjs
// (the design's bounds asserted).
//   node tests/bench/analytics-d1-count.mjs [--d1-pageviews 1000]
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { option } from "./json-out.mjs";
import { platformWorkerOptions } from "./worker-options.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const NAME = "siteswarm-analytics-service";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const TENANTS = [
  { id: "bakery", host: "crumbandcrust.example", share: 0.5 },
  { id: "auto-repair", host: "fixit.example", share: 0.3 },
  { id: "florist", host: "petals.example", share: 0.2 },
];
const PATHS = ["/", "/menu", "/about", "/contact", "/blog", "/pricing"].flatMap((p) => [
  p,
  `${p}/a`,
  `${p}/b`,
  `${p}/c`,
]);
const PEOPLE = [
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
  "Mozilla/5.0 (iPad; CPU OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
];
const BOTS = [
  "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
  "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
  "curl/8.5.0",
  "",
];
const PLACES = [
  { country: "DE", colo: "FRA" },
  { country: "US", colo: "IAD" },
  { country: "GB", colo: "LHR" },
  { country: "FR", colo: "CDG" },
];

/** The n-th beacon of the mix: deterministic, so every run sends the same traffic. */
export function mixedBeacon(n) {
  const r = (n * 7919) % 1000; // spreads the kinds over the run
  const tenant = r < 500 ? TENANTS[0] : r < 800 ? TENANTS[1] : TENANTS[2];
  const visitor = (n * 31) % 300;
  const bot = r % 25 < 2 ? BOTS[visitor % BOTS.length] : null; // 8 %
  const referrer = [
    "https://www.google.com/",
    "",
    `https://${tenant.host}/`,
    "https://news.ycombinator.com/item?id=1",
    "https://m.facebook.com/",
  ][n % 5];
  const utm = n % 7 === 0 ? "?utm_source=newsletter&utm_medium=email&utm_campaign=winter" : "";
  const headers = {
    "user-agent": bot ?? PEOPLE[visitor % PEOPLE.length],
    "cf-connecting-ip": `203.0.113.${visitor % 250}`,
  };
  if (bot === "") headers["user-agent"] = "";
  if (r % 20 === 5) headers.dnt = "1"; // 5 %
  if (r % 100 >= 90 && r % 100 < 93) headers["sec-gpc"] = "1"; // 3 %
  return {
    tenant: tenant.id,
    bot: bot !== null,
    headers,
    cf: PLACES[visitor % PLACES.length],
    body: {
      u: `https://${tenant.host}${PATHS[(n * 13) % PATHS.length]}${utm}`,
      r: referrer,
      w: [1280, 390, 820][visitor % 3],
    },
  };
}

/**
 * Runs `pageviews` beacons through the counted worker, waits until the consumer has rolled every one
 * up, and returns the D1 tallies: `beacon` (the /beacon handler), `rollup` (the queue consumer),
 * `queueBatches` (message counts per consumer invocation), the expected and counted totals.
 */
export async function measureD1PerPageviews({ pageviews = 1000, concurrency = 8, timeoutMs = 120_000 } = {}) {
  const { Miniflare } = await import("miniflare");
  const { applyMigrations } = await import("../../scripts/lib/local-mesh.mjs");
  const adminToken = randomBytes(24).toString("hex");
  const options = await platformWorkerOptions("analytics", {
    name: NAME,
    scriptPath: path.join(ROOT, "tests/bench/analytics-counted.js"),
    bindings: { PLATFORM_ADMIN_TOKEN: adminToken, SITESWARM_TEST_HOOKS: "1" },
  });
  const mf = new Miniflare({ cf: false, workers: [options] });
  try {
    await mf.ready;
    const worker = await mf.getWorker(NAME);
    const db = await mf.getD1Database("ANALYTICS_DB", NAME);
    await applyMigrations(db, path.join(ROOT, "migrations/analytics"));
    const send = async (pathname, init = {}) => {
      const res = await worker.fetch(`http://analytics${pathname}`, init);
      const text = await res.text();
      return { status: res.status, text };
    };
    const tokens = {};
    for (const t of TENANTS) {
      tokens[t.id] = randomBytes(24).toString("hex");
      const put = await send(`/admin/tenants/${t.id}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ token: tokens[t.id], adminToken: `${tokens[t.id]}-admin`, config: { hosts: [t.host] } }),
      });
      if (put.status !== 201) throw new Error(`provisioning ${t.id}: ${put.status} ${put.text}`);
    }
    // As after any hourly cron: today's salt exists.
    const maintenance = await send("/__test/maintenance", { method: "POST" });
    if (maintenance.status !== 200) throw new Error(`maintenance: ${maintenance.status} ${maintenance.text}`);
    await send("/__d1-counts", { method: "DELETE" });

    let next = 0;
    const refused = [];
    let bots = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let n = next++; n < pageviews; n = next++) {
          const b = mixedBeacon(n);
          if (b.bot) bots++;
          const res = await send("/beacon", {
            method: "POST",
            headers: {
              "content-type": "text/plain;charset=UTF-8",
              "x-siteswarm-tenant-id": b.tenant,
              "x-siteswarm-tenant-token": tokens[b.tenant],
              ...b.headers,
            },
            cf: b.cf,
            body: JSON.stringify(b.body),
          });
          if (res.status !== 202) refused.push(`${n}: ${res.status} ${res.text}`);
        }
      }),
    );
    const beaconSeconds = (performance.now() - started) / 1000;

    // Until the consumer has counted every hit (pageviews and filtered bots) of every tenant.
    const counted = async () =>
      (
        await db
          .prepare("SELECT COALESCE(SUM(pageviews), 0) + COALESCE(SUM(filtered), 0) AS n FROM daily_totals")
          .first()
      ).n;
    const deadline = Date.now() + timeoutMs;
    let n = await counted();
    while (n < pageviews - refused.length && Date.now() < deadline) {
      await sleep(250);
      n = await counted();
    }
    const totals = await db
      .prepare(
        "SELECT COALESCE(SUM(pageviews), 0) AS pageviews, COALESCE(SUM(filtered), 0) AS filtered FROM daily_totals",
      )
      .first();
    const counts = JSON.parse((await send("/__d1-counts")).text);
    const zero = { statements: 0, roundTrips: 0, writes: 0, batches: 0, largestBatch: 0, tables: {} };
    return {
      beacons: pageviews,
      concurrency,
      refused,
      bots,
      beaconSeconds,
      counted: totals,
      beacon: counts.phases["fetch /beacon"] ?? zero,
      rollup: counts.phases.queue ?? zero,
      other: Object.fromEntries(
        Object.entries(counts.phases).filter(([phase]) => phase !== "fetch /beacon" && phase !== "queue"),
      ),
      queueBatches: counts.queueBatches,
    };
  } finally {
    await mf.dispose();
  }
}

/** Per 1,000 beacons sent: `{beacon, rollup, total}` statements and round trips. */
export function perThousand(r) {
  const k = (x) => (x * 1000) / r.beacons;
  return {
    beacon_statements: k(r.beacon.statements),
    beacon_round_trips: k(r.beacon.roundTrips),
    beacon_writes: k(r.beacon.writes),
    rollup_statements: k(r.rollup.statements),
    rollup_round_trips: k(r.rollup.roundTrips),
    total_statements: k(r.beacon.statements + r.rollup.statements),
    total_round_trips: k(r.beacon.roundTrips + r.rollup.roundTrips),
  };
}

export function printD1Count(r, log = console.log) {
  const p = perThousand(r);
  log(
    `\nD1 per ${r.beacons} beacons (measured; 3 tenants, ${r.bots} bots, DNT/GPC, 300 visitors; ` +
      `${(r.beacons / r.beaconSeconds).toFixed(0)} beacons/s at concurrency ${r.concurrency}):`,
  );
  log(
    `  beacon path: ${r.beacon.statements} statements in ${r.beacon.roundTrips} round trips, ` +
      `${r.beacon.writes} writes (each tenant's row once per isolate and 30 s, the salt once per isolate and day)`,
  );
  log(
    `  queue consumer: ${r.queueBatches.length} message batches (sizes ${r.queueBatches.join(", ")}) → ` +
      `${r.rollup.roundTrips} D1 round trips (${r.rollup.batches} batch() calls, largest ${r.rollup.largestBatch} statements), ` +
      `${r.rollup.statements} statements`,
  );
  log(
    `  per 1,000 pageviews: rollup ${p.rollup_statements.toFixed(1)} statements / ${p.rollup_round_trips.toFixed(1)} round trips; ` +
      `with the beacon path's reads ${p.total_statements.toFixed(1)} / ${p.total_round_trips.toFixed(1)}`,
  );
  log(
    `  counted: ${r.counted.pageviews} pageviews + ${r.counted.filtered} filtered; ${r.refused.length} beacons not 202`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await measureD1PerPageviews({ pageviews: option("d1-pageviews", 1000) });
  printD1Count(r);
}
