// The plain-JS peer of the leads worker's intake, for the load bench (tests/bench/leads-load.mjs): what a
// Workers user would write by hand for POST /api/leads/submit, doing the same work as leads.wasm on the
// same schema (migrations/leads) so that the two can be compared at the same concurrency.
//
// Same as the C++ intake (workers/leads/intake.cpp): tenant auth (SHA-256 of X-SiteSwarm-Tenant-Token
// against tenants.token_hash, enabled, capability major 1), 32 KiB body limit (413), content types
// (415), the tenant's leads config with its defaults, the D1 rate-limit window per tenant + client
// network (same SQL, same hashed bucket, 429 + Retry-After), JSON / urlencoded / multipart bodies, the
// honeypot, the field rules (name/message lengths, control characters, email syntax, phone → E.164,
// extra fields, email or phone required, 400 invalid_lead with per-field problems), Idempotency-Key
// replay, Turnstile siteverify (fail-open when unreachable), one D1 batch (claim + lead + deliveries),
// then the 202 and, under ctx.waitUntil, one NOTIFY_QUEUE message per delivery and lead.received on
// EVENTS_QUEUE (not stored: the notifications are queued before answering).
// Differs (kept small on purpose): only this route (no admin API, no queue consumer); error messages
// are shorter; the config is read with fewer checks (it was validated when it was stored); ULIDs are
// not monotonic within a millisecond; multipart goes through Request.formData() (files are refused
// as non-text fields rather than parsed by hand); the phone rules are the C++ ones in a shorter form.
import { authenticateTenant, encoder, fail, sha256 } from "./peer-common.js";

const MAX_BODY = 32 * 1024;
const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
const SITEVERIFY = "https://challenges.cloudflare.com/turnstile/v0/siteverify";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
function ulid(now = Date.now()) {
  let out = "";
  for (let i = 9, t = now; i >= 0; i--, t = Math.floor(t / 32)) out = CROCKFORD[t % 32] + out;
  for (const b of crypto.getRandomValues(new Uint8Array(16))) out += CROCKFORD[b % 32];
  return out;
}
const rfc3339 = (ms) => new Date(ms).toISOString();

// ---- the tenant's leads config (validated when it was stored; defaults as in config.cpp)
function leadsConfig(raw) {
  const c = raw && typeof raw === "object" ? raw : {};
  const notify = c.notify ?? {};
  return {
    store: c.storeSubmissions !== false,
    honeypot: c.honeypotField ?? "company_website",
    turnstile: c.turnstile !== "off",
    limit: c.rateLimit?.limit ?? 5,
    period: c.rateLimit?.periodSeconds ?? 60,
    redirect: c.redirectUrl ?? "",
    extras: new Set(c.fields ?? []),
    country: c.defaultCountryCode ?? "1",
    channels: [
      ...(notify.email ? [["email", notify.email.provider ?? "resend", ""]] : []),
      ...[...new Set(notify.sms?.to ?? [])].map((to) => ["sms", "twilio", to]), // each number once, as C++
      ...(notify.webhook ? [["webhook", "webhook", ""]] : []),
    ],
  };
}

// ---- the rate-limit subject: IPv4 /32, IPv6 /64, or one shared window without an IP
function rateSubject(ip) {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
  if (v4?.slice(1).every((x) => Number(x) <= 255)) return `ip4:${v4.slice(1).map(Number).join(".")}`;
  if (!ip.includes(":") || !/^[0-9a-fA-F:.]+$/.test(ip)) return "no-client-ip";
  const [head, tail = null] = ip.toLowerCase().split("::");
  const h = head ? head.split(":") : [];
  const t = tail === null ? [] : tail ? tail.split(":") : [];
  const last = (tail === null ? h : t).at(-1) ?? "";
  if (last.includes(".")) return rateSubject(last); // ::ffff:a.b.c.d
  const words = [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
  if (words.length !== 8 || words.some((w) => !/^[0-9a-f]{1,4}$/.test(w))) return "no-client-ip";
  return `ip6:${words
    .slice(0, 4)
    .map((w) => w.padStart(4, "0"))
    .join(":")}::/64`;
}

// ---- field rules (lead.cpp)
const EMAIL_BAD = /[\s<>(),;\\"[\]]/;
function isEmail(s) {
  if (!s || s.length > 254) return false;
  const at = s.lastIndexOf("@");
  if (at <= 0 || at > 64 || at + 1 >= s.length || s.slice(0, at).includes("@")) return false;
  const domain = s.slice(at + 1);
  const dot = domain.lastIndexOf(".");
  if (dot <= 0 || dot + 2 > domain.length || domain.includes("..") || domain[0] === "-") return false;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  return !EMAIL_BAD.test(s) && !/[\x00-\x20\x7f]/.test(s);
}
function e164(raw, cc) {
  if (!/^\+?[0-9 .()-]*$/.test(raw) || raw.indexOf("+") > 0) return null;
  const plus = raw.startsWith("+");
  let digits = raw.replace(/\D/g, "");
  let intl = plus;
  if (!plus) {
    if (digits.startsWith("00")) {
      digits = digits.slice(2);
      intl = true;
    } else if (!(cc === "1" && digits.length === 11 && digits[0] === "1")) {
      digits = cc + (digits[0] === "0" ? digits.slice(1) : digits);
    }
  }
  if (digits.length < 8 || digits.length > 15 || digits[0] === "0") return null;
  if (cc === "1" && !intl && digits.length !== 11) return null;
  return `+${digits}`;
}
const length = (s) => [...s].length;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
const controls = (s, newlines) => (newlines ? /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/ : /[\x00-\x1f\x7f]/).test(s);

function validate(fields, config) {
  const lead = {};
  const problems = {};
  const seen = new Set();
  let token = "";
  let honeypot = false;
  for (const [name, raw] of fields) {
    if (name === config.honeypot) {
      if (raw.trim()) honeypot = true;
      continue;
    }
    if (name === "turnstileToken" || name === "cf-turnstile-response") {
      if (raw.length > 2048) problems[name] = "is too long";
      token ||= raw;
      continue;
    }
    if (seen.has(name)) {
      problems[name] = "is sent more than once";
      continue;
    }
    seen.add(name);
    const value = raw.trim();
    if (name === "name") {
      if (length(value) > 200 || controls(value, false))
        problems.name = "must be at most 200 characters, without control characters";
      else if (value) lead.name = value;
    } else if (name === "email") {
      if (value && !isEmail(value)) problems.email = "is not an email address";
      else if (value) lead.email = value;
    } else if (name === "phone") {
      if (value) {
        const phone = e164(value, config.country);
        if (phone) lead.phone = phone;
        else problems.phone = "is not a phone number (use international format, e.g. +15550109999)";
      }
    } else if (name === "message") {
      if (length(value) > 5000 || controls(value, true))
        problems.message = "must be at most 5000 characters, without control characters";
      else if (value) lead.message = value;
    } else if (config.extras.has(name)) {
      if (length(value) > 1000 || controls(value, true))
        problems[name] = "must be at most 1000 characters, without control characters";
      else if (value) lead[name] = value;
    } else {
      problems[name] = "is not a field this form accepts";
    }
  }
  if (honeypot) return { honeypot };
  if (!lead.email && !lead.phone && !problems.email && !problems.phone) {
    problems.email = "an email address or a phone number is required";
    problems.phone = "an email address or a phone number is required";
  }
  return Object.keys(problems).length ? { problems } : { lead, token };
}

async function readFields(request, media, text) {
  if (media === "application/json") {
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return { error: fail("invalid_json", "the body is not valid JSON") };
    }
    if (!body || typeof body !== "object" || Array.isArray(body))
      return { error: fail("invalid_request", "the body must be a JSON object") };
    const fields = [];
    for (const [k, v] of Object.entries(body)) {
      if (typeof v === "string") fields.push([k, v]);
      else if (typeof v === "number" || typeof v === "boolean") fields.push([k, JSON.stringify(v)]);
      else if (v !== null)
        return { error: fail("invalid_lead", "the lead has invalid fields", { fields: { [k]: "must be text" } }) };
    }
    return { fields };
  }
  if (media === "application/x-www-form-urlencoded") return { fields: [...new URLSearchParams(text)] };
  try {
    const form = await new Response(text, {
      headers: { "content-type": request.headers.get("content-type") },
    }).formData();
    const fields = [];
    for (const [k, v] of form) {
      if (typeof v !== "string") return { error: fail("invalid_request", "multipart body: only text fields") };
      fields.push([k, v]);
    }
    return { fields };
  } catch {
    return { error: fail("invalid_request", "multipart body: malformed") };
  }
}

async function turnstile(env, token, ip) {
  if (!token) return "failed";
  if (!env.TURNSTILE_SECRET_KEY) return "unreachable";
  const form = new URLSearchParams({
    secret: env.TURNSTILE_SECRET_KEY,
    response: token,
    idempotency_key: crypto.randomUUID(),
  });
  if (ip) form.set("remoteip", ip);
  try {
    const res = await fetch(env.TURNSTILE_VERIFY_URL || SITEVERIFY, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form,
      signal: AbortSignal.timeout(5000),
    });
    const body = await res.json().catch(() => null);
    if (res.status !== 200 || typeof body?.success !== "boolean") return "unreachable";
    if (body.success) return "passed";
    return body["error-codes"]?.[0] === "internal-error" ? "unreachable" : "failed";
  } catch {
    return "unreachable";
  }
}

const event = (type, entity, payload, tenant, key) => ({
  event_id: ulid(),
  event_type: type,
  entity_ref: entity,
  payload,
  source_system: "siteswarm-leads-service",
  occurred_at: rfc3339(Date.now()),
  tenant_id: tenant,
  ...(key ? { idempotency_key: key } : {}),
});

async function submit(request, env, ctx) {
  const db = env.LEADS_DB;
  const auth = await authenticateTenant(request, db);
  if (auth.error) return auth.error;
  const { row } = auth;
  const tenantId = row.tenant_id;

  const text = await request.text();
  if (encoder.encode(text).length > MAX_BODY)
    return fail("payload_too_large", `the body is larger than ${MAX_BODY} bytes`);
  const media = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (!["application/json", "application/x-www-form-urlencoded", "multipart/form-data"].includes(media))
    return fail(
      "unsupported_media_type",
      "send application/json, application/x-www-form-urlencoded or multipart/form-data",
    );
  let config;
  try {
    config = leadsConfig(JSON.parse(row.config_json));
  } catch {
    return fail("service_unavailable", "this form is not configured correctly");
  }

  const ip = request.headers.get("cf-connecting-ip") ?? "";
  const now = Date.now();
  try {
    const bucket = `${tenantId}|${(await sha256(`leads-rate:${rateSubject(ip)}`)).slice(0, 32)}`;
    const win = await db
      .prepare(
        `INSERT INTO rate_limit_windows (bucket, hits, expires_at_ms) VALUES (?1, 1, ?3)
         ON CONFLICT (bucket) DO UPDATE SET
           hits = CASE WHEN rate_limit_windows.expires_at_ms <= ?2 THEN 1 ELSE rate_limit_windows.hits + 1 END,
           expires_at_ms = CASE WHEN rate_limit_windows.expires_at_ms <= ?2 THEN ?3 ELSE rate_limit_windows.expires_at_ms END
         RETURNING hits, expires_at_ms`,
      )
      .bind(bucket, now, now + config.period * 1000)
      .first();
    if (win.hits > config.limit) {
      const retry = String(Math.max(1, Math.ceil((win.expires_at_ms - now) / 1000)));
      return fail("rate_limited", "too many submissions; try again later", {}, { "retry-after": retry });
    }
  } catch (err) {
    console.log(`rate limit skipped: ${err.message}`); // availability over strictness, as in C++
  }

  const read = await readFields(request, media, text);
  if (read.error) return read.error;
  const checked = validate(read.fields, config);
  if (checked.problems) return fail("invalid_lead", "the lead has invalid fields", { fields: checked.problems });
  const accepted = (leadId) =>
    config.redirect && (request.headers.get("accept") ?? "").includes("text/html")
      ? new Response(null, { status: 303, headers: { location: config.redirect } })
      : Response.json({ ok: true, leadId }, { status: 202 });
  if (checked.honeypot) {
    const spam = event("lead.spam_absorbed", `tenant:${tenantId}`, { reason: "honeypot" }, tenantId);
    ctx.waitUntil(env.EVENTS_QUEUE.send(spam).catch(() => {}));
    return accepted(ulid());
  }

  const key = request.headers.get("idempotency-key") ?? "";
  if (key.length > 200) return fail("invalid_request", "Idempotency-Key is longer than 200 characters");
  const replay = () =>
    db
      .prepare(
        "SELECT lead_id FROM lead_idempotency WHERE tenant_id = ?1 AND idempotency_key = ?2 AND created_at_ms > ?3",
      )
      .bind(tenantId, key, Date.now() - IDEMPOTENCY_WINDOW_MS)
      .first("lead_id");
  if (key) {
    try {
      const first = await replay();
      if (first) return accepted(first);
    } catch {
      return fail("dependency_unavailable", "the lead could not be stored; retry later");
    }
  }

  let verified = true;
  if (config.turnstile) {
    const verdict = await turnstile(env, checked.token, ip);
    if (verdict === "failed") return fail("turnstile_failed", "Turnstile verification failed");
    verified = verdict === "passed";
  }

  const leadId = ulid();
  const createdAt = rfc3339(Date.now());
  const deliveries = config.channels.map(([channel, provider, recipient]) => ({
    id: ulid(),
    channel,
    provider,
    recipient,
  }));
  const writes = [];
  if (key) {
    writes.push(
      db
        .prepare("DELETE FROM lead_idempotency WHERE tenant_id = ?1 AND idempotency_key = ?2 AND created_at_ms <= ?3")
        .bind(tenantId, key, now - IDEMPOTENCY_WINDOW_MS),
      db
        .prepare(
          "INSERT INTO lead_idempotency (tenant_id, idempotency_key, lead_id, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
        )
        .bind(tenantId, key, leadId, now),
    );
  }
  if (config.store) {
    writes.push(
      db
        .prepare(
          "INSERT INTO leads (id, tenant_id, payload, turnstile_verified, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .bind(leadId, tenantId, JSON.stringify(checked.lead), verified ? 1 : 0, createdAt),
    );
  }
  for (const d of deliveries) {
    writes.push(
      db
        .prepare(
          `INSERT INTO lead_deliveries (id, tenant_id, lead_id, channel, provider, status, attempts, created_at, updated_at)
           VALUES (?1, ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?6)`,
        )
        .bind(d.id, tenantId, leadId, d.channel, d.recipient ? `${d.provider}:${d.recipient}` : d.provider, createdAt),
    );
  }
  try {
    if (writes.length) await db.batch(writes);
  } catch {
    const owner = key ? await replay().catch(() => null) : null;
    if (owner) return accepted(owner);
    return fail("dependency_unavailable", "the lead could not be stored; retry later");
  }

  const messages = deliveries.map((d) => ({
    deliveryId: d.id,
    tenantId,
    leadId,
    channel: d.channel,
    provider: d.provider,
    recipient: d.recipient,
    submittedAt: createdAt,
    lead: checked.lead,
  }));
  const enqueue = () => Promise.all(messages.map((body) => env.NOTIFY_QUEUE.send(body)));
  if (messages.length && config.store) {
    // Stored: the sweeper of the real worker re-sends a failed enqueue; answer first.
    ctx.waitUntil(enqueue().catch((err) => console.log(`enqueue failed: ${err.message}`)));
  } else if (messages.length) {
    try {
      await enqueue();
    } catch {
      return fail("dependency_unavailable", "notifications could not be queued; retry later");
    }
  }
  const received = event(
    "lead.received",
    `lead:${leadId}`,
    { leadId, stored: config.store, turnstileVerified: verified, channels: deliveries.map((d) => d.channel) },
    tenantId,
    `lead.received:${leadId}`,
  );
  ctx.waitUntil(env.EVENTS_QUEUE.send(received).catch(() => {}));
  return accepted(leadId);
}

export default {
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (pathname === "/health") return Response.json({ ok: true, service: "bench-leads-js" });
    if (pathname !== "/api/leads/submit" && pathname !== "/api/leads") return fail("not_found", "no such route");
    if (request.method !== "POST") return fail("method_not_allowed", "POST only");
    return submit(request, env, ctx);
  },
  // The peer's queues are consumed here and acknowledged: the bench measures intake, not delivery.
  async queue(batch) {
    batch.ackAll();
  },
};
