// The three example client apps (examples/: bakery, software-agency, auto-repair) in workerd beside
// the real platform workers: their pages, their forms as a browser posts them and as a script posts
// them, each form delivered through its own channels to the stubs once, and what each app shows
// from cms and monitoring. The same visits in a real browser: tests/browser/apps.test.mjs.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { APPS } from "../../scripts/lib/workers.mjs";
import { errorOf, startMesh } from "./mesh.mjs";

const DUMMY_TOKEN = "XXXX.DUMMY.TOKEN.XXXX";
const HTML_FORM = {
  "content-type": "application/x-www-form-urlencoded",
  accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let ip = 10;
// Each post from its own documentation address: the rate limit window is per client network.
const nextIp = () => `198.51.100.${ip++}`;

let mesh;
before(async () => {
  mesh = await startMesh({ localSites: true });
});
after(() => mesh?.dispose());

async function waitFor(what, probe, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const post = (app, fields, headers = HTML_FORM) =>
  mesh.fetch(app, "/api/leads/submit", {
    method: "POST",
    headers: { ...headers, "cf-connecting-ip": nextIp() },
    body: new URLSearchParams(fields).toString(),
    redirect: "manual",
  });

async function leadsOf(tenant) {
  const db = await mesh.d1("leads", "LEADS_DB");
  const { results } = await db.prepare("SELECT payload FROM leads WHERE tenant_id = ?1").bind(tenant).all();
  return results.map((r) => JSON.parse(r.payload));
}

describe("the three client apps", () => {
  for (const { key, name, appId } of Object.values(APPS)) {
    it(`${key}: /health names ${name}; the home page has its form and the local Turnstile widget`, async () => {
      const health = await (await mesh.fetch(key, "/health")).json();
      assert.equal(health.ok, true);
      assert.equal(health.service, name);
      assert.match(health.version, /^\d+\.\d+\.\d+$/);
      const platform = await (await mesh.fetch(key, "/api/platform/health")).json();
      assert.equal(platform.ok, true, JSON.stringify(platform));
      assert.equal(platform.app, appId);
      for (const path of ["/health", "/api/platform/health"]) {
        const posted = await mesh.fetch(key, path, { method: "POST" });
        assert.equal(posted.status, 405, path);
        assert.equal(posted.headers.get("allow"), "GET, HEAD");
        assert.equal((await posted.json()).error.code, "method_not_allowed");
        const head = await mesh.fetch(key, path, { method: "HEAD" });
        assert.equal(head.status, 200, path);
        assert.equal(await head.text(), "");
      }

      const res = await mesh.fetch(key, "/");
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("cache-control"), "no-store", "the rendered page is never cached");
      // No other site frames a page of the site (its form under a clickjacking overlay), none is
      // sniffed into another type: the rendered page and the static ones alike.
      for (const page of [res, await mesh.fetch(key, "/thanks.html")]) {
        assert.equal(page.headers.get("content-security-policy"), "frame-ancestors 'none'");
        assert.equal(page.headers.get("x-frame-options"), "DENY");
        assert.equal(page.headers.get("x-content-type-options"), "nosniff");
      }
      // HEAD / is the rendered page's head, not the static template's.
      const headHome = await mesh.fetch(key, "/", { method: "HEAD" });
      assert.equal(headHome.status, 200);
      assert.equal(headHome.headers.get("cache-control"), "no-store");
      assert.match(headHome.headers.get("content-type") ?? "", /^text\/html/);
      assert.equal(await headHome.text(), "");
      const html = await res.text();
      assert.match(html, /<form id="\w+" method="post" action="\/api\/leads\/submit">/);
      assert.ok(html.includes(`src="${mesh.stubs.url}/turnstile/v0/api.js"`), "the stub's widget, not Cloudflare's");
      assert.ok(!html.includes("challenges.cloudflare.com"));
      assert.match(html, /<script src="\/_sa\/script\.js" defer><\/script>/);
      assert.match(html, /class="announcement" data-level="info">/, "announcements from cms");
      // Every page names an icon the app serves: no browser asks for a /favicon.ico that is a 404.
      for (const page of [html, await (await mesh.fetch(key, "/thanks.html")).text()]) {
        const icon = page.match(/<link rel="icon" href="([^"]+)"/)?.[1];
        assert.ok(icon, "the page names its icon");
        const served = await mesh.fetch(key, icon);
        assert.equal(served.status, 200, icon);
        assert.match(served.headers.get("content-type") ?? "", /^image\//);
        await served.arrayBuffer();
      }
    });
  }

  // A 405 says the path exists with other methods: a path that names nothing is 404 whatever the
  // method (it was 405 with `Allow: GET, HEAD` for `POST /nonexistent-file.txt`, while GET said 404).
  it("an unknown path is 404 for every method; 405 with Allow only where a page or file exists", async () => {
    for (const key of Object.keys(APPS)) {
      for (const [method, path] of [
        ["GET", "/nonexistent-file.txt"],
        ["POST", "/nonexistent-file.txt"],
        ["PUT", "/nonexistent-file.txt"],
        ["DELETE", "/no/such/page.html"],
        ["POST", "/API/leads"],
        ["PATCH", "/Health"],
      ]) {
        const res = await mesh.fetch(key, path, { method });
        assert.equal(res.headers.get("allow"), null, `${key}: ${method} ${path}`);
        await errorOf(res, 404, "not_found");
      }
      const head = await mesh.fetch(key, "/nonexistent-file.txt", { method: "HEAD" });
      assert.equal(head.status, 404);
      for (const [method, path] of [
        ["POST", "/"],
        ["PUT", "/thanks.html"],
        ["POST", "/thanks"],
        ["DELETE", "/favicon.svg"],
      ]) {
        const res = await mesh.fetch(key, path, { method });
        assert.equal(res.headers.get("allow"), "GET, HEAD", `${key}: ${method} ${path}`);
        await errorOf(res, 405, "method_not_allowed");
      }
    }
  });

  it("the stub serves the Turnstile widget script with the test sitekeys", async () => {
    const res = await fetch(`${mesh.stubs.url}/turnstile/v0/api.js`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /javascript/);
    const js = await res.text();
    for (const key of ["1x00000000000000000000AA", "2x00000000000000000000AB", "3x00000000000000000000FF"]) {
      assert.ok(js.includes(key), key);
    }
    assert.ok(js.includes(DUMMY_TOKEN));
  });
});

describe("a form posted by a browser, and by a script", () => {
  it("invalid fields: the person gets the page back with each problem beside its field; JSON stays JSON", async () => {
    const fields = {
      name: "Ada <Lovelace>",
      email: "not-an-email",
      message: "Two loaves",
      "cf-turnstile-response": DUMMY_TOKEN,
    };
    const res = await post("bakery", fields);
    assert.equal(res.status, 400);
    assert.match(res.headers.get("content-type"), /^text\/html/);
    const html = await res.text();
    assert.match(html, /<div id="form-errors" role="alert"><p>Please check the fields marked below/);
    const email = html.match(/<input [^>]*name="email"[^>]*>/)?.[0] ?? "";
    assert.match(email, / aria-invalid="true"/);
    // The problem, then the page's own hint ("email or phone"), which stays.
    assert.match(email, / aria-describedby="email-error reply-hint"/);
    assert.match(email, / value="not-an-email"/);
    assert.match(html, /<span class="field-error" id="email-error">is not an email address<\/span>/);
    assert.match(
      html,
      /<input [^>]*name="name"[^>]* value="Ada &#60;Lovelace&#62;"/,
      "what they typed is kept, escaped",
    );
    assert.match(html, /<textarea name="message"[^>]*>Two loaves<\/textarea>/);
    assert.ok(!html.includes(`value="${DUMMY_TOKEN}"`), "the spent token is not echoed");
    // Not counted as a page "/api/leads/submit" in the owner's stats: the page has no tracker.
    assert.ok(!html.includes("/_sa/script.js"), "the refused page loads no tracker");

    const json = await post("bakery", fields, {
      "content-type": HTML_FORM["content-type"],
      accept: "application/json",
    });
    const error = await errorOf(json, 400, "invalid_lead");
    assert.equal(error.fields.email, "is not an email address");
    // The site reads Accept as the leads service does: HTML refused by its weight, or ranked below
    // JSON, keeps the JSON answer; a media type in capitals is still HTML.
    for (const accept of ["text/html;q=0", "application/json, text/html;q=0.5"]) {
      const refused = await post("bakery", fields, { "content-type": HTML_FORM["content-type"], accept });
      assert.equal((await errorOf(refused, 400, "invalid_lead")).fields.email, "is not an email address", accept);
    }
    const capitals = await post("bakery", fields, { "content-type": HTML_FORM["content-type"], accept: "TEXT/HTML" });
    assert.equal(capitals.status, 400);
    assert.match(capitals.headers.get("content-type"), /^text\/html/);
    await capitals.body?.cancel();
  });

  it("a failed Turnstile check: a readable page for the person, 403 turnstile_failed for a script", async () => {
    // The widget ran but gave no token (blocked, or its click not done): its input is there, empty.
    const fields = { name: "Bo", email: "bo@example.com", vehicle: "2012 Ford Focus", "cf-turnstile-response": "" };
    const res = await post("auto-repair", fields);
    assert.equal(res.status, 403);
    const html = await res.text();
    assert.match(html, /We could not confirm that you are a person/);
    // No widget input at all (JavaScript off): the person is told why, not to "complete the check".
    const { "cf-turnstile-response": _, ...noWidget } = fields;
    const noScript = await (await post("auto-repair", noWidget)).text();
    assert.match(noScript, /needs JavaScript, which is off or blocked/);
    assert.match(noScript, /<input [^>]*name="vehicle"[^>]* value="2012 Ford Focus"/);
    assert.match(html, /<input [^>]*name="vehicle"[^>]* value="2012 Ford Focus"/);
    assert.match(html, /<title>Not sent: /);
    const json = await post("auto-repair", fields, { ...HTML_FORM, accept: "application/json" });
    await errorOf(json, 403, "turnstile_failed");
  });

  it("rate limited: the person reads when to try again (429 + Retry-After); a script gets 429 JSON", async () => {
    const headers = { ...HTML_FORM, "cf-connecting-ip": "203.0.113.99" };
    const body = new URLSearchParams({ email: "not-an-email" }).toString(); // refused, but counted
    const send = (h = headers) =>
      mesh.fetch("bakery", "/api/leads/submit", { method: "POST", headers: h, body, redirect: "manual" });
    let res = await send();
    for (let i = 0; i < 10 && res.status !== 429; i++) res = await send();
    assert.equal(res.status, 429);
    assert.match(res.headers.get("retry-after"), /^\d+$/);
    assert.match(await res.text(), /Too many messages were sent from your network/);
    await errorOf(await send({ ...headers, accept: "application/json" }), 429, "rate_limited");
  });

  it("a body over the 32 KiB limit: 413 and a page saying so, nothing of it echoed", async () => {
    const res = await post("bakery", { email: "big@example.com", message: "z".repeat(40_000) });
    assert.equal(res.status, 413);
    const html = await res.text();
    assert.match(html, /Your message is too long/);
    assert.match(html, /the form is empty again/, "the person is told that what they typed is not kept");
    assert.ok(!html.includes("zzzz"));
  });

  it("honeypot: the bot sees the same 303 to the thank-you page, and nothing is stored", async () => {
    const before = (await leadsOf("software-agency")).length;
    const bot = await post("software-agency", {
      name: "Spam Bot",
      email: "bot@example.com",
      homepage: "https://spam.example",
      "cf-turnstile-response": DUMMY_TOKEN,
    });
    assert.equal(bot.status, 303);
    assert.equal(bot.headers.get("location"), "/thanks.html");
    assert.equal((await leadsOf("software-agency")).length, before);
  });
});

describe("each form delivered through its channels, once", () => {
  it("bakery: the contact form is stored and emailed through Resend", async () => {
    const res = await post("bakery", {
      name: "Cara",
      email: "cara.bakery@example.com",
      order_date: "2026-12-20",
      message: "A birthday cake",
      "cf-turnstile-response": DUMMY_TOKEN,
    });
    assert.equal(res.status, 303, await res.text());
    assert.equal(res.headers.get("location"), "/thanks.html");
    const mails = await waitFor("the Resend email", () => {
      const found = mesh.stubs.find("/emails", "POST").filter((r) => r.body.includes("cara.bakery@example.com"));
      return found.length ? found : null;
    });
    assert.equal(mails.length, 1);
    assert.deepEqual(JSON.parse(mails[0].body).to, ["orders@crumbandcrust.example"]);
    assert.ok((await leadsOf("bakery")).some((l) => l.email === "cara.bakery@example.com"));
  });

  it("auto-repair: a booking request is texted through Twilio and emailed through SendGrid", async () => {
    const res = await post("auto-repair", {
      name: "Dev Patel",
      phone: "(555) 010-2233",
      vehicle: "2016 Honda Civic",
      service: "brakes",
      preferred_date: "2026-12-03",
      "cf-turnstile-response": DUMMY_TOKEN,
    });
    assert.equal(res.status, 303, await res.text());
    const sms = await waitFor("the Twilio SMS", () => {
      const found = mesh.stubs.find("/2010-04-01/", "POST").filter((r) => r.body.includes("Honda"));
      return found.length ? found : null;
    });
    const mail = await waitFor("the SendGrid email", () => {
      const found = mesh.stubs.find("/v3/mail/send", "POST").filter((r) => r.body.includes("Honda"));
      return found.length ? found : null;
    });
    assert.equal(sms.length, 1);
    assert.equal(new URLSearchParams(sms[0].body).get("To"), "+15555550100");
    assert.equal(mail.length, 1);
    assert.match(mail[0].body, /service@northside-auto\.example/);
    const lead = (await leadsOf("auto-repair")).find((l) => l.vehicle === "2016 Honda Civic");
    assert.deepEqual(lead, {
      name: "Dev Patel",
      phone: "+15550102233",
      vehicle: "2016 Honda Civic",
      service: "brakes",
      preferred_date: "2026-12-03",
    });
  });

  it("software-agency: an inquiry reaches the CRM stub as a webhook whose signature it verifies", async () => {
    const res = await post("software-agency", {
      name: "Erin",
      email: "erin@northwind.example",
      company: "Northwind",
      project_type: "api",
      budget: "20k-50k",
      timeline: "quarter",
      message: "An API for our shop",
      "cf-turnstile-response": DUMMY_TOKEN,
    });
    assert.equal(res.status, 303, await res.text());
    const hooks = await waitFor("the CRM webhook", () => {
      const found = mesh.stubs.find("/crm/", "POST").filter((r) => r.body.includes("Northwind"));
      return found.length ? found : null;
    });
    assert.equal(hooks.length, 1);
    assert.equal(hooks[0].signatureValid, true, "the CRM stub accepted the HMAC signature");
    const body = JSON.parse(hooks[0].body);
    assert.equal(body.tenantId, "software-agency");
    assert.deepEqual(
      { company: body.lead.company, budget: body.lead.budget, timeline: body.lead.timeline },
      { company: "Northwind", budget: "20k-50k", timeline: "quarter" },
    );
  });

  it("the CRM stub refuses a webhook signed with another secret", async () => {
    const res = await fetch(`${mesh.stubs.url}/crm/inquiries`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-siteswarm-signature": `t=${Math.floor(Date.now() / 1000)},v1=${"0".repeat(64)}`,
      },
      body: "{}",
    });
    assert.equal(res.status, 401);
  });
});

describe("what the apps show from cms and monitoring", () => {
  const cmsAdmin = (tenant) => ({
    "X-SiteSwarm-Tenant-Id": tenant,
    authorization: `Bearer ${mesh.tokens[tenant].adminToken}`,
    "content-type": "application/json",
  });

  it("auto-repair: an emergency closure set in the studio shows as the banner", async () => {
    const res = await mesh.fetch("cms", "/admin/v1/overrides", {
      method: "POST",
      headers: cmsAdmin("auto-repair"),
      body: JSON.stringify({ closedNow: true, until: null, message: "Burst water pipe in the workshop" }),
    });
    const text = await res.text();
    assert.ok([200, 201].includes(res.status), text);
    const { id } = JSON.parse(text);
    try {
      const html = await (await mesh.fetch("auto-repair", "/")).text();
      assert.match(
        html,
        /<p class="announcement closure" data-level="emergency">Closed until further notice: Burst water pipe in the workshop<\/p>/,
      );
      assert.match(html, /<p id="status">Closed/);
    } finally {
      await mesh.fetch("cms", `/admin/v1/overrides/${id}`, { method: "DELETE", headers: cmsAdmin("auto-repair") });
    }
  });

  it("auto-repair: /status is its public status page, listing the monitor its manifest declares", async () => {
    const res = await mesh.fetch("auto-repair", "/status");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/html/);
    // The app's page headers, as on every HTML page of the app; monitoring's own policy (no
    // scripts) is kept, with frame-ancestors.
    assert.equal(res.headers.get("x-frame-options"), "DENY");
    assert.equal(res.headers.get("referrer-policy"), "strict-origin-when-cross-origin");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    const policy = res.headers.get("content-security-policy") ?? "";
    assert.match(policy, /default-src 'none'/);
    assert.match(policy, /frame-ancestors 'none'/);
    const html = await res.text();
    // The business's name (not the tenant id) and a way back to its home page.
    assert.match(html, /<title>Status — Northside Auto Repair<\/title>/);
    assert.match(html, /<a href="\/">← Back to Northside Auto Repair<\/a>/);
    assert.match(html, /<h1>Northside Auto Repair status<\/h1>/);
    assert.match(html, /home/);
    const json = await (await mesh.fetch("auto-repair", "/status.json")).json();
    assert.ok(JSON.stringify(json).includes("home"), JSON.stringify(json));
  });
});
