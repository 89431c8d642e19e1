// The worker of tests/bench/beacon-loop.mjs: one request runs `n` beacons (or one of their parts) in
// a loop inside workerd, so that the workerd CPU the bench reads around it is this worker's own work
// per beacon, without the HTTP, Miniflare routing, D1 and queue broker around a real request. The
// C++ side is the real dist/wasm/analytics.wasm through the real bindings/host.js; the peer is
// tests/bench/analytics-js.js; both get the same in-memory bindings (the tenant row and the day's
// salt as D1 rows, an Analytics Engine dataset and a queue that only count).
import wasm from "../../dist/wasm/analytics.wasm";
import { readText } from "../../bindings/effects/http.js";
import { defineWorker } from "../../bindings/host.js";
import { Core } from "../../bindings/instance.js";
import { envelope, requestMessage, toResponse } from "../../bindings/messages.js";
import { perform } from "../../bindings/effects/index.js";
import peer from "./analytics-js.js";
import { beaconBindings } from "./beacon-fakes.mjs";
import { beaconInit } from "./beacon-mix.mjs";

const TENANT = "bakery";
const encoder = new TextEncoder();
const cpp = defineWorker(wasm, { service: "siteswarm-analytics-service", cf: ["country", "colo"] });
const ctx = { waitUntil() {} };
const settled = () => Promise.resolve();
let setup = null; // { token, digest, row, salt, crawlers } from POST /setup
let core = null; // the "core" part's own instance

const rowFor = (sql) =>
  /FROM tenants/.test(sql) ? setup.row : /FROM salts/.test(sql) ? { salt_hex: setup.salt } : null;
const { bindings, counts } = beaconBindings(rowFor, settled);
let envs = null;

// An effect's result made at once from the stand-in rows (the core's parts, no executor).
function answerAtOnce(e) {
  if (e.kind === "d1.first") {
    const row = rowFor(e.sql);
    return { id: e.id, ok: true, value: { columns: Object.keys(row), rows: [Object.values(row)] } };
  }
  if (e.kind === "crypto.sha256") {
    return { id: e.id, ok: true, value: { hex: e.data === setup.token ? setup.digest : "cd".repeat(32) } };
  }
  return { id: e.id, ok: true, value: {} };
}

// The core's run through bindings/instance.js (its JSON both ways) with the host's steps up to
// `stage`: 0 none (the message built from the beacon's init, every effect answered at once), 1 its
// request message, 2 its effect executors (the real digest, the stand-in bindings), 3 the Response.
async function staged(req, init, stage) {
  core ??= Core.create(wasm);
  const message = envelope("fetch", envs.cpp);
  message.request =
    stage >= 1
      ? await requestMessage(req, ["country", "colo"])
      : {
          method: "POST",
          url: "http://analytics/beacon",
          headers: init.headers,
          body: init.body,
          bodyTooLarge: false,
          cf: {},
        };
  message.bodyApart = true;
  const id = core.start(message);
  let out = null;
  while (!out && core.state(id) === 0) {
    const { effects, answer } = core.effects(id);
    const results =
      stage >= 2 ? await Promise.all(effects.map((e) => perform(e, envs.cpp))) : effects.map(answerAtOnce);
    // An answer known in advance ends the run when every effect succeeded, as bindings/host.js does.
    if (answer && results.every((r) => r.ok)) out = answer;
    else core.resume(id, { now: Date.now(), results });
  }
  out ??= core.data(id);
  core.drop(id);
  return stage >= 3 ? toResponse(out).status : out.status;
}

// One part of a beacon, on a fresh Request as the runtime would hand it over; the status it ended with.
const parts = {
  request: async () => 202, // building the Request only: every other part's baseline
  host: async (req) => (await cpp.fetch(req, envs.cpp, ctx)).status,
  peer: async (req) => (await peer.fetch(req, envs.js, ctx)).status,
  core: async (req, init) => staged(req, init, 0),
  // The request message alone, as the host builds it (body, headers, the cf fields analytics names).
  message: async (req) => ((await requestMessage(req, ["country", "colo"])).body ? 202 : 500),
  // The host's steps added one by one to the core's run (staged above).
  "+message": async (req, init) => staged(req, init, 1),
  "+effects": async (req, init) => staged(req, init, 2),
  "+response": async (req, init) => staged(req, init, 3),
  // As bindings/messages.js reads a request body: through the stream reader, to its end.
  "body-stream": async (req) => ((await readText(req.body)).text ? 202 : 500),
  "body-text": async (req) => ((await req.text()) ? 202 : 500),
  headers: async (req) => (Object.fromEntries(req.headers)["user-agent"] ? 202 : 500),
  digest: async (_req, init) =>
    (await crypto.subtle.digest("SHA-256", encoder.encode(init.headers["user-agent"]))).byteLength && 202,
};

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/setup") {
      setup = await request.json();
      envs = { cpp: { ...bindings }, js: { ...bindings, CRAWLER_PATTERNS: setup.crawlers } };
      return Response.json({ parts: Object.keys(parts) });
    }
    const part = parts[url.searchParams.get("part")];
    const n = Number(url.searchParams.get("n"));
    if (!setup || !part || !(n > 0)) return new Response("POST /setup first; then ?part=…&n=…", { status: 400 });
    counts.points = 0;
    counts.sent = 0;
    for (let i = 0; i < n; i++) {
      const init = beaconInit(i, TENANT, setup.token);
      init.headers["content-length"] = String(encoder.encode(init.body).length);
      const status = await part(new Request("http://analytics/beacon", init), init);
      if (status !== 202) return new Response(`beacon ${i}: ${status}`, { status: 500 });
    }
    return Response.json(counts);
  },
};
