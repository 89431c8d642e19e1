// In-memory fakes behind `mockFallback: true` (local development outside workerd): the same result
// types as the services, and their validation rules (./rules.js, checked against the real services
// by a shared table). Used only when a binding is missing.
import { SiteSwarmError } from "./errors.js";
import { fallbackContent, fallbackStatus } from "./hours.js";
import {
  idempotencyKeyOf,
  checkIdempotencyKeyLength,
  jsonTextOf,
  MAX_EVENT_BODY,
  MAX_SUBMISSION_BODY,
  turnstileTokenOf,
  validateBeacon,
  validateEvent,
  validateEventQuery,
  validateLead,
} from "./rules.js";

/**
 * @param {{ appId: string, snapshot?: object, cmsZone?: unknown, leadsConfig?: Record<string, any> }} options
 *   cmsZone: the manifest's `config.cms.timezone` (the zone of snapshot hours that name none);
 *   leadsConfig: the manifest's `config.leads` (extra `fields`, `honeypotField`, `defaultCountryCode`,
 *   `turnstile`: a token is required unless it is "off", as the leads worker's default is; any
 *   non-empty token passes, since there is no siteverify to ask)
 */
export function createMocks({ appId, snapshot, cmsZone, leadsConfig = {} }) {
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
      // The leads worker's order (intake.cpp): the body's size, the fields (the honeypot first), the
      // key, a replay, the honeypot's decoy, Turnstile, then the lead.
      const key = idempotencyKeyOf(idempotencyKey); // what a header cannot carry is refused before sending
      // The body as the client sends it (JSON), refused whole over 32 KiB before any field is read.
      if (new TextEncoder().encode(jsonTextOf(lead ?? {})).length > MAX_SUBMISSION_BODY) {
        throw new SiteSwarmError("payload_too_large", `the body is larger than ${MAX_SUBMISSION_BODY} bytes`, {
          status: 413,
        });
      }
      // What the service answers for a body that is JSON but no object (a list, a string, null).
      if (lead !== undefined && (lead === null || typeof lead !== "object" || Array.isArray(lead))) {
        throw new SiteSwarmError("invalid_request", "the body must be a JSON object", { status: 400 });
      }
      const checked = validateLead(lead, leadsConfig);
      if (!checked.ok) {
        throw new SiteSwarmError("invalid_lead", "the lead has invalid fields", {
          status: 400,
          // One field: named beside "fields", as the leads worker answers (docs/contract.md "Common rules").
          details: {
            ...(Object.keys(checked.fields).length === 1 && { field: Object.keys(checked.fields)[0] }),
            fields: checked.fields,
          },
        });
      }
      checkIdempotencyKeyLength(key);
      if (key !== undefined && leadsByKey.has(key)) return { ok: true, leadId: leadsByKey.get(key) };
      if (checked.honeypot) {
        // Like a success, nothing kept; a repeat of its key gets the same decoy id, as from the service.
        const decoy = ulid();
        if (key !== undefined) leadsByKey.set(key, decoy);
        return { ok: true, leadId: decoy };
      }
      if (leadsConfig.turnstile !== "off" && turnstileTokenOf(lead) === "") {
        throw new SiteSwarmError("turnstile_failed", "the Turnstile token is missing", { status: 403 });
      }
      const leadId = ulid();
      leads.push({ id: leadId, tenant_id: appId, ...checked.lead, created_at: now() });
      if (key !== undefined) leadsByKey.set(key, leadId);
      return { ok: true, leadId };
    },

    emitEvent(event) {
      // The event as the client sends it: JSON (a key holding undefined is no key at all), refused
      // whole over the ledger's body limit before anything in it is read (api.cpp require_json_body).
      const text = jsonTextOf(event ?? {});
      if (new TextEncoder().encode(text).length > MAX_EVENT_BODY) {
        throw new SiteSwarmError("payload_too_large", `the body is larger than ${MAX_EVENT_BODY} bytes`, {
          status: 413,
        });
      }
      // What the ledger answers for a body that is JSON but no object (a list, a string, null).
      if (event !== undefined && (event === null || typeof event !== "object" || Array.isArray(event))) {
        throw new SiteSwarmError("invalid_request", "the body must be a JSON object", { status: 400 });
      }
      const checked = validateEvent(JSON.parse(text));
      if (!checked.ok) {
        throw new SiteSwarmError(checked.code, checked.message, {
          status: checked.status,
          details: { field: checked.field, fields: checked.fields },
        });
      }
      const e = checked.event;
      // An empty key is no key, as the ledger reads it (ledger.cpp optional_of).
      const key = e.idempotency_key === "" ? null : e.idempotency_key;
      if (key !== undefined && key !== null && eventsByKey.has(String(key))) {
        return { event_id: eventsByKey.get(String(key)), duplicate: true };
      }
      // event_id is unique per tenant: a producer's id the ledger holds is that event, a duplicate.
      if (e.event_id && events.some((x) => x.event_id === e.event_id)) {
        return { event_id: e.event_id, duplicate: true };
      }
      const event_id = e.event_id || ulid();
      events.push({
        event_id,
        tenant_id: appId,
        event_type: e.event_type,
        entity_type: e.entity_type,
        entity_id: e.entity_id,
        entity_ref: e.entity_ref,
        payload: e.payload,
        idempotency_key: key ?? null,
        caused_by: e.caused_by || null,
        workflow_run_id: e.workflow_run_id || null,
        source_system: e.source_system || null,
        occurred_at: e.occurred_at || now(),
        recorded_at: now(),
        sequence_no: e.sequence_no ?? null,
      });
      if (key !== undefined && key !== null) eventsByKey.set(String(key), event_id);
      return { event_id };
    },

    /** @param {import("../index.d.ts").EventQuery} [query] */
    listEvents({ type, entity, after, limit } = {}) {
      const checked = validateEventQuery({ type, entity, after, limit });
      if (!checked.ok) {
        throw new SiteSwarmError(checked.code, checked.message, {
          status: checked.status,
          details: { field: checked.field, fields: checked.fields },
        });
      }
      const max = Number(limit) || 100; // checked above: absent, or 1–500
      // An entity is type:id, or a bare type for every entity of that type.
      const entityMatch = (e) => !entity || (String(entity).includes(":") ? e.entity_ref : e.entity_type) === entity;
      const typeMatch = type ? globRegExp(type) : null;
      // Insertion order, as the ledger pages: after the cursor event's position; an id it does not
      // hold starts at the first event whose id sorts after it.
      let start = 0;
      if (after) {
        const id = String(after).toUpperCase(); // the bare id: "<id>.<seq>" was refused above
        const at = events.findIndex((e) => e.event_id === id);
        const later = events.findIndex((e) => e.event_id > id);
        start = at >= 0 ? at + 1 : later >= 0 ? later : events.length;
      }
      const matching = events
        .slice(start)
        .filter((e) => (!typeMatch || typeMatch.test(e.event_type)) && entityMatch(e));
      const page = matching.slice(0, max).map((e) => structuredClone(e));
      const next = matching.length > max ? page[page.length - 1].event_id : null;
      return { events: page, next };
    },

    content() {
      return fallbackContent(appId, snapshot ?? {}, new Date(), cmsZone);
    },

    status(at) {
      return fallbackStatus(snapshot ?? {}, at, cmsZone);
    },

    /** @param {Partial<import("../index.d.ts").Pageview>} [view] */
    pageview({ url, referrer, width } = {}) {
      // The beacon exactly as the client puts it on the wire (undefined dropped, NaN/Infinity → null).
      const text = JSON.stringify({ u: url, r: referrer ?? "", w: width });
      // The beacon's 4 KiB, as the worker counts them (UTF-8 bytes of the body).
      if (new TextEncoder().encode(text).length > MAX_BEACON_BYTES) {
        throw new SiteSwarmError("payload_too_large", "the beacon is over 4096 bytes", { status: 413 });
      }
      const beacon = JSON.parse(text);
      const checked = validateBeacon(beacon);
      if (!checked.ok) {
        throw new SiteSwarmError(checked.code, checked.message, {
          status: checked.status,
          details: { field: checked.field, fields: checked.fields },
        });
      }
      pageviews.push({ u: beacon.u, r: beacon.r ?? "", w: beacon.w ?? null, at: now() });
    },
  };
}

const MAX_BEACON_BYTES = 4096; // workers/analytics/beacon.h kMaxBeaconBytes

function globRegExp(glob) {
  // '*' any run of characters, '?' one character, as the ledger's SQLite GLOB.
  const escaped = glob
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
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
