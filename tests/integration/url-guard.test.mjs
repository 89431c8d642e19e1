// The outbound-URL guard (shared/url_guard.cpp, docs/security.md) seen from outside:
// 1. The table of tricky URLs (tests/fixtures/url-guard.json) is the one the native doctest runs
//    through the guard, asserting the host the guard judged; here every such host must be the host
//    Node's own WHATWG URL parser resolves for the same string (the parser workerd's fetch() uses
//    follows the same standard). Where the guard refuses to parse (stricter), Node must either throw
//    or resolve the recorded nodeHost.
// 2. With ALLOW_LOCAL_OUTBOUND off, the leads tenant config and the ledger workflow targets refuse
//    each tricky webhook with 400 naming the field.
// 3. With it on (local development), a webhook that answers 302 to another address is not followed:
//    the delivery is recorded as a failed attempt (HTTP 302) and the redirect target gets nothing.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { errorOf, jsonOf, secret, startMesh } from "./mesh.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TABLE = JSON.parse(readFileSync(path.join(ROOT, "tests/fixtures/url-guard.json"), "utf8")).cases;
const JSON_TYPE = { "content-type": "application/json" };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function nodeParse(url) {
  try {
    const u = new URL(url);
    return { hostname: u.hostname, port: u.port };
  } catch {
    return null;
  }
}

describe("the guard's table against Node's WHATWG URL", () => {
  it("has the URLs of issue 14 item 2 and more than 100 cases", () => {
    const urls = new Set(TABLE.map((c) => c.url));
    for (const u of [
      "https://2130706433/",
      "http://0x7f.0.0.1/",
      "http://017700000001/",
      "http://127.1/",
      "http://[::1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://169.254.169.254/latest/meta-data/",
      "http://localhost/",
      "http://0.0.0.0/",
      "http://evil@127.0.0.1/",
      "http://127.0.0.1:80@evil.example/",
    ]) {
      assert.ok(urls.has(u), u);
    }
    assert.ok(TABLE.length > 100);
  });

  for (const c of TABLE) {
    it(`${JSON.stringify(c.url)}${c.local ? " (local)" : ""} → ${c.verdict}`, () => {
      const node = nodeParse(c.url);
      if (typeof c.host === "string") {
        assert.ok(node, "Node parses what the guard parsed");
        assert.equal(node.hostname, c.host, "the host the guard judged is the host Node resolves");
        assert.equal(node.port, c.port === undefined ? "" : String(c.port));
      } else if (c.nodeHost !== undefined) {
        assert.equal(node?.hostname, c.nodeHost, "the guard is stricter than WHATWG here");
      } else {
        assert.equal(node, null, "Node refuses it too");
      }
      if (c.href) assert.equal(new URL(c.href).hostname, c.host, "the href sent names the judged host");
      // What is fetched is what any client fetches for the URL (dot segments resolved alike; the
      // fragment never goes on the wire).
      if (c.href && c.verdict === "ok") {
        const whatwg = new URL(c.url);
        whatwg.hash = "";
        assert.equal(whatwg.href, c.href, "the href is WHATWG's");
      }
    });
  }
});

// Refused at configuration time whatever the spelling (ALLOW_LOCAL_OUTBOUND off).
const TRICKY = TABLE.filter((c) => !c.local && c.verdict !== "ok" && c.url !== "").map((c) => c.url);

describe("configuration with ALLOW_LOCAL_OUTBOUND off", () => {
  let mesh;
  before(async () => {
    mesh = await startMesh({
      tenants: [],
      bindings: { leads: { ALLOW_LOCAL_OUTBOUND: "0" }, events: { ALLOW_LOCAL_OUTBOUND: "0" } },
    });
  });
  after(() => mesh?.dispose());

  const putTenant = (config) =>
    mesh.fetch("leads", "/admin/tenants/ug-tenant", {
      method: "PUT",
      headers: mesh.operator(JSON_TYPE),
      body: JSON.stringify({ token: secret(), adminToken: secret(), config }),
    });
  const putWorkflow = (target) =>
    mesh.fetch("events", "/admin/workflows/ug_flow", {
      method: "PUT",
      headers: mesh.operator(JSON_TYPE),
      body: JSON.stringify({ target }),
    });

  it("leads: every tricky notify.webhook.url → 400 naming the field", async () => {
    assert.ok(TRICKY.length > 60);
    for (const url of TRICKY) {
      const res = await putTenant({ turnstile: "off", notify: { webhook: { url, secret: "0123456789abcdef" } } });
      const error = await errorOf(res, 400, "invalid_request");
      assert.equal(error.field, "config.notify.webhook.url", url);
    }
    const rows = await (await mesh.d1("leads", "LEADS_DB"))
      .prepare("SELECT COUNT(*) AS n FROM tenants WHERE tenant_id = 'ug-tenant'")
      .all();
    assert.equal(rows.results[0].n, 0, "nothing stored");
  });

  it("leads: the message says why (loopback, metadata, userinfo)", async () => {
    const why = async (url) =>
      (
        await errorOf(
          await putTenant({ notify: { webhook: { url, secret: "0123456789abcdef" } } }),
          400,
          "invalid_request",
        )
      ).message;
    assert.match(await why("http://127.1/"), /127\.0\.0\.1 is a loopback address/);
    assert.match(await why("https://169.254.169.254/"), /cloud metadata/);
    assert.match(await why("https://evil@example.com/"), /user name or password/);
    assert.match(await why("http://example.com/"), /https/);
  });

  it("leads: a public https webhook is accepted and stored normalised", async () => {
    const res = await putTenant({
      turnstile: "off",
      notify: { webhook: { url: "https://Hooks.Example.com/x", secret: "0123456789abcdef" } },
    });
    const body = await jsonOf(res, 201);
    assert.equal(body.tenantId, "ug-tenant");
  });

  it("ledger: every tricky target.webhook → 400 naming the field; a public one is stored", async () => {
    for (const url of TRICKY) {
      const error = await errorOf(await putWorkflow({ webhook: url }), 400, "invalid_request");
      assert.equal(error.field, "target.webhook", url);
    }
    const created = await jsonOf(await putWorkflow({ webhook: "https://2130706433.example/start" }), 201);
    assert.ok(JSON.stringify(created).includes("https://2130706433.example/start"));
  });
});

describe("redirects are not followed (ALLOW_LOCAL_OUTBOUND on)", () => {
  let mesh;
  let redirector;
  const hits = [];
  before(async () => {
    mesh = await startMesh({ tenants: [] });
    // A webhook endpoint that answers every delivery with a 302 to the stubs' own webhook path.
    redirector = createServer((req, res) => {
      hits.push(req.url);
      req.resume();
      res.writeHead(302, { location: `${mesh.stubs.url}/webhook/redirected` }).end();
    });
    await new Promise((r) => redirector.listen(0, "127.0.0.1", r));
  });
  after(async () => {
    await mesh?.dispose();
    await new Promise((r) => redirector?.close(r));
  });

  it("a lead's webhook answering 302 is a failed attempt; the Location is never fetched", async () => {
    const token = secret();
    const hook = `http://127.0.0.1:${redirector.address().port}/hook`;
    await jsonOf(
      await mesh.fetch("leads", "/admin/tenants/ug-redirect", {
        method: "PUT",
        headers: mesh.operator(JSON_TYPE),
        body: JSON.stringify({
          token,
          adminToken: secret(),
          config: { turnstile: "off", notify: { webhook: { url: hook, secret: "0123456789abcdef" } } },
        }),
      }),
      201,
    );
    const res = await mesh.fetch("leads", "/api/leads/submit", {
      method: "POST",
      headers: {
        "X-SiteSwarm-Tenant-Id": "ug-redirect",
        "X-SiteSwarm-Tenant-Token": token,
        "X-SiteSwarm-Capability-Version": "1.2.0",
        "CF-Connecting-IP": "203.0.113.9",
        ...JSON_TYPE,
      },
      body: JSON.stringify({ name: "Ada", email: "ada@example.com" }),
    });
    const { leadId } = await jsonOf(res, 202);
    const db = await mesh.d1("leads", "LEADS_DB");
    let attempts = [];
    for (let i = 0; i < 400 && attempts.length === 0; i++) {
      attempts = (
        await db
          .prepare(
            "SELECT a.* FROM delivery_attempts a JOIN lead_deliveries d ON d.id = a.delivery_id " +
              "WHERE d.lead_id = ?1 AND d.channel = 'webhook' ORDER BY a.attempt",
          )
          .bind(leadId)
          .all()
      ).results;
      if (attempts.length === 0) await sleep(50);
    }
    assert.ok(attempts.length >= 1, "the webhook was attempted");
    assert.equal(attempts[0].ok, 0);
    assert.equal(attempts[0].http_status, 302);
    assert.ok(hits.length >= 1 && hits.every((h) => h === "/hook"));
    assert.equal(mesh.stubs.find("/webhook/redirected").length, 0, "the redirect was not followed");
  });
});
