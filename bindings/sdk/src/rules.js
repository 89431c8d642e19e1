// The platform's input rules, for the in-memory fakes of `mockFallback`: what the leads worker
// (workers/leads/lead.cpp validate_submission, config.cpp is_email), the events worker
// (workers/events/ledger.cpp parse_new_event) and the analytics worker (workers/analytics/beacon.cpp
// parse_beacon) accept, field by field, with the same messages. The
// C++ services are the source of truth; tests/integration/sdk-workerd.test.mjs runs one table of
// inputs (tests/integration/fixtures/validation-table.mjs) through the real services and through these
// rules and requires the same verdict for every row, so the two cannot drift apart unnoticed.

import { SiteSwarmError } from "./errors.js";
import { rfc3339Ms } from "./hours.js";

// leads (workers/leads/lead.h)
export const MAX_NAME_LENGTH = 200;
export const MAX_MESSAGE_LENGTH = 5000;
export const MAX_EXTRA_VALUE_LENGTH = 1000;
export const MAX_TURNSTILE_TOKEN = 2048;
export const MAX_SUBMISSION_BODY = 32 * 1024; // kMaxSubmissionBody: bytes of the body, checked first
export const MAX_EVENT_BODY = 80 * 1024; // workers/events/ledger.h kMaxEventBody: the payload's 64 KiB and 16 more
const MAX_EMAIL = 254;
const MAX_EMAIL_LOCAL = 64;
const MIN_PHONE_DIGITS = 7;
const MAX_PHONE_DIGITS = 15; // E.164
const TURNSTILE_FIELDS = new Set(["turnstileToken", "cf-turnstile-response"]);
export const MAX_IDEMPOTENCY_KEY = 200; // intake.cpp kMaxIdempotencyKey, bytes (ASCII here)
// What an HTTP header carries exactly as given: printable ASCII, no leading or trailing space (a
// header value is trimmed on the way, so such a key would reach the service as another key).
const HEADER_SAFE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * A call's `idempotencyKey` as it can be sent: undefined for none (an empty key is no key, as the
 * leads worker reads the header); 400 `invalid_request` naming `Idempotency-Key` for one that an
 * HTTP header cannot carry as given. Its length is the service's to judge (after the lead's fields).
 * @param {unknown} key
 * @returns {string | undefined}
 */
export function idempotencyKeyOf(key) {
  if (key === undefined || key === null) return undefined;
  const text = String(key);
  if (text === "") return undefined;
  if (!HEADER_SAFE.test(text)) {
    const problem = "must be printable ASCII without leading or trailing spaces";
    throw new SiteSwarmError("invalid_request", `Idempotency-Key ${problem}`, {
      status: 400,
      details: { field: "Idempotency-Key", fields: { "Idempotency-Key": problem } },
    });
  }
  return text;
}

/** Throws the leads worker's 400 naming Idempotency-Key for a key over 200 bytes. */
export function checkIdempotencyKeyLength(key) {
  if (key === undefined || key.length <= MAX_IDEMPOTENCY_KEY) return;
  throw new SiteSwarmError("invalid_request", "Idempotency-Key is longer than 200 characters", {
    status: 400,
    details: { field: "Idempotency-Key", fields: { "Idempotency-Key": "longer than 200 characters" } },
  });
}

/** The Turnstile token a submission carries (the first of the two fields set, as lead.cpp reads it), or "". */
export function turnstileTokenOf(input) {
  for (const [name, raw] of Object.entries(input && typeof input === "object" ? input : {})) {
    if (!TURNSTILE_FIELDS.has(name) || raw === null || raw === undefined || typeof raw === "object") continue;
    const text = typeof raw === "string" ? raw : JSON.stringify(raw);
    if (text !== "") return text;
  }
  return "";
}

/**
 * `value` as JSON text; a value JSON cannot hold (a BigInt, a cycle) is the caller's 400
 * `invalid_request`, before anything is sent.
 * @param {unknown} value
 */
export function jsonTextOf(value) {
  try {
    return JSON.stringify(value);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new SiteSwarmError("invalid_request", `the body cannot be sent as JSON: ${why}`, { status: 400 });
  }
}

// events (workers/events/ledger.h)
export const MAX_EVENT_TYPE_LENGTH = 128;
export const MAX_REF_LENGTH = 200;
export const MAX_PAYLOAD_BYTES = 64 * 1024;
// shared/ulid.cpp is_ulid: 26 Crockford base32 characters, the first at most 7 (48-bit time).
const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
// ledger.h kMaxEventIdSkewMs: how far ahead of the ledger's clock a producer's event_id may be.
export const MAX_EVENT_ID_SKEW_MS = 5 * 60 * 1000;
// workers/events/ledger.h kReservedKeyPrefixes: the keys of the ledger's own records.
const RESERVED_KEY_PREFIXES = [
  "workflow.run_started:",
  "workflow.run_failed:",
  "workflow.run_completed:",
  "tenant.health_changed:",
  "anomaly:",
  "fanout_capped:",
  "retention:",
  "ledger:",
];
// workers/events/ledger.h kLedgerTypePrefixes: the ledger's own record types, refused from a tenant.
const LEDGER_TYPE_PREFIXES = ["events.", "anomaly.", "tenant.health"];
const MAX_GLOB_LENGTH = 128; // shared/glob.h
const MAX_READ_LIMIT = 500;

const utf8 = new TextEncoder();
/** The string's UTF-8 bytes as one char each, so lengths and indexes count bytes as in C++. */
const bytes = (s) => {
  // In slices: spreading a whole large string's bytes as arguments overflows the call stack.
  const encoded = utf8.encode(s);
  let out = "";
  for (let i = 0; i < encoded.length; i += 8192) out += String.fromCharCode(...encoded.subarray(i, i + 8192));
  return out;
};
const trim = (s) => s.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, "");
const codePoints = (s) => [...s].length;

function hasControlChars(s, allowNewlines) {
  for (const ch of s) {
    const u = ch.codePointAt(0);
    // C0 and DEL, and the C1 range U+0080–U+009F (as shared/text.cpp has_control_chars).
    if (u === 0x7f || (u >= 0x80 && u <= 0x9f)) return true;
    if (u < 0x20 && !(allowNewlines && (ch === "\n" || ch === "\r" || ch === "\t"))) return true;
  }
  return false;
}

/** config.cpp is_email. */
export function isEmail(value) {
  const s = bytes(value);
  if (s === "" || s.length > MAX_EMAIL) return false;
  const at = s.lastIndexOf("@");
  if (at <= 0 || at > MAX_EMAIL_LOCAL || at + 1 >= s.length) return false;
  const domain = s.slice(at + 1);
  const dot = domain.lastIndexOf(".");
  if (dot <= 0 || dot + 2 > domain.length) return false;
  // Labels joined by dots: none empty, none starting with '-' (so not ".b.com").
  if (
    domain.includes("..") ||
    domain.startsWith("-") ||
    domain.startsWith(".") ||
    domain.includes(".-") ||
    domain.includes("-.") ||
    domain.endsWith("-")
  ) {
    return false;
  }
  // The local part as a dot-atom: no leading or trailing dot, no two in a row (".a@", "a..b@").
  const local = s.slice(0, at);
  if (local.startsWith(".") || local.endsWith(".") || local.includes("..")) return false;
  // No control character of any kind (DEL and the C1 range too), as every other field.
  if (hasControlChars(value, false)) return false;
  for (const c of s) {
    if (c.charCodeAt(0) <= 0x20 || '<>(),;\\"[]'.includes(c)) return false;
  }
  return !s.slice(0, at).includes("@");
}

/** lead.cpp normalize_phone: E.164 (`+15550102000`) or null. */
export function normalizePhone(raw, countryCode = "1") {
  let digits = "";
  let plus = false;
  for (const c of raw) {
    if (c >= "0" && c <= "9") digits += c;
    else if (c === "+" && digits === "" && !plus) plus = true;
    else if (!" -.()".includes(c)) return null;
  }
  let international = plus;
  if (!plus) {
    if (digits.startsWith("00")) {
      digits = digits.slice(2); // international prefix 00
      international = true;
    } else if (countryCode === "1" && digits.length === 11 && digits[0] === "1") {
      // NANP with trunk prefix 1
    } else {
      if (digits.startsWith("0")) digits = digits.slice(1); // national trunk prefix
      digits = countryCode + digits;
    }
  }
  if (digits.length < MIN_PHONE_DIGITS + 1 || digits.length > MAX_PHONE_DIGITS || digits[0] === "0") return null;
  if (countryCode === "1" && !international && digits.length !== 11) return null;
  return `+${digits}`;
}

/**
 * A lead as the leads worker reads a JSON submission, for the tenant's leads config (`fields`,
 * `honeypotField`, `defaultCountryCode`).
 * @returns {{ ok: boolean, lead?: Record<string, string>, honeypot?: boolean, fields?: Record<string, string> }}
 */
export function validateLead(input, config = {}) {
  const honeypotField = config.honeypotField ?? "company_website";
  const extras = new Set(Array.isArray(config.fields) ? config.fields : []);
  const countryCode = config.defaultCountryCode ?? "1";
  // Without a prototype: a field named `__proto__` (JSON.parse makes it an own key) is a field like
  // any other, as the worker reads it, not the object's prototype.
  /** @type {Record<string, string>} */
  const problems = Object.create(null);
  /** @type {Record<string, string>} */
  const lead = Object.create(null);
  let honeypot = false;
  for (const [name, raw] of Object.entries(input && typeof input === "object" ? input : {})) {
    if (raw === null || raw === undefined) continue;
    if (typeof raw === "object") {
      // An object or a list is no text: a problem of the field, unless it fills the trap (the
      // honeypot is checked before the fields, so a bot is answered like a person either way).
      if (name === honeypotField) honeypot = true;
      else problems[name] = "must be text";
      continue;
    }
    const text = typeof raw === "string" ? raw : JSON.stringify(raw);
    if (name === honeypotField) {
      if (trim(text) !== "") honeypot = true;
      continue;
    }
    if (TURNSTILE_FIELDS.has(name)) {
      if (bytes(text).length > MAX_TURNSTILE_TOKEN) problems[name] = "is too long";
      continue;
    }
    const value = trim(text);
    if (name === "name") {
      if (codePoints(value) > MAX_NAME_LENGTH || hasControlChars(value, false)) {
        problems.name = "must be at most 200 characters, without control characters";
      } else if (value !== "") lead.name = value;
    } else if (name === "email") {
      if (value !== "" && !isEmail(value)) problems.email = "is not an email address";
      else if (value !== "") lead.email = value;
    } else if (name === "phone") {
      if (value !== "") {
        const e164 = normalizePhone(value, countryCode);
        if (!e164) problems.phone = "is not a phone number (use international format, e.g. +15550109999)";
        else lead.phone = e164;
      }
    } else if (name === "message") {
      if (codePoints(value) > MAX_MESSAGE_LENGTH || hasControlChars(value, true)) {
        problems.message = "must be at most 5000 characters, without control characters";
      } else if (value !== "") lead.message = value;
    } else if (extras.has(name)) {
      if (codePoints(value) > MAX_EXTRA_VALUE_LENGTH || hasControlChars(value, true)) {
        problems[name] = "must be at most 1000 characters, without control characters";
      } else if (value !== "") lead[name] = value;
    } else {
      problems[name] = "is not a field this form accepts";
    }
  }
  // Plain objects again for the caller, each field an own key (`__proto__` too).
  const plain = (o) => Object.fromEntries(Object.entries(o));
  if (honeypot) return { ok: true, lead: plain(lead), honeypot }; // bots get a success, whatever else they sent
  if (!lead.email && !lead.phone && !problems.email && !problems.phone) {
    problems.email = "an email address or a phone number is required";
    problems.phone = "an email address or a phone number is required";
  }
  if (Object.keys(problems).length) return { ok: false, fields: plain(problems) };
  return { ok: true, lead: plain(lead), honeypot };
}

/** ledger.cpp is_event_type: segment(.segment)+, a segment [a-z][a-z0-9_]*. */
export function isEventType(s) {
  return typeof s === "string" && s.length <= MAX_EVENT_TYPE_LENGTH && /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/.test(s);
}

// What POST /api/events reads (api.cpp post_event), and the keys an event's view adds (passing unread).
const EVENT_FIELDS = new Set([
  "event_type",
  "entity_ref",
  "payload",
  "idempotency_key",
  "event_id",
  "caused_by",
  "workflow_run_id",
  "source_system",
  "occurred_at",
  "sequence_no",
  "tenant_id",
]);
const EVENT_VIEW_FIELDS = new Set(["entity_type", "entity_id", "recorded_at"]);

/**
 * An event as the events worker reads `POST /api/events`.
 * @returns {{ ok: boolean, event?: any, code?: string, status?: number, field?: string, fields?: Record<string, string>, message?: string }}
 */
export function validateEvent(body, now = Date.now()) {
  const invalid = (field, message) => ({
    ok: false,
    code: "invalid_event",
    status: 400,
    field,
    fields: { [field]: message },
    message: `${field}: ${message}`, // as the ledger writes it (shared/error.cpp invalid_field)
  });
  const e = body && typeof body === "object" && !Array.isArray(body) ? body : {};
  // A key the ledger does not know is refused by name, first (api.cpp post_event); an event's view
  // passes with the keys it adds.
  // The first in sorted order, as the worker's JSON object holds its keys.
  const unknown = Object.keys(e)
    .sort()
    .find((k) => !EVENT_FIELDS.has(k) && !EVENT_VIEW_FIELDS.has(k));
  if (unknown !== undefined) {
    return invalid(unknown, `is not a known field (${[...EVENT_FIELDS].join(", ")})`);
  }
  if (typeof e.event_type !== "string") return invalid("event_type", "is required");
  if (!isEventType(e.event_type)) {
    return invalid("event_type", "must be a dotted lower-case name such as price.changed");
  }
  if (typeof e.entity_ref !== "string") return invalid("entity_ref", "is required, as type:id");
  const ref = e.entity_ref;
  const colon = ref.indexOf(":");
  if (colon <= 0 || colon + 1 === ref.length || bytes(ref).length > MAX_REF_LENGTH) {
    return invalid("entity_ref", "must look like type:id");
  }
  const entityType = ref.slice(0, colon);
  const entityId = ref.slice(colon + 1);
  if (!/^[a-z0-9_]+$/.test(entityType)) return invalid("entity_ref", "the type must be lower case [a-z0-9_]");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what an id may not hold
  if (/[\u0000-\u001f]/.test(entityId)) return invalid("entity_ref", "the id has control characters");
  // Required, as event_type and entity_ref are: an event without data is `payload: {}`.
  if (typeof e.payload !== "object" || e.payload === null || Array.isArray(e.payload)) {
    return invalid("payload", "is required, a JSON object ({} for none)");
  }
  if (bytes(JSON.stringify(e.payload)).length > MAX_PAYLOAD_BYTES) {
    return {
      ok: false,
      code: "payload_too_large",
      status: 413,
      field: "payload",
      fields: { payload: "larger than 64 KiB" },
      message: "payload: larger than 64 KiB",
    };
  }
  const payload = e.payload;
  const texts = { event_id: 64, idempotency_key: MAX_REF_LENGTH, caused_by: MAX_REF_LENGTH };
  Object.assign(texts, { workflow_run_id: MAX_REF_LENGTH, source_system: 64, occurred_at: 64 });
  for (const [field, max] of Object.entries(texts)) {
    const v = e[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string") return invalid(field, "must be a string");
    if (bytes(v).length > max) return invalid(field, `is longer than ${max} characters`);
  }
  if (typeof e.idempotency_key === "string" && RESERVED_KEY_PREFIXES.some((p) => e.idempotency_key.startsWith(p))) {
    return invalid(
      "idempotency_key",
      `the ledger reserves keys starting with ${RESERVED_KEY_PREFIXES.slice(0, -1).join(", ")} and ${RESERVED_KEY_PREFIXES.at(-1)} for its own records`,
    );
  }
  // Either case, kept upper case (shared/ulid.cpp canonical_ulid).
  const eventId =
    typeof e.event_id === "string" && ULID.test(e.event_id.toUpperCase()) ? e.event_id.toUpperCase() : e.event_id;
  if (eventId && !ULID.test(eventId)) {
    return invalid("event_id", "must be a ULID (26 characters, Crockford base32)");
  }
  // As the ledger reads it (shared/rfc3339.cpp): 'T'/'Z' in either case, no impossible day, hour 24
  // or second 60, the fraction truncated to milliseconds.
  const occurredMs = e.occurred_at ? rfc3339Ms(e.occurred_at) : null;
  if (e.occurred_at && occurredMs === null) {
    return invalid("occurred_at", "must be an RFC 3339 time such as 2026-05-25T14:23:11Z");
  }
  if (e.sequence_no !== undefined && e.sequence_no !== null) {
    if (!Number.isSafeInteger(e.sequence_no) || e.sequence_no < 0) {
      return invalid("sequence_no", "must be an integer from 0 to 9007199254740991");
    }
  }
  // api.cpp check_producer_event_id, once the event is read.
  if (eventId && ulidTime(eventId) > now + MAX_EVENT_ID_SKEW_MS) {
    return invalid("event_id", `its timestamp is more than ${MAX_EVENT_ID_SKEW_MS / 60000} minutes in the future`);
  }
  // api.cpp post_event, for a tenant (what an app is): the ledger's own record types are refused.
  if (LEDGER_TYPE_PREFIXES.some((p) => e.event_type.startsWith(p))) {
    return invalid("event_type", "events.*, anomaly.* and tenant.health* are the ledger's own records");
  }
  const event = { ...e, entity_type: entityType, entity_id: entityId, payload };
  if (eventId) event.event_id = eventId;
  // In UTC, as the ledger keeps it (ledger.cpp: milliseconds, shown without ".000").
  if (occurredMs !== null) event.occurred_at = new Date(occurredMs).toISOString().replace(/\.000Z$/, "Z");
  return { ok: true, event };
}

/** A ULID's time (ms since 1970). */
function ulidTime(id) {
  let ms = 0;
  for (const c of id.slice(0, 10)) ms = ms * 32 + "0123456789ABCDEFGHJKMNPQRSTVWXYZ".indexOf(c);
  return ms;
}

/**
 * A page query as the events worker reads `GET /api/events` (ledger.cpp parse_read_query): `type` a
 * glob of event-type characters, `entity` type:id or a bare type, `after` an event_id (a tenant's
 * page's next; the operator's "<event_id>.<seq>" is refused from a tenant), `limit` 1–500. Anything
 * else is 400 naming the parameter.
 * @param {{ type?: unknown, entity?: unknown, after?: unknown, limit?: unknown }} [query]
 * @returns {{ ok: boolean, code?: string, status?: number, field?: string, fields?: Record<string, string>, message?: string }}
 */
export function validateEventQuery({ type, entity, after, limit } = {}) {
  // As the service's invalid_field: the message "<field>: <problem>", `fields` the problem alone.
  const invalid = (field, problem) => ({
    ok: false,
    code: "invalid_request",
    status: 400,
    field,
    fields: { [field]: problem },
    message: `${field}: ${problem}`,
  });
  // As the client puts them in the URL: absent, null and "" are left out.
  const param = (v) => (v === undefined || v === null ? "" : String(v));
  const glob = param(type);
  if (glob && (bytes(glob).length > MAX_GLOB_LENGTH || !/^[a-z0-9._*?]+$/.test(glob))) {
    return invalid("type", "an event type holds only a-z, 0-9, '_' and '.' (glob: '*', '?')");
  }
  const ref = param(entity);
  if (ref) {
    const colon = ref.indexOf(":");
    const entityType = colon < 0 ? ref : ref.slice(0, colon);
    const entityId = colon < 0 ? null : ref.slice(colon + 1);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what an id may not hold
    const badId = entityId !== null && (entityId === "" || /[\u0000-\u001f]/.test(entityId));
    if (!/^[a-z0-9_]+$/.test(entityType) || badId || bytes(ref).length > MAX_REF_LENGTH) {
      return invalid("entity", "use type:id or a bare type (lower case [a-z0-9_], as in entity_ref)");
    }
  }
  const cursor = param(after);
  if (cursor && !/^[0-7][0-9A-HJKMNP-TV-Z]{25}(\.\d+)?$/i.test(cursor)) {
    return invalid("after", "must be an event_id (ULID) or a page's next");
  }
  const max = param(limit);
  if (max && !(/^\d+$/.test(max) && Number(max) >= 1 && Number(max) <= MAX_READ_LIMIT)) {
    return invalid("limit", `must be 1–${MAX_READ_LIMIT}`);
  }
  // api.cpp get_events, once the query is read, for a tenant (what an app is): "<event_id>.<seq>" is
  // the operator's cursor.
  if (cursor.includes(".")) return invalid("after", "must be an event_id (ULID): a tenant's page's next");
  return { ok: true };
}

// analytics (workers/analytics/beacon.cpp parse_beacon): the beacon the SDK's pageview() sends,
// {"u": url, "r": referrer, "w": width}.
export const MAX_VIEWPORT_WIDTH = 100000;

/** split_url's test: a scheme before "://" and a non-empty host after it (userinfo and port dropped). */
function urlScheme(url) {
  const colon = url.indexOf("://");
  if (colon <= 0) return null;
  const rest = url.slice(colon + 3);
  const end = rest.search(/[/?#]/);
  let authority = end < 0 ? rest : rest.slice(0, end);
  authority = authority.slice(authority.lastIndexOf("@") + 1);
  if (authority.startsWith("[")) {
    const close = authority.indexOf("]");
    if (close < 0) return null;
    authority = authority.slice(0, close + 1);
  } else if (authority.includes(":")) {
    authority = authority.slice(0, authority.indexOf(":"));
  }
  return authority === "" ? null : url.slice(0, colon).toLowerCase();
}

/** `{ok:true}` or `{ok:false, code, status, field, message}` as the analytics worker answers. */
export function validateBeacon({ u, r, w }) {
  const invalid = (field, why) => ({
    ok: false,
    code: "invalid_request",
    status: 400,
    field,
    fields: { [field]: why },
    message: `beacon: "${field}" ${why}`,
  });
  if (typeof u !== "string") return invalid("u", "must be the page URL (a string)");
  const scheme = urlScheme(u);
  if (scheme !== "http" && scheme !== "https") return invalid("u", "must be an absolute http(s) URL");
  if (r !== undefined && r !== null && typeof r !== "string") return invalid("r", "must be a string");
  if (w !== undefined && w !== null && (typeof w !== "number" || !(w >= 0 && w <= MAX_VIEWPORT_WIDTH))) {
    return invalid("w", "must be a number from 0 to 100000");
  }
  return { ok: true };
}
