// Local stand-ins for every third-party API the platform calls, on 127.0.0.1 only: Turnstile
// siteverify and its browser widget, Resend, SendGrid, Twilio, PagerDuty, Slack, webhooks, a CRM that
// verifies the leads worker's webhook signature, and probe targets for monitors.
// Every request is recorded for assertions; `failNext(path, n)` makes the next n requests to a path
// prefix answer 500 (fault tests). The same controls are reachable over HTTP under /__stub/ so that
// tests against `scripts/dev` can use them too.
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import { seeded as seededRandom } from "../../bindings/faults-random.js";
import { TURNSTILE_WIDGET } from "./turnstile-widget.mjs";

// Cloudflare's official Turnstile test secrets (developers.cloudflare.com/turnstile/troubleshooting/testing).
const DUMMY_TOKEN = "XXXX.DUMMY.TOKEN.XXXX";
const TURNSTILE_SECRETS = {
  "1x0000000000000000000000000000000AA": (token) => (token === DUMMY_TOKEN ? [] : ["invalid-input-response"]),
  "2x0000000000000000000000000000000AA": () => ["invalid-input-response"],
  "3x0000000000000000000000000000000AA": () => ["timeout-or-duplicate"],
};

const PROBE_PAGE = `<!doctype html><html><head><title>Stub site</title></head>
<body><main id="main" class="content"><form id="contact" action="/api/leads/submit" method="post">
<input name="email"><button type="submit">Send</button></form></main></body></html>`;

// The CRM stub refuses a signature older than this (the leads worker signs each attempt afresh).
const CRM_SIGNATURE_TOLERANCE_SECONDS = 300;

/**
 * @param {{ port?: number, crmSecret?: string }} options port 0 picks a free one; crmSecret is the
 *   webhook signing secret the CRM stub (`POST /crm/...`) checks `X-SiteSwarm-Signature` against
 * @returns {Promise<{ url: string, port: number, requests: object[], find: Function,
 *   failNext: Function, reset: Function, close: Function }>}
 */
export async function startStubs({ port = 0, crmSecret = process.env.STUB_CRM_SECRET ?? "" } = {}) {
  const requests = [];
  const failures = new Map(); // path prefix → { remaining, status }
  const rates = new Map(); // path prefix → { rate, status, next: () => [0, 1) }

  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const url = new URL(req.url, "http://127.0.0.1");
    const body = Buffer.concat(chunks).toString("utf8");
    const record = {
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...req.headers },
      body,
      at: Date.now(),
    };
    const reply = (status, payload, headers = {}) => {
      const text = typeof payload === "string" ? payload : JSON.stringify(payload);
      const type = typeof payload === "string" ? "text/plain; charset=utf-8" : "application/json";
      res.writeHead(status, { "content-type": type, ...headers });
      res.end(req.method === "HEAD" ? undefined : text);
    };

    if (url.pathname.startsWith("/__stub/")) return control(stubs, url, record, reply);
    requests.push(record);
    for (const [prefix, failure] of failures) {
      if (url.pathname.startsWith(prefix) && failure.remaining > 0) {
        failure.remaining--;
        record.injectedFailure = failure.status;
        return reply(failure.status, { error: "stub failure injected" });
      }
    }
    for (const [prefix, failure] of rates) {
      if (url.pathname.startsWith(prefix) && failure.next() < failure.rate) {
        record.injectedFailure = failure.status;
        return reply(failure.status, { error: "stub failure injected" });
      }
    }
    try {
      await route(record, reply, { crmSecret });
    } catch (err) {
      reply(500, { error: String(err?.message ?? err) });
    }
  });

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const actualPort = server.address().port;

  const stubs = {
    url: `http://127.0.0.1:${actualPort}`,
    port: actualPort,
    requests,
    /** Recorded requests whose path starts with `prefix` (and whose method matches, if given). */
    find: (prefix, method) => requests.filter((r) => r.path.startsWith(prefix) && (!method || r.method === method)),
    /** The next `count` requests to paths starting with `prefix` answer `status`. */
    failNext(prefix, count = 1, status = 500) {
      failures.set(prefix, { remaining: count, status });
    },
    /**
     * From now on, each request to a path starting with `prefix` answers `status` with probability
     * `rate` (a seeded generator: the same run fails the same requests). Failed requests are recorded
     * with `injectedFailure: status`. A rate of 0 removes the rule.
     */
    failRate(prefix, rate, status = 500, seed = 1) {
      if (rate <= 0) rates.delete(prefix);
      else rates.set(prefix, { rate, status, next: seededRandom(seed) });
    },
    reset() {
      requests.length = 0;
      failures.clear();
      rates.clear();
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return stubs;
}

async function route(record, reply, { crmSecret }) {
  const { method, path } = record;
  if (method === "POST" && path === "/turnstile/v0/siteverify") return siteverify(record, reply);
  if (method === "GET" && path === "/turnstile/v0/api.js") {
    return reply(200, TURNSTILE_WIDGET, {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "no-store",
    });
  }
  if (method === "POST" && path.startsWith("/crm/")) return crm(record, reply, crmSecret);
  if (method === "POST" && path === "/emails") return reply(200, { id: randomUUID() }); // Resend
  if (method === "POST" && path === "/v3/mail/send") return sendgridMail(record, reply);
  const twilio = path.match(/^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/);
  if (method === "POST" && twilio) return twilioMessage(record, twilio[1], reply);
  if (method === "POST" && path.startsWith("/webhook/")) return reply(200, { ok: true });
  if (method === "POST" && path === "/v2/enqueue") return pagerDuty(record, reply);
  if (method === "POST" && path.startsWith("/slack/")) return slack(record, reply);
  if (path.startsWith("/probe/")) return probe(record, reply);
  return reply(404, { error: `no stub for ${method} ${path}` });
}

// Probe targets for monitors: /probe/ok (an HTML page with form#contact), /probe/status/503,
// /probe/slow?ms=800, /probe/missing (200 without the form).
async function probe({ path, query }, reply) {
  if (path === "/probe/ok") return reply(200, PROBE_PAGE, { "content-type": "text/html; charset=utf-8" });
  if (path === "/probe/missing") return reply(200, "<!doctype html><p>no form</p>", { "content-type": "text/html" });
  const status = path.match(/^\/probe\/status\/(\d{3})$/);
  if (status) return reply(Number(status[1]), `status ${status[1]}`);
  if (path === "/probe/slow") {
    await new Promise((r) => setTimeout(r, Math.min(Number(query.ms) || 1000, 30_000)));
    return reply(200, PROBE_PAGE, { "content-type": "text/html; charset=utf-8" });
  }
  return reply(404, "no such probe target");
}

function parseBody({ headers, body }) {
  const type = String(headers["content-type"] ?? "");
  if (type.includes("application/json")) {
    try {
      return JSON.parse(body || "{}");
    } catch {
      return null;
    }
  }
  if (type.includes("multipart/form-data")) {
    const fields = {};
    for (const m of body.matchAll(/name="([^"]+)"\r?\n\r?\n([\s\S]*?)\r?\n--/g)) fields[m[1]] = m[2];
    return fields;
  }
  return Object.fromEntries(new URLSearchParams(body));
}

function siteverify(record, reply) {
  const fields = parseBody(record);
  if (!fields) return reply(200, { success: false, "error-codes": ["bad-request"] });
  const { secret, response } = fields;
  if (!secret) return reply(200, { success: false, "error-codes": ["missing-input-secret"] });
  if (!response) return reply(200, { success: false, "error-codes": ["missing-input-response"] });
  const verdict = TURNSTILE_SECRETS[secret];
  if (!verdict) return reply(200, { success: false, "error-codes": ["invalid-input-secret"] });
  const errors = verdict(response);
  if (errors.length) return reply(200, { success: false, "error-codes": errors });
  return reply(200, {
    success: true,
    challenge_ts: new Date().toISOString(),
    hostname: "localhost",
    "error-codes": [],
    action: "",
    cdata: "",
  });
}

// SendGrid v3 mail/send: a bearer key, and a `from.email` that is an address alone (a display
// name goes in `from.name`; "Name <address>" in `email` is refused as the real API refuses it).
function sendgridMail(record, reply) {
  if (!record.headers.authorization?.startsWith("Bearer ")) {
    return reply(401, {
      errors: [{ message: "The provided authorization grant is invalid, expired, or revoked", field: null }],
    });
  }
  const mail = parseBody(record);
  if (!/^[^\s<>@]+@[^\s<>@]+$/.test(String(mail?.from?.email ?? ""))) {
    return reply(400, {
      errors: [{ message: "The from email does not contain a valid address.", field: "from.email" }],
    });
  }
  return reply(202, "");
}

function twilioMessage(record, accountSid, reply) {
  const { To, From, Body, MessagingServiceSid } = parseBody(record) ?? {};
  if (!record.headers.authorization?.startsWith("Basic ")) {
    return reply(401, { code: 20003, message: "Authenticate", status: 401 });
  }
  if (!To || !Body || (!From && !MessagingServiceSid)) {
    return reply(400, { code: 21604, message: "A 'To', 'From' and 'Body' are required", status: 400 });
  }
  return reply(201, {
    sid: `SM${randomUUID().replaceAll("-", "")}`,
    account_sid: accountSid,
    to: To,
    from: From ?? null,
    body: Body,
    status: "queued",
  });
}

// A CRM receiving the leads worker's signed webhook: `X-SiteSwarm-Signature: t=<unix>,v1=<hex
// HMAC-SHA256(secret, "t.body")>`. A bad, stale or missing signature is 401 (the leads worker retries
// and finally dead-letters it, where it is visible); the verdict is kept on the record for tests.
function crm(record, reply, secret) {
  const header = String(record.headers["x-siteswarm-signature"] ?? "");
  const t = header.match(/(?:^|,)t=(\d+)/)?.[1];
  const v1 = header.match(/(?:^|,)v1=([0-9a-f]{64})(?:,|$)/)?.[1];
  const expected = secret && t ? createHmac("sha256", secret).update(`${t}.${record.body}`).digest("hex") : "";
  const fresh = t && Math.abs(Date.now() / 1000 - Number(t)) <= CRM_SIGNATURE_TOLERANCE_SECONDS;
  record.signatureValid = Boolean(
    expected && v1 && fresh && timingSafeEqual(Buffer.from(v1, "hex"), Buffer.from(expected, "hex")),
  );
  if (!record.signatureValid) return reply(401, { error: "invalid signature" });
  return reply(200, { ok: true, id: `crm_${randomUUID()}` });
}

function pagerDuty(record, reply) {
  const event = parseBody(record);
  // As Events v2 checks: a trigger needs payload.summary/source/severity; acknowledge and resolve
  // need the dedup_key of the incident they act on.
  const p = event?.payload;
  const valid =
    event?.routing_key &&
    (event.event_action === "trigger"
      ? p?.summary && p?.source && ["critical", "error", "warning", "info"].includes(p?.severity)
      : ["acknowledge", "resolve"].includes(event?.event_action) && event?.dedup_key);
  if (!valid) {
    return reply(400, { status: "invalid event", message: "Event object is invalid" });
  }
  return reply(202, {
    status: "success",
    message: "Event processed",
    dedup_key: event.dedup_key ?? randomUUID(),
  });
}

// Slack incoming webhooks: the monitors' (https://hooks.slack.com/services/... reaches
// /slack/services/... through SLACK_API_URL={stubs}/slack) and the ledger's operator alerts. As Slack
// answers: a JSON message with text (or blocks or attachments) is 200 "ok"; a body that is not JSON
// is 400 "invalid_payload", a message without text 400 "no_text".
function slack(record, reply) {
  let message;
  try {
    message = JSON.parse(record.body);
  } catch {
    return reply(400, "invalid_payload");
  }
  if (!message || typeof message !== "object" || !(message.text || message.blocks || message.attachments)) {
    return reply(400, "no_text");
  }
  return reply(200, "ok");
}

// GET /__stub/requests[?path=prefix], POST /__stub/reset, POST /__stub/fail?path=&count=&status=
function control(stubs, url, record, reply) {
  const prefix = url.searchParams.get("path") ?? "/";
  if (url.pathname === "/__stub/requests") return reply(200, { requests: stubs.find(prefix) });
  if (url.pathname === "/__stub/reset" && record.method === "POST") {
    stubs.reset();
    return reply(200, { ok: true });
  }
  if (url.pathname === "/__stub/fail" && record.method === "POST") {
    stubs.failNext(prefix, Number(url.searchParams.get("count") ?? 1), Number(url.searchParams.get("status") ?? 500));
    return reply(200, { ok: true });
  }
  return reply(404, { error: "unknown stub control" });
}
