// The typed platform client (docs/contract.md "Client SDK"): one object per app, talking to the platform
// workers over their Service Bindings. The three tenant headers are set here from the app's id,
// its manifest and its secret binding; callers never write them (and cannot: nothing they pass
// reaches the header list).
import {
  APP_ID,
  CAPABILITY_VERSION_HEADER,
  DEFAULT_VERSION,
  SERVICES,
  TENANT_ID_HEADER,
  TENANT_TOKEN_HEADER,
} from "./delegate.js";
import { retryAfterOf, SiteSwarmError } from "./errors.js";
import { fallbackContent, fallbackStatus, rfc3339Ms } from "./hours.js";
import { createMocks } from "./mock.js";
import { idempotencyKeyOf, jsonTextOf } from "./rules.js";

const ORIGIN = "https://platform.internal";

/**
 * @param {Partial<import("../index.d.ts").PlatformClientOptions>} [options] checked here at run time
 * @returns {import("../index.d.ts").PlatformClient}
 */
export function createPlatformClient(options = {}) {
  const { bindings = {}, manifest, mockFallback = false } = options;
  const { tokenBinding = "SITESWARM_TENANT_TOKEN" } = options;
  // How long a call may take before it counts as the service failing (503 service_unavailable): every
  // call, and — shorter, since a page waits on them and the snapshot can answer — the cms reads.
  const timeoutMs = positiveOr(options.timeoutMs, DEFAULT_TIMEOUT_MS);
  const cmsTimeoutMs = positiveOr(options.cmsTimeoutMs, DEFAULT_CMS_TIMEOUT_MS);
  const appId = options.appId ?? manifest?.appId;
  if (typeof appId !== "string" || !APP_ID.test(appId)) {
    throw new TypeError("createPlatformClient(): appId must match [a-z0-9][a-z0-9-]{0,62}");
  }
  const snapshot = isObject(manifest?.fallback) ? manifest.fallback : undefined;
  // The zone of snapshot hours that name none, as cms-service reads its seed (config.cms.timezone).
  const cmsConfig = /** @type {Record<string, unknown> | undefined} */ (manifest?.config?.cms);
  const cmsZone = isObject(cmsConfig) ? cmsConfig.timezone : undefined;
  let mocks; // created on first use, one in-memory store per client
  const leadsConfig = isObject(manifest?.config?.leads) ? manifest.config.leads : undefined;
  const mock = () => (mocks ??= createMocks({ appId, snapshot, cmsZone, leadsConfig }));

  const bindingOf = (area) => {
    const service = /** @type {import("../index.d.ts").ServiceBinding | undefined} */ (
      bindings?.[SERVICES[area].binding]
    );
    return typeof service?.fetch === "function" ? service : undefined;
  };

  const versionOf = (area) => {
    const version = manifest?.capabilities?.[SERVICES[area].capability]?.version;
    return typeof version === "string" && version !== "" ? version : DEFAULT_VERSION;
  };

  /**
   * One request to a platform worker; resolves to its status and parsed JSON body (null when empty).
   * What the caller got wrong (a key no header can carry, a body JSON cannot hold) is a 400 before
   * anything is sent.
   * @param {keyof typeof SERVICES} area
   * @param {string} method
   * @param {string} path
   * @param {{ body?: unknown, idempotencyKey?: string, query?: Record<string, unknown>,
   *   visitor?: { headers: Record<string, string>, cf?: unknown }, limitMs?: number }} [init]
   */
  async function call(area, method, path, { body, idempotencyKey, query, visitor, limitMs = timeoutMs } = {}) {
    const key = idempotencyKeyOf(idempotencyKey);
    const text = body === undefined ? undefined : jsonTextOf(body);
    const service = bindingOf(area);
    if (!service) {
      const name = SERVICES[area].binding;
      throw new SiteSwarmError("service_unavailable", `the ${name} service is not available`, { status: 503 });
    }
    const token = bindings[tokenBinding];
    if (typeof token !== "string" || token === "") {
      const message = `the tenant token (${tokenBinding}) is not configured`;
      throw new SiteSwarmError("service_unavailable", message, { status: 503 });
    }
    const url = new URL(path, ORIGIN);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, String(value));
    }
    // Built from scratch: only what the SDK itself decides goes in (and, for a pageview, the few
    // visitor headers the analytics worker reads).
    const headers = new Headers({ accept: "application/json", ...visitor?.headers });
    if (text !== undefined) headers.set("content-type", "application/json");
    if (key !== undefined) headers.set("Idempotency-Key", key);
    headers.set(TENANT_ID_HEADER, appId);
    headers.set(TENANT_TOKEN_HEADER, token);
    headers.set(CAPABILITY_VERSION_HEADER, versionOf(area));

    // The request is aborted once its time is up (a timer of our own: AbortSignal.timeout's does not
    // keep a Node process waiting for it).
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException("timed out", "TimeoutError")), limitMs);
    try {
      const request = new Request(url, {
        method,
        headers,
        signal: deadline.signal,
        ...(visitor?.cf && { cf: visitor.cf }), // the visitor's country and colo (workerd carries it)
        body: text,
      });
      // One deadline for the answer's head and body together, also from a binding that ignores
      // the signal (a head just in time does not buy the body a second `limitMs`).
      const answered = Promise.resolve(service.fetch(request)).then(readAnswer);
      const answer = await withDeadline(answered, limitMs, area);
      // The time ran out while the body was read (its reader then gives up quietly): not an answer.
      if (deadline.signal.aborted) throw notAnswered(area, limitMs);
      return answer;
    } catch (err) {
      if (err instanceof SiteSwarmError) throw err;
      throw notAnswered(area, deadline.signal.aborted ? limitMs : undefined);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * cms over Workers RPC when the binding offers the method (a service binding to the cms worker's
   * entrypoint), else over fetch. The RPC answer is `{ok:true,value}` or `{ok:false,status,error}`;
   * an RPC call that throws (no such method on the target, or the call itself failed) is retried
   * once over fetch, which has its own failure handling.
   */
  async function cmsCall(method, path, at) {
    const service = bindingOf("cms");
    const token = bindings[tokenBinding];
    if (service && typeof service[method] === "function" && typeof token === "string" && token !== "") {
      let out;
      try {
        const auth = { tenantId: appId, token, capabilityVersion: versionOf("cms") };
        out = await withDeadline(
          at === undefined ? service[method](auth) : service[method](auth, at),
          cmsTimeoutMs,
          "cms",
        );
      } catch (err) {
        if (err instanceof SiteSwarmError) throw err; // out of time: no second try over fetch
        out = undefined;
      }
      if (isObject(out) && typeof out.ok === "boolean") {
        if (out.ok) return cmsAnswer(method, 200, out.value);
        const { code, message, ...details } = isObject(out.error) ? out.error : {};
        const status = Number.isInteger(out.status) ? out.status : 500;
        if (typeof code !== "string") throw badResponse(status, `the RPC answer failed (${status}) without a code`);
        throw new SiteSwarmError(code, typeof message === "string" ? message : code, {
          status,
          details: Object.keys(details).length ? details : undefined,
        });
      }
    }
    const answer = await call("cms", "GET", path, { query: { at }, limitMs: cmsTimeoutMs });
    return cmsAnswer(method, answer.status, answer.body);
  }

  /** Uses the binding when there is one; the in-memory fake only when it is missing and allowed. */
  const viaServiceOrMock = (area, real, fake) => {
    if (bindingOf(area) || !mockFallback) return real();
    // The fakes answer what the services would: a capability version they do not speak is refused
    // first, as every service does (shared/tenant.cpp check_capability).
    const message = capabilityVersionProblem(versionOf(area));
    if (message) throw new SiteSwarmError("unsupported_capability_version", message, { status: 400 });
    return fake(mock());
  };

  /** cms reads: the service, else (missing binding or service failure) the manifest's snapshot. */
  async function cmsRead(real, fromSnapshot) {
    if (!bindingOf("cms")) {
      if (mockFallback) {
        // The fake refuses a capability version the service does not speak, as the other fakes do.
        const message = capabilityVersionProblem(versionOf("cms"));
        if (message) throw new SiteSwarmError("unsupported_capability_version", message, { status: 400 });
        return fromSnapshot();
      }
      if (snapshot) return fromSnapshot();
      return real(); // throws service_unavailable
    }
    try {
      return await real();
    } catch (err) {
      // Zero lockout: the service itself failed (down, 5xx, garbage) and the app has a snapshot.
      const failed = err instanceof SiteSwarmError && (err.status >= 500 || err.code === "bad_response");
      if (snapshot && failed) return fromSnapshot();
      throw err;
    }
  }

  return {
    appId,
    leads: {
      async submit(lead, { idempotencyKey, request } = {}) {
        return viaServiceOrMock(
          "leads",
          async () => {
            // The lead as given (`null` or a list is the service's 400 invalid_request, as the fake's),
            // with the visitor's address when the caller hands over the visitor's request.
            const body = lead === undefined ? {} : lead;
            const visitor = clientIpOf(request);
            const answer = await call("leads", "POST", "/api/leads/submit", { body, idempotencyKey, visitor });
            const { leadId } = expectField(answer, "leadId", "string");
            return { ok: true, leadId };
          },
          (m) => m.submitLead(lead, { idempotencyKey }),
        );
      },
    },
    events: {
      async emit(event) {
        return viaServiceOrMock(
          "events",
          async () => {
            const answer = await call("events", "POST", "/api/events", { body: event ?? {} });
            const { event_id, duplicate } = expectField(answer, "event_id", "string");
            return duplicate === true ? { event_id, duplicate: true } : { event_id };
          },
          (m) => m.emitEvent(event),
        );
      },
      async list({ type, entity, after, limit } = {}) {
        return viaServiceOrMock(
          "events",
          async () => {
            const answer = await call("events", "GET", "/api/events", { query: { type, entity, after, limit } });
            const { events, next } = expectField(answer, "events", "array");
            return { events, next: next ?? null };
          },
          (m) => m.listEvents({ type, entity, after, limit }),
        );
      },
    },
    cms: {
      async content() {
        return cmsRead(
          () => cmsCall("getContent", "/v1/content"),
          () => fallbackContent(appId, snapshot ?? {}, new Date(), cmsZone),
        );
      },
      async status(at) {
        const when = at === undefined || at === "" ? undefined : toRfc3339(at); // "" is "now", as the service reads it
        return cmsRead(
          () => cmsCall("getStatus", "/v1/status", when),
          () => fallbackStatus(snapshot ?? {}, when ? new Date(when) : new Date(), cmsZone),
        );
      },
    },
    analytics: {
      /** @param {import("../index.d.ts").PageviewInput} [view] */
      async pageview(view) {
        const { url, referrer, width, request } = pageviewOf(view);
        return viaServiceOrMock(
          "analytics",
          async () => {
            const body = { u: url, r: referrer, w: width };
            await call("analytics", "POST", "/beacon", { body, visitor: visitorOf(request) });
          },
          (m) => m.pageview({ url, referrer, width }),
        );
      },
    },
  };
}

/**
 * A pageview in any of the forms `analytics.pageview` takes: `{url, referrer?, width?, request?}`,
 * the beacon's own `{u, r?, w?}`, the page's URL alone, or the visitor's Request (its URL and
 * Referer, and the visitor it came from).
 * @param {import("../index.d.ts").PageviewInput} [view]
 */
function pageviewOf(view) {
  if (typeof view === "string") return { url: asBrowsersSendIt(view, PAGE), referrer: "" };
  // A Request, also one of another realm or a framework's wrapper: its URL and headers are all read.
  const r = /** @type {any} */ (view);
  if (typeof r?.url === "string" && typeof r?.headers?.get === "function") {
    return {
      url: asBrowsersSendIt(r.url, PAGE),
      referrer: asBrowsersSendIt(r.headers.get("referer") ?? "", REFERRER),
      request: /** @type {Request} */ (r),
    };
  }
  const v = isObject(view) ? view : {};
  return {
    url: asBrowsersSendIt(v.url ?? v.u, PAGE),
    referrer: asBrowsersSendIt(v.referrer ?? v.r ?? "", REFERRER),
    width: v.width ?? v.w,
    request: v.request,
  };
}

// A page's URL as the tracker sends it from a browser (`location.href`, parsed by the URL
// standard): `/café` percent-encoded, `/a/../b` resolved, the host lower-case (an international one
// in its `xn--` form), a default port dropped — so a pageview the app reports counts under the same
// path as the tracker's. And only what the service reads: the origin, the path and (a page's)
// utm_source/medium/campaign, no fragment — the rest of a query may hold an email or a
// token, and a long one made the beacon over 4 KiB, refused (413) and the pageview lost. A path is
// cut at MAX_SENT_PATH bytes (the service keeps 512 of it), before an escape, so that neither a long
// page URL nor a long Referer loses the pageview. Only a URL with a host and no userinfo is
// rewritten: one the parser would read otherwise (`https:///menu` as host `menu`, `https://u@host/`)
// or cannot read at all goes as given, for the service to answer (400 naming `u`).
const WITH_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#@\\]+(?:[/?#]|$)/;
const PAGE = true;
const REFERRER = false;
const MAX_SENT_PATH = 1024;
const UTM_NAMES = ["utm_source", "utm_medium", "utm_campaign"];
const MAX_UTM_BYTES = 100; // workers/analytics kMaxUtmLength
const utf8 = new TextEncoder();
/** The longest prefix of `s` (whole characters) of at most `max` UTF-8 bytes. */
function utf8Prefix(s, max) {
  let bytes = 0;
  let out = "";
  for (const ch of s) {
    bytes += utf8.encode(ch).length;
    if (bytes > max) break;
    out += ch;
  }
  return out;
}
function asBrowsersSendIt(url, keepUtm) {
  if (typeof url !== "string" || !WITH_AUTHORITY.test(url)) return url;
  try {
    const parsed = new URL(url);
    // The three the service reads, its way: the first non-empty value of each, cut before a
    // character at the 100 UTF-8 bytes the service keeps (at most 300 bytes once percent-encoded).
    const kept = new URLSearchParams();
    if (keepUtm) {
      for (const name of UTM_NAMES) {
        const value = parsed.searchParams.getAll(name).find((v) => v !== "");
        if (value !== undefined) kept.append(name, utf8Prefix(value, MAX_UTM_BYTES));
      }
    }
    parsed.search = kept.toString();
    parsed.hash = "";
    // The parsed path is ASCII (percent-encoded): a cut at a byte is a cut at a character, moved back
    // before an escape it would split.
    let path = parsed.pathname;
    if (path.length > MAX_SENT_PATH) {
      path = path.slice(0, MAX_SENT_PATH);
      const percent = path.lastIndexOf("%");
      if (percent > path.length - 3) path = path.slice(0, percent);
      parsed.pathname = path;
    }
    return parsed.href;
  } catch {
    return url;
  }
}

// The analytics worker reads the visitor from these headers (docs/analytics.md): a pageview
// reported with the visitor's own request is classified (device, browser, bots) and hashed as that
// visitor's; without one it is a server-reported pageview — counted, under the SDK's own user agent,
// with no visitor hash (DNT: 1), since there is no visitor to tell apart.
const VISITOR_HEADERS = ["user-agent", "cf-connecting-ip", "dnt", "sec-gpc"];
const SERVER_PAGEVIEW_USER_AGENT = "SiteSwarm-SDK/1.0 (server-reported pageview)";
/**
 * @param {Request | undefined} request
 * @returns {{ headers: Record<string, string>, cf?: unknown }}
 */
function visitorOf(request) {
  if (!request?.headers) return { headers: { "user-agent": SERVER_PAGEVIEW_USER_AGENT, dnt: "1" } };
  /** @type {Record<string, string>} */
  const headers = {};
  for (const name of VISITOR_HEADERS) {
    const value = request.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return { headers, cf: /** @type {Request & { cf?: unknown }} */ (request).cf };
}

/**
 * The visitor's address from the visitor's own request, for the leads service's rate limit (per
 * tenant and client IP) and its Turnstile check (docs/leads.md "Rate limit"): without it every lead
 * an app submits through the SDK shares its tenant's one window for requests without a client IP.
 * @param {Request | undefined} request
 * @returns {{ headers: Record<string, string> } | undefined}
 */
function clientIpOf(request) {
  const ip = typeof request?.headers?.get === "function" ? request.headers.get("cf-connecting-ip") : null;
  return ip ? { headers: { "cf-connecting-ip": ip } } : undefined;
}

const DEFAULT_TIMEOUT_MS = 10_000; // above the leads intake's own 5 s Turnstile wait
const DEFAULT_CMS_TIMEOUT_MS = 2_000;

// setTimeout's largest delay: a longer one fires at once.
const MAX_TIMER_MS = 2_147_483_647;

/** `value` when it is a positive finite number (at most MAX_TIMER_MS), else `fallback`. */
function positiveOr(value, fallback) {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.min(value, MAX_TIMER_MS) : fallback;
}

/** 503 service_unavailable for a service that failed to answer (in time, when `ms` is given). */
function notAnswered(area, ms) {
  const name = SERVICES[area].binding;
  const message =
    ms === undefined ? `the ${name} service did not answer` : `the ${name} service did not answer within ${ms} ms`;
  return new SiteSwarmError("service_unavailable", message, { status: 503 });
}

/** `promise`, or a 503 service_unavailable once `ms` have passed without it settling. */
function withDeadline(promise, ms, area) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(notAnswered(area, ms)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const SUPPORTED_CAPABILITY_MAJOR = 1;
// Semantic Versioning 2.0.0, the expression semver.org gives (what shared/text.cpp semver_major
// accepts): MAJOR.MINOR.PATCH without leading zeros, optional pre-release and build identifiers.
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/**
 * Why the services refuse a capability version (400 unsupported_capability_version: not a semantic
 * version, or a major they do not speak — the rule of shared/tenant.cpp check_capability, in the
 * SDK's own words), or null when they speak it. Also what scripts/provision checks a manifest's
 * versions with before anything is sent.
 * @param {string} version
 */
export function capabilityVersionProblem(version) {
  const semver = SEMVER.exec(version);
  if (!semver) return `capability version ${version.slice(0, 32)} is not a semantic version (MAJOR.MINOR.PATCH)`;
  if (Number(semver[1]) !== SUPPORTED_CAPABILITY_MAJOR) {
    return `capability version ${version.slice(0, 32)} is not supported; this service speaks ${SUPPORTED_CAPABILITY_MAJOR}.x`;
  }
  return null;
}

/**
 * A 2xx answer → its status and JSON body (null when empty); anything else → a SiteSwarmError (with
 * the answer's `Retry-After` seconds, if it sent them).
 * @returns {Promise<{ status: number, body: any }>}
 */
async function readAnswer(response) {
  const text = await response.text().catch(() => "");
  let body;
  let parsed = false;
  if (text !== "") {
    try {
      body = JSON.parse(text);
      parsed = true;
    } catch {
      // handled below
    }
  }
  if (response.ok) {
    if (text === "") return { status: response.status, body: null };
    if (!parsed) throw badResponse(response.status, "the service answered with a body that is not JSON");
    return { status: response.status, body };
  }
  const error = parsed && isObject(body?.error) ? body.error : undefined;
  if (!error || typeof error.code !== "string") {
    throw badResponse(response.status, `the service answered ${response.status} without a JSON error`);
  }
  const { code, message, ...details } = error;
  throw new SiteSwarmError(code, typeof message === "string" ? message : code, {
    status: response.status,
    details: Object.keys(details).length ? details : undefined,
    retryAfter: retryAfterOf(response),
  });
}

/**
 * A cms answer that has the shape its method promises (the content's lists and source, a status's
 * `open`), with the week's days Monday first as the snapshot's are; else bad_response, which a
 * cms read answers from the manifest's snapshot like any other failure of the service.
 */
function cmsAnswer(method, status, value) {
  const content = method === "getContent";
  const shaped = content
    ? isObject(value) &&
      typeof value.tenantId === "string" &&
      Number.isInteger(value.version) &&
      (value.hours === null || isObject(value.hours)) &&
      Array.isArray(value.overrides) &&
      Array.isArray(value.announcements) &&
      typeof value.source === "string"
    : isObject(value) &&
      typeof value.open === "boolean" &&
      typeof value.reason === "string" &&
      (value.nextChange === null || typeof value.nextChange === "string");
  if (!shaped) throw badResponse(status, `the cms answer is not ${content ? "the content" : "a status"}`);
  if (!content || !isObject(value.hours?.weekly)) return value;
  const weekly = value.hours.weekly;
  const ordered = Object.fromEntries(WEEKDAYS.filter((day) => day in weekly).map((day) => [day, weekly[day]]));
  return { ...value, hours: { ...value.hours, weekly: { ...ordered, ...weekly } } };
}

const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

function badResponse(status, message) {
  return new SiteSwarmError("bad_response", message, { status });
}

/** The answer's body when it has `field` of `type` ("array" for a list), else bad_response with its status. */
function expectField({ status, body }, field, type) {
  const value = body?.[field];
  if (type === "array" ? !Array.isArray(value) : typeof value !== type) {
    throw badResponse(status, `the answer has no ${field}`);
  }
  return body;
}

// The years cms-service computes a status for (its zone data starts in 2020): outside them it answers
// 400, and so does the SDK, also when the answer would come from the manifest's snapshot.
const FIRST_STATUS_YEAR = 2020;
const LAST_STATUS_YEAR = 2099;

function toRfc3339(at) {
  // A string is read as the service reads `at` (shared/rfc3339.cpp): an RFC 3339 date-time with its
  // offset, no impossible day, hour 24 or leap second — not whatever `Date` would guess it means.
  const date = typeof at === "string" ? new Date(rfc3339Ms(at) ?? Number.NaN) : at instanceof Date ? at : new Date(at);
  if (Number.isNaN(date.getTime())) {
    throw new SiteSwarmError("invalid_request", "at: not a valid time", {
      status: 400,
      details: { field: "at", fields: { at: "not a valid time" } },
    });
  }
  const year = date.getUTCFullYear();
  if (year < FIRST_STATUS_YEAR || year > LAST_STATUS_YEAR) {
    const problem = `must be an RFC 3339 date-time between ${FIRST_STATUS_YEAR} and ${LAST_STATUS_YEAR}`;
    throw new SiteSwarmError("invalid_request", `at ${problem}`, {
      status: 400,
      details: { field: "at", fields: { at: problem } },
    });
  }
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
