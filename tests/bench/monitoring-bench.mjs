// scripts/bench, the monitoring part (docs/monitoring.md "Scaling"):
//  1. the selector check's cost on a 200 KiB page: the monitoring worker's probe (the host streams the
//     body through HTMLRewriter for the core's mustContain selectors; latency measured by the host)
//     beside the same check written in plain JS with HTMLRewriter, same origin, same page, one at a time;
//  2. one cron tick over 10,000 monitors across 100 tenants against a local origin: the cron's wall
//     time, the tick's wall time until every monitor has its probe, workerd CPU per probe, and the
//     exactly-once checks (every monitor probed once, the origin hit once per monitor, a second cron
//     firing in the same tick probes nothing).
//   node tests/bench/monitoring-bench.mjs [--monitors 10000] [--monitor-tenants 100] [--page-kib 20]
//        [--selector-page-kib 200] [--selector-checks 30] [--json FILE]
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { loopbackOnly, startMesh } from "../integration/mesh.mjs";
import { mergeFigures, option, round } from "./json-out.mjs";
import { workerdCpuMs } from "./workerd-cpu.mjs";

const MONITORS = option("monitors", 10_000);
const TENANTS = option("monitor-tenants", 100);
const PAGE_KIB = option("page-kib", 20);
const SELECTOR_PAGE_KIB = option("selector-page-kib", 200);
const SELECTOR_CHECKS = option("selector-checks", 30);
const TICK_MS = 300_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const secret = () => randomBytes(32).toString("hex");

/** An HTML page of about `kib` KiB whose critical element comes last (the whole page is read). */
function page(kib) {
  const filler = '<section class="menu"><h2>Our bread</h2><p>Sourdough, rye and spelt, baked daily.</p></section>\n';
  const body = filler.repeat(Math.ceil((kib * 1024) / filler.length));
  return `<!doctype html><html><head><title>Bench</title></head><body><main>${body}<form id="contact" method="post"><input name="email"></form></main></body></html>`;
}

async function startOrigin() {
  const pages = { small: page(PAGE_KIB), large: page(SELECTOR_PAGE_KIB) };
  const origin = { hits: new Map(), total: 0 };
  const server = createServer((req, res) => {
    origin.total++;
    origin.hits.set(req.url, (origin.hits.get(req.url) ?? 0) + 1);
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(req.url.startsWith("/large") ? pages.large : pages.small);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin.url = `http://127.0.0.1:${server.address().port}`;
  origin.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return origin;
}

// The same check a Workers user would write: fetch the page, stream it through HTMLRewriter with an
// element handler for the selector, answer whether it matched and how long it took (Date.now() in
// workerd advances across I/O, as the monitoring host measures its probes).
const JS_CHECKER = {
  name: "monitoring-js-baseline",
  modules: true,
  compatibilityDate: "2026-04-20",
  // The same outbound path as the mesh's workers (a loopback-only outbound service in Node), so both
  // sides pay the same local proxy hop; deployed, both fetch directly.
  outboundService: loopbackOnly,
  script: `export default {
    async fetch(request) {
      const target = new URL(request.url).searchParams.get("url");
      const started = Date.now();
      const res = await fetch(target);
      let found = false;
      const rewritten = new HTMLRewriter().on("form#contact", { element() { found = true; } }).transform(res);
      const reader = rewritten.body.getReader();
      for (;;) {
        const { done } = await reader.read();
        if (done || found) break;
      }
      if (found) await reader.cancel().catch(() => {});
      return Response.json({ found, status: res.status, ms: Date.now() - started });
    },
  };`,
};

const origin = await startOrigin();
const mesh = await startMesh({ tenants: [], extraWorkers: [JS_CHECKER] });
try {
  const db = await mesh.d1("monitoring", "MONITORING_DB");
  const operator = { authorization: `Bearer ${mesh.adminToken}`, "content-type": "application/json" };
  const provision = async (tenant, monitors) => {
    const res = await mesh.fetch("monitoring", `/admin/tenants/${tenant}`, {
      method: "PUT",
      headers: operator,
      body: JSON.stringify({ token: secret(), adminToken: secret(), config: { monitors } }),
    });
    const text = await res.text();
    if (res.status !== 200 && res.status !== 201) throw new Error(`provision ${tenant}: ${res.status} ${text}`);
  };
  const testTick = async (tick) => {
    const res = await mesh.fetch("monitoring", "/__test/tick", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tick }),
    });
    if (res.status !== 200) throw new Error(`tick ${tick}: ${res.status} ${await res.text()}`);
  };
  // A probe claims its monitor (probe_tick) first and records its row last: count rows.
  const probeRows = async (where) => (await db.prepare(`SELECT COUNT(*) AS n FROM probes WHERE ${where}`).first()).n;
  const claimedAtTick = async (tick) =>
    (await db.prepare("SELECT COUNT(*) AS n FROM monitors WHERE probe_tick >= ?1").bind(tick).first()).n;
  async function waitUntil(probe, what, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await probe()) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(250);
    }
  }
  console.log("\nmonitoring");

  // ---- 1. the selector check on a 200 KiB page, one at a time ------------------------------------
  const selectorUrl = `${origin.url}/large`;
  await provision("bench-selector", [
    { id: "large", url: selectorUrl, mustContain: ["form#contact"], maxLatencyMs: 60_000, timeoutMs: 30_000 },
  ]);
  const firstTick = Math.floor(Date.now() / TICK_MS) - 10_000;
  const checker = await mesh.mf.getWorker(JS_CHECKER.name);
  // C++ probe i, then JS check i: the two alternate, so a machine whose load drifts during the run
  // weighs on both alike (run one after the other, the two medians measured different machines).
  const cppMs = [];
  const jsMs = [];
  for (let i = 0; i < SELECTOR_CHECKS; i++) {
    const tick = firstTick + i;
    await testTick(tick);
    await waitUntil(
      async () => (await probeRows("tenant_id = 'bench-selector'")) >= i + 1,
      `selector probe ${i}`,
      30_000,
    );
    const row = await db
      .prepare(
        "SELECT ok, latency_ms, reason FROM probes WHERE tenant_id = 'bench-selector' ORDER BY at_ms DESC LIMIT 1",
      )
      .first();
    if (!row.ok) throw new Error(`the C++ probe failed: ${row.reason}`);
    cppMs.push(row.latency_ms);
    const out = await (await checker.fetch(`http://localhost/?url=${encodeURIComponent(selectorUrl)}`)).json();
    if (!out.found) throw new Error("the JS check did not find form#contact");
    jsMs.push(out.ms);
  }
  await provision("bench-selector", []); // its monitor leaves the tick below
  const selector = { cppP50: median(cppMs), jsP50: median(jsMs) };
  console.log(
    `  selector check, ${SELECTOR_PAGE_KIB} KiB page, ${SELECTOR_CHECKS} one at a time: C++ probe p50 ${selector.cppP50} ms, plain JS + HTMLRewriter p50 ${selector.jsP50} ms`,
  );

  // ---- 2. one tick over MONITORS monitors ----------------------------------------------------------
  const perTenant = Math.ceil(MONITORS / TENANTS);
  const provisionStart = performance.now();
  let created = 0;
  for (let t = 0; t < TENANTS && created < MONITORS; t++) {
    const monitors = [];
    for (let m = 0; m < perTenant && created < MONITORS; m++, created++) {
      monitors.push({
        id: `m${m}`,
        url: `${origin.url}/site/${t}/${m}`,
        mustContain: ["form#contact"],
        maxLatencyMs: 60_000,
        timeoutMs: 30_000,
      });
    }
    await provision(`bench-${String(t).padStart(3, "0")}`, monitors);
  }
  const provisionSeconds = (performance.now() - provisionStart) / 1000;
  console.log(`  provisioned ${created} monitors across ${TENANTS} tenants in ${provisionSeconds.toFixed(1)} s`);

  const worker = await mesh.mf.getWorker("siteswarm-synthetic-monitoring");
  // The tick is the firing's scheduled time (epoch ms): both firings below are the same firing.
  const firing = new Date();
  const realTick = firing.getTime();
  origin.hits.clear();
  origin.total = 0;
  const cpu0 = workerdCpuMs();
  const tickStart = performance.now();
  await worker.scheduled({ cron: "*/5 * * * *", scheduledTime: firing });
  const cronSeconds = (performance.now() - tickStart) / 1000;
  // The same firing delivered again (a retried cron) starts nothing twice.
  await worker.scheduled({ cron: "*/5 * * * *", scheduledTime: firing });
  const tickRows = "tenant_id LIKE 'bench-%' AND tenant_id <> 'bench-selector'";
  await waitUntil(async () => (await probeRows(tickRows)) >= created, "every monitor's probe", 30 * 60_000);
  await waitUntil(async () => origin.total >= created, "the origin's hits", 60_000);
  const tickSeconds = (performance.now() - tickStart) / 1000;
  const cpu = cpu0 === null ? null : workerdCpuMs() - cpu0;
  await sleep(2000); // anything started twice would land now
  const probes = await db.prepare(`SELECT COUNT(*) AS n, SUM(ok) AS ok FROM probes WHERE ${tickRows}`).first();
  const claimed = await claimedAtTick(realTick);
  const doubled = [...origin.hits.values()].filter((n) => n > 1).length;
  const tick = {
    monitors: created,
    tenants: TENANTS,
    cronSeconds,
    tickSeconds,
    probesPerSecond: created / tickSeconds,
    probesRecorded: probes.n,
    probesOk: probes.ok,
    originHits: origin.total,
    monitorsHitTwice: doubled,
    workerdCpuMsPerProbe: cpu === null ? null : cpu / created,
  };
  console.log(
    `  one tick, ${created} monitors (${PAGE_KIB} KiB page): cron ${cronSeconds.toFixed(1)} s, every probe done in ${tickSeconds.toFixed(1)} s (${tick.probesPerSecond.toFixed(0)} probes/s)`,
  );
  console.log(
    `  exactly once: ${probes.n} probes recorded (${probes.ok} ok), origin hit ${origin.total} times, ${doubled} monitors hit twice, after two cron firings`,
  );
  console.log(
    `  workerd CPU per probe (monitoring worker, its queue and D1, all processes): ${tick.workerdCpuMsPerProbe === null ? "n/a" : `${tick.workerdCpuMsPerProbe.toFixed(2)} ms`}`,
  );
  if (probes.n !== created || claimed !== created || origin.total !== created || doubled !== 0) {
    throw new Error("monitoring bench: a monitor was not probed exactly once");
  }
  mergeFigures({
    ratios: { monitoring_selector_p50: round(selector.jsP50 / Math.max(selector.cppP50, 1), 3) },
    monitoring: {
      selector: {
        page_kib: SELECTOR_PAGE_KIB,
        checks: SELECTOR_CHECKS,
        cpp_p50_ms: selector.cppP50,
        js_p50_ms: selector.jsP50,
      },
      tick: Object.fromEntries(Object.entries(tick).map(([k, v]) => [k, round(v)])),
    },
  });
} finally {
  await mesh.dispose();
  await origin.close();
}
