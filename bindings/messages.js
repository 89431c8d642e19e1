// Input messages (host → core) and the Response built from a fetch output (docs/abi.md).
import { DRAIN_BODY_BYTES, MAX_BODY_BYTES, readRequestBody } from "./effects/http.js";

// Enough for a lead intake with Turnstile and a notification (a UUID and two ULIDs: 36 bytes) without a
// crypto.random effect, which would cost a crossing into the core of its own (docs/performance.md).
const ENTROPY_BYTES = 64;
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

// Per-message entropy is cut from a pool drawn from the CSPRNG 128 messages at a time, each byte
// handed out once: one getRandomValues call and no per-byte string building per run (a /health hit
// costs little else; docs/performance.md).
const ENTROPY_POOL_BYTES = ENTROPY_BYTES * 128;
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));
let entropyPool = new Uint8Array(0);
let entropyUsed = 0;
function entropyHex() {
  if (entropyUsed + ENTROPY_BYTES > entropyPool.length) {
    entropyPool = crypto.getRandomValues(new Uint8Array(ENTROPY_POOL_BYTES));
    entropyUsed = 0;
  }
  let hex = "";
  for (let i = entropyUsed; i < entropyUsed + ENTROPY_BYTES; i++) hex += HEX[entropyPool[i]];
  entropyUsed += ENTROPY_BYTES;
  return hex;
}

// The string entries of an env, once per env object: workerd hands every request of an isolate the
// same env, whose vars and secrets do not change.
const envStrings = new WeakMap();
// Strings a worker's shim bundles for its core, under env names; the env's own entries win.
let envDefaults = {};

/**
 * Strings the core sees as env entries when the env has none of that name (or an empty one): what a worker bundles
 * instead of a variable (a variable or secret is at most 5 KB; cms's fallback seeds for hundreds of
 * tenants are larger). Called once, at the top of a worker's shim, before its first request.
 * @param {Record<string, string>} defaults
 */
export function setEnvDefaults(defaults) {
  envDefaults = Object.fromEntries(Object.entries(defaults).filter(([, v]) => typeof v === "string" && v !== ""));
}
/** A binding with a `fetch` method; an entry whose property read throws (a Proxy) is not one. */
function isFetcher(value) {
  try {
    return Boolean(value) && typeof value === "object" && typeof value.fetch === "function";
  } catch {
    return false;
  }
}

function stringsOf(env) {
  if (!env) return {};
  let strings = envStrings.get(env);
  if (!strings) {
    strings = Object.fromEntries(Object.entries(env).filter(([, value]) => typeof value === "string"));
    // A bundled default gives way to a variable of its name that is set, not to an empty one.
    for (const [name, value] of Object.entries(envDefaults)) if (!strings[name]) strings[name] = value;
    // Which entries are fetch-capable bindings (service bindings, and ASSETS), by name, so a core can
    // tell an operator naming one it does not have (docs/abi.md "Input messages"). Host-set only.
    strings.SS_SERVICE_BINDINGS = Object.entries(env)
      .filter(([, value]) => isFetcher(value))
      .map(([name]) => name)
      .join(",");
    envStrings.set(env, strings);
  }
  return strings;
}

/** What every message carries: `now`, `entropy` and the string env entries (vars, secrets). */
export function envelope(op, env) {
  return { op, now: Date.now(), entropy: entropyHex(), env: stringsOf(env) };
}

/** The request's body stream failed before its end: the client cut it short or went away. */
export class UnreadableBody extends Error {}

/** @param cfFields the `request.cf` fields the worker's core reads (defineWorker's `cf` option) */
export async function requestMessage(request, cfFields = NO_CF) {
  const bodiless = bodilessRequestMessage(request, cfFields);
  if (bodiless) return bodiless;
  let body;
  try {
    body = await readRequestBody(request.body, MAX_BODY_BYTES); // never buffers more than the limit
  } catch (err) {
    throw new UnreadableBody(String(err?.message ?? err));
  }
  const message = requestFields(request, body.text, body.tooLarge, cfFields);
  if (body.hex !== undefined) message.bodyHex = body.hex; // not UTF-8: the bytes as sent (docs/abi.md)
  return message;
}

/**
 * The request's message at once when no body is read (GET, HEAD, or a declared length over what is
 * read at all, DRAIN_BODY_BYTES); null when the body must be read first (requestMessage) — a body
 * declared over the limit included, which is read to its end and thrown away so that the client
 * gets its 413 rather than a reset connection. A GET costs no await this way.
 */
export function bodilessRequestMessage(request, cfFields = NO_CF) {
  const declared = Number(request.headers.get("content-length"));
  const bodied = request.method !== "GET" && request.method !== "HEAD";
  if (bodied && !(declared > DRAIN_BODY_BYTES)) return null;
  return requestFields(request, "", declared > MAX_BODY_BYTES, cfFields);
}

function requestFields(request, text, tooLarge, cfFields) {
  const message = {
    method: request.method,
    url: request.url,
    headers: requestHeaders(request.headers),
    body: text,
    bodyTooLarge: tooLarge,
  };
  if (cfFields.length > 0) message.cf = plainCf(request.cf, cfFields);
  return message;
}

// Whitespace after a field value is not part of it (RFC 9110 §5.5), but workerd hands on what an
// HTTP/1.1 client sent before the line's end: "X-SiteSwarm-Tenant-Id: bakery \r\n" was tenant
// "bakery " (401 with valid credentials), "Capability-Version: 1.2.0 " a 400. Trimmed here, as a
// Headers object built by fetch would have it.
const TRAILING_WHITESPACE = /[\t ]+$/;
function requestHeaders(headers) {
  const out = {};
  for (const [name, value] of headers) {
    out[name] = TRAILING_WHITESPACE.test(value) ? value.replace(TRAILING_WHITESPACE, "") : value;
  }
  return out;
}

// Only the request.cf fields a worker's core reads cross (docs/abi.md), named by its shim
// (`defineWorker(wasm, { cf: ["country", "colo"] })`: analytics). workerd's cf holds about twenty
// plain fields and nested objects besides (TLS client auth, bot management), and reading
// `request.cf` at all costs workerd a deserialisation per request: a worker that names no field
// never touches it, and its message has no `cf` (docs/performance.md, "the ledger's snapshot, request.cf,
// and interleaved rounds").
export const NO_CF = Object.freeze([]);
function plainCf(cf, fields) {
  const out = {};
  if (!cf) return out;
  for (const key of fields) {
    const v = cf[key];
    const type = typeof v;
    if (type === "string" || type === "number" || type === "boolean") out[key] = v;
  }
  return out;
}

export function toResponse({ status = 500, headers = {}, body = "" }) {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value]) out.append(name, String(v));
  }
  const empty = NULL_BODY_STATUSES.has(status) || body === "" || body == null;
  return new Response(empty ? null : body, { status, headers: out });
}

export const INTERNAL_ERROR = { code: "internal", message: "internal error" };
// The host's own JSON errors carry what the cores' do (docs/contract.md: every JSON answer is
// `no-store`), so no cache keeps a 500 or a 400 in place of the answer a retry gets.
export const JSON_ERROR_HEADERS = Object.freeze({ "content-type": "application/json", "cache-control": "no-store" });

export const internalErrorResponse = () =>
  new Response(JSON.stringify({ error: INTERNAL_ERROR }), {
    status: 500,
    headers: JSON_ERROR_HEADERS,
  });

export const unreadableBodyResponse = () =>
  new Response(
    JSON.stringify({
      error: { code: "invalid_request", message: "the request body ended before it was complete" },
    }),
    { status: 400, headers: JSON_ERROR_HEADERS },
  );
