// @siteswarm/sdk createPlatformClient: against recording fake bindings in plain Node, then against
// the real platform workers in one Miniflare.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
// The worktree's own SDK (node_modules may be shared with another checkout).
import { createPlatformClient, SiteSwarmError } from "../../bindings/sdk/src/index.js";
import { ROOT, startMesh } from "./mesh.mjs";

const TOKEN = "tenant-token-0123456789abcdef";
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const bakery = JSON.parse(await readFile(path.join(ROOT, "examples/bakery/swarm.config.json"), "utf8"));

/** A binding-like object recording each request and answering with `answer(request)`. */
function recordingBinding(
  answer = () => Response.json({ ok: true, leadId: "01J00000000000000000000000" }, { status: 202 }),
) {
  const seen = [];
  return {
    seen,
    async fetch(request) {
      assert.ok(request instanceof Request, "the binding receives a Request");
      const body = await request.clone().text();
      seen.push({
        method: request.method,
        url: request.url,
        headers: Object.fromEntries(request.headers),
        body,
      });
      return answer(request);
    },
  };
}

const siteswarmHeaders = (headers) => Object.entries(headers).filter(([k]) => k.startsWith("x-siteswarm-"));

async function rejectsWith(promise, code, status) {
  let caught;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof SiteSwarmError, `expected SiteSwarmError, got ${caught}`);
  assert.equal(caught.code, code);
  if (status !== undefined) assert.equal(caught.status, status);
  return caught;
}

describe("createPlatformClient with fake bindings", () => {
  it("injects the three tenant headers with the manifest's capability versions", async () => {
    const LEADS_SERVICE = recordingBinding();
    const EVENTS_SERVICE = recordingBinding(() =>
      Response.json({ event_id: "01J00000000000000000000001" }, { status: 201 }),
    );
    const ANALYTICS_SERVICE = recordingBinding(() => new Response(null, { status: 202 }));
    const CMS_SERVICE = recordingBinding(() =>
      Response.json({ open: true, reason: "regular_hours", override: null, nextChange: null }),
    );
    const client = createPlatformClient({
      appId: "bakery",
      manifest: bakery,
      bindings: { LEADS_SERVICE, EVENTS_SERVICE, ANALYTICS_SERVICE, CMS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
    });

    assert.deepEqual(await client.leads.submit({ name: "Ada", email: "ada@example.com" }), {
      ok: true,
      leadId: "01J00000000000000000000000",
    });
    const [lead] = LEADS_SERVICE.seen;
    assert.equal(lead.method, "POST");
    assert.equal(new URL(lead.url).pathname, "/api/leads/submit");
    assert.equal(lead.headers["content-type"], "application/json");
    assert.deepEqual(JSON.parse(lead.body), { name: "Ada", email: "ada@example.com" });
    assert.deepEqual(siteswarmHeaders(lead.headers), [
      ["x-siteswarm-capability-version", "1.2.0"],
      ["x-siteswarm-tenant-id", "bakery"],
      ["x-siteswarm-tenant-token", TOKEN],
    ]);
    assert.equal(lead.headers["idempotency-key"], undefined);

    assert.deepEqual(
      await client.events.emit({ event_type: "order.placed", entity_ref: "order:1", payload: { n: 1 } }),
      { event_id: "01J00000000000000000000001" },
    );
    assert.equal(EVENTS_SERVICE.seen[0].headers["x-siteswarm-capability-version"], "1.0.0");
    assert.equal(EVENTS_SERVICE.seen[0].headers["x-siteswarm-tenant-token"], TOKEN);

    assert.equal(await client.analytics.pageview({ url: "https://b.example/", referrer: "", width: 390 }), undefined);
    const [beacon] = ANALYTICS_SERVICE.seen;
    assert.equal(new URL(beacon.url).pathname, "/beacon");
    assert.deepEqual(JSON.parse(beacon.body), { u: "https://b.example/", r: "", w: 390 });
    assert.equal(beacon.headers["x-siteswarm-tenant-id"], "bakery");
    // Without the visitor's request: a server-reported pageview, counted without a visitor hash.
    assert.equal(beacon.headers["user-agent"], "SiteSwarm-SDK/1.0 (server-reported pageview)");
    assert.equal(beacon.headers.dnt, "1");
    assert.equal(beacon.headers["cf-connecting-ip"], undefined);
    // With it: the visitor's user agent, IP and privacy signals go along, nothing else of theirs.
    const visit = new Request("https://b.example/menu", {
      headers: {
        "user-agent": "Mozilla/5.0 (iPhone) Mobile Safari/604.1",
        "cf-connecting-ip": "203.0.113.7",
        "sec-gpc": "1",
        cookie: "session=secret",
        authorization: "Bearer visitor",
        "x-siteswarm-tenant-id": "spoofed",
      },
    });
    await client.analytics.pageview({ url: "https://b.example/menu", request: visit });
    const sent = ANALYTICS_SERVICE.seen[1].headers;
    assert.equal(sent["user-agent"], "Mozilla/5.0 (iPhone) Mobile Safari/604.1");
    assert.equal(sent["cf-connecting-ip"], "203.0.113.7");
    assert.equal(sent["sec-gpc"], "1");
    assert.equal(sent.dnt, undefined);
    assert.equal(sent.cookie, undefined);
    assert.equal(sent.authorization, undefined);
    assert.equal(sent["x-siteswarm-tenant-id"], "bakery");
    // The other forms pageview takes: the beacon's own fields, the URL alone, the visitor's Request
    // (its URL and Referer, and the visitor it came from).
    await client.analytics.pageview({ u: "https://b.example/a", r: "https://ref.example/", w: 1280 });
    await client.analytics.pageview("https://b.example/b");
    await client.analytics.pageview(
      new Request("https://b.example/c", {
        headers: { referer: "https://search.example/", "user-agent": "Mozilla/5.0 (X11) Firefox/133.0" },
      }),
    );
    const [fields, url, request] = ANALYTICS_SERVICE.seen.slice(2);
    assert.deepEqual(JSON.parse(fields.body), { u: "https://b.example/a", r: "https://ref.example/", w: 1280 });
    assert.deepEqual(JSON.parse(url.body), { u: "https://b.example/b", r: "" });
    assert.deepEqual(JSON.parse(request.body), { u: "https://b.example/c", r: "https://search.example/" });
    assert.equal(request.headers["user-agent"], "Mozilla/5.0 (X11) Firefox/133.0");
    assert.equal(url.headers["user-agent"], "SiteSwarm-SDK/1.0 (server-reported pageview)");
    // A URL as a browser's tracker sends it, so both count under one path: encoded, dots resolved.
    await client.analytics.pageview("https://B.example/caf\u00e9/../men\u00fc?x=1");
    await client.analytics.pageview({ url: "https://b.example/caf%C3%A9/../men%C3%BC?x=1" });
    const [raw, encoded] = ANALYTICS_SERVICE.seen.slice(5);
    assert.equal(JSON.parse(raw.body).u, "https://b.example/men%C3%BC");
    assert.equal(JSON.parse(encoded.body).u, "https://b.example/men%C3%BC");
    // A default port dropped and an international host in its xn-- form, as a browser's location.
    await client.analytics.pageview("https://b.example:443/caf\u00e9");
    await client.analytics.pageview("https://b\u00e4ckerei.example/caf\u00e9");
    const [port, idn] = ANALYTICS_SERVICE.seen.slice(7);
    assert.equal(JSON.parse(port.body).u, "https://b.example/caf%C3%A9");
    assert.equal(JSON.parse(idn.body).u, "https://xn--bckerei-5wa.example/caf%C3%A9");
    // Only what the service reads, as the tracker sends it: the query but utm_source/medium/campaign
    // (the first non-empty of each) and the fragment dropped, a referrer's query too, a long path cut
    // before an escape — a 10 KB URL or Referer still makes a beacon under 4 KiB.
    const longPath = `/${"a".repeat(1021)}%C3%A9${"b".repeat(4000)}`;
    await client.analytics.pageview(
      new Request(
        `https://b.example${longPath}?email=a%40b.example&utm_source=&utm_source=news&utm_term=t&utm_campaign=${"c".repeat(300)}#top`,
        { headers: { referer: `https://ref.example/r?q=${"y".repeat(10000)}#x` } },
      ),
    );
    const trimmed = ANALYTICS_SERVICE.seen.at(-1);
    assert.ok(Buffer.byteLength(trimmed.body) < 4096, `${Buffer.byteLength(trimmed.body)} bytes`);
    const sentUrl = new URL(JSON.parse(trimmed.body).u);
    assert.equal(sentUrl.pathname, `/${"a".repeat(1021)}`, "cut before the escape it would split");
    assert.deepEqual(
      [...sentUrl.searchParams],
      [
        ["utm_source", "news"],
        ["utm_campaign", "c".repeat(100)],
      ],
    );
    assert.equal(sentUrl.hash, "");
    assert.equal(JSON.parse(trimmed.body).r, "https://ref.example/r");
    // The worst case: three utm values of emoji (4 bytes each, 12 once percent-encoded) beside a long
    // path and referrer — each value cut before a character at the 100 bytes the service keeps.
    const emoji = "\u{1F600}".repeat(100);
    await client.analytics.pageview({
      url: `https://b.example/${"p".repeat(5000)}?utm_source=${emoji}&utm_medium=${emoji}&utm_campaign=${emoji}`,
      referrer: `https://ref.example/${"r".repeat(5000)}`,
    });
    const worst = ANALYTICS_SERVICE.seen.at(-1);
    assert.ok(Buffer.byteLength(worst.body) <= 4096, `${Buffer.byteLength(worst.body)} bytes`);
    const worstUrl = new URL(JSON.parse(worst.body).u);
    assert.equal(worstUrl.searchParams.get("utm_campaign"), "\u{1F600}".repeat(25));

    const status = await client.cms.status(new Date("2026-05-26T14:00:00.123Z"));
    assert.equal(status.open, true);
    const statusUrl = new URL(CMS_SERVICE.seen[0].url);
    assert.equal(statusUrl.pathname, "/v1/status");
    assert.equal(statusUrl.searchParams.get("at"), "2026-05-26T14:00:00Z");
    assert.equal(CMS_SERVICE.seen[0].method, "GET");
  });

  it("defaults the capability version to 1.0.0 and reads a custom token binding", async () => {
    const LEADS_SERVICE = recordingBinding();
    const client = createPlatformClient({
      appId: "shop",
      bindings: { LEADS_SERVICE, MY_TOKEN: "t" },
      tokenBinding: "MY_TOKEN",
    });
    await client.leads.submit({ phone: "+15550109999" });
    assert.deepEqual(siteswarmHeaders(LEADS_SERVICE.seen[0].headers), [
      ["x-siteswarm-capability-version", "1.0.0"],
      ["x-siteswarm-tenant-id", "shop"],
      ["x-siteswarm-tenant-token", "t"],
    ]);
  });

  it("gives callers no way to set X-SiteSwarm headers themselves", async () => {
    const LEADS_SERVICE = recordingBinding();
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    // Header-looking lead fields and a forged-looking idempotency key stay data, never headers.
    await client.leads.submit(
      {
        email: "a@example.com",
        "X-SiteSwarm-Tenant-Id": "auto-repair",
        headers: { "X-SiteSwarm-Tenant-Token": "forged" },
      },
      { idempotencyKey: "k-1", headers: { "X-SiteSwarm-Tenant-Id": "auto-repair" } },
    );
    const { headers } = LEADS_SERVICE.seen[0];
    assert.deepEqual(siteswarmHeaders(headers), [
      ["x-siteswarm-capability-version", "1.0.0"],
      ["x-siteswarm-tenant-id", "bakery"],
      ["x-siteswarm-tenant-token", TOKEN],
    ]);
    assert.equal(headers["idempotency-key"], "k-1");
  });

  it("sends the Idempotency-Key header", async () => {
    const LEADS_SERVICE = recordingBinding();
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    await client.leads.submit({ email: "a@example.com" }, { idempotencyKey: "order-42" });
    assert.equal(LEADS_SERVICE.seen[0].headers["idempotency-key"], "order-42");
  });

  it("maps error answers to SiteSwarmError with code, status and fields", async () => {
    const fields = { email: "is not an email address" };
    const LEADS_SERVICE = recordingBinding(() =>
      Response.json(
        { error: { code: "invalid_lead", message: "the lead has invalid fields", fields } },
        { status: 400 },
      ),
    );
    const EVENTS_SERVICE = recordingBinding(() =>
      Response.json(
        { error: { code: "rate_limited", message: "slow down" } },
        { status: 429, headers: { "Retry-After": "3" } },
      ),
    );
    const CMS_SERVICE = recordingBinding(() => new Response("<h1>Bad gateway</h1>", { status: 502 }));
    const ANALYTICS_SERVICE = recordingBinding(() => new Response("not json", { status: 200 }));
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE, EVENTS_SERVICE, CMS_SERVICE, ANALYTICS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
    });

    const invalid = await rejectsWith(client.leads.submit({ email: "nope" }), "invalid_lead", 400);
    assert.deepEqual(invalid.fields, fields);
    assert.equal(invalid.message, "the lead has invalid fields");
    await rejectsWith(client.events.list({ type: "lead.*" }), "rate_limited", 429);
    const html = await rejectsWith(client.cms.content(), "bad_response", 502);
    assert.ok(!html.message.includes(TOKEN));
    await rejectsWith(client.analytics.pageview({ url: "https://b.example/" }), "bad_response", 200);
  });

  it("maps a thrown binding and a 401 answer", async () => {
    const LEADS_SERVICE = {
      fetch: async () => {
        throw new Error("connection reset");
      },
    };
    const EVENTS_SERVICE = recordingBinding(() =>
      Response.json({ error: { code: "unauthenticated_tenant", message: "who are you" } }, { status: 401 }),
    );
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE, EVENTS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    await rejectsWith(client.leads.submit({ email: "a@example.com" }), "service_unavailable", 503);
    await rejectsWith(
      client.events.emit({ event_type: "a.b", entity_ref: "x:1", payload: {} }),
      "unauthenticated_tenant",
      401,
    );
  });

  it("throws service_unavailable (503) for a missing binding or token", async () => {
    const client = createPlatformClient({ appId: "bakery", bindings: { SITESWARM_TENANT_TOKEN: TOKEN } });
    await rejectsWith(client.leads.submit({ email: "a@example.com" }), "service_unavailable", 503);
    await rejectsWith(
      client.events.emit({ event_type: "a.b", entity_ref: "x:1", payload: {} }),
      "service_unavailable",
      503,
    );
    await rejectsWith(client.events.list(), "service_unavailable", 503);
    await rejectsWith(client.cms.content(), "service_unavailable", 503);
    await rejectsWith(client.cms.status(), "service_unavailable", 503);
    await rejectsWith(client.analytics.pageview({ url: "https://b.example/" }), "service_unavailable", 503);

    const LEADS_SERVICE = recordingBinding();
    const noToken = createPlatformClient({ appId: "bakery", bindings: { LEADS_SERVICE } });
    const err = await rejectsWith(noToken.leads.submit({ email: "a@example.com" }), "service_unavailable", 503);
    assert.match(err.message, /SITESWARM_TENANT_TOKEN/);
    assert.equal(LEADS_SERVICE.seen.length, 0);
  });

  it("cms uses Workers RPC when the binding offers getContent/getStatus, fetch otherwise", async () => {
    const calls = [];
    const content = { tenantId: "bakery", version: 3, hours: null, overrides: [], announcements: [], source: "kv" };
    const status = { open: true, reason: "regular_hours", override: null, nextChange: null, source: "d1" };
    const CMS_SERVICE = {
      ...recordingBinding(() => Response.json(status)),
      async getContent(auth) {
        calls.push(["getContent", auth]);
        return { ok: true, value: content };
      },
      async getStatus(auth, at) {
        calls.push(["getStatus", auth, at]);
        if (at === "2026-01-01T00:00:00Z")
          return { ok: false, status: 401, error: { code: "unauthenticated_tenant", message: "no" } };
        throw new Error('The RPC receiver does not implement the method "getStatus".');
      },
    };
    const manifest = { appId: "bakery", capabilities: { cms: { version: "1.3.0" } } };
    const client = createPlatformClient({ manifest, bindings: { CMS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN } });
    assert.deepEqual(await client.cms.content(), content);
    assert.deepEqual(calls[0], ["getContent", { tenantId: "bakery", token: TOKEN, capabilityVersion: "1.3.0" }]);
    assert.equal(CMS_SERVICE.seen.length, 0, "no fetch when RPC answers");
    await rejectsWith(client.cms.status("2026-01-01T00:00:00Z"), "unauthenticated_tenant", 401);
    // An RPC call that throws is retried over fetch.
    assert.equal((await client.cms.status("2026-01-02T00:00:00Z")).source, "d1");
    assert.equal(new URL(CMS_SERVICE.seen[0].url).searchParams.get("at"), "2026-01-02T00:00:00Z");
  });

  it("gives up on a service that does not answer in time: cms falls back to the snapshot, other calls fail 503", async () => {
    // A binding that answers nothing: its fetch settles only when the request's signal gives up, as
    // a subrequest does in workerd; its RPC methods never settle.
    let aborted = 0;
    const hanging = {
      fetch: (request) =>
        new Promise((_, reject) => {
          request.signal.addEventListener("abort", () => {
            aborted++;
            reject(request.signal.reason);
          });
        }),
    };
    const bindings = {
      CMS_SERVICE: { ...hanging, getContent: () => new Promise(() => {}) },
      LEADS_SERVICE: hanging,
      SITESWARM_TENANT_TOKEN: TOKEN,
    };
    const client = createPlatformClient({ manifest: bakery, bindings, timeoutMs: 50, cmsTimeoutMs: 20 });
    // Over RPC (getContent) and over fetch (no getStatus method): the snapshot answers.
    assert.equal((await client.cms.content()).source, "fallback");
    assert.equal((await client.cms.status("2026-05-26T14:00:00Z")).source, "fallback");
    assert.equal(aborted, 1, "the cms request that ran out of time was aborted");
    // A time the service refuses (its zone data starts in 2020) is refused by the snapshot's answer too.
    for (const at of ["2019-12-31T23:59:59Z", "2100-01-01T00:00:00Z"]) {
      const refused = await client.cms.status(at).catch((err) => err);
      assert.ok(refused instanceof SiteSwarmError, at);
      assert.equal(refused.code, "invalid_request");
      assert.equal(refused.status, 400);
      assert.match(refused.fields.at, /between 2020 and 2099/);
    }
    assert.equal(aborted, 1, "refused before any call");
    const failed = await client.leads.submit({ email: "a@example.com" }).catch((err) => err);
    assert.ok(failed instanceof SiteSwarmError);
    assert.equal(failed.code, "service_unavailable");
    assert.equal(failed.status, 503);
    assert.match(failed.message, /LEADS_SERVICE service did not answer within 50 ms/);
    assert.equal(aborted, 2);
    // Without a snapshot a cms read that runs out of time fails the same way.
    const bare = createPlatformClient({ appId: "bakery", bindings, cmsTimeoutMs: 20 });
    await rejectsWith(bare.cms.status(), "service_unavailable", 503);
    // Headers in time, the body not: not an answer either (not a 200 with nothing in it).
    const slowBody = {
      fetch: (request) =>
        Promise.resolve(
          new Response(
            new ReadableStream({
              start(controller) {
                request.signal.addEventListener("abort", () => controller.error(request.signal.reason));
              },
            }),
            { status: 202, headers: { "content-type": "application/json" } },
          ),
        ),
    };
    const trickle = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE: slowBody, SITESWARM_TENANT_TOKEN: TOKEN },
      timeoutMs: 30,
    });
    await rejectsWith(trickle.leads.submit({ email: "a@example.com" }), "service_unavailable", 503);
  });

  it("mockFallback answers a lead as the leads worker would: Turnstile, the key's rules, the honeypot's repeats", async () => {
    const mocked = (leads) =>
      createPlatformClient({
        appId: "bakery",
        manifest: { appId: "bakery", ...(leads && { config: { leads } }) },
        bindings: {},
        mockFallback: true,
      });
    // Turnstile required (the default, and the bakery's): no token is 403, as from the service.
    const required = mocked(undefined);
    const missing = await rejectsWith(required.leads.submit({ email: "a@example.com" }), "turnstile_failed", 403);
    assert.match(missing.message, /token is missing/);
    await rejectsWith(
      mocked({ turnstile: "required" }).leads.submit({ email: "a@example.com", turnstileToken: "" }),
      "turnstile_failed",
      403,
    );
    // Validation comes first: a bad field is 400 even without a token.
    await rejectsWith(required.leads.submit({ email: "nope" }), "invalid_lead", 400);
    const off = mocked({ turnstile: "off" });
    assert.match((await off.leads.submit({ email: "a@example.com" })).leadId, ULID);

    // An empty key is no key: two different leads are two leads.
    const one = await off.leads.submit({ email: "one@example.com" }, { idempotencyKey: "" });
    const two = await off.leads.submit({ email: "two@example.com" }, { idempotencyKey: "" });
    assert.notEqual(one.leadId, two.leadId);
    // A key over 200 characters is the service's 400 naming Idempotency-Key (after the fields).
    const long = await rejectsWith(
      off.leads.submit({ email: "a@example.com" }, { idempotencyKey: "k".repeat(201) }),
      "invalid_request",
      400,
    );
    assert.equal(long.details.field, "Idempotency-Key");
    assert.match(
      (await off.leads.submit({ email: "a@example.com" }, { idempotencyKey: "k".repeat(200) })).leadId,
      ULID,
    );
    // A honeypot lead sent twice with one key gets the same decoy id, as from the service.
    const bot = { email: "bot@example.com", company_website: "https://spam.example" };
    const decoy = await off.leads.submit(bot, { idempotencyKey: "bot-1" });
    assert.deepEqual(await off.leads.submit(bot, { idempotencyKey: "bot-1" }), decoy);
  });

  it("submits a lead with the visitor's address when given the visitor's request, and nothing else of it", async () => {
    const LEADS_SERVICE = recordingBinding();
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    const visitor = new Request("https://bakery.example/contact", {
      headers: {
        "CF-Connecting-IP": "203.0.113.7",
        "User-Agent": "Mozilla/5.0",
        Cookie: "session=secret",
        "X-SiteSwarm-Tenant-Id": "someone-else",
      },
    });
    await client.leads.submit({ email: "a@example.com" }, { request: visitor });
    await client.leads.submit({ email: "b@example.com" });
    const [withVisitor, without] = LEADS_SERVICE.seen;
    assert.equal(withVisitor.headers["cf-connecting-ip"], "203.0.113.7");
    assert.equal(withVisitor.headers["x-siteswarm-tenant-id"], "bakery");
    assert.equal(withVisitor.headers.cookie, undefined);
    assert.equal(withVisitor.headers["user-agent"], undefined);
    assert.equal(without.headers["cf-connecting-ip"], undefined);
  });

  it("sends a lead that is no object as it is: the service's 400 invalid_request, as the fake's", async () => {
    const LEADS_SERVICE = recordingBinding((request) =>
      request
        .text()
        .then((text) =>
          text.startsWith("{")
            ? Response.json({ ok: true, leadId: "01J00000000000000000000000" }, { status: 202 })
            : Response.json(
                { error: { code: "invalid_request", message: "the body must be a JSON object" } },
                { status: 400 },
              ),
        ),
    );
    const real = createPlatformClient({ appId: "bakery", bindings: { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN } });
    const fake = createPlatformClient({
      manifest: { appId: "bakery", config: { leads: { turnstile: "off" } } },
      bindings: {},
      mockFallback: true,
    });
    await rejectsWith(real.leads.submit(null), "invalid_request", 400);
    assert.equal(LEADS_SERVICE.seen[0].body, "null");
    await rejectsWith(fake.leads.submit(null), "invalid_request", 400);
    // No lead at all is an empty lead: invalid (no email or phone) both ways.
    await real.leads.submit(undefined);
    assert.equal(LEADS_SERVICE.seen[1].body, "{}");
    await rejectsWith(fake.leads.submit(undefined), "invalid_lead", 400);
    // A field named __proto__ is a field the form does not take, not the lead's prototype.
    const proto = await rejectsWith(
      fake.leads.submit(JSON.parse('{"email":"m@example.com","__proto__":{"x":"1"}}')),
      "invalid_lead",
      400,
    );
    assert.deepEqual(Object.entries(proto.fields), [["__proto__", "must be text"]]);
    const extra = await rejectsWith(
      fake.leads.submit(JSON.parse('{"email":"m@example.com","__proto__":"x"}')),
      "invalid_lead",
      400,
    );
    assert.deepEqual(Object.entries(extra.fields), [["__proto__", "is not a field this form accepts"]]);
  });

  it("takes a cms answer only with the content's or a status's shape; anything else falls back to the snapshot", async () => {
    const answers = [
      () => new Response(null, { status: 204 }),
      () => new Response("", { status: 200 }),
      () => Response.json({}),
      () => Response.json([]),
      () => Response.json("hi"),
      () => Response.json({ error: { code: "x" } }),
    ];
    for (const answer of answers) {
      const CMS_SERVICE = recordingBinding(answer);
      const bindings = { CMS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN };
      const withSnapshot = createPlatformClient({ appId: "bakery", manifest: bakery, bindings });
      assert.equal((await withSnapshot.cms.content()).source, "fallback", String(answer));
      assert.equal((await withSnapshot.cms.status("2026-05-26T14:00:00Z")).source, "fallback", String(answer));
      const bare = createPlatformClient({ appId: "bakery", bindings });
      await rejectsWith(bare.cms.content(), "bad_response");
      await rejectsWith(bare.cms.status(), "bad_response");
      assert.equal(CMS_SERVICE.seen.length, 4, "each read asked the service");
    }
  });

  it("lists the service's weekly hours Monday first, as the snapshot's", async () => {
    // As cms-service writes them: keys in alphabetical order.
    const weekly = { fri: [], mon: [{ open: "07:00", close: "15:00" }], sat: [], sun: [], thu: [], tue: [], wed: [] };
    const content = { tenantId: "bakery", version: 2, overrides: [], announcements: [], source: "kv" };
    const CMS_SERVICE = recordingBinding(() => Response.json({ ...content, hours: { timezone: "UTC", weekly } }));
    const client = createPlatformClient({ appId: "bakery", bindings: { CMS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN } });
    const read = await client.cms.content();
    assert.deepEqual(Object.keys(read.hours.weekly), ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]);
    assert.deepEqual(read.hours.weekly, weekly);
    assert.equal(read.version, 2);
  });

  it("reads a string `at` as the service does: RFC 3339 with its offset, nothing Date would guess at", async () => {
    const status = { open: false, reason: "closed", override: null, nextChange: null, source: "kv" };
    const CMS_SERVICE = recordingBinding(() => Response.json(status));
    const client = createPlatformClient({
      appId: "bakery",
      manifest: bakery,
      bindings: { CMS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    for (const at of ["2026-02-30T00:00:00Z", "2026-12-07T24:00:00Z", "2026-12-07T13:00:00", "2026-12-07", "soon"]) {
      const err = await rejectsWith(client.cms.status(at), "invalid_request", 400);
      assert.equal(err.details.field, "at", at);
    }
    assert.equal(CMS_SERVICE.seen.length, 0, "nothing sent for a time the service refuses");
    await client.cms.status("2026-12-07T13:00:00.5+02:00");
    await client.cms.status(new Date("2026-12-07T11:00:00Z"));
    await client.cms.status(""); // an empty `at` is "now", as the service reads `?at=`: no `at` sent
    const sent = CMS_SERVICE.seen.map((r) => new URL(r.url).searchParams.get("at"));
    assert.deepEqual(sent, ["2026-12-07T11:00:00Z", "2026-12-07T11:00:00Z", null]);
  });

  it("a key no header can carry, or a body JSON cannot hold, is the caller's 400 and nothing is sent", async () => {
    const LEADS_SERVICE = recordingBinding();
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    const mock = createPlatformClient({ appId: "bakery", bindings: {}, mockFallback: true });
    for (const idempotencyKey of ["a\nb", "clé-€", " padded ", "tab\there"]) {
      for (const c of [client, mock]) {
        const err = await rejectsWith(
          c.leads.submit({ email: "a@example.com" }, { idempotencyKey }),
          "invalid_request",
          400,
        );
        assert.equal(err.details.field, "Idempotency-Key");
        assert.match(err.fields["Idempotency-Key"], /printable ASCII/);
      }
    }
    for (const c of [client, mock]) {
      const err = await rejectsWith(c.leads.submit({ email: "a@example.com", n: 1n }), "invalid_request", 400);
      assert.match(err.message, /cannot be sent as JSON/);
    }
    // JSON but not an object: the fake answers as the leads worker does (400 invalid_request, no fields).
    for (const notAnObject of [[], "x", null]) {
      const err = await rejectsWith(mock.leads.submit(notAnObject), "invalid_request", 400);
      assert.equal(err.message, "the body must be a JSON object");
    }
    assert.equal(LEADS_SERVICE.seen.length, 0, "nothing reached the service");
    // A key with inner spaces is fine, and is sent exactly as given.
    await client.leads.submit({ email: "a@example.com" }, { idempotencyKey: "order 42" });
    assert.equal(LEADS_SERVICE.seen[0].headers["idempotency-key"], "order 42");
  });

  it("the deadline holds when a binding ignores the abort signal", async () => {
    const deaf = { fetch: () => new Promise(() => {}) };
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE: deaf, SITESWARM_TENANT_TOKEN: TOKEN },
      timeoutMs: 40,
    });
    const err = await rejectsWith(client.leads.submit({ email: "a@example.com" }), "service_unavailable", 503);
    assert.match(err.message, /did not answer within 40 ms/);
  });

  it("one deadline for the answer's head and body: a head just in time buys the body no more", async (t) => {
    // Timers under the test's hand: no wall-clock waits, no timing in the assertions.
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const neverEnding = () =>
      new Response(new ReadableStream({ start() {} }), {
        status: 202,
        headers: { "content-type": "application/json" },
      });
    // A binding that ignores the abort signal: its head comes at 50 ms, its body never.
    const late = { fetch: () => new Promise((resolve) => setTimeout(() => resolve(neverEnding()), 50)) };
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE: late, SITESWARM_TENANT_TOKEN: TOKEN },
      timeoutMs: 60,
    });
    let outcome = null;
    client.leads.submit({ email: "a@example.com" }).then(
      (value) => {
        outcome = { value };
      },
      (error) => {
        outcome = { error };
      },
    );
    const settle = async () => {
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    t.mock.timers.tick(50);
    await settle();
    assert.equal(outcome, null, "the head came at 50 ms; the call waits for its body");
    t.mock.timers.tick(10);
    await settle();
    assert.ok(outcome?.error instanceof SiteSwarmError, "at 60 ms the call has failed");
    assert.equal(outcome.error.code, "service_unavailable");
    assert.equal(outcome.error.status, 503);
    assert.match(outcome.error.message, /did not answer within 60 ms/);
  });

  it("a 429 carries its Retry-After; an answer without the promised field names its own status", async () => {
    const limited = recordingBinding(() =>
      Response.json(
        { error: { code: "rate_limited", message: "too many submissions" } },
        { status: 429, headers: { "retry-after": "37" } },
      ),
    );
    const client = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE: limited, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    const err = await rejectsWith(client.leads.submit({ email: "a@example.com" }), "rate_limited", 429);
    assert.equal(err.retryAfter, 37);
    // Handed on by an app, the error keeps the wait and is never cached.
    const answer = err.toResponse();
    assert.equal(answer.status, 429);
    assert.equal(answer.headers.get("retry-after"), "37");
    assert.equal(answer.headers.get("cache-control"), "no-store");
    assert.equal((await answer.json()).error.code, "rate_limited");
    // A date in Retry-After is not a number of seconds: left out rather than guessed.
    const dated = recordingBinding(() =>
      Response.json(
        { error: { code: "rate_limited", message: "later" } },
        { status: 429, headers: { "retry-after": "Wed, 21 Oct 2026 07:28:00 GMT" } },
      ),
    );
    const other = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE: dated, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    assert.equal(
      (await rejectsWith(other.leads.submit({ email: "a@example.com" }), "rate_limited", 429)).retryAfter,
      undefined,
    );
    // A 202 with nothing in it is a bad answer, reported with the 202 it came with.
    const empty = recordingBinding(() => new Response(null, { status: 202 }));
    const hollow = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE: empty, SITESWARM_TENANT_TOKEN: TOKEN },
    });
    await rejectsWith(hollow.leads.submit({ email: "a@example.com" }), "bad_response", 202);
  });

  it("refuses an invalid appId", () => {
    assert.throws(() => createPlatformClient({ appId: "Bad App", bindings: {} }), TypeError);
  });

  it("mockFallback refuses what the services refuse: a capability major they do not speak, a beacon over 4 KiB", async () => {
    const manifest = { appId: "bakery", capabilities: { "lead-capture": { version: "2.0.0" } } };
    const client = createPlatformClient({ appId: "bakery", manifest, bindings: {}, mockFallback: true });
    const refused = await rejectsWith(
      client.leads.submit({ name: "Ada", email: "ada@example.com" }),
      "unsupported_capability_version",
      400,
    );
    assert.match(refused.message, /2\.0\.0/);
    // Not semantic versions at all: refused alike, as the services refuse them.
    for (const version of ["1", "1.0", "1.0.0garbage", "01.0.0", "1.2.3.4"]) {
      const odd = { appId: "bakery", capabilities: { "lead-capture": { version } } };
      const oddClient = createPlatformClient({ appId: "bakery", manifest: odd, bindings: {}, mockFallback: true });
      const e = await rejectsWith(
        oddClient.leads.submit({ name: "Ada", email: "ada@example.com" }),
        "unsupported_capability_version",
        400,
      );
      assert.match(e.message, /semantic version/);
    }
    const pre = { appId: "bakery", capabilities: { "lead-capture": { version: "1.4.0-beta.2+build.7" } } };
    const preClient = createPlatformClient({ appId: "bakery", manifest: pre, bindings: {}, mockFallback: true });
    const lead = { name: "Ada", email: "ada@example.com", "cf-turnstile-response": "XXXX.DUMMY.TOKEN.XXXX" };
    assert.equal((await preClient.leads.submit(lead)).ok, true);
    // The cms fake too (it serves the manifest's snapshot, but not to a version cms does not speak).
    const cmsTwo = { appId: "bakery", capabilities: { cms: { version: "2.0.0" } }, fallback: bakery.fallback };
    const cmsClient = createPlatformClient({ appId: "bakery", manifest: cmsTwo, bindings: {}, mockFallback: true });
    await rejectsWith(cmsClient.cms.content(), "unsupported_capability_version", 400);
    await rejectsWith(cmsClient.cms.status(), "unsupported_capability_version", 400);
    // Other areas speak the default 1.0.0.
    assert.equal(await client.analytics.pageview({ url: "https://b.example/" }), undefined);
    assert.equal((await client.cms.content()).source, "fallback");
    await rejectsWith(
      client.analytics.pageview({ url: `https://u@b.example/${"a".repeat(4100)}` }),
      "payload_too_large",
      413,
    );
  });

  it("mockFallback serves in-memory fakes only when the binding is missing", async () => {
    const client = createPlatformClient({ appId: "bakery", bindings: {}, mockFallback: true });
    const turnstileToken = "XXXX.DUMMY.TOKEN.XXXX"; // Turnstile is required by default, as by the service
    const receipt = await client.leads.submit({ name: "Ada", email: "ada@example.com", turnstileToken });
    assert.equal(receipt.ok, true);
    assert.match(receipt.leadId, ULID);
    const again = await client.leads.submit({ phone: "+1 555 010 9999", turnstileToken }, { idempotencyKey: "k" });
    assert.deepEqual(
      await client.leads.submit({ phone: "+1 555 010 9999", turnstileToken }, { idempotencyKey: "k" }),
      again,
    );
    assert.notEqual(again.leadId, receipt.leadId);

    const missing = await rejectsWith(client.leads.submit({ name: "No contact" }), "invalid_lead", 400);
    assert.deepEqual(Object.keys(missing.fields).sort(), ["email", "phone"]);
    const badEmail = await rejectsWith(client.leads.submit({ email: "not-an-email" }), "invalid_lead", 400);
    assert.deepEqual(Object.keys(badEmail.fields), ["email"]);
    assert.equal(badEmail.details.field, "email", "one field: named beside fields, as the leads worker does");

    const first = await client.events.emit({
      event_type: "order.placed",
      entity_ref: "order:1",
      payload: {},
      idempotency_key: "e1",
    });
    assert.match(first.event_id, ULID);
    assert.deepEqual(
      await client.events.emit({
        event_type: "order.placed",
        entity_ref: "order:1",
        payload: {},
        idempotency_key: "e1",
      }),
      { event_id: first.event_id, duplicate: true },
    );
    await client.events.emit({ event_type: "price.changed", entity_ref: "product:7", payload: { to: 3 } });
    await rejectsWith(
      client.events.emit({ event_type: "Order Placed", entity_ref: "order:1", payload: {} }),
      "invalid_event",
      400,
    );
    await rejectsWith(
      client.events.emit({ event_type: "order", entity_ref: "order:1", payload: {} }),
      "invalid_event",
      400,
    );
    await rejectsWith(
      client.events.emit({ event_type: "order.placed", entity_ref: "order-1", payload: {} }),
      "invalid_event",
      400,
    );
    const { events, next } = await client.events.list({ type: "order.*" });
    assert.equal(events.length, 1);
    assert.equal(events[0].event_id, first.event_id);
    assert.equal(events[0].tenant_id, "bakery");
    assert.equal(next, null);
    assert.equal((await client.events.list({ entity: "product:7" })).events.length, 1);
    // As the ledger reads them: a bare entity type names every entity of that type, '?' one character.
    assert.equal((await client.events.list({ entity: "product" })).events.length, 1);
    assert.equal((await client.events.list({ entity: "order" })).events.length, 1);
    assert.equal((await client.events.list({ type: "price.ch?nged" })).events.length, 1);
    assert.equal((await client.events.list({ type: "price.ch?ged" })).events.length, 0);

    assert.equal(await client.analytics.pageview({ url: "https://b.example/", width: 390 }), undefined);
    const content = await client.cms.content();
    assert.equal(content.source, "fallback");
    assert.deepEqual(content.announcements, []);

    // A present binding is always used, even with mockFallback.
    const LEADS_SERVICE = recordingBinding();
    const real = createPlatformClient({
      appId: "bakery",
      bindings: { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
      mockFallback: true,
    });
    assert.equal((await real.leads.submit({ email: "a@example.com" })).leadId, "01J00000000000000000000000");
    assert.equal(LEADS_SERVICE.seen.length, 1);
    // …and its errors are not papered over by the fakes.
    const failing = createPlatformClient({
      appId: "bakery",
      bindings: {
        LEADS_SERVICE: recordingBinding(() => new Response("oops", { status: 500 })),
        SITESWARM_TENANT_TOKEN: TOKEN,
      },
      mockFallback: true,
    });
    await rejectsWith(failing.leads.submit({ email: "a@example.com" }), "bad_response", 500);
  });

  it("serves the manifest's fallback snapshot for cms when the binding is missing (zero lockout)", async () => {
    const client = createPlatformClient({
      appId: "bakery",
      manifest: bakery,
      bindings: { SITESWARM_TENANT_TOKEN: TOKEN },
    });
    const content = await client.cms.content();
    assert.equal(content.source, "fallback");
    assert.equal(content.tenantId, "bakery");
    assert.deepEqual(content.hours, bakery.fallback.hours);
    // As cms-service answers the snapshot (version 0): a seed id, null times.
    assert.deepEqual(content.announcements, [
      {
        id: "00000000000000000000000001",
        text: "Fresh sourdough every morning from 7.",
        level: "info",
        startsAt: null,
        endsAt: null,
        createdAt: null,
        updatedAt: null,
      },
    ]);
    assert.deepEqual(content.overrides, []);

    // Tuesday 2026-05-26 10:00 New York (EDT, UTC-4): open 07:00–15:00.
    const open = await client.cms.status("2026-05-26T14:00:00Z");
    assert.deepEqual(open, {
      open: true,
      reason: "regular_hours",
      override: null,
      nextChange: "2026-05-26T19:00:00Z",
      source: "fallback",
    });
    // Monday 2026-05-25 12:00 New York: closed all day, opens Tuesday 07:00 EDT.
    const closed = await client.cms.status(new Date("2026-05-25T16:00:00Z"));
    assert.equal(closed.open, false);
    assert.equal(closed.reason, "closed");
    assert.equal(closed.nextChange, "2026-05-26T11:00:00Z");
    // January (EST, UTC-5): Tuesday 2026-01-06 07:30 local is 12:30Z.
    assert.equal((await client.cms.status("2026-01-06T12:30:00Z")).open, true);
    assert.equal((await client.cms.status("2026-01-06T11:30:00Z")).open, false);

    // leads has no snapshot: still service_unavailable.
    await rejectsWith(client.leads.submit({ email: "a@example.com" }), "service_unavailable", 503);

    // The service failing (5xx) also falls back; a 401 does not.
    const down = createPlatformClient({
      appId: "bakery",
      manifest: bakery,
      bindings: {
        CMS_SERVICE: recordingBinding(() => Response.json({ error: { code: "x", message: "y" } }, { status: 503 })),
        SITESWARM_TENANT_TOKEN: TOKEN,
      },
    });
    assert.equal((await down.cms.content()).source, "fallback");
    const refused = createPlatformClient({
      appId: "bakery",
      manifest: bakery,
      bindings: {
        CMS_SERVICE: recordingBinding(() =>
          Response.json({ error: { code: "unauthenticated_tenant", message: "no" } }, { status: 401 }),
        ),
        SITESWARM_TENANT_TOKEN: TOKEN,
      },
    });
    await rejectsWith(refused.cms.content(), "unauthenticated_tenant", 401);
  });

  it("applies the snapshot's date overrides and emergency closures", async () => {
    const manifest = {
      ...bakery,
      fallback: {
        ...bakery.fallback,
        overrides: [{ from: "2026-05-26", to: "2026-05-26", closed: true, message: "Staff day" }],
      },
    };
    const client = createPlatformClient({ appId: "bakery", manifest, bindings: {} });
    const status = await client.cms.status("2026-05-26T14:00:00Z");
    assert.equal(status.open, false);
    assert.equal(status.reason, "override");
    assert.equal(status.override.message, "Staff day");
    assert.equal(status.nextChange, "2026-05-27T11:00:00Z");

    const emergency = createPlatformClient({
      appId: "bakery",
      manifest: {
        ...bakery,
        fallback: {
          ...bakery.fallback,
          overrides: [{ closedNow: true, until: "2026-05-26T16:00:00Z", message: "Power cut" }],
        },
      },
      bindings: {},
    });
    const cut = await emergency.cms.status("2026-05-26T14:00:00Z");
    assert.deepEqual(
      [cut.open, cut.reason, cut.override.message, cut.nextChange],
      [false, "override", "Power cut", "2026-05-26T16:00:00Z"],
    );
    assert.equal((await emergency.cms.status("2026-05-26T16:30:00Z")).open, true);

    // Of two emergency closures in force, the one lasting longest is named (as cms names it), in
    // either order: its until is nextChange, and one without an end wins.
    const closures = [
      { closedNow: true, until: "2026-05-26T15:00:00Z", message: "until three" },
      { closedNow: true, until: "2026-05-26T16:00:00Z", message: "until four" },
      { closedNow: true, until: null, message: "no end" },
    ];
    for (const [overrides, named, next] of [
      [[closures[0], closures[1]], "until four", "2026-05-26T16:00:00Z"],
      [[closures[1], closures[0]], "until four", "2026-05-26T16:00:00Z"],
      [[closures[0], closures[2]], "no end", null],
      [[closures[2], closures[0]], "no end", null],
    ]) {
      const two = createPlatformClient({
        appId: "bakery",
        manifest: { ...bakery, fallback: { ...bakery.fallback, overrides } },
        bindings: {},
      });
      const shown = await two.cms.status("2026-05-26T14:00:00Z");
      assert.deepEqual([shown.override.message, shown.nextChange], [named, next], JSON.stringify(overrides));
    }
  });

  // "Yesterday" is the local calendar's day before, not 24 hours ago: after a 23-hour spring-forward
  // Sunday, Monday 00:30 looked back to Saturday and applied Saturday's range past midnight.
  it("takes yesterday's past-midnight ranges from the calendar's day before, across a DST change", async () => {
    const manifest = {
      appId: "late-bar",
      fallback: {
        hours: { timezone: "America/New_York", weekly: { sat: [{ open: "20:00", close: "02:00" }], sun: [] } },
      },
    };
    const client = createPlatformClient({ manifest, bindings: {} });
    // Monday 2026-03-09 00:30 EDT (Sunday 03-08 was 23 hours long): closed, as the week before.
    for (const at of ["2026-03-09T04:30:00Z", "2026-03-02T05:30:00Z"]) {
      const status = await client.cms.status(at);
      assert.deepEqual([status.open, status.reason], [false, "closed"], at);
    }
    // Sunday 2026-03-08 01:30 EST, inside Saturday's range: open until 02:00 wall time (the jump to 03:00).
    const sunday = await client.cms.status("2026-03-08T06:30:00Z");
    assert.deepEqual([sunday.open, sunday.nextChange], [true, "2026-03-08T07:00:00Z"]);
  });

  // New York goes back from 02:00 EDT to 01:00 EST at 06:00Z on Sunday 2026-11-01: nothing flips
  // while 01:00–02:00 comes a second time, as cms-service answers (workers/cms/schedule-test.cpp).
  it("lets nothing flip on the second pass of the repeated fall-back hour", async () => {
    const status = (weekly, at) =>
      createPlatformClient({
        manifest: { appId: "late-bar", fallback: { hours: { timezone: "America/New_York", weekly } } },
        bindings: {},
      }).cms.status(at);
    const closes = { sat: [{ open: "20:00", close: "01:30" }] };
    for (const at of ["2026-11-01T05:45:00Z", "2026-11-01T06:10:00Z"]) {
      const s = await status(closes, at);
      assert.deepEqual([s.open, s.nextChange], [false, "2026-11-08T01:00:00Z"], at);
    }
    const opens = { sun: [{ open: "01:30", close: "03:30" }] };
    for (const at of ["2026-11-01T05:45:00Z", "2026-11-01T06:10:00Z"]) {
      const s = await status(opens, at);
      assert.deepEqual([s.open, s.nextChange], [true, "2026-11-01T08:30:00Z"], at);
    }
  });

  // As cms-service answers (workers/cms/schedule-test.cpp): a morning open only by last night's
  // special hours running past midnight is that override's; a day with special hours of its own
  // still has last night's session until it closes, and answers with its own override.
  it("answers an override's night past midnight, and keeps last night's session on a special day", async () => {
    const status = (weekly, overrides, at) =>
      createPlatformClient({
        manifest: { appId: "late-bar", fallback: { hours: { timezone: "America/New_York", weekly }, overrides } },
        bindings: {},
      }).cms.status(at);
    const late = { from: "2027-03-16", to: "2027-03-16", hours: [{ open: "20:00", close: "01:00" }], message: "Late" };
    const night = await status({ tue: [{ open: "07:00", close: "15:00" }] }, [late], "2027-03-17T04:30:00Z");
    assert.deepEqual([night.open, night.reason, night.override?.message], [true, "override", "Late"]);
    const short = {
      from: "2027-03-17",
      to: "2027-03-17",
      hours: [{ open: "10:00", close: "14:00" }],
      message: "Short",
    };
    const tuesdays = { tue: [{ open: "20:00", close: "01:00" }] };
    const session = await status(tuesdays, [short], "2027-03-17T04:30:00Z");
    assert.deepEqual([session.open, session.reason, session.override?.message], [true, "override", "Short"]);
    const weekly = await status(tuesdays, [], "2027-03-17T04:30:00Z");
    assert.deepEqual([weekly.open, weekly.reason, weekly.override], [true, "regular_hours", null]);
  });

  // Where date overrides overlap, cms-service applies the most recently created one; a snapshot's
  // items have no creation time and are numbered in order, so the last one listed decides the day.
  it("applies the last of overlapping snapshot overrides, as cms-service does", async () => {
    const manifest = {
      ...bakery,
      fallback: {
        ...bakery.fallback,
        overrides: [
          { from: "2026-12-20", to: "2026-12-31", closed: true, message: "Holidays" },
          {
            from: "2026-12-24",
            to: "2026-12-24",
            hours: [{ open: "08:00", close: "12:00" }],
            message: "Christmas Eve",
          },
        ],
      },
    };
    const client = createPlatformClient({ manifest, bindings: {} });
    const eve = await client.cms.status("2026-12-24T15:00:00Z"); // Thursday 10:00 EST
    assert.deepEqual([eve.open, eve.reason, eve.override?.message], [true, "override", "Christmas Eve"]);
  });

  // cms-service looks for nextChange up to 400 days ahead, trying only the instants where the answer
  // can flip; the fallback tried every minute of 8 days (about half a second of CPU per status of a
  // shop closed all week, on every page render while cms is down) and answered null after that.
  it("finds nextChange for whole-day ranges, and none under an emergency closure with no end", async () => {
    // Open all of Monday only (00:00–24:00): asked on a Tuesday, it next opens on Monday at midnight.
    const allDay = {
      appId: "bakery",
      fallback: { hours: { timezone: "America/New_York", weekly: { mon: [{ open: "00:00", close: "24:00" }] } } },
    };
    const client = createPlatformClient({ manifest: allDay, bindings: {} });
    const tuesday = await client.cms.status("2026-05-26T14:00:00Z");
    assert.deepEqual([tuesday.open, tuesday.nextChange], [false, "2026-06-01T04:00:00Z"]); // Mon 00:00 EDT
    const monday = await client.cms.status("2026-06-01T14:00:00Z");
    assert.deepEqual([monday.open, monday.nextChange], [true, "2026-06-02T04:00:00Z"]);
    // Closed by an emergency closure that names no end: nothing changes until it is lifted.
    const closedForGood = {
      ...bakery,
      fallback: { ...bakery.fallback, overrides: [{ closedNow: true, message: "Flooded", until: null }] },
    };
    const status = await createPlatformClient({ manifest: closedForGood, bindings: {} }).cms.status(
      "2026-05-26T14:00:00Z",
    );
    assert.deepEqual([status.open, status.reason, status.nextChange], [false, "override", null]);
  });

  it("finds nextChange past a closure of two weeks, as the service does (it looks 400 days ahead)", async () => {
    const manifest = {
      ...bakery,
      fallback: { ...bakery.fallback, overrides: [{ from: "2026-07-01", to: "2026-07-20", closed: true }] },
    };
    const client = createPlatformClient({ manifest, bindings: {} });
    const status = await client.cms.status("2026-07-02T14:00:00Z");
    assert.deepEqual(
      [status.open, status.reason, status.nextChange],
      [false, "override", "2026-07-21T11:00:00Z"], // Tuesday 07:00 EDT, the first day after it
    );
  });
  // The snapshot is read as cms-service reads a tenant's seed (workers/cms/model.cpp): hours naming
  // no zone are in config.cms.timezone (else UTC); hours with an invalid range (24:01, open 24:00,
  // open == close, 7 ranges a day) are left out as a whole, so the shop reads closed rather than
  // open around the clock; overrides and announcements that do not validate are left out.
  it("reads the snapshot as cms-service reads its seed: zone, invalid ranges and items", async () => {
    const monday = { mon: [{ open: "09:00", close: "17:00" }] };
    const at = "2026-06-01T10:00:00Z"; // Monday 10:00 UTC, 06:00 in New York
    const read = async (fallback, config) => {
      const client = createPlatformClient({ manifest: { appId: "shop", config, fallback }, bindings: {} });
      return { content: await client.cms.content(), status: await client.cms.status(at) };
    };

    const week = { mon: [], tue: [], wed: [], thu: [], fri: [], sat: [], sun: [] };
    const utc = await read({ hours: { weekly: monday } });
    assert.equal(utc.content.hours.timezone, "UTC");
    assert.deepEqual(utc.content.hours.weekly, { ...week, ...monday }); // every weekday, as the service writes it
    assert.deepEqual([utc.status.open, utc.status.nextChange], [true, "2026-06-01T17:00:00Z"]);
    const ny = await read({ hours: { timezone: null, weekly: monday } }, { cms: { timezone: "America/New_York" } });
    assert.equal(ny.content.hours.timezone, "America/New_York");
    assert.deepEqual([ny.status.open, ny.status.nextChange], [false, "2026-06-01T13:00:00Z"]);

    const sevenRanges = Array.from({ length: 7 }, (_, i) => ({ open: `0${i}:00`, close: `0${i}:30` }));
    for (const ranges of [
      [{ open: "09:00", close: "24:01" }],
      [{ open: "24:00", close: "02:00" }],
      [{ open: "09:00", close: "09:00" }],
      [{ open: "9:00", close: "17:00" }],
      sevenRanges,
    ]) {
      const { content, status } = await read({ hours: { timezone: "UTC", weekly: { mon: ranges } } });
      assert.deepEqual(content.hours, { timezone: "UTC", weekly: week }, JSON.stringify(ranges));
      assert.deepEqual(
        [status.open, status.reason, status.nextChange],
        [false, "closed", null],
        JSON.stringify(ranges),
      );
    }
    // An unknown day or zone leaves the hours out too (in the default zone).
    assert.deepEqual((await read({ hours: { timezone: "Mars/Base", weekly: monday } })).content.hours, {
      timezone: "UTC",
      weekly: week,
    });
    assert.equal((await read({ hours: { timezone: "UTC", weekly: { funday: [] } } })).status.open, false);
    // A zone is a tz database name exactly as written (docs/cms.md "Time zones"), as cms reads it:
    // another case or an ICU-only id is unknown, though Intl would take it; links such as
    // US/Eastern are names of their own, kept as written.
    for (const timezone of ["utc", "europe/paris", "us/eastern", "US/EASTERN", "IST", "SystemV/AST4"]) {
      const { content, status } = await read({ hours: { timezone, weekly: monday } });
      assert.deepEqual(content.hours, { timezone: "UTC", weekly: week }, timezone);
      assert.equal(status.open, false, timezone);
      const defaulted = await read({ hours: { weekly: monday } }, { cms: { timezone } });
      assert.equal(defaulted.content.hours.timezone, "UTC", timezone);
    }
    for (const timezone of ["UTC", "Etc/UTC", "US/Eastern", "Asia/Kolkata", "Europe/Kyiv", "GB-Eire"]) {
      const { content } = await read({ hours: { timezone, weekly: monday } });
      assert.deepEqual(content.hours, { timezone, weekly: { ...week, ...monday } }, timezone);
    }

    const good = { from: "2026-06-01", closed: true, message: "Inventory" };
    const { content, status } = await read({
      hours: { timezone: "UTC", weekly: monday },
      overrides: [
        { from: "2026-06-02", to: "2026-06-01", closed: true }, // to before from
        { from: "2026-06-01", closed: "yes" },
        { from: "2026-06-01", hours: [{ open: "10:00", close: "10:00" }] },
        { from: "2026-06-01" }, // neither closed nor hours
        { from: "2019-12-31", closed: true }, // before the zone data
        { closedNow: true, until: "tomorrow" },
        { closedNow: "yes" },
        good,
      ],
      announcements: [
        { text: "" },
        { text: "Loud", level: "loud" },
        { text: "Backwards", startsAt: "2026-06-02T00:00:00Z", endsAt: "2026-06-01T00:00:00Z" },
        { text: "Sloppy", startsAt: "June 1" },
        { text: "Hello" },
      ],
    });
    // Kept as the service answers them: the seed id of each one's place (left-out items counted,
    // overrides first), every field written, null where there is none.
    const goodItem = {
      id: "00000000000000000000000008",
      from: "2026-06-01",
      to: "2026-06-01",
      closed: true,
      message: "Inventory",
      createdAt: null,
    };
    assert.deepEqual(content.overrides, [goodItem]);
    assert.deepEqual(content.announcements, [
      {
        id: "0000000000000000000000000D",
        text: "Hello",
        level: "info",
        startsAt: null,
        endsAt: null,
        createdAt: null,
        updatedAt: null,
      },
    ]);
    assert.deepEqual([status.open, status.reason, status.override], [false, "override", goodItem]);
  });

  // The fallback answers what cms-service answers for the snapshot at version 0 (docs/cms.md
  // "Model"; compared with the real service in sdk-workerd.test.mjs): not the items as written.
  it("answers the snapshot's items in the service's shape (ids, every field, UTC instants, nulls)", async () => {
    const manifest = {
      appId: "shop",
      fallback: {
        hours: { timezone: "Europe/Berlin", weekly: { sat: [{ open: "22:00", close: "02:00", note: "late" }] } },
        overrides: [
          { from: "2026-12-31", hours: [{ open: "10:00", close: "14:00", extra: 1 }], tag: "nye" },
          { closedNow: true, until: "2026-06-30T12:00:00.9+02:00", closed: true },
          { closedNow: true, from: "2036-01-01T00:00:00Z", until: null, message: "Later" },
        ],
        announcements: [{ text: "Hi", startsAt: "2020-01-01T01:00:00+01:00", endsAt: "2099-01-01T00:00:00.5Z" }],
      },
    };
    const client = createPlatformClient({ manifest, bindings: {} });
    const content = await client.cms.content();
    assert.deepEqual(content, {
      tenantId: "shop",
      version: 0,
      hours: {
        timezone: "Europe/Berlin",
        weekly: { mon: [], tue: [], wed: [], thu: [], fri: [], sat: [{ open: "22:00", close: "02:00" }], sun: [] },
      },
      overrides: [
        {
          id: "00000000000000000000000001",
          from: "2026-12-31",
          to: "2026-12-31",
          closed: false,
          hours: [{ open: "10:00", close: "14:00" }],
          message: "",
          createdAt: null,
        },
        {
          id: "00000000000000000000000002",
          closedNow: true,
          from: "1970-01-01T00:00:00Z",
          until: "2026-06-30T10:00:00Z",
          message: "",
          createdAt: null,
        },
        {
          id: "00000000000000000000000003",
          closedNow: true,
          from: "2036-01-01T00:00:00Z",
          until: null,
          message: "Later",
          createdAt: null,
        },
      ],
      announcements: [
        {
          id: "00000000000000000000000004",
          text: "Hi",
          level: "info",
          startsAt: "2020-01-01T00:00:00Z",
          endsAt: "2099-01-01T00:00:00Z",
          createdAt: null,
          updatedAt: null,
        },
      ],
      source: "fallback",
    });
    // The status's override is the same item.
    const closure = await client.cms.status("2026-06-30T09:00:00Z");
    assert.deepEqual([closure.open, closure.reason, closure.override], [false, "override", content.overrides[1]]);
    const eve = await client.cms.status("2026-12-31T10:00:00Z"); // 11:00 in Berlin
    assert.deepEqual([eve.open, eve.reason, eve.override], [true, "override", content.overrides[0]]);
    // An instant an offset moves out of what RFC 3339 writes is refused, as the service refuses it.
    const edge = createPlatformClient({
      manifest: {
        appId: "shop",
        fallback: { announcements: [{ text: "Old", startsAt: "0000-01-01T00:00:00+01:00" }] },
      },
      bindings: {},
    });
    assert.deepEqual((await edge.cms.content()).announcements, []);
  });
});

describe("createPlatformClient against the platform workers", () => {
  const APP = "sdk-client";
  let mesh;
  let client;
  const adapter = (worker) => ({
    async fetch(request) {
      const url = new URL(request.url);
      const hasBody = request.method !== "GET" && request.method !== "HEAD";
      return mesh.fetch(worker, url.pathname + url.search, {
        method: request.method,
        headers: Object.fromEntries(request.headers),
        body: hasBody ? await request.text() : undefined,
      });
    },
  });

  before(async () => {
    const manifest = {
      appId: APP,
      capabilities: { "lead-capture": { version: "1.2.0" }, "event-ledger": { version: "1.0.0" } },
      config: { leads: { turnstile: "off", rateLimit: { limit: 50, periodSeconds: 60 } }, events: {} },
    };
    mesh = await startMesh({ tenants: [bakery, manifest] });
    client = createPlatformClient({
      appId: APP,
      manifest,
      bindings: {
        LEADS_SERVICE: adapter("leads"),
        EVENTS_SERVICE: adapter("events"),
        SITESWARM_TENANT_TOKEN: mesh.tokens[APP].token,
      },
    });
  });

  after(async () => {
    await mesh?.dispose();
  });

  it("submits a lead that lands in the tenant's D1 rows", async () => {
    const receipt = await client.leads.submit({ name: "Ada", email: "ada@example.com", message: "Two loaves" });
    assert.equal(receipt.ok, true);
    assert.match(receipt.leadId, ULID);
    const db = await mesh.d1("leads", "LEADS_DB");
    const row = await db.prepare("SELECT * FROM leads WHERE id = ?1").bind(receipt.leadId).first();
    assert.ok(row, "the lead is stored");
    assert.equal(row.tenant_id, APP);

    // The same idempotency key twice: one lead.
    const once = await client.leads.submit({ email: "bob@example.com" }, { idempotencyKey: "sdk-idem-1" });
    const twice = await client.leads.submit({ email: "bob@example.com" }, { idempotencyKey: "sdk-idem-1" });
    assert.equal(twice.leadId, once.leadId);
    const { n } = await db.prepare("SELECT COUNT(*) AS n FROM leads WHERE tenant_id = ?1").bind(APP).first();
    assert.equal(n, 2);
  });

  it("throws invalid_lead with fields for an invalid lead", async () => {
    const err = await rejectsWith(client.leads.submit({ name: "No contact" }), "invalid_lead", 400);
    assert.ok(err.fields && typeof err.fields === "object");
    assert.ok("email" in err.fields);
    const bad = await rejectsWith(client.leads.submit({ email: "not-an-email" }), "invalid_lead", 400);
    assert.ok("email" in bad.fields);
    assert.equal(bad.details.field, "email");
  });

  it("throws unauthenticated_tenant with a wrong token", async () => {
    const wrong = createPlatformClient({
      appId: APP,
      bindings: { LEADS_SERVICE: adapter("leads"), SITESWARM_TENANT_TOKEN: "wrong-token" },
    });
    await rejectsWith(wrong.leads.submit({ email: "a@example.com" }), "unauthenticated_tenant", 401);
  });

  it("emits an event once for one idempotency key", async () => {
    const event = {
      event_type: "order.placed",
      entity_ref: "order:sdk-1",
      payload: { loaves: 2 },
      idempotency_key: "sdk-client-order-1",
    };
    const first = await client.events.emit(event);
    assert.match(first.event_id, ULID);
    assert.equal(first.duplicate, undefined);
    assert.deepEqual(await client.events.emit(event), { event_id: first.event_id, duplicate: true });
    const { events } = await client.events.list({ entity: "order:sdk-1" });
    assert.equal(events.length, 1);
    assert.equal(events[0].event_id, first.event_id);
    assert.equal(events[0].tenant_id, APP);
    await rejectsWith(
      client.events.emit({ ...event, event_type: "Not Dotted", idempotency_key: undefined }),
      "invalid_event",
      400,
    );
  });

  it("mockFallback shows an event as the ledger does: its keys, and times in UTC", async () => {
    const mock = createPlatformClient({ appId: APP, bindings: {}, mockFallback: true });
    const sent = [
      ["order:sdk-utc-1", "2026-05-25T16:23:11.5+02:00", { source_system: "till", caused_by: "order:0" }],
      ["order:sdk-utc-2", "2026-05-25t14:23:11z", { sequence_no: 7 }],
      ["order:sdk-utc-3", "2026-05-25T14:23:11.123456Z", {}],
    ];
    const seen = { mock: [], real: [] };
    for (const [side, c] of [
      ["mock", mock],
      ["real", client],
    ]) {
      for (const [entity_ref, occurred_at, extra] of sent) {
        await c.events.emit({ event_type: "order.placed", entity_ref, payload: {}, occurred_at, ...extra });
        const [shown] = (await c.events.list({ entity: entity_ref })).events;
        seen[side].push(shown);
      }
    }
    assert.deepEqual(
      seen.real.map((e) => e.occurred_at),
      ["2026-05-25T14:23:11.500Z", "2026-05-25T14:23:11Z", "2026-05-25T14:23:11.123Z"],
      "the ledger keeps times in UTC, to the millisecond",
    );
    for (let i = 0; i < sent.length; i++) {
      assert.deepEqual(Object.keys(seen.mock[i]).sort(), Object.keys(seen.real[i]).sort(), `event ${i}: keys`);
      for (const key of ["occurred_at", "caused_by", "source_system", "workflow_run_id", "sequence_no", "entity_ref"]) {
        assert.deepEqual(seen.mock[i][key], seen.real[i][key], `event ${i}: ${key}`);
      }
    }
    // A key the ledger keeps for its own records: the same 400, word for word.
    const reserved = { event_type: "order.placed", entity_ref: "order:r", payload: {}, idempotency_key: "ledger:1" };
    const fromMock = await rejectsWith(mock.events.emit(reserved), "invalid_event", 400);
    const fromLedger = await rejectsWith(client.events.emit(reserved), "invalid_event", 400);
    assert.equal(fromMock.message, fromLedger.message);
    assert.deepEqual(fromMock.fields, fromLedger.fields);
    // A time the SDK cannot read is refused naming the parameter, as the services name one.
    const refused = await rejectsWith(mock.cms.status("garbage"), "invalid_request", 400);
    assert.deepEqual(Object.keys(refused.fields), ["at"]);
    assert.equal(refused.details.field, "at");
  });
});
