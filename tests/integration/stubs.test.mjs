// The third-party API stubs behave like the real APIs where the platform depends on it.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startStubs } from "../stubs/stub-server.mjs";

let stubs;
before(async () => {
  stubs = await startStubs();
});
after(() => stubs.close());

const post = (path, body, headers = {}) => fetch(`${stubs.url}${path}`, { method: "POST", body, headers });
const form = (fields) => new URLSearchParams(fields).toString();
const FORM = { "content-type": "application/x-www-form-urlencoded" };
const JSON_TYPE = { "content-type": "application/json" };

describe("stubs", () => {
  it("listen on 127.0.0.1 only", () => {
    assert.match(stubs.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("siteverify mirrors Cloudflare's test secrets, in form and JSON bodies", async () => {
    const verify = async (secret, response, json = false) => {
      const body = json ? JSON.stringify({ secret, response }) : form({ secret, response });
      return (await post("/turnstile/v0/siteverify", body, json ? JSON_TYPE : FORM)).json();
    };
    const pass = "1x0000000000000000000000000000000AA";
    assert.equal((await verify(pass, "XXXX.DUMMY.TOKEN.XXXX")).success, true);
    assert.equal((await verify(pass, "XXXX.DUMMY.TOKEN.XXXX", true)).success, true);
    assert.deepEqual((await verify(pass, "forged"))["error-codes"], ["invalid-input-response"]);
    const fail = await verify("2x0000000000000000000000000000000AA", "XXXX.DUMMY.TOKEN.XXXX");
    assert.deepEqual([fail.success, fail["error-codes"]], [false, ["invalid-input-response"]]);
    const spent = await verify("3x0000000000000000000000000000000AA", "XXXX.DUMMY.TOKEN.XXXX");
    assert.deepEqual(spent["error-codes"], ["timeout-or-duplicate"]);
    assert.deepEqual((await verify("", "x"))["error-codes"], ["missing-input-secret"]);
  });

  it("answer Resend, SendGrid, Twilio, PagerDuty, Slack and webhooks like the real APIs", async () => {
    const resend = await post("/emails", JSON.stringify({ to: ["a@b.example"] }), JSON_TYPE);
    assert.equal(resend.status, 200);
    assert.ok((await resend.json()).id);
    const sendgrid = { ...JSON_TYPE, authorization: "Bearer SG.key" };
    const mail = (from) => JSON.stringify({ personalizations: [{ to: [{ email: "a@b.example" }] }], from });
    assert.equal((await post("/v3/mail/send", mail({ email: "f@b.example", name: "Forms" }), sendgrid)).status, 202);
    assert.equal((await post("/v3/mail/send", mail({ email: "f@b.example" }), JSON_TYPE)).status, 401);
    // A display name inside from.email is not an address to SendGrid.
    assert.equal((await post("/v3/mail/send", mail({ email: "Forms <f@b.example>" }), sendgrid)).status, 400);

    const sms = form({ To: "+15555550100", From: "+15555550199", Body: "New lead" });
    const auth = { ...FORM, authorization: `Basic ${btoa("AC1:secret")}` };
    const twilio = await post("/2010-04-01/Accounts/AC1/Messages.json", sms, auth);
    assert.equal(twilio.status, 201);
    assert.equal((await twilio.json()).to, "+15555550100");
    assert.equal((await post("/2010-04-01/Accounts/AC1/Messages.json", sms, FORM)).status, 401);

    const payload = { summary: "site down", source: "monitor", severity: "critical" };
    const trigger = JSON.stringify({ routing_key: "rk", event_action: "trigger", dedup_key: "m-1", payload });
    const pd = await post("/v2/enqueue", trigger, JSON_TYPE);
    assert.equal(pd.status, 202);
    assert.equal((await pd.json()).dedup_key, "m-1");
    // As Events v2: a trigger without its payload, or a resolve without the dedup_key, is refused.
    const bare = JSON.stringify({ routing_key: "rk", event_action: "trigger" });
    assert.equal((await post("/v2/enqueue", bare, JSON_TYPE)).status, 400);
    const resolveNoKey = JSON.stringify({ routing_key: "rk", event_action: "resolve" });
    assert.equal((await post("/v2/enqueue", resolveNoKey, JSON_TYPE)).status, 400);
    const resolve = JSON.stringify({ routing_key: "rk", event_action: "resolve", dedup_key: "m-1" });
    assert.equal((await post("/v2/enqueue", resolve, JSON_TYPE)).status, 202);
    // Slack's incoming webhooks (SLACK_API_URL={stubs}/slack stands in for https://hooks.slack.com).
    const hook = "/slack/services/T000/B000/XXXX";
    assert.equal(await (await post(hook, JSON.stringify({ text: "site down" }), JSON_TYPE)).text(), "ok");
    const noText = await post(hook, "{}", JSON_TYPE);
    assert.deepEqual([noText.status, await noText.text()], [400, "no_text"]);
    const notJson = await post(hook, "text=hi", FORM);
    assert.deepEqual([notJson.status, await notJson.text()], [400, "invalid_payload"]);
    assert.equal(stubs.find("/slack/services/T000/B000/XXXX", "POST").length, 3);
    assert.equal((await post("/webhook/bakery", "{}", JSON_TYPE)).status, 200);
  });

  it("record every request and fail the next N on demand", async () => {
    stubs.reset();
    stubs.failNext("/webhook/", 2, 503);
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      statuses.push(
        (await post("/webhook/x", `{"n":${i}}`, { ...JSON_TYPE, "x-siteswarm-signature": "t=1,v1=ab" })).status,
      );
    }
    assert.deepEqual(statuses, [503, 503, 200]);
    const seen = stubs.find("/webhook/", "POST");
    assert.equal(seen.length, 3);
    assert.equal(seen[2].body, '{"n":2}');
    assert.equal(seen[2].headers["x-siteswarm-signature"], "t=1,v1=ab");
  });

  it("serve probe targets for monitors and expose the record over HTTP", async () => {
    const page = await fetch(`${stubs.url}/probe/ok`);
    assert.match(await page.text(), /<form id="contact"/);
    assert.equal((await fetch(`${stubs.url}/probe/status/503`)).status, 503);
    const { requests } = await (await fetch(`${stubs.url}/__stub/requests?path=/probe/`)).json();
    assert.ok(requests.length >= 2);
  });
});
