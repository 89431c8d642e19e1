// Route delegation (docs/contract.md "Client SDK"), made safe: whatever
// X-SiteSwarm-* headers arrive from the internet are dropped, and the app's own tenant context is
// set from its manifest and its secret binding before the request crosses the Service Binding.
import { errorResponse } from "./errors.js";

export const TENANT_ID_HEADER = "X-SiteSwarm-Tenant-Id";
export const TENANT_TOKEN_HEADER = "X-SiteSwarm-Tenant-Token";
export const CAPABILITY_VERSION_HEADER = "X-SiteSwarm-Capability-Version";
const RESERVED_PREFIX = "x-siteswarm-";
export const APP_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const DEFAULT_VERSION = "1.0.0";
/** Service per client area: its binding and the manifest capability whose version it sends. */
export const SERVICES = {
  leads: { binding: "LEADS_SERVICE", capability: "lead-capture" },
  cms: { binding: "CMS_SERVICE", capability: "cms" },
  analytics: { binding: "ANALYTICS_SERVICE", capability: "analytics" },
  events: { binding: "EVENTS_SERVICE", capability: "event-ledger" },
  monitoring: { binding: "MONITOR_SERVICE", capability: "monitoring" },
};
/** The same by binding name: the capability a delegated call's version comes from. */
const CAPABILITY_OF = Object.fromEntries(Object.values(SERVICES).map((s) => [s.binding, s.capability]));

/**
 * Forwards `request` to the platform worker bound as `env[bindingName]`. The app's id comes from
 * `options.appId`, else `options.manifest.appId`, else the `SITESWARM_APP_ID` var; its capability
 * version from `options.capabilityVersion`, else the manifest's capability for that binding, else
 * 1.0.0. A missing binding, or one that throws, is a `503 service_unavailable` answer, never an
 * exception. A missing app id or token is the app's misconfiguration, logged once per isolate: the
 * request is still forwarded with every incoming `X-SiteSwarm-*` header dropped and without the
 * missing one, so the service answers it as any call without the app's tenant credentials (a call
 * that needs the tenant token: `401 unauthenticated_tenant`) and nothing a visitor sent can stand in
 * for the app's own. (The typed client, `createPlatformClient`, throws `503 service_unavailable` for
 * a missing token instead: its caller is the app's own code, which gets a typed error to act on.)
 * @param {Request} request the incoming (public) request
 * @param {Record<string, any>} env the worker's env (any object: a typed `interface Env` too)
 * @param {string} bindingName e.g. "LEADS_SERVICE"
 * @param {import("../index.d.ts").DelegateOptions} [options]
 * @returns {Promise<Response>}
 */
export async function delegate(request, env, bindingName, options = {}) {
  const { tokenBinding = "SITESWARM_TENANT_TOKEN", stripPrefix, manifest } = options;
  const unavailable = (why) => errorResponse(503, "service_unavailable", why);

  const service = /** @type {import("../index.d.ts").ServiceBinding | undefined} */ (env?.[bindingName]);
  if (typeof service?.fetch !== "function") return unavailable(`the ${bindingName} service is not available`);
  let appId = options.appId ?? manifest?.appId ?? env.SITESWARM_APP_ID;
  if (typeof appId !== "string" || !APP_ID.test(appId)) {
    warnOnce("the app id (options.appId, the manifest's appId or SITESWARM_APP_ID) is missing or not a valid app id");
    appId = undefined;
  }
  let token = env[tokenBinding];
  if (typeof token !== "string" || token === "") {
    warnOnce(`the tenant token (${tokenBinding}) is not configured`);
    token = undefined;
  }
  const declared = manifest?.capabilities?.[CAPABILITY_OF[bindingName]]?.version;
  const capabilityVersion =
    options.capabilityVersion ?? (typeof declared === "string" && declared !== "" ? declared : DEFAULT_VERSION);

  const headers = tenantHeaders(request.headers, { appId, token, capabilityVersion });
  const url = new URL(request.url);
  // At a segment boundary only: "/_sa" strips "/_sa" and "/_sa/…", not "/_sample".
  const prefix = stripPrefix?.replace(/\/+$/, "");
  if (prefix && (url.pathname === prefix || url.pathname.startsWith(`${prefix}/`))) {
    url.pathname = url.pathname.slice(prefix.length) || "/";
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
  try {
    return await service.fetch(new Request(url, init));
  } catch {
    return unavailable(`the ${bindingName} service did not answer`);
  }
}

/**
 * A copy of `incoming` without any X-SiteSwarm-* header, plus the app's own three (those given).
 * @param {Headers} incoming
 * @param {{ appId?: string, token?: string, capabilityVersion?: string }} context
 */
export function tenantHeaders(incoming, { appId, token, capabilityVersion }) {
  const headers = new Headers();
  for (const [name, value] of incoming) {
    if (!name.toLowerCase().startsWith(RESERVED_PREFIX)) headers.append(name, value);
  }
  if (appId !== undefined) headers.set(TENANT_ID_HEADER, appId);
  if (token !== undefined) headers.set(TENANT_TOKEN_HEADER, token);
  if (capabilityVersion !== undefined) headers.set(CAPABILITY_VERSION_HEADER, capabilityVersion);
  return headers;
}

// A misconfigured app logs its problem once per isolate, not on every request (and never a secret).
const warned = new Set();
function warnOnce(problem) {
  if (warned.has(problem)) return;
  warned.add(problem);
  console.warn(
    `@siteswarm/sdk delegate(): ${problem}; forwarding without it (calls that need the tenant token answer 401)`,
  );
}
