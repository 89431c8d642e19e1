// @siteswarm/sdk in plain Node: route delegation and SiteSwarmError.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { delegate, SiteSwarmError } from "@siteswarm/sdk";

const TOKEN = "tenant-token-0123456789abcdef";

function recordingBinding() {
  const seen = [];
  return {
    seen,
    async fetch(request) {
      seen.push({
        method: request.method,
        url: request.url,
        headers: Object.fromEntries(request.headers),
        body: await request.text(),
      });
      return Response.json({ ok: true }, { status: 202 });
    },
  };
}

describe("delegate", () => {
  it("strips every incoming X-SiteSwarm-* header and sets the app's own three", async () => {
    const LEADS_SERVICE = recordingBinding();
    const request = new Request("https://bakery.example/api/leads/submit?x=1", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "X-SiteSwarm-Tenant-Id": "auto-repair",
        "x-siteswarm-tenant-token": "forged",
        "X-SiteSwarm-Capability-Version": "9.9.9",
        "X-SiteSwarm-Anything-Else": "dropped",
        "cf-connecting-ip": "203.0.113.7",
      },
      body: '{"name":"Ada"}',
    });
    const res = await delegate(request, { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN }, "LEADS_SERVICE", {
      appId: "bakery",
      capabilityVersion: "1.2.0",
    });
    assert.equal(res.status, 202);
    const [seen] = LEADS_SERVICE.seen;
    assert.equal(seen.method, "POST");
    assert.equal(seen.url, "https://bakery.example/api/leads/submit?x=1");
    assert.equal(seen.body, '{"name":"Ada"}');
    assert.deepEqual(
      Object.entries(seen.headers).filter(([k]) => k.startsWith("x-siteswarm-")),
      [
        ["x-siteswarm-capability-version", "1.2.0"],
        ["x-siteswarm-tenant-id", "bakery"],
        ["x-siteswarm-tenant-token", TOKEN],
      ],
    );
    assert.equal(seen.headers["cf-connecting-ip"], "203.0.113.7");
  });

  it("reads the token from a custom binding and strips a path prefix", async () => {
    const ANALYTICS_SERVICE = recordingBinding();
    await delegate(
      new Request("https://bakery.example/_sa/beacon", { method: "POST", body: "{}" }),
      { ANALYTICS_SERVICE, MY_TOKEN: TOKEN },
      "ANALYTICS_SERVICE",
      { appId: "bakery", tokenBinding: "MY_TOKEN", stripPrefix: "/_sa" },
    );
    assert.equal(ANALYTICS_SERVICE.seen[0].url, "https://bakery.example/beacon");
    assert.equal(ANALYTICS_SERVICE.seen[0].headers["x-siteswarm-tenant-token"], TOKEN);
    assert.equal(ANALYTICS_SERVICE.seen[0].headers["x-siteswarm-capability-version"], "1.0.0");
  });

  it("strips a path prefix only at a segment boundary", async () => {
    const ANALYTICS_SERVICE = recordingBinding();
    const env = { ANALYTICS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN };
    for (const path of ["/_sa", "/_sa/", "/_sa/script.js", "/_sample/beacon", "/_sa.js"]) {
      await delegate(new Request(`https://bakery.example${path}?q=1`), env, "ANALYTICS_SERVICE", {
        appId: "bakery",
        stripPrefix: "/_sa",
      });
    }
    assert.deepEqual(
      ANALYTICS_SERVICE.seen.map((s) => new URL(s.url).pathname + new URL(s.url).search),
      ["/?q=1", "/?q=1", "/script.js?q=1", "/_sample/beacon?q=1", "/_sa.js?q=1"],
    );
  });

  it("answers 503 service_unavailable JSON when the binding is missing", async () => {
    const res = await delegate(
      new Request("https://b.example/api/leads"),
      { SITESWARM_TENANT_TOKEN: TOKEN },
      "LEADS_SERVICE",
      { appId: "bakery" },
    );
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(res.headers.get("cache-control"), "no-store", "an error answer is never cached");
    const { error } = await res.json();
    assert.equal(error.code, "service_unavailable");
    assert.ok(!JSON.stringify(error).includes(TOKEN));
  });

  it("takes the contract's three-argument form: 503 without a binding, the app id from SITESWARM_APP_ID", async () => {
    const bare = await delegate(new Request("https://b.example/api/leads"), {}, "LEADS_SERVICE");
    assert.equal(bare.status, 503);
    assert.equal((await bare.json()).error.code, "service_unavailable");
    const LEADS_SERVICE = recordingBinding();
    const env = { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN, SITESWARM_APP_ID: "bakery" };
    const res = await delegate(
      new Request("https://b.example/api/leads", { method: "POST", body: "{}" }),
      env,
      "LEADS_SERVICE",
    );
    assert.equal(res.status, 202);
    assert.equal(LEADS_SERVICE.seen[0].headers["x-siteswarm-tenant-id"], "bakery");
    assert.equal(LEADS_SERVICE.seen[0].headers["x-siteswarm-capability-version"], "1.0.0");
  });

  it("reads the app id and the capability version from the manifest", async () => {
    const LEADS_SERVICE = recordingBinding();
    const manifest = { appId: "bakery", capabilities: { "lead-capture": { version: "1.2.0" } } };
    await delegate(
      new Request("https://b.example/api/leads", { method: "POST", body: "{}" }),
      { LEADS_SERVICE, SITESWARM_TENANT_TOKEN: TOKEN },
      "LEADS_SERVICE",
      { manifest },
    );
    assert.equal(LEADS_SERVICE.seen[0].headers["x-siteswarm-tenant-id"], "bakery");
    assert.equal(LEADS_SERVICE.seen[0].headers["x-siteswarm-capability-version"], "1.2.0");
  });

  it("forwards without a missing app id or token, dropping the visitor's, so the service answers 401", async () => {
    const spoofed = {
      "X-SiteSwarm-Tenant-Id": "victim",
      "X-SiteSwarm-Tenant-Token": "guessed",
      "X-SiteSwarm-Capability-Version": "9.0.0",
    };
    const cases = [
      [{ LEADS_SERVICE: recordingBinding(), SITESWARM_TENANT_TOKEN: TOKEN }, {}],
      [{ LEADS_SERVICE: recordingBinding(), SITESWARM_TENANT_TOKEN: TOKEN }, { appId: "Bad App" }],
      [{ LEADS_SERVICE: recordingBinding() }, { appId: "bakery" }],
    ];
    const warnings = [];
    const warn = console.warn;
    console.warn = (line) => warnings.push(String(line));
    try {
      for (const [env, options] of cases) {
        const res = await delegate(
          new Request("https://b.example/api/leads", { method: "POST", headers: spoofed, body: "{}" }),
          env,
          "LEADS_SERVICE",
          options,
        );
        assert.equal(res.status, 202, "forwarded (the recording binding answers 202)");
        const seen = env.LEADS_SERVICE.seen[0].headers;
        assert.equal(seen["x-siteswarm-tenant-id"], options.appId === "bakery" ? "bakery" : undefined);
        assert.equal(seen["x-siteswarm-tenant-token"], env.SITESWARM_TENANT_TOKEN);
        assert.equal(seen["x-siteswarm-capability-version"], "1.0.0");
      }
      // Again: each problem is logged once per isolate, not per request, and never with a secret.
      await delegate(new Request("https://b.example/"), cases[2][0], "LEADS_SERVICE", cases[2][1]);
    } finally {
      console.warn = warn;
    }
    assert.equal(warnings.length, 2, warnings.join("\n"));
    assert.match(warnings[0], /app id .* missing or not a valid app id/);
    assert.match(warnings[1], /tenant token \(SITESWARM_TENANT_TOKEN\) is not configured/);
    for (const line of warnings) assert.ok(!line.includes(TOKEN));
  });

  it("answers 503 for a binding that throws, never throwing itself", async () => {
    const broken = {
      fetch: async () => {
        throw new Error("binding gone");
      },
    };
    const res = await delegate(
      new Request("https://b.example/"),
      { LEADS_SERVICE: broken, SITESWARM_TENANT_TOKEN: TOKEN },
      "LEADS_SERVICE",
      { appId: "bakery" },
    );
    assert.equal(res.status, 503);
    assert.equal((await res.json()).error.code, "service_unavailable");
  });
});

describe("SiteSwarmError", () => {
  it("carries code, status and details and renders the contract's JSON", async () => {
    const err = new SiteSwarmError("invalid_lead", "check the fields", {
      status: 400,
      details: { fields: { email: "required" } },
    });
    assert.ok(err instanceof Error);
    const res = err.toResponse();
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), {
      error: { code: "invalid_lead", message: "check the fields", fields: { email: "required" } },
    });
    // Details named like the error's own keys never replace them.
    const odd = new SiteSwarmError("x_y", "msg", { status: 418, details: { code: "other", message: "over" } });
    assert.equal(await odd.toResponse().text(), '{"error":{"code":"x_y","message":"msg"}}');
  });

  it("is built from a service's error answer", async () => {
    const answer = Response.json({ error: { code: "rate_limited", message: "slow down" } }, { status: 429 });
    const err = await SiteSwarmError.fromResponse(answer);
    assert.deepEqual([err.code, err.status, err.message, err.details], ["rate_limited", 429, "slow down", undefined]);
    const html = await SiteSwarmError.fromResponse(new Response("<h1>oops</h1>", { status: 502 }));
    assert.equal(html.code, "http_502");
    // JSON that is not the contract's error object: the generic code, no made-up details.
    for (const body of ['{"error":"boom"}', '{"error":{"code":42,"message":{"x":1}}}', "null", "[1]"]) {
      const odd = await SiteSwarmError.fromResponse(new Response(body, { status: 500 }));
      assert.deepEqual([odd.code, typeof odd.message, odd.details], ["http_500", "string", undefined], body);
    }
  });
});
