// The contract's error shape as a value: `{"error":{"code","message"}}` with an HTTP status.

export class SiteSwarmError extends Error {
  /** @type {"SiteSwarmError"} */
  name = "SiteSwarmError";

  /**
   * @param {string} code snake_case code from the contract, e.g. "unauthenticated_tenant"
   * @param {string} message human text
   * @param {{ status?: number, details?: Record<string, unknown> }} [options]
   */
  constructor(code, message, { status = 500, details } = {}) {
    super(message);
    this.code = code;
    this.status = status;
    if (details) this.details = details;
    // Validation errors name the offending fields (`invalid_lead`): kept at the top level too.
    if (details?.fields && typeof details.fields === "object") {
      this.fields = /** @type {Record<string, string>} */ (details.fields);
    }
  }

  /** The error as a JSON Response in the contract's shape. */
  toResponse(headers = {}) {
    return errorResponse(this.status, this.code, this.message, headers, this.details);
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
    });
  }
}

/**
 * A JSON error Response in the contract's shape.
 * @param {number} status
 * @param {string} code
 * @param {string} message
 * @param {HeadersInit} [headers]
 * @param {Record<string, unknown>} [details]
 */
export function errorResponse(status, code, message, headers = {}, details = undefined) {
  return new Response(JSON.stringify({ error: { code, message, ...details } }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}
