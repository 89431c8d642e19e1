// Route delegation (docs/contract.md "Client SDK"), made safe: whatever
// X-SiteSwarm-* headers arrive from the internet are dropped, and the app's own tenant context is
// set from its manifest and its secret binding before the request crosses the Service Binding.
import { errorResponse } from "./errors.js";

export const TENANT_ID_HEADER = "X-SiteSwarm-Tenant-Id";
export const TENANT_TOKEN_HEADER = "X-SiteSwarm-Tenant-Token";
export const CAPABILITY_VERSION_HEADER = "X-SiteSwarm-Capability-Version";
const RESERVED_PREFIX = "x-siteswarm-";
const APP_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Forwards `request` to the platform worker bound as `env[bindingName]`.
 * @param {Request} request the incoming (public) request
 * @param {Record<string, unknown>} env the worker's env
 * @param {string} bindingName e.g. "LEADS_SERVICE"
 * @param {Partial<import("../index.d.ts").DelegateOptions>} [options] appId is checked at run time
 * @returns {Promise<Response>}
 */
export async function delegate(request, env, bindingName, options = {}) {
  const { appId, tokenBinding = "SITESWARM_TENANT_TOKEN", stripPrefix } = options;
  const { capabilityVersion = "1.0.0" } = options;
  if (!APP_ID.test(appId ?? "")) {
    throw new TypeError("delegate(): appId must match [a-z0-9][a-z0-9-]{0,62}");
  }

  const service = /** @type {import("../index.d.ts").ServiceBinding | undefined} */ (env?.[bindingName]);
  if (typeof service?.fetch !== "function") {
    return errorResponse(503, "service_unavailable", `the ${bindingName} service is not available`);
  }
  const token = env[tokenBinding];
  if (typeof token !== "string" || token === "") {
    const message = `the tenant token (${tokenBinding}) is not configured`;
    return errorResponse(503, "service_unavailable", message);
  }

  const headers = tenantHeaders(request.headers, { appId, token, capabilityVersion });
  const url = new URL(request.url);
  if (stripPrefix && url.pathname.startsWith(stripPrefix)) {
    url.pathname = url.pathname.slice(stripPrefix.length) || "/";
  }
  const hasBody = request.body !== null && request.method !== "GET" && request.method !== "HEAD";
  /** @type {RequestInit & { cf?: unknown, duplex?: "half" }} workerd's `cf` and Node's `duplex` */
  const init = {
    method: request.method,
    headers,
    body: hasBody ? request.body : undefined,
    redirect: "manual",
    cf: /** @type {Request & { cf?: unknown }} */ (request).cf, // country, colo, … (analytics needs them)
    ...(hasBody && { duplex: "half" }), // Node's fetch wants it for a streamed body
  };
  return service.fetch(new Request(url, init));
}

/** A copy of `incoming` without any X-SiteSwarm-* header, plus the app's own three. */
export function tenantHeaders(incoming, { appId, token, capabilityVersion }) {
  const headers = new Headers();
  for (const [name, value] of incoming) {
    if (!name.toLowerCase().startsWith(RESERVED_PREFIX)) headers.append(name, value);
  }
  headers.set(TENANT_ID_HEADER, appId);
  headers.set(TENANT_TOKEN_HEADER, token);
  headers.set(CAPABILITY_VERSION_HEADER, capabilityVersion);
  return headers;
}
