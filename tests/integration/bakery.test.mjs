// The example client site: static pages, the cross-binding health demo and route delegation with
// @siteswarm/sdk, including the tenant-spoofing cases of docs/contract.md "Tenant context".
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { errorOf, jsonOf, startMesh } from "./mesh.mjs";

let mesh;
before(async () => {
  mesh = await startMesh();
});
after(() => mesh?.dispose());

const countEvents = async (tenantId) => {
  const db = await mesh.d1("events", "EVENTS_DB");
  const row = await db.prepare("SELECT COUNT(*) AS n FROM events WHERE tenant_id IS ?1").bind(tenantId).first();
  return row.n;
};

describe("bakery site", () => {
  it("serves its static home page with the contact form", async () => {
    const res = await mesh.fetch("bakery", "/");
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /<form id="contact" method="post" action="\/api\/leads\/submit">/);
  });

  it("/api/platform/health crosses every service binding and back", async () => {
    const body = await jsonOf(await mesh.fetch("bakery", "/api/platform/health"), 200);
    assert.equal(body.ok, true);
    assert.deepEqual(
      Object.fromEntries(Object.entries(body.services).map(([b, s]) => [b, [s.ok, s.status, s.service]])),
      {
        LEADS_SERVICE: [true, 200, "siteswarm-leads-service"],
        CMS_SERVICE: [true, 200, "siteswarm-cms-service"],
        MONITOR_SERVICE: [true, 200, "siteswarm-synthetic-monitoring"],
        ANALYTICS_SERVICE: [true, 200, "siteswarm-analytics-service"],
        EVENTS_SERVICE: [true, 200, "siteswarm-events-service"],
      },
    );
  });

  it("answers unknown API routes with a JSON 404", async () => {
    await errorOf(await mesh.fetch("bakery", "/api/nothing-here"), 404, "not_found");
  });

  // docs/contract.md "Common rules": errors are JSON (405 with Allow), and a trailing or doubled
  // slash changes no route. The site's own routes and its static fallback were answered in plain
  // text by the ASSETS binding: `/health/` 404 "not found", `POST /` 405 "method not allowed".
  it("answers its own routes whatever the slashes, and a missing page or method in JSON", async () => {
    for (const path of ["/health/", "http://localhost//health"]) {
      const body = await jsonOf(await mesh.fetch("bakery", path), 200);
      assert.deepEqual(Object.keys(body).sort(), ["ok", "service", "version"], path);
      assert.equal(body.service, "client-bakery");
    }
    const tracker = await mesh.fetch("bakery", "/_sa/script.js/");
    assert.equal(tracker.status, 200);
    assert.match(await tracker.text(), /sendBeacon/);
    await errorOf(await mesh.fetch("bakery", "/no-such-page.html"), 404, "not_found");
    await errorOf(await mesh.fetch("bakery", "/%FF"), 404, "not_found"); // not UTF-8: no file (was text 400)
    const head = await mesh.fetch("bakery", "/no-such-page.html", { method: "HEAD" });
    assert.equal(head.status, 404);
    assert.match(head.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal(await head.text(), "");
    for (const [method, path] of [
      ["POST", "/"],
      ["DELETE", "/thanks.html"],
    ]) {
      const res = await mesh.fetch("bakery", path, { method });
      assert.equal(res.headers.get("allow"), "GET, HEAD", `${method} ${path}`);
      await errorOf(res, 405, "method_not_allowed");
    }
    // Over a raw socket (fetch refuses to send TRACE): handed on to ASSETS, it threw in Miniflare's
    // loopback and ended the whole process (scripts/dev, this test run).
    const { hostname, port } = new URL(await mesh.url("bakery"));
    for (const method of ["TRACE"]) {
      const raw = await new Promise((resolve, reject) => {
        const socket = net.connect(Number(port), hostname, () =>
          socket.end(`${method} /thanks.html HTTP/1.1\r\nHost: ${hostname}\r\nconnection: close\r\n\r\n`),
        );
        let out = "";
        socket.on("data", (chunk) => (out += chunk));
        socket.on("error", reject);
        socket.on("close", () => resolve(out));
      });
      assert.match(raw, /^HTTP\/1\.1 405 /, `${method}: ${raw.slice(0, 200)}`);
      assert.match(raw, /\r\nallow: GET, HEAD\r\n/i, method);
      assert.match(raw, /"code":"method_not_allowed"/, method);
    }
    assert.equal((await mesh.fetch("bakery", "/health")).status, 200);
  });

  // docs/contract.md "Common rules": each segment is percent-decoded before it is matched, by the
  // site as by the workers. `/%69ndex.html` was the raw template from the static files (no status
  // line, no announcement), and `/%68ealth` or `/_sa/%73cript.js` a 404.
  it("matches its own routes on percent-decoded segments, as the workers do", async () => {
    const home = await (await mesh.fetch("bakery", "/")).text();
    assert.match(home, /<p id="status"[^>]*>[^<]+</, "the home page is rendered");
    // Nor does any path the static files would resolve to the template (they decode the whole path
    // and try `.html`).
    for (const path of ["/%69ndex.html", "/index%2Ehtml", "/index", "/%2Findex.html", "/index.html/"]) {
      const res = await mesh.fetch("bakery", path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("cache-control"), "no-store", path);
      assert.match(await res.text(), /<p id="status"[^>]*>[^<]+</, path);
    }
    const health = await jsonOf(await mesh.fetch("bakery", "/%68ealth"), 200);
    assert.equal(health.service, "client-bakery");
    const tracker = await mesh.fetch("bakery", "/_sa/%73cript.js");
    assert.equal(tracker.status, 200);
    assert.match(await tracker.text(), /sendBeacon/);
    // An encoded slash stays inside its segment: no route by a slash that was not sent.
    await errorOf(await mesh.fetch("bakery", "/_sa%2Fscript.js"), 404, "not_found");
  });

  // The local static-file server refuses headers over 16 KiB (431) with an empty body: the site
  // answers every refusal of its static files in the contract's JSON, keeping the status.
  it("answers a refusal of its static files in JSON, whatever the status", async () => {
    const res = await mesh.fetch("bakery", "/thanks.html", { headers: { "x-long": "a".repeat(20_000) } });
    assert.equal(res.status, 431);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal((await res.json()).error.code, "invalid_request");
  });
});

describe("route delegation", () => {
  it("a forged tenant header through the bakery is replaced by the bakery's own context", async () => {
    const leads = await mesh.d1("leads", "LEADS_DB");
    const res = await mesh.fetch("bakery", "/api/leads/submit", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "X-SiteSwarm-Tenant-Id": "auto-repair",
        "X-SiteSwarm-Tenant-Token": "guessed-token-0000000000",
        "x-siteswarm-capability-version": "1.0.0",
        "cf-connecting-ip": "203.0.113.61",
      },
      body: JSON.stringify({ email: "forged@example.com", turnstileToken: "XXXX.DUMMY.TOKEN.XXXX" }),
    });
    const { leadId } = await jsonOf(res, 202);
    const row = await leads.prepare("SELECT tenant_id FROM leads WHERE id = ?1").bind(leadId).first();
    assert.equal(row?.tenant_id, "bakery", "stored as the site's own tenant, not the forged one");
    const forged = await leads
      .prepare("SELECT COUNT(*) AS n FROM leads WHERE tenant_id = 'auto-repair' AND payload ->> 'email' = ?1")
      .bind("forged@example.com")
      .first();
    assert.equal(forged.n, 0, "nothing was written as auto-repair");
  });

  it("the site lends no visitor the tenant's ledger: an emit through it is 404 and writes nothing", async () => {
    const before = await countEvents("bakery");
    for (const path of ["/api/events", "/api/events/"]) {
      const res = await mesh.fetch("bakery", path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          event_type: "lead.received",
          entity_ref: "lead:01JFORGED000000000000000000",
          payload: { leadId: "forged" },
        }),
      });
      await errorOf(res, 404, "not_found");
    }
    assert.equal(await countEvents("bakery"), before, "no event was written as the bakery");
    // The app's own server code still emits through its binding (the SDK, with the site's token).
    const emitted = await jsonOf(
      await mesh.fetch("events", "/api/events", {
        method: "POST",
        headers: { ...mesh.tenantHeaders("bakery"), "content-type": "application/json" },
        body: JSON.stringify({ event_type: "price.changed", entity_ref: "item:own", payload: { price: 1 } }),
      }),
      201,
    );
    assert.match(emitted.event_id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(await countEvents("bakery"), before + 1);
  });

  it("the site does not hand a visitor what the tenant token alone reads: the ledger, the stats", async () => {
    for (const path of [
      "/api/events",
      "/api/events?limit=5",
      "/_sa/v1/stats?from=2026-01-01&to=2026-01-02",
      "/_sa/dashboard",
    ]) {
      await errorOf(await mesh.fetch("bakery", path), 404, "not_found");
    }
    // What a visitor needs still passes: the tracker and its beacon.
    assert.equal((await mesh.fetch("bakery", "/_sa/script.js")).status, 200);
  });

  it("the tracker's paths through the site answer another method 405 with Allow, not 404", async () => {
    for (const [method, path, allow] of [
      ["GET", "/_sa/beacon", "POST"],
      ["PUT", "/_sa/beacon", "POST"],
      ["OPTIONS", "/_sa/beacon", "POST"],
      ["POST", "/_sa/script.js", "GET, HEAD"],
      ["DELETE", "/_sa/script.js", "GET, HEAD"],
    ]) {
      const res = await mesh.fetch("bakery", path, { method });
      await errorOf(res, 405, "method_not_allowed");
      assert.equal(res.headers.get("allow"), allow, `${method} ${path}`);
    }
    // A path the site does not pass is still unknown, whatever the method.
    await errorOf(await mesh.fetch("bakery", "/_sa/nothing", { method: "POST" }), 404, "not_found");
  });

  it("the site passes cms's public reads and Studio, never its operator routes, whatever token is sent", async () => {
    for (const path of ["/api/cms/admin/tenants/bakery", "/api/cms/admin/diagnostics", "/api/cms/health"]) {
      await errorOf(await mesh.fetch("bakery", path, { headers: mesh.operator() }), 404, "not_found");
    }
    // The same operator request straight to cms works: the token is right, the site is the wrong door.
    assert.equal((await mesh.fetch("cms", "/admin/tenants/bakery", { headers: mesh.operator() })).status, 200);
    const content = await jsonOf(await mesh.fetch("bakery", "/api/cms/v1/content"), 200);
    assert.ok(Array.isArray(content.announcements));
    // Studio through the site still needs the tenant admin token (the site never adds it).
    await errorOf(await mesh.fetch("bakery", "/api/cms/admin/v1/content"), 401, "unauthenticated_tenant");
  });

  it("a raw request naming a tenant without its token is 401 and writes nothing", async () => {
    const before = await countEvents("bakery");
    const res = await mesh.fetch("events", "/api/events", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "X-SiteSwarm-Tenant-Id": "bakery",
        "X-SiteSwarm-Capability-Version": "1.0.0",
      },
      body: JSON.stringify({ event_type: "price.changed", entity_ref: "item:raw", payload: {} }),
    });
    await errorOf(res, 401, "unauthenticated_tenant");
    assert.equal(await countEvents("bakery"), before);
  });

  it("delegates /api/leads/* to the leads service as-is", async () => {
    // The leads core answers (here: its JSON 404), not the bakery's own router.
    const error = await errorOf(await mesh.fetch("bakery", "/api/leads/no/such/route"), 404, "not_found");
    assert.notEqual(error.message, "no such API route");
  });
});
