// Unit tests of bindings/host.js in plain Node, against a fake core (fake-core.mjs).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { after, before, beforeEach, describe, it } from "node:test";
import { defineWorker, runRpc } from "../../bindings/host.js";
import { Core, wasmImports } from "../../bindings/instance.js";
import { fakeCore, json } from "./fake-core.mjs";

const ctx = () => ({
  waited: [],
  waitUntil(p) {
    this.waited.push(p);
  },
});
const get = (path, init) => new Request(`https://worker.test${path}`, init);

// Captures console output per test, so traps can be checked to be logged exactly once.
let logs;
let errors;
const original = { log: console.log, error: console.error };
beforeEach(() => {
  logs = [];
  errors = [];
  console.log = (...a) => logs.push(a.join(" "));
  console.error = (...a) => errors.push(a.join(" "));
});
after(() => Object.assign(console, original));

// A 2 MiB body in 256 KiB chunks, and how many chunks were pulled from it.
function twoMiBStream() {
  const chunk = new Uint8Array(256 * 1024).fill(97);
  let count = 0;
  const body = new ReadableStream({
    pull(c) {
      if (count++ < 8) c.enqueue(chunk);
      else c.close();
    },
  });
  return { body, pulled: () => count };
}

describe("fetch", () => {
  it("answers from the core's output and prints its logs", async () => {
    const core = fakeCore({
      *"GET /health"() {
        return json(200, { ok: true, service: "svc" }, { logs: ["served /health"] });
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const res = await worker.fetch(get("/health"), {}, ctx());
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.deepEqual(await res.json(), { ok: true, service: "svc" });
    assert.deepEqual(logs, ["served /health"]);
    assert.equal(core.stats.initialized, 1);
  });

  it("builds the request message of the ABI", async () => {
    let seen;
    const core = fakeCore({
      *"POST /echo"(message) {
        seen = message;
        return json(200, {});
      },
    });
    const worker = defineWorker(core, { service: "svc", cf: ["country", "colo"] });
    const request = get("/echo?x=1", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Custom": "A" },
      body: '{"héllo":1}',
    });
    Object.defineProperty(request, "cf", { value: { country: "US", colo: "DFW", tls: { a: 1 } } });
    const fetcher = { fetch: async () => new Response("") };
    const env = { SECRET: "s3cret", DB: { prepare() {} }, COUNT: 3, LEADS_SERVICE: fetcher, ASSETS: fetcher };
    const before = Date.now();
    await worker.fetch(request, env, ctx());
    assert.equal(seen.op, "fetch");
    assert.ok(seen.now >= before && seen.now <= Date.now());
    assert.match(seen.entropy, /^[0-9a-f]{128}$/);
    // The string vars and secrets, and which entries are service bindings (by name, never the objects).
    assert.deepEqual(seen.env, { SECRET: "s3cret", SS_SERVICE_BINDINGS: "LEADS_SERVICE,ASSETS" });
    assert.deepEqual(seen.request, {
      method: "POST",
      url: "https://worker.test/echo?x=1",
      headers: { "content-type": "application/json", "x-custom": "A" },
      body: '{"héllo":1}',
      bodyTooLarge: false,
      cf: { country: "US", colo: "DFW" },
    });
  });

  it("never reads request.cf for a worker that names no cf field", async () => {
    let seen;
    const core = fakeCore({
      *"GET /echo"(message) {
        seen = message.request;
        return json(200, {});
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const request = get("/echo");
    let reads = 0;
    Object.defineProperty(request, "cf", {
      get() {
        reads++;
        return { country: "US", colo: "DFW" };
      },
    });
    const res = await worker.fetch(request, {}, ctx());
    assert.equal(res.status, 200);
    assert.equal(reads, 0);
    assert.equal("cf" in seen, false);
    assert.equal(seen.url, "https://worker.test/echo");
  });

  it("answers 400 JSON, not 500, to a body cut short (its stream errors), and keeps serving", async () => {
    let runs = 0;
    const core = fakeCore({
      *"POST /echo"() {
        runs++;
        return json(200, {});
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    // What workerd hands a worker whose client sent fewer bytes than its Content-Length, or a
    // chunked body without its last chunk: a stream that errors part-way.
    let sentChunk = false;
    const body = new ReadableStream({
      pull(c) {
        if (!sentChunk) {
          sentChunk = true;
          c.enqueue(new TextEncoder().encode('{"a":'));
        } else c.error(new TypeError("Network connection lost."));
      },
    });
    const res = await worker.fetch(get("/echo", { method: "POST", body, duplex: "half" }), {}, ctx());
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(res.headers.get("cache-control"), "no-store"); // as every JSON answer
    assert.equal((await res.json()).error.code, "invalid_request");
    assert.equal(runs, 0, "the core never saw half a body");
    const ok = await worker.fetch(get("/echo", { method: "POST", body: "{}" }), {}, ctx());
    assert.equal(ok.status, 200);
    assert.equal(runs, 1);
    assert.equal(core.stats.instances, 1, "no instance was dropped");
  });

  it("reads a body over the limit to its end without keeping it, and stops reading past 32 MiB", async () => {
    const seen = [];
    const core = fakeCore({
      *"POST /big"(message) {
        seen.push(message.request);
        return json(413, { error: { code: "payload_too_large", message: "too large" } });
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    // 40 MiB in 1 MiB chunks (one buffer, handed out again and again).
    const chunk = new Uint8Array(1024 * 1024).fill(98);
    let count = 0;
    const body = new ReadableStream({
      pull(c) {
        if (count++ < 40) c.enqueue(chunk);
        else c.close();
      },
    });
    const res = await worker.fetch(get("/big", { method: "POST", body, duplex: "half" }), {}, ctx());
    assert.equal(res.status, 413);
    assert.equal(seen[0].bodyTooLarge, true);
    assert.equal(seen[0].body, "");
    assert.ok(count >= 33 && count <= 36, `stopped past 32 MiB: pulled ${count} chunks`);
    // Declared over 32 MiB: answered at once, nothing read.
    let pulledDeclared = 0;
    const declared = new ReadableStream({
      pull(c) {
        pulledDeclared++;
        c.enqueue(chunk);
      },
    });
    const big = get("/big", {
      method: "POST",
      headers: { "content-length": String(33 * 1024 * 1024) },
      body: declared,
      duplex: "half",
    });
    assert.equal((await worker.fetch(big, {}, ctx())).status, 413);
    assert.equal(seen[1].bodyTooLarge, true);
    assert.ok(pulledDeclared <= 1, `pulled ${pulledDeclared}`);
  });

  it("refuses to buffer more than 1 MiB, even without content-length", async () => {
    let seen;
    const core = fakeCore({
      *"POST /big"(message) {
        seen = message.request;
        return json(413, { error: { code: "payload_too_large", message: "too large" } });
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const { body, pulled } = twoMiBStream();
    const res = await worker.fetch(get("/big", { method: "POST", body, duplex: "half" }), {}, ctx());
    assert.equal(res.status, 413);
    assert.equal(seen.bodyTooLarge, true);
    assert.equal(seen.body, "");
    assert.equal(pulled(), 9, "read to its end (and thrown away), so an HTTP client gets its 413");
  });

  it("reads a body of a declared length, and keeps nothing past the limit whatever length is declared", async () => {
    const seen = [];
    const core = fakeCore({
      *"POST /echo"(message) {
        seen.push(message.request);
        return json(200, {});
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const text = '{"héllo":1}';
    const declared = get("/echo", {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) },
      body: text,
    });
    assert.equal((await worker.fetch(declared, {}, ctx())).status, 200);
    assert.equal(seen[0].body, text);
    assert.equal(seen[0].bodyTooLarge, false);

    // The header claims 3 bytes; the stream gives 2 MiB (a chunked body beside a Content-Length, or a
    // service binding's caller, can do that in workerd): never buffered past the limit.
    const { body, pulled } = twoMiBStream();
    const lying = get("/echo", { method: "POST", headers: { "content-length": "3" }, body, duplex: "half" });
    assert.equal((await worker.fetch(lying, {}, ctx())).status, 200);
    assert.equal(seen[1].bodyTooLarge, true);
    assert.equal(seen[1].body, "");
    assert.equal(pulled(), 9, "read to its end, nothing of it kept");
  });

  it("passes a body just under the limit and survives memory growth", async () => {
    let length;
    const core = fakeCore({
      *"POST /big"(message) {
        length = message.request.body.length;
        return json(200, {});
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const body = "x".repeat(1024 * 1024 - 10);
    const res = await worker.fetch(get("/big", { method: "POST", body }), {}, ctx());
    assert.equal(res.status, 200);
    assert.equal(length, body.length);
  });

  it("passes large messages intact, ASCII or not", async () => {
    const seen = [];
    const core = fakeCore({
      *"POST /big"(message) {
        seen.push(message.request.body);
        return json(200, {});
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const ascii = "x".repeat(200_000);
    // Non-ASCII at the end and at the start of messages over the direct-encoding size.
    const late = `${"y".repeat(200_000)}crème brûlée 🥐`;
    const early = `🥐${"z".repeat(100_000)}é`;
    for (const body of [ascii, late, early]) {
      const res = await worker.fetch(get("/big", { method: "POST", body }), {}, ctx());
      assert.equal(res.status, 200);
    }
    assert.deepEqual(
      seen.map((b) => b.length),
      [ascii.length, late.length, early.length],
    );
    assert.equal(seen[1], late);
    assert.equal(seen[2], early);
  });

  it("hands a request on to the binding the core names: as received, the answer unread and uncapped", async () => {
    const core = fakeCore({
      *"POST /admin/things"() {
        return { status: 200, headers: { "x-ss-hand-on": "PART" }, body: "" };
      },
      *"GET /admin/things"() {
        return { status: 200, headers: { "x-ss-hand-on": "PART" }, body: "" };
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const seen = [];
    const big = "y".repeat(2 * 1024 * 1024); // over the 1 MiB the host reads of an effect's answer
    const env = {
      PART: {
        async fetch(request) {
          seen.push({
            method: request.method,
            url: request.url,
            auth: request.headers.get("authorization"),
            body: request.method === "GET" ? null : await request.text(),
          });
          return new Response(JSON.stringify({ big }), {
            status: 201,
            headers: { "content-type": "application/json" },
          });
        },
      },
    };
    const headers = { authorization: "Bearer t", "content-type": "application/json" };
    const posted = await worker.fetch(
      get("/admin/things?x=1", { method: "POST", headers, body: '{"a":"é"}' }),
      env,
      ctx(),
    );
    assert.equal(posted.status, 201);
    assert.equal((await posted.json()).big.length, big.length, "the part's answer whole");
    const got = await worker.fetch(get("/admin/things?limit=5", { headers }), env, ctx());
    assert.equal(got.status, 201);
    await got.arrayBuffer();
    assert.deepEqual(seen, [
      { method: "POST", url: "https://worker.test/admin/things?x=1", auth: "Bearer t", body: '{"a":"é"}' },
      { method: "GET", url: "https://worker.test/admin/things?limit=5", auth: "Bearer t", body: null },
    ]);
    // A body that is not UTF-8 crosses as hex (docs/abi.md `bodyHex`) and is handed on as its bytes.
    const latin1 = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]); // {"a":"<E9>"}
    let handed = null;
    const raw = {
      PART: {
        async fetch(request) {
          handed = new Uint8Array(await request.arrayBuffer());
          return new Response("{}", { status: 200, headers: { "content-type": "application/json" } });
        },
      },
    };
    const passed = await worker.fetch(get("/admin/things", { method: "POST", headers, body: latin1 }), raw, ctx());
    assert.equal(passed.status, 200);
    await passed.arrayBuffer();
    assert.deepEqual([...handed], [...latin1]);
    // No such binding, a binding that throws, a 5xx that is not JSON: 503 dependency_unavailable.
    const failing = [
      {},
      {
        PART: {
          fetch() {
            throw new Error("down");
          },
        },
      },
      { PART: { fetch: async () => new Response("worker threw", { status: 500 }) } },
    ];
    for (const broken of failing) {
      const res = await worker.fetch(get("/admin/things", { headers }), broken, ctx());
      assert.equal(res.status, 503);
      assert.equal((await res.json()).error.code, "dependency_unavailable");
    }
    // A JSON 5xx is the part's own answer.
    const own = {
      PART: { fetch: async () => Response.json({ error: { code: "internal", message: "x" } }, { status: 500 }) },
    };
    const res = await worker.fetch(get("/admin/things", { headers }), own, ctx());
    assert.equal(res.status, 500);
    assert.equal((await res.json()).error.code, "internal");
  });

  it("makes a null-body response for 204 and repeats array headers", async () => {
    const core = fakeCore({
      *"DELETE /x"() {
        return { status: 204, headers: { "set-cookie": ["a=1", "b=2"] }, body: "" };
      },
    });
    const res = await defineWorker(core).fetch(get("/x", { method: "DELETE" }), {}, ctx());
    assert.equal(res.status, 204);
    assert.equal(res.body, null);
    assert.deepEqual(res.headers.getSetCookie(), ["a=1", "b=2"]);
  });
});

describe("effect loop", () => {
  it("performs effects against env and resumes with their values", async () => {
    const calls = [];
    const env = {
      CACHE: {
        get: async (k) => {
          calls.push(["get", k]);
          return "cached";
        },
        put: async (k, v, o) => calls.push(["put", k, v, o]),
        delete: async (k) => calls.push(["delete", k]),
      },
      DB: fakeD1(calls),
      Q: { send: async (body, o) => calls.push(["send", body, o]) },
      AE: { writeDataPoint: (p) => calls.push(["ae", p]) },
      RL: { limit: async ({ key }) => ({ success: key === "ok" }) },
    };
    const core = fakeCore({
      *"GET /all"() {
        const first = yield [
          { kind: "kv.get", binding: "CACHE", key: "k" },
          { kind: "kv.put", binding: "CACHE", key: "k", value: "v", ttlSeconds: 5 },
          { kind: "d1.first", binding: "DB", sql: "SELECT ?1", params: [1] },
          { kind: "d1.all", binding: "DB", sql: "SELECT ?1, ?2", params: ["a", { j: 1 }] },
        ];
        const second = yield [
          { kind: "d1.run", binding: "DB", sql: "INSERT", params: [] },
          { kind: "d1.batch", binding: "DB", statements: [{ sql: "A", params: [1] }, { sql: "B" }] },
          { kind: "queue.send", binding: "Q", body: { a: 1 }, delaySeconds: 30 },
          { kind: "ae.write", binding: "AE", blobs: ["/"], doubles: [1], indexes: ["t"] },
          { kind: "ratelimit", binding: "RL", key: "ok" },
          { kind: "kv.delete", binding: "CACHE", key: "k" },
        ];
        return json(200, [...first, ...second]);
      },
    });
    const res = await defineWorker(core).fetch(get("/all"), env, ctx());
    const results = await res.json();
    assert.ok(
      results.every((r) => r.ok),
      JSON.stringify(results),
    );
    assert.deepEqual(
      results.map((r) => r.value),
      [
        { value: "cached" },
        {},
        { columns: ["sql", "params"], rows: [["SELECT ?1", [1]]] },
        {
          columns: ["sql", "params"],
          rows: [
            ["SELECT ?1, ?2", ["a", '{"j":1}']],
            ["SELECT ?1, ?2", ["a", '{"j":1}']],
          ],
        },
        // Only the meta fields the core reads cross (docs/abi.md); a batch entry without rows is its meta.
        { meta: { changes: 1, last_row_id: 7, rows_read: 0, rows_written: 0 } },
        [
          {
            columns: ["sql", "params"],
            rows: [["A", [1]]],
            meta: { changes: 0, last_row_id: 0, rows_read: 1, rows_written: 0 },
          },
          { meta: { changes: 0, last_row_id: 0, rows_read: 1, rows_written: 0 } },
        ],
        {},
        {},
        { success: true },
        {},
      ],
    );
    assert.deepEqual(
      calls.find((c) => c[0] === "put"),
      ["put", "k", "v", { expirationTtl: 60 }],
    );
    assert.deepEqual(
      calls.find((c) => c[0] === "send"),
      ["send", { a: 1 }, { delaySeconds: 30 }],
    );
    assert.deepEqual(
      calls.find((c) => c[0] === "ae"),
      ["ae", { blobs: ["/"], doubles: [1], indexes: ["t"] }],
    );
  });

  it("with SS_COUNT_D1=1 a fetch answer names its run's D1 round trips (a batch is one); off, no header", async () => {
    const core = fakeCore({
      *"GET /d1"() {
        yield [
          { kind: "d1.first", binding: "DB", sql: "SELECT 1" },
          { kind: "kv.get", binding: "CACHE", key: "k" },
        ];
        yield [
          { kind: "d1.batch", binding: "DB", statements: [{ sql: "A" }, { sql: "B" }, { sql: "C" }] },
          { kind: "d1.run", binding: "DB", sql: "INSERT" },
        ];
        return json(200, {});
      },
    });
    const worker = defineWorker(core);
    const env = { DB: fakeD1([]), CACHE: { get: async () => null } };
    const counted = await worker.fetch(get("/d1"), { ...env, SS_COUNT_D1: "1" }, ctx());
    assert.equal(counted.status, 200);
    assert.equal(counted.headers.get("x-ss-d1-round-trips"), "3");
    const plain = await worker.fetch(get("/d1"), env, ctx());
    assert.equal(plain.headers.get("x-ss-d1-round-trips"), null);
  });

  it("delivers results as they settle, so three sleeps of one run finish in order", async () => {
    const core = fakeCore({
      *"GET /sleeps"() {
        yield [
          { kind: "sleep", ms: 60 },
          { kind: "sleep", ms: 20 },
          { kind: "sleep", ms: 40 },
        ];
        return json(200, {});
      },
    });
    const res = await defineWorker(core).fetch(get("/sleeps"), {}, ctx());
    assert.equal(res.status, 200);
    // Delivered one by one in wake order (20, 40, 60 ms): they ran concurrently, not in sequence.
    assert.deepEqual(core.stats.deliveries, [[2], [3], [1]]);
  });

  it("a body after the output's JSON arrives byte for byte: line feeds, a leading BOM, non-ASCII", async () => {
    const body = '\uFEFFline one\nline two\r\n{"x":"é\\n"}\n';
    const core = fakeCore({
      *"GET /page"(message) {
        assert.equal(message.bodyApart, true); // the JS host always asks for it
        return { status: 200, headers: { "content-type": "text/plain" }, body, logs: ["paged"] };
      },
    });
    const res = await defineWorker(core).fetch(get("/page"), {}, ctx());
    assert.equal(res.status, 200);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), new TextEncoder().encode(body));
    assert.deepEqual(logs, ["paged"]);
  });

  // docs/abi.md "Held columns": the views stay in the host; the splice's offset counts UTF-8 bytes.
  it("a held column stays in the host and is spliced into the body at a byte offset; a bad splice is a 500", async () => {
    const views = ['{"n":"é"}', '{"n":2}', '{"n":"\u2028"}'];
    const DB = {
      prepare: () => ({
        bind: () => ({
          raw: async () => [["seq", "view", "event_id"], ...views.map((v, i) => [i + 1, v, `e${i + 1}`])],
        }),
      }),
      batch: async () => [],
    };
    let seen = null;
    const core = fakeCore({
      *"GET /page"() {
        const [r] = yield [{ kind: "d1.all", binding: "DB", sql: "SELECT", params: [], hold: "view", tail: 1 }];
        seen = r.value;
        const head = '{"café":[';
        const at = new TextEncoder().encode(head).length; // 11 bytes, 10 UTF-16 units
        return { status: 200, headers: {}, body: `${head}]}`, splice: [{ at, held: r.value.held, sep: "," }] };
      },
      *"GET /bad"() {
        yield [{ kind: "d1.all", binding: "DB", sql: "SELECT", params: [], hold: "view" }];
        return { status: 200, headers: {}, body: "[]", splice: [{ at: 1, held: 9, sep: "," }] };
      },
      *"GET /outside"() {
        const [r] = yield [{ kind: "d1.all", binding: "DB", sql: "SELECT", params: [], hold: "view" }];
        return { status: 200, headers: {}, body: "[]", splice: [{ at: 3, held: r.value.held, sep: "," }] };
      },
      *"GET /inside-a-character"() {
        const [r] = yield [{ kind: "d1.all", binding: "DB", sql: "SELECT", params: [], hold: "view" }];
        return { status: 200, headers: {}, body: '["é"]', splice: [{ at: 3, held: r.value.held, sep: "," }] };
      },
      *"GET /slow"() {
        yield [{ kind: "sleep", ms: 30 }];
        return json(200, { slow: true });
      },
    });
    const worker = defineWorker(core);
    const res = await worker.fetch(get("/page"), { DB }, ctx());
    assert.equal(res.status, 200);
    assert.equal(await res.text(), `{"café":[${views.join(",")}]}`);
    // The core saw the rest of the last row only, the count of all, and a handle.
    assert.deepEqual(seen, { columns: ["seq", "event_id"], rows: [[3, "e3"]], count: 3, held: 1 });
    // A bad splice fails its own request only: a run in flight on the same instance still answers.
    for (const path of ["/bad", "/outside", "/inside-a-character"]) {
      const slow = worker.fetch(get("/slow"), { DB }, ctx());
      const bad = await worker.fetch(get(path), { DB }, ctx());
      assert.equal(bad.status, 500, path);
      assert.deepEqual(await bad.json(), { error: { code: "internal", message: "internal error" } });
      assert.equal((await slow).status, 200, `a run beside ${path}`);
    }
    assert.ok(!errors.some((e) => e.includes("wasm trap")), errors.join("\n"));
  });

  it("an ae.write result waits for the next result worth a resume; alone, it resumes at once", async () => {
    const points = [];
    const env = { AE: { writeDataPoint: (p) => points.push(p) } };
    const core = fakeCore({
      *"GET /both"() {
        const [ae, slept] = yield [
          { kind: "ae.write", binding: "AE", blobs: ["/"], doubles: [1], indexes: ["t"] },
          { kind: "sleep", ms: 30 },
        ];
        return json(200, { ae: ae.ok, slept: slept.ok });
      },
      *"GET /alone"() {
        const [ae] = yield [{ kind: "ae.write", binding: "AE", blobs: ["/"], doubles: [2], indexes: ["t"] }];
        return json(200, { ae: ae.ok });
      },
    });
    const worker = defineWorker(core);
    const both = await worker.fetch(get("/both"), env, ctx());
    assert.deepEqual(await both.json(), { ae: true, slept: true });
    // One resume carrying both results, the AE point's first (it settled first): not two resumes.
    assert.deepEqual(core.stats.deliveries, [[1, 2]]);
    const alone = await worker.fetch(get("/alone"), env, ctx());
    assert.deepEqual(await alone.json(), { ae: true });
    assert.deepEqual(core.stats.deliveries, [[1, 2], [1]]);
    assert.equal(points.length, 2);
  });

  it("interleaves concurrent runs on one instance", async () => {
    const core = fakeCore({
      *"GET /sleep"(message) {
        const ms = Number(new URL(message.request.url).searchParams.get("ms"));
        yield [{ kind: "sleep", ms }];
        return json(200, { ms });
      },
    });
    const worker = defineWorker(core);
    const finished = [];
    await Promise.all(
      [45, 5, 25].map(async (ms) => {
        const res = await worker.fetch(get(`/sleep?ms=${ms}`), {}, ctx());
        finished.push((await res.json()).ms);
      }),
    );
    assert.deepEqual(finished, [5, 25, 45]);
    assert.equal(core.stats.instances, 1);
  });

  it("turns executor failures into error values, never stacks", async () => {
    const env = {
      NOT_A_DB: "text",
      DB: {
        prepare() {
          throw new Error("D1_ERROR: no such table: leads");
        },
        batch() {},
      },
    };
    const core = fakeCore({
      *"GET /errors"() {
        const results = yield [
          { kind: "d1.all", binding: "MISSING", sql: "SELECT 1" },
          { kind: "kv.get", binding: "NOT_A_DB", key: "x" },
          { kind: "d1.all", binding: "DB", sql: "SELECT 1" },
          { kind: "teleport" },
        ];
        return json(200, results);
      },
    });
    const res = await defineWorker(core).fetch(get("/errors"), env, ctx());
    const results = await res.json();
    assert.deepEqual(
      results.map((r) => [r.ok, r.error.code]),
      [
        [false, "binding_missing"],
        [false, "binding_missing"],
        [false, "d1_error"],
        [false, "unsupported_effect"],
      ],
    );
    assert.match(results[2].error.message, /no such table/);
    assert.ok(results.every((r) => !/\n\s+at /.test(r.error.message)));
  });

  it("computes WebCrypto hashes and random bytes in hex", async () => {
    const core = fakeCore({
      *"GET /crypto"() {
        return json(
          200,
          yield [
            { kind: "crypto.sha256", data: "abc" },
            { kind: "crypto.hmac_sha256", key: "key", data: "The quick brown fox jumps over the lazy dog" },
            { kind: "crypto.random", bytes: 16 },
          ],
        );
      },
    });
    const [sha, hmac, random] = await (await defineWorker(core).fetch(get("/crypto"), {}, ctx())).json();
    assert.equal(sha.value.hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert.equal(hmac.value.hex, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
    assert.match(random.value.hex, /^[0-9a-f]{32}$/);
  });

  describe("fetch effect", () => {
    let server;
    let base;
    before(async () => {
      server = createServer((req, res) => {
        if (req.url === "/hang") return; // never answers
        if (req.url === "/slowpage") {
          // The head at once, the page's end 300 ms later.
          res.writeHead(200, { "Content-Type": "text/html" });
          res.write("<html><body>");
          setTimeout(() => res.end("<form id=contact></form></body></html>"), 300);
          return;
        }
        if (req.url === "/drip") {
          // Answers its head, then never finishes the body.
          res.writeHead(202, { "Content-Type": "application/json" });
          res.write('{"status":');
          return;
        }
        let body = "";
        req.on("data", (c) => (body += c));
        req.on("end", () => {
          res.writeHead(201, { "Content-Type": "application/json", "X-Echo": req.method });
          res.end(JSON.stringify({ body, auth: req.headers.authorization }));
        });
      });
      await new Promise((r) => server.listen(0, "127.0.0.1", r));
      base = `http://127.0.0.1:${server.address().port}`;
    });
    after(() => server.closeAllConnections() ?? server.close());

    it("returns status, lower-case headers, body and elapsedMs; errors carry elapsedMs", async () => {
      const closed = createServer();
      await new Promise((r) => closed.listen(0, "127.0.0.1", r));
      const deadUrl = `http://127.0.0.1:${closed.address().port}/`;
      await new Promise((r) => closed.close(r));
      const core = fakeCore({
        *"GET /out"() {
          return json(
            200,
            yield [
              { kind: "fetch", url: `${base}/x`, method: "POST", headers: { Authorization: "Basic x" }, body: "hi" },
              { kind: "fetch", url: `${base}/hang`, method: "GET", headers: {}, timeoutMs: 50 },
              { kind: "fetch", url: deadUrl, method: "GET", headers: {} },
            ],
          );
        },
      });
      const [ok, timeout, refused] = await (await defineWorker(core).fetch(get("/out"), {}, ctx())).json();
      assert.equal(ok.value.status, 201);
      assert.equal(ok.value.headers["x-echo"], "POST");
      assert.deepEqual(JSON.parse(ok.value.body), { body: "hi", auth: "Basic x" });
      assert.equal(typeof ok.value.elapsedMs, "number");
      assert.equal(timeout.error.code, "timeout");
      assert.ok(timeout.error.elapsedMs >= 45, `elapsed ${timeout.error.elapsedMs}`);
      assert.equal(timeout.elapsedMs, timeout.error.elapsedMs);
      assert.equal(refused.error.code, "network_error");
      assert.equal(typeof refused.error.elapsedMs, "number");
    });

    it("a probe without selectors reads its page to the end: its latency is the whole page's", async () => {
      // (With selectors the page is streamed through HTMLRewriter to its end already; workerd only.)
      const page = { kind: "fetch", url: `${base}/slowpage`, method: "GET", headers: {}, selectors: [] };
      const core = fakeCore({
        *"GET /probe"() {
          return json(200, yield [page]);
        },
      });
      const [bare] = await (await defineWorker(core).fetch(get("/probe"), {}, ctx())).json();
      assert.equal(bare.value.status, 200);
      assert.deepEqual(bare.value.selectorsMatched, []);
      assert.ok(bare.value.elapsedMs >= 250, `without selectors: ${bare.value.elapsedMs} ms`);
    });

    it("a body that never finishes: a timeout, or with bodyOptional the head's answer and an empty body", async () => {
      const drip = { kind: "fetch", url: `${base}/drip`, method: "POST", headers: {}, body: "{}", timeoutMs: 200 };
      const core = fakeCore({
        *"GET /drip"() {
          return json(200, yield [drip, { ...drip, bodyOptional: true }]);
        },
      });
      const [strict, optional] = await (await defineWorker(core).fetch(get("/drip"), {}, ctx())).json();
      assert.equal(strict.error.code, "timeout");
      assert.equal(optional.value.status, 202);
      assert.equal(optional.value.body, "");
      assert.equal(optional.value.bodyIncomplete, true);
    });
  });

  it("a service call that runs out of time is aborted, not left holding its connection", async () => {
    let signal;
    const env = {
      MONITOR_TARGET: {
        fetch(request) {
          signal = request.signal;
          return new Promise((_, reject) =>
            request.signal.addEventListener("abort", () => reject(request.signal.reason)),
          );
        },
      },
    };
    const core = fakeCore({
      *"GET /probe"() {
        const [r] = yield [
          {
            kind: "service",
            binding: "MONITOR_TARGET",
            request: { method: "GET", url: "https://x/health" },
            timeoutMs: 30,
          },
        ];
        return json(200, r);
      },
    });
    const result = await (await defineWorker(core).fetch(get("/probe"), env, ctx())).json();
    assert.equal(result.error.code, "timeout");
    assert.equal(signal?.aborted, true, "the binding's request was aborted");
  });

  it("a service call or fetch that answers in time frees its timer at once", async () => {
    // workerd holds an uncleared timeout against the invocation's limit until it fires: a drain
    // making thousands of calls must not leave one behind per call.
    const live = new Set();
    const realSet = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    globalThis.setTimeout = (fn, ms, ...rest) => {
      const t = realSet(fn, ms, ...rest);
      if (ms >= 60_000) live.add(t);
      return t;
    };
    globalThis.clearTimeout = (t) => {
      live.delete(t);
      return realClear(t);
    };
    // AbortSignal.timeout's timer can never be cleared: each use is a timer left pending.
    const realSignalTimeout = AbortSignal.timeout;
    AbortSignal.timeout = (ms) => {
      live.add(Symbol("AbortSignal.timeout"));
      return realSignalTimeout.call(AbortSignal, ms);
    };
    const server = createServer((_req, res) => res.end("{}"));
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const env = { TARGET: { fetch: async () => new Response("{}") } };
      const url = `http://127.0.0.1:${server.address().port}/`;
      const core = fakeCore({
        *"GET /calls"() {
          const [a, b] = yield [
            { kind: "service", binding: "TARGET", request: { method: "GET", url: "https://x/" }, timeoutMs: 60_000 },
            { kind: "fetch", url, method: "GET", headers: {}, timeoutMs: 60_000 },
          ];
          return json(200, { a: a.ok, b: b.ok });
        },
      });
      const res = await defineWorker(core).fetch(get("/calls"), env, ctx());
      assert.deepEqual(await res.json(), { a: true, b: true });
      assert.equal(live.size, 0, "a 60 s timer is still pending after its call answered");
    } finally {
      globalThis.setTimeout = realSet;
      globalThis.clearTimeout = realClear;
      AbortSignal.timeout = realSignalTimeout;
      server.close();
    }
  });

  it("calls a service binding with a Request", async () => {
    let seen;
    const env = {
      EVENTS_SERVICE: {
        async fetch(request) {
          seen = {
            method: request.method,
            url: request.url,
            body: await request.text(),
            tenant: request.headers.get("x-siteswarm-tenant-id"),
          };
          return Response.json({ event_id: "01J" }, { status: 201 });
        },
      },
    };
    const core = fakeCore({
      *"GET /svc"() {
        const [r] = yield [
          {
            kind: "service",
            binding: "EVENTS_SERVICE",
            request: {
              method: "POST",
              url: "https://events/api/events",
              headers: { "x-siteswarm-tenant-id": "bakery" },
              body: "{}",
            },
          },
        ];
        return json(200, r);
      },
    });
    const r = await (await defineWorker(core).fetch(get("/svc"), env, ctx())).json();
    assert.deepEqual(seen, { method: "POST", url: "https://events/api/events", body: "{}", tenant: "bakery" });
    assert.equal(r.value.status, 201);
    assert.equal(r.value.body, '{"event_id":"01J"}');
  });
});

describe("traps", () => {
  it("answers 500 JSON, fails the other runs of the instance, logs once, then heals", async () => {
    const core = fakeCore({
      *"GET /slow"() {
        yield [{ kind: "sleep", ms: 30 }];
        return json(200, { ok: true });
      },
      *"GET /trap"() {
        yield [{ kind: "sleep", ms: 5 }];
        throw new WebAssembly.RuntimeError("unreachable");
      },
      *"GET /health"() {
        return json(200, { ok: true });
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const [slow, trapped] = await Promise.all([
      worker.fetch(get("/slow"), {}, ctx()),
      worker.fetch(get("/trap"), {}, ctx()),
    ]);
    for (const res of [slow, trapped]) {
      assert.equal(res.status, 500);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.deepEqual(await res.json(), { error: { code: "internal", message: "internal error" } });
    }
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(errors[0], /svc: wasm trap \(unreachable\)/);
    const healthy = await worker.fetch(get("/health"), {}, ctx());
    assert.equal(healthy.status, 200);
    assert.equal(core.stats.instances, 2);
  });

  it("treats a trap while starting like any other", async () => {
    const core = fakeCore({
      *"GET /boom"() {
        throw new WebAssembly.RuntimeError("memory access out of bounds");
      },
    });
    const worker = defineWorker(core);
    assert.equal((await worker.fetch(get("/boom"), {}, ctx())).status, 500);
    assert.equal((await worker.fetch(get("/nowhere"), {}, ctx())).status, 404);
  });

  it("answers 500 when the core's output is not a valid response", async () => {
    const core = fakeCore({
      *"GET /bad"() {
        return { status: 42, headers: {}, body: "" };
      },
    });
    const res = await defineWorker(core).fetch(get("/bad"), {}, ctx());
    assert.equal(res.status, 500);
    assert.equal((await res.json()).error.code, "internal");
  });
});

describe("scheduled and queue", () => {
  it("runs a cron under waitUntil and fails the invocation when the core says so", async () => {
    let seen;
    const core = fakeCore({
      *scheduled(message) {
        seen = message;
        yield [{ kind: "sleep", ms: 1 }];
        return { ok: message.cron !== "bad", logs: ["drained"] };
      },
    });
    const worker = defineWorker(core);
    const c = ctx();
    await worker.scheduled({ cron: "*/2 * * * *", scheduledTime: 1764426000000 }, {}, c);
    assert.equal(c.waited.length, 1);
    assert.equal(seen.cron, "*/2 * * * *");
    assert.equal(seen.scheduledTime, 1764426000000);
    assert.deepEqual(logs, ["drained"]);
    await assert.rejects(worker.scheduled({ cron: "bad", scheduledTime: 0 }, {}, ctx()));
  });

  it("runs a cron on the worker's own port in local runs only (LOCAL_CRON_TRIGGERS)", async () => {
    const seen = [];
    const core = fakeCore({
      *scheduled(message) {
        seen.push([message.cron, message.scheduledTime]);
        yield [{ kind: "sleep", ms: 1 }];
        return { ok: message.cron !== "bad" };
      },
    });
    const worker = defineWorker(core);
    const local = { LOCAL_CRON_TRIGGERS: "1" };
    // wrangler dev's route (`+` for the spaces), then Miniflare's with a scheduledTime of its own.
    const wrangler = await worker.fetch(get("/__scheduled?cron=*/5+*+*+*+*"), local, ctx());
    assert.equal(wrangler.status, 200);
    assert.deepEqual(Object.keys(await wrangler.json()).sort(), ["cron", "ok", "scheduledTime"]);
    const miniflare = await worker.fetch(
      get(`/cdn-cgi/handler/scheduled?cron=${encodeURIComponent("0 * * * *")}&time=1764426000000`),
      local,
      ctx(),
    );
    assert.deepEqual(await miniflare.json(), {
      ok: true,
      cron: "0 * * * *",
      scheduledTime: "2025-11-29T14:20:00.000Z",
    });
    assert.deepEqual(seen[1], ["0 * * * *", 1764426000000]);
    assert.equal(seen[0][0], "*/5 * * * *");
    // A run that fails is a 500 JSON error; a path beside the routes is the core's.
    const failed = await worker.fetch(get("/__scheduled?cron=bad"), local, ctx());
    assert.equal(failed.status, 500);
    assert.equal((await failed.json()).error.code, "internal");
    assert.equal((await worker.fetch(get("/__scheduled/x"), local, ctx())).status, 404);
    // Deployed (no LOCAL_CRON_TRIGGERS), the routes are the core's like any other path: no cron runs.
    const deployed = await worker.fetch(get("/__scheduled?cron=*/5+*+*+*+*"), {}, ctx());
    assert.equal(deployed.status, 404);
    assert.equal(seen.length, 3);
  });

  it("acks and retries each message as told; a forgotten one is retried", async () => {
    let seen;
    const core = fakeCore({
      *queue(message) {
        seen = message;
        return {
          ack: ["a"],
          retry: [
            { id: "b", delaySeconds: 30 },
            { id: "d", delaySeconds: 100_000 },
          ],
          logs: [],
        };
      },
    });
    const { batch, outcome } = fakeBatch(["a", "b", "c", "d"]);
    await defineWorker(core).queue(batch, {}, ctx());
    assert.equal(seen.queue, "siteswarm-events");
    assert.deepEqual(seen.messages[0], { id: "a", body: { n: "a" }, attempts: 1, timestamp: 1764426000000 });
    // A delay over the 12 hours Queues allow is cut to 12 hours (retry() would throw on it).
    assert.deepEqual(outcome, { a: "ack", b: { delaySeconds: 30 }, c: "retry", d: { delaySeconds: 43_200 } });
  });

  it("drops a message whose body no JSON can carry and runs the rest of the batch", async () => {
    const runs = [];
    const core = fakeCore({
      *queue(message) {
        runs.push(message.messages.map((m) => m.id));
        return { ack: message.messages.map((m) => m.id), logs: [] };
      },
    });
    const { batch, outcome } = fakeBatch(["a", "b", "c"]);
    batch.messages[1].body = { n: 10n }; // a v8-serialised BigInt: JSON.stringify throws on it
    const cyclic = { n: "c" };
    cyclic.self = cyclic;
    batch.messages[2].body = cyclic;
    await defineWorker(core).queue(batch, {}, ctx());
    assert.deepEqual(runs, [["a"]], "the good message reached the core, once");
    assert.deepEqual(outcome, { a: "ack", b: "ack", c: "ack" }, "nothing retried for the bad ones' sake");
    assert.equal(errors.filter((e) => e.includes("not JSON: dropped")).length, 2);
  });

  it("retries the whole batch after a trap", async () => {
    const core = fakeCore({
      *queue() {
        throw new WebAssembly.RuntimeError("unreachable");
      },
    });
    const { batch, outcome } = fakeBatch(["a", "b"]);
    await defineWorker(core).queue(batch, {}, ctx());
    assert.deepEqual(outcome, { all: "retry" });
  });
});

describe("rpc", () => {
  it("answers 400, not 500, to arguments no JSON can carry, and still runs good calls", async () => {
    const calls = [];
    const core = fakeCore({
      *rpc(message) {
        calls.push(message.args);
        return { ok: true, value: message.method };
      },
    });
    const cyclic = {};
    cyclic.self = cyclic;
    for (const args of [[{ at: 10n }], [cyclic]]) {
      const out = await runRpc(core, "svc", {}, "getStatus", args);
      assert.equal(out.ok, false);
      assert.equal(out.status, 400);
      assert.equal(out.error.code, "invalid_request");
    }
    assert.deepEqual(calls, [], "the core never ran for them");
    assert.deepEqual(await runRpc(core, "svc", {}, "getStatus", [{ at: "x" }]), { ok: true, value: "getStatus" });
    assert.equal(core.stats.instances, 1, "no instance was dropped");
  });
});

describe("instantiation of a real module", () => {
  // tests/integration/fixtures: imports.wat compiled with wat2wasm; it imports WASI, emscripten's
  // memory-growth hook and an unknown `env.mystery`, and its _initialize writes to stderr.
  const wasm = Buffer.from(
    "AGFzbQEAAAABKAZgBH9/f38Bf2ABfwBgA39+fwF/YAl/f39/f35+f38Bf2AAAX9gAAACxQEGFndhc2lfc25hcHNob3RfcHJldmlldzEIZmRfd3JpdGUAABZ3YXNpX3NuYXBzaG90X3ByZXZpZXcxCXByb2NfZXhpdAABFndhc2lfc25hcHNob3RfcHJldmlldzEOY2xvY2tfdGltZV9nZXQAAhZ3YXNpX3NuYXBzaG90X3ByZXZpZXcxCXBhdGhfb3BlbgADA2Vudh9lbXNjcmlwdGVuX25vdGlmeV9tZW1vcnlfZ3Jvd3RoAAEDZW52B215c3RlcnkABAMHBgUEBAQFBQUDAQABBz8HBm1lbW9yeQIAC19pbml0aWFsaXplAAYFY2xvY2sABwRvcGVuAAgHbXlzdGVyeQAJBGV4aXQACgR0cmFwAAsKUAYcAEEAQcAANgIAQQRBEDYCAEECQQBBAUEIEAAaCwoAQQBCAEEQEAILFgBBAEEAQQBBAEEAQgBCAEEAQQAQAwsEABAFCwYAQQMQAQsDAAALCxcBAEHAAAsQaGVsbG8gZnJvbSBpbml0Cg==",
    "base64",
  );
  const module = new WebAssembly.Module(wasm);

  it("stubs every import; stdio goes to console.error; no clock, no randomness", () => {
    let instance;
    instance = new WebAssembly.Instance(
      module,
      wasmImports(module, () => instance.exports.memory),
    );
    instance.exports._initialize();
    assert.deepEqual(errors, ["hello from init"]);
    assert.equal(instance.exports.clock(), 52);
    assert.equal(instance.exports.open(), 52);
    assert.throws(() => instance.exports.mystery(), /env\.mystery is not provided/);
    assert.throws(() => instance.exports.exit(), /proc_exit\(3\)/);
  });

  it("Core.create instantiates and initializes once", () => {
    Core.create(module);
    assert.deepEqual(errors, ["hello from init"]);
  });
});

describe("runs the host never finishes", () => {
  it("a run whose invocation was cancelled is dropped once it is 30 minutes old, not kept for good", async () => {
    const core = fakeCore({
      // Waits on a KV read that never answers: what a cancelled invocation looks like to the run.
      *"GET /hang"() {
        yield [{ kind: "kv.get", binding: "KV", key: "k" }];
        return json(200, { ok: true });
      },
      *"GET /twice"() {
        yield [{ kind: "kv.get", binding: "KV", key: "first" }];
        yield [{ kind: "kv.get", binding: "KV", key: "second" }];
        return json(200, { ok: true });
      },
      *"GET /health"() {
        return json(200, { ok: true });
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const env = { KV: { get: () => new Promise(() => {}), put: async () => {}, delete: async () => {} } };
    const realNow = Date.now;
    let now = realNow();
    Date.now = () => now;
    try {
      await worker.fetch(get("/health"), env, ctx()); // the instance exists, its first sweep done
      worker.fetch(get("/hang"), env, ctx()); // never settles
      worker.fetch(get("/hang"), env, ctx());
      await new Promise((r) => setTimeout(r, 20));
      const runs = core.stats.exports.runs;
      assert.equal(runs.size, 2, "the two waiting runs");
      now += 29 * 60 * 1000;
      assert.equal((await worker.fetch(get("/health"), env, ctx())).status, 200);
      assert.equal(runs.size, 2, "29 minutes: still waiting, still kept");
      now += 2 * 60 * 1000;
      assert.equal((await worker.fetch(get("/health"), env, ctx())).status, 200);
      assert.equal(runs.size, 0, "31 minutes: both dropped");

      // Idle time counts, not age: a run resumed 29 minutes in (a long stream's next chunk) is kept
      // 31 minutes after its start, and dropped once it has been idle for 30.
      let answer;
      env.KV.get = (key) => (key === "first" ? new Promise((resolve) => (answer = resolve)) : new Promise(() => {}));
      worker.fetch(get("/twice"), env, ctx());
      await new Promise((r) => setTimeout(r, 20));
      now += 29 * 60 * 1000;
      answer(null); // resumed: it now waits on its second read, which never answers
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(runs.size, 1);
      now += 2 * 60 * 1000;
      assert.equal((await worker.fetch(get("/health"), env, ctx())).status, 200);
      assert.equal(runs.size, 1, "31 minutes old, 2 idle: kept");
      now += 29 * 60 * 1000;
      assert.equal((await worker.fetch(get("/health"), env, ctx())).status, 200);
      assert.equal(runs.size, 0, "31 minutes idle: dropped");
      assert.equal(errors.filter((e) => /was still waiting after 31 min idle: dropped/.test(e)).length, 2 + 1);
    } finally {
      Date.now = realNow;
    }
  });

  it("an allocation that fails (memory cannot grow) is a trap: 500 JSON, and a new instance after", async () => {
    const core = fakeCore({
      *"GET /health"() {
        return json(200, { ok: true });
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    assert.equal((await worker.fetch(get("/health"), {}, ctx())).status, 200);
    core.stats.failAlloc = true;
    const failed = await worker.fetch(get("/health"), {}, ctx());
    assert.equal(failed.status, 500);
    assert.equal((await failed.json()).error.code, "internal");
    assert.ok(
      errors.some((e) => /wasm trap \(ss_alloc\(\d+\) failed: out of memory\)/.test(e)),
      errors.join("\n"),
    );
    core.stats.failAlloc = false;
    assert.equal((await worker.fetch(get("/health"), {}, ctx())).status, 200);
    assert.equal(core.stats.instances, 2);
  });
});

describe("the real builds (when scripts/build has run)", () => {
  const cmsWasm = new URL("../../dist/wasm/cms.wasm", import.meta.url);
  it("cms: seeds a worker bundles (setEnvDefaults) answer when D1 and KV are gone; a variable wins", {
    skip: !existsSync(cmsWasm),
  }, async () => {
    const { setEnvDefaults } = await import("../../bindings/messages.js");
    const { cmsFallbackSeeds } = await import("../../scripts/provision.mjs");
    const manifest = {
      appId: "seeded",
      config: { cms: { timezone: "Europe/Berlin" } },
      fallback: { announcements: [{ id: "a1", text: "Bundled, not stored", level: "info" }] },
    };
    const worker = defineWorker(new WebAssembly.Module(readFileSync(cmsWasm)), { service: "cms" });
    const read = (env, token = "seeded-tenant-token-0123456789") =>
      worker.fetch(
        get("/v1/content", { headers: { "x-siteswarm-tenant-id": "seeded", "x-siteswarm-tenant-token": token } }),
        env,
        ctx(),
      );
    try {
      setEnvDefaults({ CMS_FALLBACK_SEEDS: cmsFallbackSeeds([{ manifest, token: "seeded-tenant-token-0123456789" }]) });
      // No CMS_DB, no CMS_CACHE: both stores fail, and only the bundled seed can answer.
      const res = await read({});
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.equal(body.source, "fallback");
      assert.equal(body.announcements[0].text, "Bundled, not stored");
      assert.equal((await read({}, "a-wrong-token-0123456789")).status, 401, "the seed's token hash still decides");
      // A CMS_FALLBACK_SEEDS variable (the env's own) wins over the bundled one.
      const other = cmsFallbackSeeds([{ manifest: { ...manifest, appId: "other" }, token: "other-token-0123456789" }]);
      assert.equal((await read({ CMS_FALLBACK_SEEDS: other })).status, 503, "no copy verifies 'seeded' then");
      // An empty variable is no variable: the bundled seeds still answer.
      assert.equal((await read({ CMS_FALLBACK_SEEDS: "" })).status, 200);
    } finally {
      setEnvDefaults({});
    }
  });

  for (const build of ["wasm", "wasm-emscripten"]) {
    const file = new URL(`../../dist/${build}/leads.wasm`, import.meta.url);
    it(`${build}: defineWorker serves /health and a trap`, { skip: !existsSync(file) }, async () => {
      const worker = defineWorker(new WebAssembly.Module(readFileSync(file)), { service: "leads" });
      const env = { SITESWARM_TEST_HOOKS: "1" };
      const health = await worker.fetch(get("/health"), env, ctx());
      assert.equal((await health.json()).service, "siteswarm-leads-service");
      assert.equal((await worker.fetch(get("/__test/trap"), env, ctx())).status, 500);
      assert.equal((await worker.fetch(get("/health"), env, ctx())).status, 200);
    });
  }
});

function fakeD1(calls) {
  const statement = (sql, params = []) => ({
    bind: (...p) => statement(sql, p),
    // As D1 answers: meta fields the core never reads beside the four it does; "B" writes, no rows.
    all: async () => ({
      results: sql === "B" ? [] : [{ sql, params }],
      meta: { served_by: "fake.db", duration: 0.1, changed_db: false, size_after: 4096, rows_read: 1 },
    }),
    // D1's raw({ columnNames: true }): the names first; two rows, so d1.first must keep only one.
    raw: async ({ columnNames } = {}) => [...(columnNames ? [["sql", "params"]] : []), [sql, params], [sql, params]],
    run: async () => {
      calls.push(["run", sql]);
      return { meta: { served_by: "fake.db", duration: 0.2, changes: 1, last_row_id: 7, changed_db: true } };
    },
  });
  return {
    prepare: (sql) => statement(sql),
    batch: async (stmts) => Promise.all(stmts.map((s) => s.all())),
  };
}

function fakeBatch(ids) {
  const outcome = {};
  const batch = {
    queue: "siteswarm-events",
    messages: ids.map((id) => ({
      id,
      body: { n: id },
      attempts: 1,
      timestamp: new Date(1764426000000),
      ack: () => (outcome[id] = "ack"),
      retry: (o) => (outcome[id] = o ?? "retry"),
    })),
    retryAll: () => (outcome.all = "retry"),
  };
  return { batch, outcome };
}

describe("streamed responses (response.open / response.write)", () => {
  const open = { kind: "response.open", status: 200, headers: { "content-type": "text/csv" } };
  const write = (chunk) => ({ kind: "response.write", chunk });

  it("answers at response.open and feeds each chunk only as fast as the client reads", async () => {
    const written = [];
    const core = fakeCore({
      *"GET /export"() {
        yield [open];
        for (const part of ["a,b\r\n", "1,2\r\n", "3,4\r\n"]) {
          const [r] = yield [write(part)];
          assert.equal(r.ok, true);
          written.push(part);
        }
        return { streamed: true };
      },
    });
    const c = ctx();
    const res = await defineWorker(core, { service: "svc" }).fetch(get("/export"), {}, c);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/csv");
    // Nothing read yet: the first chunk is queued, the core waits on that write.
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(written, []);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    assert.equal(text, "a,b\r\n1,2\r\n3,4\r\n");
    assert.equal(written.length, 3);
    assert.equal(c.waited.length, 1);
    await c.waited[0];
  });

  it("aborts the body when the run fails after the stream opened", async () => {
    const core = fakeCore({
      *"GET /export"() {
        yield [open];
        yield [write("a,b\r\n")];
        return json(503, { error: { code: "dependency_unavailable", message: "d1 down" } });
      },
    });
    const res = await defineWorker(core, { service: "svc" }).fetch(get("/export"), {}, ctx());
    assert.equal(res.status, 200);
    await assert.rejects(res.text());
  });

  it("a client that cancels makes the next write fail with stream_closed", async () => {
    let failure;
    const core = fakeCore({
      *"GET /export"() {
        yield [open];
        for (let i = 0; ; i++) {
          const [r] = yield [write(`${i}\r\n`)];
          if (!r.ok) {
            failure = r.error;
            return json(499, {});
          }
        }
      },
    });
    const c = ctx();
    const res = await defineWorker(core, { service: "svc" }).fetch(get("/export"), {}, c);
    const reader = res.body.getReader();
    await reader.read();
    await reader.cancel();
    await c.waited[0];
    assert.equal(failure.code, "stream_closed");
  });

  it("response.* outside a fetch run is unsupported; streamed without a stream is a 500", async () => {
    let seen;
    const core = fakeCore({
      *queue(message) {
        [seen] = yield [open];
        return { ack: message.messages.map((m) => m.id), retry: [] };
      },
      *"GET /odd"() {
        return { streamed: true };
      },
    });
    const worker = defineWorker(core, { service: "svc" });
    const acked = [];
    await worker.queue(
      {
        queue: "q",
        messages: [{ id: "m1", body: {}, attempts: 1, timestamp: 0, ack: () => acked.push("m1"), retry() {} }],
      },
      {},
      ctx(),
    );
    assert.equal(seen.ok, false);
    assert.equal(seen.error.code, "unsupported_effect");
    assert.deepEqual(acked, ["m1"]);
    const res = await worker.fetch(get("/odd"), {}, ctx());
    assert.equal(res.status, 500);
  });
});

describe("answering early (response.send)", () => {
  it("answers with the whole response at response.send; the run goes on under waitUntil", async () => {
    const background = [];
    const core = fakeCore({
      *"POST /lead"() {
        const [sent] = yield [
          { kind: "response.send", status: 202, headers: { "content-type": "application/json" }, body: '{"ok":true}' },
        ];
        assert.equal(sent.ok, true);
        const [again] = yield [{ kind: "response.send", status: 200, headers: {}, body: "" }];
        assert.equal(again.error.code, "stream_state");
        yield [{ kind: "sleep", ms: 0 }];
        background.push("after");
        return { sent: true };
      },
    });
    const c = ctx();
    const res = await defineWorker(core, { service: "svc" }).fetch(get("/lead", { method: "POST" }), {}, c);
    assert.equal(res.status, 202);
    assert.deepEqual(await res.json(), { ok: true });
    assert.equal(c.waited.length, 1, "the rest of the run is kept alive with waitUntil");
    await c.waited[0];
    assert.deepEqual(background, ["after"]);
  });

  it("a core that ends {sent:true} without sending is a 500", async () => {
    const core = fakeCore({
      *"GET /odd"() {
        return { sent: true };
      },
    });
    const res = await defineWorker(core, { service: "svc" }).fetch(get("/odd"), {}, ctx());
    assert.equal(res.status, 500);
  });
});

describe("answers known in advance", () => {
  // POST /beacon: two effects and the answer if both succeed; `resumed` counts the runs that came
  // back into the core after them.
  const beaconCore = (resumed) =>
    fakeCore({
      *"POST /beacon"() {
        const [point, sent] = yield {
          effects: [
            { kind: "ae.write", binding: "AE", blobs: ["/"], doubles: [1], indexes: ["t"] },
            { kind: "queue.send", binding: "Q", body: { path: "/" } },
          ],
          answer: { status: 202, headers: { "cache-control": "no-store" }, body: "", logs: ["known"] },
        };
        resumed.push([point.ok, sent.ok]);
        if (!sent.ok) return json(503, { error: { code: "dependency_unavailable" } });
        return { status: 202, headers: { "cache-control": "no-store" }, body: "" };
      },
    });
  const env = (sent, fail = false) => ({
    AE: { writeDataPoint: () => {} },
    Q: {
      send: async (body) => {
        await new Promise((resolve) => setTimeout(resolve, 5)); // settles after the AE point
        if (fail) throw new Error("queue down");
        sent.push(body);
      },
    },
  });

  it("answers with it once every effect succeeded, without resuming the core", async () => {
    const resumed = [];
    const sent = [];
    const core = beaconCore(resumed);
    const worker = defineWorker(core, { service: "svc" });
    const res = await worker.fetch(get("/beacon", { method: "POST", body: "{}" }), env(sent), ctx());
    assert.equal(res.status, 202);
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.deepEqual(sent, [{ path: "/" }], "the answer waited for the queue send");
    assert.deepEqual(resumed, [], "the core was not resumed");
    assert.deepEqual(logs, ["known"], "the answer's logs are logged like an output's");
    assert.equal(core.stats.deliveries.length, 0);
  });

  it("resumes the core as usual when an effect fails, and answers what the core decides", async () => {
    const resumed = [];
    const core = beaconCore(resumed);
    const res = await defineWorker(core, { service: "svc" }).fetch(
      get("/beacon", { method: "POST", body: "{}" }),
      env([], true),
      ctx(),
    );
    assert.equal(res.status, 503);
    assert.deepEqual(resumed, [[true, false]], "resumed once, with both results");
  });
});

describe("replayable answers (bindings/replay.js)", () => {
  // A core whose GET /doc reads one KV key and marks its answer replayable for the tenant header, and
  // whose POST /doc writes the key; `runs` counts the core's runs of GET /doc.
  function docWorker({ until = () => Date.now() + 60_000, extraEffect = null } = {}) {
    const seen = { runs: 0 };
    const core = fakeCore({
      *"GET /doc"(message) {
        seen.runs++;
        const tenant = message.request.headers["x-tenant"] ?? "";
        const effects = [{ kind: "kv.get", binding: "KV", key: `doc:${tenant}` }];
        if (extraEffect) effects.push(extraEffect);
        const [doc] = yield effects;
        if (!doc.ok) return json(503, { error: "kv" });
        if (doc.value.value === null) return json(404, { tenant });
        return json(
          200,
          { tenant, doc: doc.value.value, run: seen.runs },
          {
            replay: { until: until(), headers: ["x-tenant"] },
          },
        );
      },
      *"POST /doc"(message) {
        const tenant = message.request.headers["x-tenant"] ?? "";
        yield [{ kind: "kv.put", binding: "KV", key: `doc:${tenant}`, value: message.request.body }];
        return json(204, {});
      },
      *"GET /trap"() {
        yield [{ kind: "sleep", ms: 1 }];
        throw new WebAssembly.RuntimeError("unreachable");
      },
      *"GET /slow"() {
        // One KV read, held open by the test (`gate`), then an answer marked replayable.
        const [doc] = yield [{ kind: "kv.get", binding: "KV", key: "slow" }];
        return json(200, { doc: doc.value.value }, { replay: { until: Date.now() + 60_000, headers: [] } });
      },
    });
    const store = new Map([
      ["doc:a", "A1"],
      ["doc:b", "B1"],
    ]);
    const kvCalls = [];
    // A read of "slow" waits until the test opens the gate.
    const gate = { open: null, wait: null };
    const closeGate = () => {
      gate.wait = new Promise((resolve) => {
        gate.open = resolve;
      });
    };
    const env = {
      SITESWARM_TEST_HOOKS: "1",
      KV: {
        get: async (k) => {
          kvCalls.push(k);
          if (k === "slow") await gate.wait;
          return store.get(k) ?? null;
        },
        put: async (k, v) => store.set(k, v),
        delete: async (k) => store.delete(k),
      },
    };
    return { worker: defineWorker(core, { service: "svc" }), core, env, store, seen, kvCalls, gate, closeGate };
  }
  const doc = (worker, env, tenant, path = "/doc") =>
    worker.fetch(get(path, { headers: tenant === null ? {} : { "x-tenant": tenant } }), env, ctx());

  it("replays a marked answer for the same URL and header values while its KV read gives the same", async () => {
    const { worker, env, seen, kvCalls } = docWorker();
    const first = await doc(worker, env, "a");
    assert.equal(first.status, 200);
    assert.equal(first.headers.get("x-ss-replayed"), null);
    const firstBody = await first.text();
    const again = await doc(worker, env, "a");
    assert.equal(again.status, 200);
    assert.equal(again.headers.get("x-ss-replayed"), "1");
    assert.equal(again.headers.get("content-type"), "application/json");
    assert.equal(await again.text(), firstBody); // byte for byte, run 1's answer
    assert.equal(seen.runs, 1);
    assert.deepEqual(kvCalls, ["doc:a", "doc:a"]); // the replay read KV again
    // Another value of a named header, another URL: the core runs.
    assert.deepEqual(await (await doc(worker, env, "b")).json(), { tenant: "b", doc: "B1", run: 2 });
    assert.equal((await doc(worker, env, "a", "/doc?x=1")).headers.get("x-ss-replayed"), null);
    assert.equal(seen.runs, 3);
    // Two runs of one request that end together record it twice: the later stands, and replays.
    await Promise.all([doc(worker, env, "a", "/doc?twice=1"), doc(worker, env, "a", "/doc?twice=1")]);
    assert.equal((await doc(worker, env, "a", "/doc?twice=1")).headers.get("x-ss-replayed"), "1");
    assert.equal(seen.runs, 5);
    // The header absent is a value of its own, not "".
    assert.equal((await doc(worker, env, null)).status, 404);
    assert.equal((await doc(worker, env, "")).status, 404);
    assert.equal(seen.runs, 7);
  });

  it("runs the core when the KV value changed, failed, or the answer's time is up", async () => {
    // The host's clock, set by the test: each answer may be replayed for 40 ms of it.
    const realNow = Date.now;
    let now = realNow();
    Date.now = () => now;
    try {
      const { worker, env, store, seen } = docWorker({ until: () => now + 40 });
      await doc(worker, env, "a");
      store.set("doc:a", "A2"); // written by another isolate
      assert.deepEqual(await (await doc(worker, env, "a")).json(), { tenant: "a", doc: "A2", run: 2 });
      assert.equal((await doc(worker, env, "a")).headers.get("x-ss-replayed"), "1");
      const down = async () => Promise.reject(new Error("KV down"));
      const failing = { ...env, KV: { get: down, put: down, delete: down } };
      assert.equal((await doc(worker, failing, "a")).status, 503); // the core's own answer to the failure
      assert.equal(seen.runs, 3);
      await doc(worker, env, "a"); // run 4 records again, until now + 40
      now += 39;
      assert.equal((await doc(worker, env, "a")).headers.get("x-ss-replayed"), "1", "1 ms before its time is up");
      assert.equal(seen.runs, 4);
      now += 1;
      const late = await doc(worker, env, "a");
      assert.equal(late.headers.get("x-ss-replayed"), null, "its time is up");
      assert.deepEqual(await late.json(), { tenant: "a", doc: "A2", run: 5 });
      assert.equal(seen.runs, 5);
    } finally {
      Date.now = realNow;
    }
  });

  it("any run that writes forgets every answer; a run that began before a write records nothing", async () => {
    const { worker, env, seen } = docWorker();
    await doc(worker, env, "a");
    await doc(worker, env, "b");
    const post = await worker.fetch(
      get("/doc", { method: "POST", headers: { "x-tenant": "a" }, body: "A2" }),
      env,
      ctx(),
    );
    assert.equal(post.status, 204);
    // b's document did not change, but its answer is forgotten too (a write may change what any
    // answer would be, e.g. a tenant disabled on this isolate).
    assert.equal((await doc(worker, env, "b")).headers.get("x-ss-replayed"), null);
    assert.deepEqual(await (await doc(worker, env, "a")).json(), { tenant: "a", doc: "A2", run: 4 });
    assert.equal(seen.runs, 4);
    // /slow reads, a write runs while it waits, /slow ends marked replayable: not recorded.
    const slowWorker = docWorker();
    const { closeGate, gate } = slowWorker;
    const slowGet = () => slowWorker.worker.fetch(get("/slow"), slowWorker.env, ctx());
    const write = () =>
      slowWorker.worker.fetch(
        get("/doc", { method: "POST", headers: { "x-tenant": "a" }, body: "A9" }),
        slowWorker.env,
        ctx(),
      );
    closeGate();
    const slow = slowGet();
    await new Promise((r) => setTimeout(r, 5));
    assert.equal((await write()).status, 204);
    gate.open();
    assert.equal((await slow).status, 200);
    assert.equal((await slowGet()).headers.get("x-ss-replayed"), null); // not recorded: the core ran
    assert.equal((await slowGet()).headers.get("x-ss-replayed"), "1"); // that run was recorded
    // A replay whose KV read is overtaken by a write is not sent: the core answers.
    closeGate();
    const overtaken = slowGet();
    await new Promise((r) => setTimeout(r, 5));
    assert.equal((await write()).status, 204);
    gate.open();
    assert.equal((await overtaken).headers.get("x-ss-replayed"), null);
  });

  it("records only runs whose every effect is a KV read, never an unmarked or failed answer", async () => {
    const withHash = docWorker({ extraEffect: { kind: "crypto.sha256", data: "x" } });
    await doc(withHash.worker, withHash.env, "a");
    assert.equal((await doc(withHash.worker, withHash.env, "a")).headers.get("x-ss-replayed"), null);
    assert.equal(withHash.seen.runs, 2);
    const plain = docWorker();
    await doc(plain.worker, plain.env, "missing"); // 404, unmarked
    await doc(plain.worker, plain.env, "missing");
    assert.equal(plain.seen.runs, 2);
  });

  it("a trap's new instance starts with no answers; SS_REPLAY=0 turns replays off", async () => {
    const { worker, env, core, seen } = docWorker();
    await doc(worker, env, "a");
    assert.equal((await doc(worker, env, "a")).headers.get("x-ss-replayed"), "1");
    assert.equal((await worker.fetch(get("/trap"), env, ctx())).status, 500);
    assert.equal((await doc(worker, env, "a")).headers.get("x-ss-replayed"), null);
    assert.equal(core.stats.instances, 2);
    assert.equal((await doc(worker, env, "a")).headers.get("x-ss-replayed"), "1");
    const off = { ...env, SS_REPLAY: "0" };
    assert.equal((await doc(worker, off, "a")).headers.get("x-ss-replayed"), null);
    assert.equal((await doc(worker, off, "a")).headers.get("x-ss-replayed"), null);
    assert.equal(seen.runs, 4);
  });
});

describe("test hooks of a worker deployed as several (defineWorker parts)", () => {
  // A part's service binding: records each call, answers as a part's own fault layer would.
  function fakePart({ fired = [0], status = 200 } = {}) {
    const calls = [];
    return {
      calls,
      async fetch(url, init) {
        calls.push({ url: String(url), method: init.method, body: init.body });
        if (status !== 200) return Response.json({ error: { code: "internal" } }, { status });
        if (init.method === "GET") return Response.json({ rules: fired.length, fired });
        if (init.method === "DELETE") return Response.json({ rules: 0 });
        return Response.json({ rules: JSON.parse(init.body).length });
      },
    };
  }
  const faults = (worker, env, method, rules) =>
    worker.fetch(
      get("/__test/faults", { method, body: rules === undefined ? undefined : JSON.stringify(rules) }),
      env,
      ctx(),
    );

  it("passes /__test/faults on to each part bound, answers as before, sums GET's firings", async () => {
    const core = fakeCore({});
    const worker = defineWorker(core, { service: "svc", parts: ["RUNNER", "CONFIG", "ABSENT"] });
    const env = { SITESWARM_TEST_HOOKS: "1", RUNNER: fakePart({ fired: [2] }), CONFIG: fakePart({ fired: [1] }) };
    const rules = [{ kind: "d1.*", rate: 0 }];
    try {
      const set = await faults(worker, env, "POST", rules);
      assert.deepEqual([set.status, await set.json()], [200, { rules: 1 }]);
      for (const part of [env.RUNNER, env.CONFIG]) {
        assert.deepEqual(part.calls, [
          { url: "https://worker.test/__test/faults", method: "POST", body: JSON.stringify(rules) },
        ]);
      }
      assert.deepEqual(await (await faults(worker, env, "GET")).json(), { rules: 1, fired: [3] });
      // A bad list: the entry's 400, and no part is asked.
      const bad = await faults(worker, env, "POST", [{ kind: "d1.*", rate: 2 }]);
      assert.equal(bad.status, 400);
      assert.equal(env.RUNNER.calls.length, 2);
      // A part that refuses: its answer.
      const down = { ...env, CONFIG: fakePart({ status: 500 }) };
      assert.equal((await faults(worker, down, "GET")).status, 500);
    } finally {
      assert.deepEqual(await (await faults(worker, env, "DELETE")).json(), { rules: 0 });
    }
    assert.equal(env.RUNNER.calls.at(-1).method, "DELETE");
    assert.equal(core.stats.initialized ?? 0, 0, "the core never ran");
  });

  it("without test hooks nothing is passed on: the core answers the path", async () => {
    const core = fakeCore({
      *"GET /__test/faults"() {
        return json(404, { error: { code: "not_found" } });
      },
    });
    const part = fakePart();
    const worker = defineWorker(core, { service: "svc", parts: ["RUNNER"] });
    const res = await worker.fetch(get("/__test/faults"), { RUNNER: part }, ctx());
    assert.equal(res.status, 404);
    assert.deepEqual(part.calls, []);
  });
});
