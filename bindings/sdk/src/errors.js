// The contract's error shape as a value: `{"error":{"code","message"}}` with an HTTP status.

export class SiteSwarmError extends Error {
  /** @type {"SiteSwarmError"} */
  name = "SiteSwarmError";

  /**
   * @param {string} code snake_case code from the contract, e.g. "unauthenticated_tenant"
   * @param {string} message human text
   * @param {{ status?: number, details?: Record<string, unknown>, retryAfter?: number }} [options]
   *   retryAfter: the seconds a `429` (or `503`) answer's `Retry-After` header asked to wait
   */
  constructor(code, message, { status = 500, details, retryAfter } = {}) {
    super(message);
    this.code = code;
    this.status = status;
    if (details) this.details = details;
    if (Number.isInteger(retryAfter) && retryAfter >= 0) this.retryAfter = retryAfter;
    // Validation errors name the offending fields (`invalid_lead`): kept at the top level too.
    if (details?.fields && typeof details.fields === "object") {
      this.fields = /** @type {Record<string, string>} */ (details.fields);
    }
  }

  /** The error as a JSON Response in the contract's shape (with its `Retry-After`, if it has one). */
  toResponse(headers = {}) {
    const out = new Headers(headers);
    if (this.retryAfter !== undefined && !out.has("retry-after")) out.set("retry-after", String(this.retryAfter));
    return errorResponse(this.status, this.code, this.message, out, this.details);
  }

  /** Reads a service's JSON error answer; falls back to a generic code for non-JSON bodies. */
  static async fromResponse(response) {
    /** @type {Record<string, unknown>} */
    let error = {};
    try {
      const body = await response.json();
      const candidate = body?.error;
      // Only the contract's {"error":{…}} object counts; any other JSON is not an error body.
      if (typeof candidate === "object" && candidate !== null && !Array.isArray(candidate)) error = candidate;
    } catch {
      // not JSON: keep the generic code below
    }
    const code = typeof error.code === "string" ? error.code : `http_${response.status}`;
    const message = typeof error.message === "string" ? error.message : response.statusText || "request failed";
    const { code: _code, message: _message, ...details } = error;
    return new SiteSwarmError(code, message, {
      status: response.status,
      details: Object.keys(details).length ? details : undefined,
      retryAfter: retryAfterOf(response),
    });
  }
}

/**
 * The seconds of a response's `Retry-After` header (delta-seconds, as the platform workers send
 * it), or undefined when it has none or an HTTP date.
 * @param {Response} response
 */
export function retryAfterOf(response) {
  const value = response.headers?.get("retry-after")?.trim();
  return value && /^\d{1,9}$/.test(value) ? Number(value) : undefined;
}

/**
 * A JSON error Response in the contract's shape, never stored by a cache (`Cache-Control: no-store`,
 * as every platform worker's JSON answer; `headers` may say otherwise).
 * @param {number} status
 * @param {string} code
 * @param {string} message
 * @param {HeadersInit} [headers]
 * @param {Record<string, unknown>} [details]
 */
export function errorResponse(status, code, message, headers = {}, details = undefined) {
  const out = new Headers({ "content-type": "application/json", "cache-control": "no-store" });
  // Any HeadersInit (an object, a Headers, a list of pairs): its entries win.
  for (const [name, value] of new Headers(headers)) out.set(name, value);
  // The details never replace the error's own code and message, which come first as everywhere.
  const { code: _code, message: _message, ...rest } = details ?? {};
  return new Response(JSON.stringify({ error: { code, message, ...rest } }), { status, headers: out });
}
