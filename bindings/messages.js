// Input messages (host → core) and the Response built from a fetch output (docs/abi.md).
import { headersObject, MAX_BODY_BYTES, readText } from "./effects/http.js";

const ENTROPY_BYTES = 32;
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** What every message carries: `now`, `entropy` and the string env entries (vars, secrets). */
export function envelope(op, env) {
  const entropy = Array.from(crypto.getRandomValues(new Uint8Array(ENTROPY_BYTES)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
  const strings = Object.fromEntries(Object.entries(env ?? {}).filter(([, value]) => typeof value === "string"));
  return { op, now: Date.now(), entropy, env: strings };
}

export async function requestMessage(request) {
  const declared = Number(request.headers.get("content-length"));
  let body = { text: "", tooLarge: declared > MAX_BODY_BYTES };
  if (!body.tooLarge && request.method !== "GET" && request.method !== "HEAD") {
    body = await readText(request.body, MAX_BODY_BYTES); // never buffers more than the limit
  }
  return {
    method: request.method,
    url: request.url,
    headers: headersObject(request.headers),
    body: body.text,
    bodyTooLarge: body.tooLarge,
    cf: plainCf(request.cf),
  };
}

// request.cf minus its nested objects (TLS client auth, bot management): country, colo, asn, …
function plainCf(cf) {
  return Object.fromEntries(
    Object.entries(cf ?? {}).filter(([, v]) => ["string", "number", "boolean"].includes(typeof v)),
  );
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

export const internalErrorResponse = () =>
  new Response(JSON.stringify({ error: INTERNAL_ERROR }), {
    status: 500,
    headers: { "content-type": "application/json" },
  });
