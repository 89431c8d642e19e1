// In-memory fakes behind `mockFallback: true` (local development outside workerd): the same result
// types and the same basic validation as the services. Used only when a binding is missing.
import { fallbackContent, fallbackStatus } from "./hours.js";
import { SiteSwarmError } from "./errors.js";

const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const PHONE = /^\+?[0-9 ().-]{6,24}$/;
const EVENT_TYPE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what an entity id may not hold
const ENTITY_REF = /^[a-z0-9_]+:[^\u0000-\u001f]+$/;
const TURNSTILE_FIELDS = new Set(["turnstileToken", "cf-turnstile-response"]);

export function createMocks({ appId, snapshot }) {
  const leadsByKey = new Map();
  const leads = [];
  const events = [];
  const eventsByKey = new Map();
  const pageviews = [];

  return {
    leads,
    events,
    pageviews,

    /**
     * @param {import("../index.d.ts").Lead} lead
     * @param {{ idempotencyKey?: string }} [options]
     */
    submitLead(lead, { idempotencyKey } = {}) {
      if (idempotencyKey !== undefined && leadsByKey.has(String(idempotencyKey))) {
        return { ok: true, leadId: leadsByKey.get(String(idempotencyKey)) };
      }
      const fields = {};
      const input = lead && typeof lead === "object" ? lead : {};
      const clean = {};
      for (const [name, raw] of Object.entries(input)) {
        if (TURNSTILE_FIELDS.has(name)) continue;
        const value = typeof raw === "string" ? raw.trim() : raw == null ? "" : String(raw);
        if (name === "email" && value !== "" && !EMAIL.test(value)) fields.email = "is not an email address";
        else if (name === "phone" && value !== "" && !PHONE.test(value)) fields.phone = "is not a phone number";
        else if (value !== "") clean[name] = value;
      }
      if (!clean.email && !clean.phone && !fields.email && !fields.phone) {
        fields.email = "an email address or a phone number is required";
        fields.phone = "an email address or a phone number is required";
      }
      if (Object.keys(fields).length) {
        throw new SiteSwarmError("invalid_lead", "the lead has invalid fields", { status: 400, details: { fields } });
      }
      const leadId = ulid();
      leads.push({ id: leadId, tenant_id: appId, ...clean, created_at: now() });
      if (idempotencyKey !== undefined) leadsByKey.set(String(idempotencyKey), leadId);
      return { ok: true, leadId };
    },

    emitEvent(event) {
      const e = event && typeof event === "object" ? event : {};
      const invalid = (field, message) =>
        new SiteSwarmError("invalid_event", `${field}: ${message}`, {
          status: 400,
          details: { field, fields: { [field]: message } },
        });
      if (typeof e.event_type !== "string" || !EVENT_TYPE.test(e.event_type) || e.event_type.length > 128) {
        throw invalid("event_type", "must be a dotted lower-case name such as price.changed");
      }
      if (typeof e.entity_ref !== "string" || !ENTITY_REF.test(e.entity_ref) || e.entity_ref.length > 256) {
        throw invalid("entity_ref", "must look like type:id");
      }
      const payload = e.payload ?? {};
      if (typeof payload !== "object" || Array.isArray(payload)) throw invalid("payload", "must be a JSON object");
      const key = e.idempotency_key;
      if (key !== undefined && key !== null && eventsByKey.has(String(key))) {
        return { event_id: eventsByKey.get(String(key)), duplicate: true };
      }
      const event_id = ulid();
      const [entity_type, ...rest] = e.entity_ref.split(":");
      events.push({
        event_id,
        tenant_id: appId,
        event_type: e.event_type,
        entity_type,
        entity_id: rest.join(":"),
        entity_ref: e.entity_ref,
        payload,
        idempotency_key: key ?? null,
        occurred_at: e.occurred_at ?? now(),
        recorded_at: now(),
      });
      if (key !== undefined && key !== null) eventsByKey.set(String(key), event_id);
      return { event_id };
    },

    /** @param {import("../index.d.ts").EventQuery} [query] */
    listEvents({ type, entity, after, limit } = {}) {
      const max = Math.min(Math.max(Number(limit) || 100, 1), 500);
      const typeMatch = type ? globRegExp(type) : null;
      const matching = events.filter(
        (e) =>
          (!typeMatch || typeMatch.test(e.event_type)) &&
          (!entity || e.entity_ref === entity) &&
          (!after || e.event_id > after),
      );
      const page = matching.slice(0, max).map((e) => structuredClone(e));
      const next = matching.length > max ? page[page.length - 1].event_id : null;
      return { events: page, next };
    },

    content() {
      return fallbackContent(appId, snapshot ?? {}, new Date());
    },

    status(at) {
      return fallbackStatus(snapshot ?? {}, at);
    },

    pageview({ url, referrer, width }) {
      if (typeof url !== "string" || url === "") {
        throw new SiteSwarmError("invalid_beacon", "url: is required", { status: 400, details: { field: "u" } });
      }
      pageviews.push({ u: url, r: referrer ?? "", w: width ?? null, at: now() });
    },
  };
}

function globRegExp(glob) {
  const escaped = glob.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
  return new RegExp(`^${escaped}$`);
}

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z");

// ULID: 48-bit ms time + 80 random bits, Crockford base32, monotonic within a millisecond.
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
let lastTime = -1;
let lastRandom = [];

export function ulid(time = Date.now()) {
  if (time <= lastTime) {
    time = lastTime;
    let i = lastRandom.length - 1;
    while (i >= 0 && lastRandom[i] === 31) lastRandom[i--] = 0;
    if (i >= 0) lastRandom[i] += 1;
  } else {
    lastTime = time;
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    lastRandom = Array.from(bytes, (b) => b & 31);
  }
  let t = "";
  let rest = time;
  for (let i = 0; i < 10; i++) {
    t = CROCKFORD[rest % 32] + t;
    rest = Math.floor(rest / 32);
  }
  return t + lastRandom.map((d) => CROCKFORD[d]).join("");
}
