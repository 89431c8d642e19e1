// The cms worker in workerd (the whole mesh): the contract's reads and Studio API, write-then-read
// through the KV cache, If-Match, tenant isolation, bad input, zero lockout under injected D1/KV
// outages (test hook X-SiteSwarm-Test-Fault), Workers RPC from another worker, and the bakery page.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createPlatformClient } from "../../bindings/sdk/src/index.js";
import { provisionManifest } from "../../scripts/provision.mjs";
import { errorOf, jsonOf, secret, startMesh } from "./mesh.mjs";

let mesh;
before(async () => {
  mesh = await startMesh();
});
after(() => mesh?.dispose());

const read = (path, { tenant = "bakery", token, fault } = {}) =>
  mesh.fetch("cms", path, {
    headers: {
      ...mesh.tenantHeaders(tenant, token ? { token } : {}),
      ...(fault && { "x-siteswarm-test-fault": fault }),
    },
  });

const studio = (method, path, body, { tenant = "bakery", headers = {} } = {}) =>
  mesh.fetch("cms", path, {
    method,
    headers: {
      "x-siteswarm-tenant-id": tenant,
      authorization: `Bearer ${mesh.tokens[tenant].adminToken}`,
      ...(body !== undefined && { "content-type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });

describe("cms reads", () => {
  it("GET /v1/content has the contract's fields, from D1 then from KV", async () => {
    const first = await jsonOf(await read("/v1/content"), 200);
    assert.deepEqual(Object.keys(first).sort(), [
      "announcements",
      "hours",
      "overrides",
      "source",
      "tenantId",
      "version",
    ]);
    assert.equal(first.tenantId, "bakery");
    assert.equal(first.hours.timezone, "America/New_York");
    assert.deepEqual(first.hours.weekly.tue, [{ open: "07:00", close: "15:00" }]);
    assert.ok(["d1", "kv"].includes(first.source));
    const again = await jsonOf(await read("/v1/content"), 200);
    assert.equal(again.source, "kv");
  });

  it("GET /v1/status?at= is computed in the tenant's zone", async () => {
    // Tuesday 2026-06-02 07:00–15:00 EDT.
    const open = await jsonOf(await read("/v1/status?at=2026-06-02T12:00:00Z"), 200);
    assert.deepEqual(
      { open: open.open, reason: open.reason, override: open.override, nextChange: open.nextChange },
      { open: true, reason: "regular_hours", override: null, nextChange: "2026-06-02T19:00:00Z" },
    );
    const closed = await jsonOf(await read("/v1/status?at=2026-06-01T12:00:00Z"), 200);
    assert.equal(closed.open, false);
    assert.equal(closed.nextChange, "2026-06-02T11:00:00Z");
    const bad = await errorOf(await read("/v1/status?at=noon"), 400, "invalid_request");
    assert.equal(bad.field, "at");
  });

  it("a wrong token is 401 and gets no content", async () => {
    const error = await errorOf(
      await read("/v1/content", { token: "wrong-token-0000000000000" }),
      401,
      "unauthenticated_tenant",
    );
    assert.equal(error.hours, undefined);
  });
});

describe("cms Studio API", () => {
  it("X-SiteSwarm-Actor sent as raw UTF-8 bytes is recorded in history as sent", async () => {
    // A header string's code units go out as bytes: these are the UTF-8 bytes of the name.
    const raw = Buffer.from("Zoë ✓", "utf8").toString("latin1");
    const posted = await studio(
      "POST",
      "/admin/v1/announcements",
      { text: "Actor check", level: "info" },
      { headers: { "x-siteswarm-actor": raw } },
    );
    const { version } = await jsonOf(posted, 201);
    const history = await jsonOf(await studio("GET", "/admin/v1/history?limit=1"), 200);
    assert.equal(history.versions[0].version, version);
    assert.equal(history.versions[0].actor, "Zoë ✓");
  });

  it("a write is visible to the very next read, with the new version, and lands in history", async () => {
    const before = await jsonOf(await studio("GET", "/admin/v1/content"), 200);
    const put = await studio("PUT", "/admin/v1/hours", {
      timezone: "America/New_York",
      weekly: { ...before.hours.weekly, sun: [{ open: "09:00", close: "13:00" }] },
    });
    const written = await jsonOf(put, 200);
    assert.equal(written.version, before.version + 1);
    assert.equal(put.headers.get("etag"), `"${written.version}"`);
    const after = await jsonOf(await read("/v1/content"), 200);
    assert.equal(after.version, written.version);
    assert.equal(after.source, "kv");
    assert.deepEqual(after.hours.weekly.sun, [{ open: "09:00", close: "13:00" }]);
    const history = await jsonOf(await studio("GET", "/admin/v1/history?limit=1"), 200);
    assert.equal(history.versions.length, 1);
    assert.equal(history.versions[0].version, written.version);
    assert.equal(history.versions[0].change, "hours_changed");
    // Its cms.* event reaches the ledger through the real queue, once, and leaves no outbox row;
    // the outbox's cron then has nothing to send.
    const ledger = await mesh.d1("events", "EVENTS_DB");
    const key = `cms-version:${written.version}`;
    const stored = () =>
      ledger
        .prepare("SELECT COUNT(*) AS n FROM events WHERE tenant_id = 'bakery' AND idempotency_key = ?1")
        .bind(key)
        .first("n");
    for (let i = 0; i < 200 && (await stored()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await stored(), 1, `the ledger holds ${key}`);
    const cmsDb = await mesh.d1("cms", "CMS_DB");
    assert.equal(await cmsDb.prepare("SELECT COUNT(*) AS n FROM cms_event_outbox").first("n"), 0);
    const cron = await (await mesh.mf.getWorker("siteswarm-cms-service")).scheduled({ cron: "*/10 * * * *" });
    assert.equal(cron.outcome, "ok");
  });

  it("If-Match on a stale version is 409 and changes nothing", async () => {
    const { version } = await jsonOf(await studio("GET", "/admin/v1/content"), 200);
    const stale = await studio(
      "POST",
      "/admin/v1/announcements",
      { text: "Stale" },
      { headers: { "if-match": `"${version - 1}"` } },
    );
    await errorOf(stale, 409, "conflict");
    assert.equal((await jsonOf(await studio("GET", "/admin/v1/content"), 200)).version, version);
    const fresh = await studio(
      "POST",
      "/admin/v1/announcements",
      { text: "Fresh", level: "warning" },
      { headers: { "if-match": `"${version}"` } },
    );
    assert.equal((await jsonOf(fresh, 201)).version, version + 1);
  });

  // RFC 9110 §13.1.1 through workerd's headers: a list of entity-tags (also as two If-Match
  // headers, which arrive joined by a comma), a weak tag naming its version as the strong one does
  // (the edge may weaken the ETag a client echoes), "*".
  it("If-Match: a list matches when any tag does, a weak tag names its version, * matches", async () => {
    const version = async () => (await jsonOf(await studio("GET", "/admin/v1/content"), 200)).version;
    const post = (ifMatch, text) =>
      studio("POST", "/admin/v1/announcements", { text }, { headers: { "if-match": ifMatch } });
    const v = await version();
    const stale = await errorOf(await post(`W/"${v - 1}"`, "Stale"), 409, "conflict");
    assert.equal(stale.currentVersion, v);
    await errorOf(await post(`"${v + 5}", W/"${v + 6}"`, "None"), 409, "conflict");
    assert.equal(await version(), v);
    const listed = await post(`"${v + 5}", "${v}"`, "Listed");
    assert.equal((await jsonOf(listed, 201)).version, v + 1);
    assert.equal(listed.headers.get("etag"), `"${v + 1}"`);
    // The ETag as the edge may hand it on, weakened: it still names that version.
    const echoed = await post(`W/"${v + 1}"`, "Echoed");
    assert.equal((await jsonOf(echoed, 201)).version, v + 2);
    const twoHeaders = new Headers({ "x-siteswarm-tenant-id": "bakery" });
    twoHeaders.append("authorization", `Bearer ${mesh.tokens.bakery.adminToken}`);
    twoHeaders.append("content-type", "application/json");
    twoHeaders.append("if-match", `"${v + 1}"`);
    twoHeaders.append("if-match", `"${v + 2}"`);
    const joined = await mesh.fetch("cms", "/admin/v1/announcements", {
      method: "POST",
      headers: twoHeaders,
      body: JSON.stringify({ text: "Two headers" }),
    });
    assert.equal((await jsonOf(joined, 201)).version, v + 3);
    assert.equal((await jsonOf(await post("*", "Any"), 201)).version, v + 4);
    const bad = await errorOf(await post(`*, "${v + 4}"`, "Bad"), 400, "invalid_request");
    assert.equal(bad.field, "If-Match");
    assert.equal(await version(), v + 4);
  });

  it("twenty Studio writes at once without If-Match all land: each a 201 and a version of its own", async () => {
    // A lost race is retried on fresh content after a random pause (docs/cms.md): with eight retries
    // and no pause, ten writers at one instant answered one of them 409.
    const tenant = "software-agency";
    const before = (await jsonOf(await studio("GET", "/admin/v1/content", undefined, { tenant }), 200)).version;
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        studio("POST", "/admin/v1/overrides", { from: "2031-01-01", closed: true, message: `race ${i}` }, { tenant }),
      ),
    );
    const versions = [];
    for (const answer of answers) versions.push((await jsonOf(answer, 201)).version);
    assert.equal(new Set(versions).size, 20, "each write its own version");
    const after = await jsonOf(await studio("GET", "/admin/v1/content", undefined, { tenant }), 200);
    assert.equal(after.version, before + 20);
    const raced = after.overrides.filter((o) => /^race \d+$/.test(o.message ?? ""));
    assert.equal(raced.length, 20, "every override is there");
  });

  it("overrides: create, see in status, delete; another tenant's id is 404", async () => {
    const created = await jsonOf(
      await studio("POST", "/admin/v1/overrides", {
        from: "2026-12-24",
        to: "2026-12-26",
        closed: true,
        message: "Holidays",
      }),
      201,
    );
    assert.match(created.id, /^[0-9A-HJKMNP-TV-Z]{26}$/); // the new id at the top level, as every create answers it
    assert.equal(created.id, created.override.id);
    const status = await jsonOf(await read("/v1/status?at=2026-12-24T15:00:00Z"), 200);
    assert.equal(status.open, false);
    assert.equal(status.reason, "override");
    assert.equal(status.override.id, created.override.id);
    await errorOf(
      await studio("DELETE", `/admin/v1/overrides/${created.override.id}`, undefined, { tenant: "auto-repair" }),
      404,
      "not_found",
    );
    await jsonOf(await studio("DELETE", `/admin/v1/overrides/${created.override.id}`), 200);
    assert.equal((await jsonOf(await read("/v1/status?at=2026-12-24T15:00:00Z"), 200)).reason, "regular_hours");
  });

  it("every refused Studio authentication is one answer, the platform's tenant-admin 401", async () => {
    // docs/architecture.md "One 401 for every tenant-auth failure": a missing header, a malformed
    // id, an unknown tenant and a wrong token are told apart by nothing, and the Studio answers as
    // every other tenant admin route does (here leads' lead list).
    const refused = async (res) => {
      assert.equal(res.headers.get("www-authenticate"), "Bearer");
      return errorOf(res, 401, "unauthenticated_tenant");
    };
    const platform = await refused(await mesh.fetch("leads", "/api/leads"));
    const bearer = { authorization: `Bearer ${secret()}` };
    for (const [what, headers] of [
      ["no headers", {}],
      ["no token", { "x-siteswarm-tenant-id": "bakery" }],
      ["a malformed id", { "x-siteswarm-tenant-id": "Bakery!", ...bearer }],
      ["an unknown tenant", { "x-siteswarm-tenant-id": "no-such-tenant", ...bearer }],
      ["a wrong token", { "x-siteswarm-tenant-id": "bakery", ...bearer }],
      ["the site's token", { "x-siteswarm-tenant-id": "bakery", authorization: `Bearer ${mesh.tokens.bakery.token}` }],
    ]) {
      for (const [method, path] of [
        ["GET", "/admin/v1/content"],
        ["PUT", "/admin/v1/hours"],
      ]) {
        const error = await refused(await mesh.fetch("cms", path, { method, headers }));
        assert.deepEqual(error, platform, `${method} ${path} with ${what}`);
      }
    }
  });

  it("bad input is a 400 naming the field (or 413/415) and writes nothing", async () => {
    const { version } = await jsonOf(await studio("GET", "/admin/v1/content"), 200);
    const cases = [
      ["PUT", "/admin/v1/hours", { timezone: "Mars/Olympus", weekly: {} }, "timezone"],
      [
        "PUT",
        "/admin/v1/hours",
        { timezone: "UTC", weekly: { mon: [{ open: "25:00", close: "26:00" }] } },
        "weekly.mon[0].open",
      ],
      ["POST", "/admin/v1/overrides", { from: "2026-02-30", closed: true }, "from"],
      ["POST", "/admin/v1/overrides", { from: "2026-12-26", to: "2026-12-24", closed: true }, "to"],
      [
        "POST",
        "/admin/v1/announcements",
        { text: "x", startsAt: "2026-07-02T00:00:00Z", endsAt: "2026-07-01T00:00:00Z" },
        "endsAt",
      ],
      ["POST", "/admin/v1/announcements", { text: "x".repeat(501) }, "text"],
    ];
    for (const [method, path, body, field] of cases) {
      const error = await errorOf(await studio(method, path, body), 400, "invalid_request");
      assert.equal(error.field, field, JSON.stringify(body).slice(0, 80));
    }
    await errorOf(
      await studio("POST", "/admin/v1/announcements", { text: "x".repeat(70_000) }),
      413,
      "payload_too_large",
    );
    await errorOf(
      await studio("PUT", "/admin/v1/hours", "timezone=UTC", { headers: { "content-type": "text/plain" } }),
      415,
      "unsupported_media_type",
    );
    assert.equal((await jsonOf(await studio("GET", "/admin/v1/content"), 200)).version, version);
  });
});

describe("cms zero lockout (injected outages)", () => {
  it("KV down → d1, D1 down → kv, both down → fallback; tokens still checked", async () => {
    await jsonOf(await read("/v1/content"), 200); // warm the KV document and the isolate copy
    assert.equal((await jsonOf(await read("/v1/content", { fault: "kv" }), 200)).source, "d1");
    assert.equal((await jsonOf(await read("/v1/status", { fault: "kv" }), 200)).source, "d1");
    assert.equal((await jsonOf(await read("/v1/content", { fault: "d1" }), 200)).source, "kv");
    assert.equal((await jsonOf(await read("/v1/status", { fault: "d1" }), 200)).source, "kv");
    const both = await jsonOf(await read("/v1/content", { fault: "d1,kv" }), 200);
    assert.equal(both.source, "fallback");
    assert.equal(both.tenantId, "bakery");
    assert.equal((await jsonOf(await read("/v1/status", { fault: "d1,kv" }), 200)).source, "fallback");
    await errorOf(
      await read("/v1/content", { fault: "d1", token: "wrong-token-0000000000000" }),
      401,
      "unauthenticated_tenant",
    );
    await errorOf(
      await read("/v1/content", { fault: "d1,kv", token: "wrong-token-0000000000000" }),
      401,
      "unauthenticated_tenant",
    );
  });

  it("a fresh instance with both down answers from the snapshot bundled into the worker", async () => {
    await errorOf(await mesh.fetch("cms", "/__test/trap"), 500, "internal"); // the next request gets a fresh core
    const seeded = await jsonOf(await read("/v1/content", { fault: "d1,kv" }), 200);
    assert.equal(seeded.source, "fallback");
    assert.equal(seeded.version, 0);
    assert.equal(seeded.announcements[0].text, "Fresh sourdough every morning from 7.");
    // A tenant nothing can verify: 503, never someone else's content.
    const unknown = await mesh.fetch("cms", "/v1/content", {
      headers: {
        ...mesh.tenantHeaders("nobody", { token: mesh.tokens.bakery.token }),
        "x-siteswarm-test-fault": "d1,kv",
      },
    });
    await errorOf(unknown, 503, "service_unavailable");
  });
});

// docs/cms.md "Storage and caching": a manifest's snapshot may give its hours no zone (or null); they
// are then in the manifest's config.cms.timezone, else UTC. Provisioning (scripts/provision.mjs, the
// operator's PUT on every worker) takes such a manifest, cms answers it in that zone, and the SDK's
// fallback reads the same snapshot alike; a zone that is given and is not one is still refused.
describe("cms snapshot hours without a zone, provisioned through workerd", () => {
  const weekly = { mon: [{ open: "08:00", close: "17:00" }], sat: [{ open: "22:00", close: "02:00" }] };
  const manifestOf = (appId, config, hours) => ({
    appId,
    name: appId,
    capabilities: { cms: { version: "1.0.0" } },
    config,
    fallback: { hours, announcements: [{ text: "From the snapshot" }] },
  });
  const provision = (manifest, secrets) =>
    provisionManifest(manifest, {
      ...secrets,
      operatorToken: mesh.adminToken,
      send: (worker, path, init) => mesh.fetch(worker, path, init),
    });
  const withoutSource = ({ source, ...rest }) => rest;
  // Monday 2026-06-01 07:30Z (07:30 UTC, 09:30 in Paris), and Saturday night past midnight.
  const instants = ["2026-06-01T07:30:00Z", "2026-06-01T16:30:00Z", "2026-06-07T00:30:00Z", "2026-06-07T03:30:00Z"];

  for (const { appId, config, hours, zone, at0730 } of [
    {
      appId: "zoneless-paris",
      config: { cms: { timezone: "Europe/Paris" } },
      hours: { weekly },
      zone: "Europe/Paris",
      at0730: { open: true, nextChange: "2026-06-01T15:00:00Z" }, // 17:00 CEST
    },
    {
      appId: "zoneless-utc",
      config: {},
      hours: { timezone: null, weekly },
      zone: "UTC",
      at0730: { open: false, nextChange: "2026-06-01T08:00:00Z" },
    },
  ]) {
    it(`${appId}: provisioned, answered in ${zone} by cms and by the SDK's fallback alike`, async () => {
      const secrets = { token: secret(), adminToken: secret() };
      const results = await provision(manifestOf(appId, config, hours), secrets);
      assert.equal(results.cms.status, 201, JSON.stringify(results.cms));
      const content = await jsonOf(await read("/v1/content", { tenant: appId, token: secrets.token }), 200);
      assert.equal(content.version, 0);
      assert.equal(content.hours.timezone, zone);
      assert.deepEqual(content.hours.weekly.mon, weekly.mon);
      const status = await jsonOf(
        await read(`/v1/status?at=${instants[0]}`, { tenant: appId, token: secrets.token }),
        200,
      );
      assert.deepEqual({ open: status.open, nextChange: status.nextChange }, at0730);

      // The SDK without the service reads the manifest's snapshot to the same answers.
      const sdk = createPlatformClient({
        manifest: manifestOf(appId, config, hours),
        bindings: { SITESWARM_TENANT_TOKEN: secrets.token },
      });
      const fallback = await sdk.cms.content();
      assert.equal(fallback.source, "fallback");
      assert.deepEqual(withoutSource(fallback), withoutSource(content));
      for (const at of instants) {
        const real = await jsonOf(await read(`/v1/status?at=${at}`, { tenant: appId, token: secrets.token }), 200);
        assert.deepEqual(withoutSource(await sdk.cms.status(at)), withoutSource(real), at);
      }

      // Both stores down: cms's own fallback answers the same zone.
      const down = await jsonOf(
        await read(`/v1/status?at=${instants[0]}`, { tenant: appId, token: secrets.token, fault: "d1,kv" }),
        200,
      );
      assert.equal(down.source, "fallback");
      assert.deepEqual({ open: down.open, nextChange: down.nextChange }, at0730);
    });
  }

  it("a zone that is given and is not an IANA zone is refused, naming the field; nothing is written", async () => {
    for (const timezone of ["Mars/Olympus", "europe/paris", "", 7]) {
      const appId = "badzone";
      const err = await provision(manifestOf(appId, { cms: { timezone: "Europe/Paris" } }, { timezone, weekly }), {
        token: secret(),
        adminToken: secret(),
      }).then(
        () => assert.fail(`${JSON.stringify(timezone)} was taken`),
        (e) => e,
      );
      const cms = err.results?.cms;
      assert.equal(cms?.status, 400, JSON.stringify(timezone));
      assert.equal(cms.body.error.code, "invalid_request");
      assert.equal(typeof cms.body.error.message, "string");
      assert.equal(cms.body.error.field, "config.fallback.hours.timezone");
      assert.equal(typeof cms.body.error.fields["config.fallback.hours.timezone"], "string");
      assert.match(err.message, /cms: 400 .*config\.fallback\.hours\.timezone/);
      await errorOf(await mesh.fetch("cms", `/admin/tenants/${appId}`, { headers: mesh.operator() }), 404, "not_found");
    }
  });

  // docs/cms.md "A snapshot's hours are {timezone, weekly}": hours wrapped once more are no hours.
  it("a snapshot's hours wrapped as {hours: …} are refused, and the SDK's fallback reads them as left out", async () => {
    const appId = "wrapped";
    const hours = { hours: { timezone: "Europe/Paris", weekly } };
    const manifest = manifestOf(appId, { cms: { timezone: "Europe/Paris" } }, hours);
    const err = await provision(manifest, { token: secret(), adminToken: secret() }).then(
      () => assert.fail("the wrapped hours were taken"),
      (e) => e,
    );
    const cms = err.results?.cms;
    assert.equal(cms?.status, 400);
    assert.equal(cms.body.error.code, "invalid_request");
    assert.equal(cms.body.error.field, "config.fallback.hours.weekly");
    await errorOf(await mesh.fetch("cms", `/admin/tenants/${appId}`, { headers: mesh.operator() }), 404, "not_found");
    const sdk = createPlatformClient({ manifest, bindings: { SITESWARM_TENANT_TOKEN: secret() } });
    const content = await sdk.cms.content();
    assert.equal(content.hours.timezone, "Europe/Paris");
    assert.deepEqual(content.hours.weekly.mon, []);
    const status = await sdk.cms.status(instants[0]);
    assert.deepEqual([status.open, status.nextChange], [false, null]);
  });
});

describe("cms over Workers RPC and on the bakery page", () => {
  it("getContent/getStatus through a real service binding, with tenant auth", async () => {
    const auth = { tenantId: "bakery", token: mesh.tokens.bakery.token };
    for (const binding of ["CMS_RPC", "CMS_SERVICE"]) {
      const content = await mesh.cmsRpc(binding, "getContent", auth);
      assert.equal(content.ok, true, JSON.stringify(content));
      assert.equal(content.value.tenantId, "bakery");
      const status = await mesh.cmsRpc(binding, "getStatus", auth, "2026-06-02T12:00:00Z");
      assert.equal(status.ok, true, JSON.stringify(status));
      assert.equal(status.value.nextChange, "2026-06-02T19:00:00Z");
      const refused = await mesh.cmsRpc(binding, "getContent", { ...auth, token: "wrong-token-0000000000000" });
      assert.deepEqual([refused.ok, refused.status, refused.error.code], [false, 401, "unauthenticated_tenant"]);
      // An `at` that is no RFC 3339 string (epoch milliseconds) is refused naming it, as over HTTP,
      // not answered for now; a capability version that is a number is judged as its text.
      const epoch = await mesh.cmsRpc(binding, "getStatus", auth, Date.UTC(2026, 5, 2, 12));
      assert.deepEqual([epoch.ok, epoch.status, epoch.error?.field], [false, 400, "at"], JSON.stringify(epoch));
      const major = await mesh.cmsRpc(binding, "getStatus", { ...auth, capabilityVersion: 2 });
      assert.deepEqual([major.ok, major.status, major.error?.code], [false, 400, "unsupported_capability_version"]);
      const now = await mesh.cmsRpc(binding, "getStatus", auth, null);
      assert.equal(now.ok, true, JSON.stringify(now));
    }
  });

  it("the bakery's home page renders open/closed, today's hours and announcements from cms", async () => {
    const res = await mesh.fetch("bakery", "/");
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /<div id="live" data-source="(kv|d1)">/);
    assert.match(html, /<p id="status">(Open now|Closed)/);
    assert.match(html, /<p id="hours">Today: /);
    assert.match(html, /class="announcement" data-level="info">Fresh sourdough every morning from 7\.</);
    assert.match(html, /<form id="contact"/);
  });
});

describe("cms replayed answers (the host repeats a kept answer while KV holds its bytes)", () => {
  const tenant = "software-agency";
  const replayed = (res) => res.headers.get("x-ss-replayed") === "1";
  // Reads until the core's answer is the kept one and the host has recorded it: the next is a replay.
  async function warm(path, options = {}) {
    for (let i = 0; i < 3; i++) await (await read(path, { tenant, ...options })).arrayBuffer();
  }

  it("repeats the core's kept answer byte for byte; any other token or tenant runs the core", async () => {
    await warm("/v1/content");
    const core = await read("/v1/content", { tenant });
    const coreBody = await core.text();
    const replay = await read("/v1/content", { tenant });
    assert.ok(replayed(replay));
    assert.equal(await replay.text(), coreBody);
    assert.equal(replay.headers.get("content-type"), core.headers.get("content-type"));
    assert.equal(replay.headers.get("cache-control"), "no-store");
    assert.equal(JSON.parse(coreBody).source, "kv");
    const wrong = await read("/v1/content", { tenant, token: "wrong-token-0000000000000000" });
    assert.ok(!replayed(wrong));
    await errorOf(wrong, 401, "unauthenticated_tenant");
    const other = await read("/v1/content", { tenant: "bakery" });
    assert.equal((await jsonOf(other, 200)).tenantId, "bakery");
  });

  it("a Studio write is seen by the very next read, not a replay of the old version", async () => {
    await warm("/v1/content");
    const before = await jsonOf(await read("/v1/content", { tenant }), 200);
    const published = await jsonOf(
      await studio("POST", "/admin/v1/announcements", { text: "Replays end here", level: "info" }, { tenant }),
      201,
    );
    assert.equal(published.id, published.announcement.id);
    const after = await read("/v1/content", { tenant });
    assert.ok(!replayed(after));
    const body = await jsonOf(after, 200);
    assert.equal(body.version, before.version + 1);
    assert.ok(body.announcements.some((a) => a.text === "Replays end here"));
  });

  it("a KV document written elsewhere is served at once; KV down falls back to D1", async () => {
    await warm("/v1/content");
    const kv = await mesh.mf.getKVNamespace("CMS_CACHE", "siteswarm-cms-service");
    const key = `content:v1:${tenant}`;
    const doc = JSON.parse(await kv.get(key));
    doc.content.announcements = [
      { ...doc.content.announcements[0], id: "01HREPLAYREPLAYREPLAYREPLA", text: "Written by another isolate" },
    ];
    doc.content.version += 1;
    await kv.put(key, JSON.stringify(doc));
    const fresh = await read("/v1/content", { tenant });
    assert.ok(!replayed(fresh));
    const body = await jsonOf(fresh, 200);
    assert.equal(body.version, doc.content.version);
    assert.deepEqual(
      body.announcements.map((a) => a.text),
      ["Written by another isolate"],
    );
    await warm("/v1/content");
    const down = await read("/v1/content", { tenant, fault: "kv" });
    assert.ok(!replayed(down));
    assert.equal((await jsonOf(down, 200)).source, "d1");
  });

  it("/v1/status for now is replayed within its second only; an operator's disable ends replays at once", async () => {
    // Neither the cms core nor the host takes a test clock here: the host judges a replay by this
    // machine's clock (Date.now() in workerd), at a time between a read's send and its answer as
    // seen here, and the core's answer is for a second no later than the one it was received in. So
    // a replay sent after that second is over is a replay past its time: every read is checked
    // against it. The loop ends once reads were replayed within a recorded second and the core ran
    // again for a later one.
    const second = (ms) => Math.floor(ms / 1000);
    let recorded = null; // the core's last answer is for this second or an earlier one
    let replays = 0;
    let nextSecond = 0;
    const deadline = Date.now() + 10_000;
    while (replays === 0 || nextSecond === 0) {
      assert.ok(Date.now() < deadline, `replays: ${replays}, core runs for a later second: ${nextSecond}`);
      const sent = Date.now();
      const res = await read("/v1/status", { tenant });
      const body = await res.text();
      const answered = Date.now();
      assert.equal(res.status, 200, body);
      if (replayed(res)) {
        if (recorded === null) continue;
        assert.ok(second(sent) <= recorded, `replayed in second ${second(sent)}, past its second ${recorded}`);
        replays++;
      } else {
        if (recorded !== null && replays > 0 && second(answered) > recorded) nextSecond++;
        recorded = second(answered);
      }
    }
    await warm("/v1/status?at=2026-06-02T12:00:00Z");
    assert.ok(replayed(await read("/v1/status?at=2026-06-02T12:00:00Z", { tenant })));
    const disabled = await mesh.fetch("cms", `/admin/tenants/${tenant}`, {
      method: "DELETE",
      headers: mesh.operator(),
    });
    assert.ok(disabled.status < 300, `disable: ${disabled.status}`);
    const refused = await read("/v1/status?at=2026-06-02T12:00:00Z", { tenant });
    assert.ok(!replayed(refused));
    await errorOf(refused, 401, "unauthenticated_tenant");
  });
});
