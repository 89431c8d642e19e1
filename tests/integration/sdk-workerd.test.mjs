// @siteswarm/sdk where it runs: inside workerd, in a client-app worker (fixtures/sdk-worker.js,
// bundled with esbuild like the example apps) bound to the real platform workers. Every call of the
// typed client, typed errors, delegate(), mockFallback only without a binding; then one table of
// inputs (fixtures/validation-table.mjs) through the real services and through the SDK's mock,
// which must give the same verdict for every row.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createPlatformClient } from "../../bindings/sdk/src/index.js";
import {
  EVENT_CASES,
  EVENT_QUERY_CASES,
  expected,
  LEAD_CASES,
  LEADS_CONFIG,
  PAGEVIEW_CASES,
  verdictOf,
} from "./fixtures/validation-table.mjs";
import { provisionManifest } from "../../scripts/provision.mjs";
import { bundle } from "../../scripts/lib/local-mesh.mjs";
import { ROOT, secret, startMesh } from "./mesh.mjs";

const APP = "sdk-workerd";
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const MANIFEST = {
  appId: APP,
  name: "SDK in workerd",
  capabilities: {
    "lead-capture": { version: "1.2.0" },
    cms: { version: "1.0.0" },
    analytics: { version: "1.0.0" },
    "event-ledger": { version: "1.0.0" },
  },
  config: {
    leads: LEADS_CONFIG,
    cms: { timezone: "America/New_York" },
    analytics: { hosts: ["sdk.example"] },
    events: {},
  },
  fallback: {
    hours: { timezone: "America/New_York", weekly: { mon: [{ open: "09:00", close: "17:00" }] } },
    announcements: [{ text: "From the manifest", level: "info" }],
  },
};

// A tenant that is never edited: cms answers its manifest snapshot as version 0, which is what the
// SDK's fallback must answer too, item for item. The snapshot is written the loose ways a manifest
// may be: hours for some days only, with a field cms does not know, an override without `to`
// or `closed` or `message`, an emergency closure without `from`, times with offsets and fractions,
// an announcement without level or times, fields cms does not know. (Provisioning refuses items
// that do not validate, so these have none; hours without a zone: the next test.)
const SHAPES = {
  appId: "sdk-shapes",
  capabilities: { cms: { version: "1.0.0" } },
  config: { cms: { timezone: "Europe/Berlin" } },
  fallback: {
    hours: {
      timezone: "Europe/Berlin",
      weekly: {
        tue: [{ open: "09:00", close: "17:00", note: "lunch break in summer" }],
        sat: [{ open: "22:00", close: "02:00" }],
      },
    },
    overrides: [
      { from: "2026-12-24", closed: true, message: "Christmas Eve" },
      { from: "2026-12-31", to: "2027-01-01", hours: [{ open: "10:00", close: "14:00" }] },
      { closedNow: true, until: "2026-06-30T12:00:00+02:00", message: "Renovation", closed: true },
      { closedNow: true, from: "2036-01-01T00:00:00.750Z", until: null },
    ],
    announcements: [
      { text: "Plain" },
      { text: "Scheduled", level: "warning", startsAt: "2026-01-01T10:00:00.5+02:00", endsAt: "2099-01-01T00:00:00Z" },
      { text: "Later", startsAt: "2098-01-01T00:00:00Z", pinned: true }, // not active yet: left out by both
    ],
  },
};

let mesh;
let scratch;
let token;
before(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "siteswarm-sdk-"));
  const scriptPath = await bundle("sdk-worker", path.join(ROOT, "tests/integration/fixtures/sdk-worker.js"), scratch);
  mesh = await startMesh({
    tenants: [MANIFEST, SHAPES],
    extraWorkers: [
      {
        name: "sdk-worker",
        modules: true,
        scriptPath,
        modulesRoot: scratch,
        compatibilityDate: "2026-04-20",
        serviceBindings: {
          LEADS_SERVICE: "siteswarm-leads-service",
          EVENTS_SERVICE: "siteswarm-events-service",
          ANALYTICS_SERVICE: "siteswarm-analytics-service",
          CMS_RPC: { name: "siteswarm-cms-service", entrypoint: "CmsRpc" },
          CMS_FETCH: "siteswarm-cms-service",
        },
      },
    ],
  });
  token = mesh.tokens[APP].token;
});
after(async () => {
  await mesh?.dispose();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** One SDK call inside workerd: `{ok, value}` or `{ok:false, error}`. */
async function sdk(call, args = [], options = {}) {
  const worker = await mesh.mf.getWorker("sdk-worker");
  const res = await worker.fetch("http://localhost/call", {
    method: "POST",
    body: JSON.stringify({ call, args, token, ...options }),
  });
  assert.equal(res.status, 200);
  return res.json();
}

const leadCount = async () => {
  const db = await mesh.d1("leads", "LEADS_DB");
  return (await db.prepare("SELECT COUNT(*) AS n FROM leads WHERE tenant_id = ?1").bind(APP).first()).n;
};

describe("the SDK inside workerd, bound to the platform workers", () => {
  it("leads.submit stores a lead; the same idempotency key again gives the same leadId and no new lead", async () => {
    const before = await leadCount();
    const first = await sdk("leads.submit", [{ name: "Ada", email: "ada@example.com" }, { idempotencyKey: "wd-1" }]);
    assert.equal(first.ok, true, JSON.stringify(first));
    assert.match(first.value.leadId, ULID);
    const again = await sdk("leads.submit", [{ name: "Ada", email: "ada@example.com" }, { idempotencyKey: "wd-1" }]);
    assert.deepEqual(again.value, first.value);
    assert.equal(await leadCount(), before + 1);
  });

  for (const via of ["rpc", "rpc-only", "fetch"]) {
    it(`cms.content and cms.status over ${via === "fetch" ? "fetch" : `Workers RPC (${via})`}`, async () => {
      const content = await sdk("cms.content", [], { cmsVia: via });
      assert.equal(content.ok, true, JSON.stringify(content));
      assert.equal(content.value.tenantId, APP);
      assert.ok(
        ["kv", "d1"].includes(content.value.source),
        `from the service, not a fallback: ${content.value.source}`,
      );
      assert.equal(content.value.hours.timezone, "America/New_York");
      const status = await sdk("cms.status", ["2026-06-01T14:00:00Z"], { cmsVia: via }); // Monday 10:00 in New York
      assert.equal(status.ok, true, JSON.stringify(status));
      assert.equal(status.value.open, true);
      assert.equal(status.value.reason, "regular_hours");
      assert.equal(status.value.nextChange, "2026-06-01T21:00:00Z");
    });
  }

  it("cms falls back to the manifest's snapshot only when the service is missing", async () => {
    const content = await sdk("cms.content", [], { only: [], fallback: MANIFEST.fallback });
    assert.equal(content.ok, true);
    assert.equal(content.value.source, "fallback");
    assert.deepEqual(
      content.value.announcements.map((a) => a.text),
      ["From the manifest"],
    );
  });

  // The fallback answers what cms-service answers for the same snapshot at version 0: the same
  // fields with the same types (ids, null times, normalised instants, every weekday), not the
  // manifest's items as written.
  it("cms's fallback answers the same shape as cms-service for the same snapshot", async () => {
    const shapes = { appId: SHAPES.appId, token: mesh.tokens[SHAPES.appId].token };
    const snapshot = { ...shapes, only: [], fallback: SHAPES.fallback, config: SHAPES.config };
    const withoutSource = ({ source, ...rest }) => rest;

    const service = await sdk("cms.content", [], shapes);
    assert.equal(service.ok, true, JSON.stringify(service));
    assert.ok(["kv", "d1"].includes(service.value.source), service.value.source);
    assert.equal(service.value.version, 0);
    const fallback = await sdk("cms.content", [], snapshot);
    assert.equal(fallback.ok, true, JSON.stringify(fallback));
    assert.equal(fallback.value.source, "fallback");
    assert.deepEqual(withoutSource(fallback.value), withoutSource(service.value));

    // Status: regular hours, a closed day, special hours, an emergency closure without `from`, and
    // the past-midnight range; every one decided by the same override item, in the same shape.
    for (const at of [
      "2026-06-02T08:00:00Z",
      "2026-12-24T12:00:00Z",
      "2026-12-31T10:00:00Z",
      "2026-06-30T08:00:00Z",
      "2026-07-04T23:30:00Z",
    ]) {
      const real = await sdk("cms.status", [at], shapes);
      assert.equal(real.ok, true, JSON.stringify(real));
      const fromSnapshot = await sdk("cms.status", [at], snapshot);
      assert.equal(fromSnapshot.value.source, "fallback");
      assert.deepEqual(withoutSource(fromSnapshot.value), withoutSource(real.value), at);
    }
  });

  // Hours that name no zone (docs/cms.md): in config.cms.timezone, else UTC — for the service once
  // the tenant is provisioned, and for the SDK's fallback from the same manifest.
  it("cms's fallback and cms-service read hours without a zone in the same zone", async () => {
    const weekly = { mon: [{ open: "08:00", close: "17:00" }], sat: [{ open: "22:00", close: "02:00" }] };
    for (const [appId, config, hours] of [
      ["sdk-zoneless", { cms: { timezone: "America/Chicago" } }, { weekly }],
      ["sdk-zoneless-utc", {}, { timezone: null, weekly }],
    ]) {
      const manifest = { appId, name: appId, capabilities: { cms: { version: "1.0.0" } }, config, fallback: { hours } };
      const secrets = { token: secret(), adminToken: secret() };
      await provisionManifest(manifest, {
        ...secrets,
        operatorToken: mesh.adminToken,
        send: (worker, p, init) => mesh.fetch(worker, p, init),
      });
      const tenant = { appId, token: secrets.token };
      const snapshot = { ...tenant, only: [], fallback: manifest.fallback, config };
      const withoutSource = ({ source, ...rest }) => rest;
      const service = await sdk("cms.content", [], tenant);
      assert.equal(service.ok, true, JSON.stringify(service));
      assert.equal(service.value.hours.timezone, appId === "sdk-zoneless" ? "America/Chicago" : "UTC");
      const fallback = await sdk("cms.content", [], snapshot);
      assert.equal(fallback.value.source, "fallback");
      assert.deepEqual(withoutSource(fallback.value), withoutSource(service.value), appId);
      for (const at of [
        "2026-06-01T07:30:00Z",
        "2026-06-01T14:30:00Z",
        "2026-06-07T01:30:00Z",
        "2026-06-07T04:30:00Z",
      ]) {
        const real = await sdk("cms.status", [at], tenant);
        assert.equal(real.ok, true, JSON.stringify(real));
        const fromSnapshot = await sdk("cms.status", [at], snapshot);
        assert.equal(fromSnapshot.value.source, "fallback");
        assert.deepEqual(withoutSource(fromSnapshot.value), withoutSource(real.value), `${appId} ${at}`);
      }
    }
  });

  // Without the visitor's request the SDK reports the pageview itself: the analytics worker counts it
  // (not as a bot: the SDK names itself), with no visitor hash (DNT).
  it("analytics.pageview is accepted and counted as a pageview, not a bot, with no visitor", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const stats = async () =>
      (
        await mesh.fetch("analytics", `/v1/stats?from=${today}&to=${today}`, { headers: mesh.tenantHeaders(APP) })
      ).json();
    const before = (await stats()).totals;
    const out = await sdk("analytics.pageview", [{ url: "https://sdk.example/menu", referrer: "", width: 1280 }]);
    assert.deepEqual(out, { ok: true, value: null });
    const deadline = Date.now() + 20_000;
    let after = before;
    while (after.pageviews === before.pageviews && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      after = (await stats()).totals;
    }
    assert.equal(after.pageviews, before.pageviews + 1);
    assert.equal(after.filtered, before.filtered);
    assert.equal(after.visitors, before.visitors);
  });

  it("events.emit once per idempotency key; events.list sees the tenant's own event", async () => {
    const event = {
      event_type: "order.placed",
      entity_ref: "order:wd-1",
      payload: { loaves: 2 },
      idempotency_key: "wd-order-1",
    };
    const first = await sdk("events.emit", [event]);
    assert.equal(first.ok, true, JSON.stringify(first));
    assert.match(first.value.event_id, ULID);
    const again = await sdk("events.emit", [event]);
    assert.deepEqual(again.value, { event_id: first.value.event_id, duplicate: true });
    const list = await sdk("events.list", [{ entity: "order:wd-1" }]);
    assert.deepEqual(
      list.value.events.map((e) => [e.event_id, e.tenant_id]),
      [[first.value.event_id, APP]],
    );
  });

  it("failures are SiteSwarmErrors with the contract's code and status", async () => {
    const invalid = await sdk("leads.submit", [{ email: "nope" }]);
    assert.deepEqual(
      { ...invalid.error, fields: Object.keys(invalid.error.fields) },
      {
        name: "SiteSwarmError",
        isSiteSwarmError: true,
        code: "invalid_lead",
        status: 400,
        fields: ["email"],
        field: "email",
      },
    );
    const stranger = await sdk("leads.submit", [{ email: "a@example.com" }], { token: "not-the-token" });
    assert.equal(stranger.error.isSiteSwarmError, true);
    assert.equal(stranger.error.code, "unauthenticated_tenant");
    assert.equal(stranger.error.status, 401);
    const missing = await sdk("events.emit", [{ event_type: "a.b", entity_ref: "x:1", payload: {} }], { only: [] });
    assert.equal(missing.error.code, "service_unavailable");
    assert.equal(missing.error.status, 503);
  });

  it("delegate() replaces a forged tenant header with the app's own context", async () => {
    const worker = await mesh.mf.getWorker("sdk-worker");
    const before = await leadCount();
    const res = await worker.fetch("http://localhost/delegated/api/leads/submit", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-test-token": token,
        "X-SiteSwarm-Tenant-Id": "bakery",
        "X-SiteSwarm-Tenant-Token": "forged",
      },
      body: JSON.stringify({ email: "delegated@example.com" }),
    });
    assert.equal(res.status, 202, await res.clone().text());
    const { leadId } = await res.json();
    const db = await mesh.d1("leads", "LEADS_DB");
    const row = await db.prepare("SELECT tenant_id FROM leads WHERE id = ?1").bind(leadId).first();
    assert.equal(row.tenant_id, APP);
    assert.equal(await leadCount(), before + 1);

    // The app without its token: forwarded without one, the visitor's forged pair dropped, so the
    // real leads worker refuses it as any call without the tenant's credentials; nothing is stored.
    const tokenless = await worker.fetch("http://localhost/delegated/api/leads/submit", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "X-SiteSwarm-Tenant-Id": APP,
        "X-SiteSwarm-Tenant-Token": token,
      },
      body: JSON.stringify({ email: "tokenless@example.com" }),
    });
    assert.equal(tokenless.status, 401);
    assert.equal((await tokenless.json()).error.code, "unauthenticated_tenant");
    assert.equal(await leadCount(), before + 1);
  });

  it("mockFallback is used only without a binding", async () => {
    const before = await leadCount();
    const real = await sdk("leads.submit", [{ email: "real@example.com" }], { mockFallback: true });
    assert.equal(real.ok, true);
    assert.equal(await leadCount(), before + 1, "with the binding present, the real service stored it");
    // The fake requires Turnstile as the service's default does (this tenant's config says "off").
    const unconfigured = await sdk("leads.submit", [{ email: "mock@example.com" }], { mockFallback: true, only: [] });
    assert.equal(unconfigured.error.code, "turnstile_failed");
    assert.equal(unconfigured.error.status, 403);
    const config = { leads: { turnstile: "off" } };
    const mocked = await sdk("leads.submit", [{ email: "mock@example.com" }], { mockFallback: true, only: [], config });
    assert.equal(mocked.ok, true);
    assert.match(mocked.value.leadId, ULID);
    assert.equal(await leadCount(), before + 1, "without the binding, the in-memory fake took it");
    const none = await sdk("leads.submit", [{ email: "none@example.com" }], { only: [] });
    assert.equal(none.error.code, "service_unavailable", "and without mockFallback: 503");
  });
});

describe("the SDK's mock validates exactly like the services (one table for both)", () => {
  const mock = createPlatformClient({ manifest: MANIFEST, bindings: {}, mockFallback: true });
  const mockOutcome = async (promise) => {
    try {
      return { ok: true, value: await promise };
    } catch (err) {
      return { ok: false, error: { code: err.code, fields: err.fields, field: err.details?.field } };
    }
  };

  // Each case through the real service (`call` in the SDK worker) and through the mock (`fake`): the
  // cases whose verdict differs from the table's, on either side.
  const mismatchesOf = async (cases, call, argOf, fake) => {
    const mismatches = [];
    for (const c of cases) {
      const real = verdictOf(await sdk(call, [argOf(c)]));
      const mocked = verdictOf(await mockOutcome(fake(argOf(c))));
      const want = expected(c);
      if (JSON.stringify(real) !== JSON.stringify(want) || JSON.stringify(mocked) !== JSON.stringify(want)) {
        mismatches.push({ case: c.name, want, service: real, mock: mocked });
      }
    }
    return mismatches;
  };

  it("leads: every row gets the same verdict from the leads worker and from the mock", async () => {
    assert.deepEqual(
      await mismatchesOf(
        LEAD_CASES,
        "leads.submit",
        (c) => c.lead,
        (l) => mock.leads.submit(l),
      ),
      [],
    );
  });

  it("analytics: every pageview row gets the same verdict from the analytics worker and from the mock", async () => {
    const pageview = (v) => mock.analytics.pageview(v);
    assert.deepEqual(await mismatchesOf(PAGEVIEW_CASES, "analytics.pageview", (c) => c.view, pageview), []);
  });

  it("events: every row gets the same verdict from the events worker and from the mock", async () => {
    assert.deepEqual(
      await mismatchesOf(
        EVENT_CASES,
        "events.emit",
        (c) => c.event,
        (e) => mock.events.emit(e),
      ),
      [],
    );
  });

  // event_id is unique per tenant: the same producer id again (no idempotency key) is the first event,
  // answered as a duplicate, never a second event.
  it("events: a producer's event_id sent twice is one event, the repeat a duplicate (service and mock)", async () => {
    const minted = EVENT_CASES.find((c) => c.name === "an event_id in lower case").event.event_id.toUpperCase();
    const event_id = `${minted.slice(0, 25)}R`; // an id of its own, not the table row's
    const event = { event_type: "order.repeated", entity_ref: "order:twice", payload: {}, event_id };
    for (const [who, emit, list] of [
      ["service", (e) => sdk("events.emit", [e]), (q) => sdk("events.list", [q])],
      ["mock", (e) => mockOutcome(mock.events.emit(e)), (q) => mockOutcome(mock.events.list(q))],
    ]) {
      assert.deepEqual(await emit(event), { ok: true, value: { event_id } }, who);
      assert.deepEqual(
        await emit({ ...event, payload: { again: true } }),
        { ok: true, value: { event_id, duplicate: true } },
        who,
      );
      const page = await list({ entity: "order:twice" });
      assert.deepEqual(
        page.value.events.map((e) => [e.event_id, e.payload]),
        [[event_id, {}]],
        who,
      );
    }
  });

  it("events: every page query gets the same verdict from the events worker and from the mock", async () => {
    assert.deepEqual(
      await mismatchesOf(
        EVENT_QUERY_CASES,
        "events.list",
        (c) => c.query,
        (q) => mock.events.list(q),
      ),
      [],
    );
  });
});
