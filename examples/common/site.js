// What every example client app is made of, so each app is only its manifest, its pages and a few
// lines of worker.js: static pages (the ASSETS binding), the home page rendered with live content
// from the platform, and the routes it delegates to platform workers over Service Bindings with
// @siteswarm/sdk. No secret, database or business rule lives in an app; its tenant token is the
// SITESWARM_TENANT_TOKEN secret.
//
//   import { createSite } from "../common/site.js";
//   import manifest from "./swarm.config.json";
//   export default createSite({ manifest, service: "client-bakery" });
import { createPlatformClient, delegate, errorResponse } from "@siteswarm/sdk";
import { controlsOf, escapeHtml, loadLive, renderHome, withFormState, withTurnstile } from "./render.js";

const PLATFORM_SERVICES = ["LEADS_SERVICE", "CMS_SERVICE", "MONITOR_SERVICE", "ANALYTICS_SERVICE", "EVENTS_SERVICE"];
const HEALTH_TIMEOUT_MS = 3000;
// Every JSON answer of the site, as every platform worker's, is never stored by a cache.
const NO_STORE = { "cache-control": "no-store" };
const FORM_PATHS = new Set(["/api/leads/submit", "/api/leads"]);
const FORM_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i;
// What a visitor typed that is never echoed back into a page: the bot trap and the spent token.
const NEVER_ECHOED = new Set(["cf-turnstile-response", "turnstileToken"]);
const MAX_ECHOED_VALUE = 5000;
// The leads worker refuses bodies over 32 KiB; a body larger than that (or of unknown size) is never
// read a second time just to echo it.
const MAX_ECHOED_BODY = 32 * 1024;

// Route subtrees an app hands to a platform worker when its manifest declares the capability:
// `prefix` and everything under `prefix/`. `strip` removes the app's own prefix where the
// service's routes do not carry it.
// `open`: what a visitor may reach through the route, given the path after the prefix. The app's own
// tenant token goes with every delegated call, so a route must not lend a visitor what that token
// alone can do: the ledger is not delegated at all (reading it would show the tenant's events, and
// an open emit would let anyone write any event as the tenant, with the workflows its subscriptions
// start — an app emits from its own server code with `client.events.emit`), nor analytics' stats;
// the tracker's script and beacon are open. `allow`, where given, names the methods a path the route
// knows takes: another method there is `405` with `Allow`, as the worker behind it answers (contract
// "Common rules"), not a `404` that says the tracker's path does not exist. Leads routes pass
// whole: their admin parts need the tenant admin token, which the site never adds. Of cms, the public reads (`/v1/…`) and Studio
// (`/admin/v1/…`, tenant admin token) pass; its operator routes (`/admin/tenants/…`,
// `/admin/diagnostics`) and anything else are not the site's to expose.
// The analytics paths a visitor reaches through the site, and the methods each takes.
const TRACKER_METHODS = new Map([
  ["/script.js", ["GET", "HEAD"]],
  ["/beacon", ["POST"]],
]);
const DELEGATED = [
  { prefix: "/api/leads", binding: "LEADS_SERVICE", capability: "lead-capture" },
  {
    prefix: "/_sa",
    binding: "ANALYTICS_SERVICE",
    capability: "analytics",
    strip: true,
    open: (method, rest) => TRACKER_METHODS.get(rest)?.includes(method) ?? false,
    allow: (rest) => TRACKER_METHODS.get(rest)?.join(", "),
  },
  {
    prefix: "/api/cms",
    binding: "CMS_SERVICE",
    capability: "cms",
    strip: true,
    open: (_method, rest) => rest.startsWith("/v1/") || rest.startsWith("/admin/v1/"),
  },
];

// What a person reads when the form was refused, per contract error code.
const SUMMARIES = {
  invalid_lead: "Please check the fields marked below and send the form again.",
  turnstile_failed: "We could not confirm that you are a person. Please complete the check and send the form again.",
  rate_limited: "Too many messages were sent from your network just now. Please wait a minute and try again.",
  // Such a body is never echoed (MAX_ECHOED_BODY): the person is told the form comes back empty.
  // The page's maxlengths do not prevent it: 5,000 characters of Chinese or emoji post over 32 KiB.
  payload_too_large:
    "Your message is too long to send, and too long for us to put back into the form, so the form is empty again. Please write a shorter message and send it again.",
};
const FALLBACK_SUMMARY = "Sorry, your message could not be sent right now. Please try again in a few minutes.";
// A refused Turnstile check when the form has no widget input at all: the widget never ran
// (JavaScript off, or its script blocked), so "complete the check" would send the person round in
// circles.
const NO_CHECK_SUMMARY =
  "Our spam check could not run: it needs JavaScript, which is off or blocked in your browser. Please allow it for this site and send the form again.";

/**
 * @param {object} options
 * @param {import("@siteswarm/sdk").SwarmConfig} options.manifest the app's swarm.config
 * @param {string} options.service the app's worker name (its wrangler `name`), reported by /health
 * @param {string} [options.version] the app's semver, reported by /health (default: the manifest's
 *   `version`, else 1.0.0)
 * @param {Record<string, string>} [options.labels] field name → label, for the error summary
 */
export function createSite({ manifest, service, version, labels = {} }) {
  // Every worker's /health: {"ok":true,"service","version"}, the client apps' too.
  const appVersion = version ?? (typeof manifest.version === "string" ? manifest.version : "1.0.0");
  const { appId, capabilities = {} } = manifest;
  const routes = DELEGATED.filter((r) => r.capability in capabilities);
  const leadsConfig = /** @type {{ honeypotField?: string }} */ (manifest.config?.leads ?? {});
  const honeypot = leadsConfig.honeypotField ?? "company_website";
  const versionOf = (capability) => capabilities[capability]?.version;

  return {
    /** @param {Request} request @param {Record<string, any>} env */
    async fetch(request, env) {
      const url = new URL(request.url);
      // The site's own routes match on the path's non-empty segments, as every platform worker's do
      // (docs/contract.md "Common rules"): `/health/` and `//health` are `/health`.
      const { pathname, forward } = routePath(url.pathname);
      if (pathname === "/health" || pathname === "/api/platform/health") {
        // Reads: GET and HEAD (a HEAD answer has no body), 405 with Allow otherwise, as every worker.
        if (request.method !== "GET" && request.method !== "HEAD") {
          const refused = errorResponse(405, "method_not_allowed", `${request.method} is not allowed here`);
          refused.headers.set("allow", "GET, HEAD");
          return refused;
        }
        const answer =
          pathname === "/health"
            ? Response.json({ ok: true, service, version: appVersion }, { headers: NO_STORE })
            : await platformHealth(env, appId);
        return request.method === "HEAD" ? new Response(null, answer) : answer;
      }
      if (namesHomeTemplate(url.pathname)) {
        // HEAD answers what GET would (the rendered page's status and headers), not the raw template
        // the static assets hold.
        if (request.method === "GET") return home(request, env, manifest);
        if (request.method === "HEAD") return new Response(null, await home(request, env, manifest));
      }
      if (request.method === "POST" && FORM_PATHS.has(pathname) && isBrowserFormPost(request)) {
        return formPost(request, env);
      }
      if ((pathname === "/status" || pathname === "/status.json") && "monitoring" in capabilities) {
        // The app's own public status page, on its own origin.
        const target = new URL(`/status/${appId}${pathname.endsWith(".json") ? ".json" : ""}`, request.url);
        const answer = await delegate(
          new Request(target, { method: request.method, headers: request.headers }),
          env,
          "MONITOR_SERVICE",
          {
            appId,
            capabilityVersion: versionOf("monitoring"),
          },
        );
        // The page monitoring serves has its own CSP; the app's anti-framing and referrer headers
        // go on it as on every HTML page of the app.
        return pathname === "/status" ? withPageHeaders(ownStatusPage(answer, manifest)) : answer;
      }

      const route = routes.find((r) => pathname === r.prefix || pathname.startsWith(`${r.prefix}/`));
      if (route?.open && !route.open(request.method, pathname.slice(route.prefix.length))) {
        const allow = route.allow?.(pathname.slice(route.prefix.length));
        if (!allow) return errorResponse(404, "not_found", "no such API route");
        return errorResponse(405, "method_not_allowed", `${request.method} is not allowed here`, { allow });
      }
      if (route) {
        // The worker behind is handed the path the route matched (its prefix stripped from that).
        const routed =
          forward === url.pathname ? request : new Request(new URL(`${forward}${url.search}`, url), request);
        return delegate(routed, env, route.binding, {
          appId,
          capabilityVersion: versionOf(route.capability),
          stripPrefix: route.strip ? route.prefix : undefined,
        });
      }
      if (pathname.startsWith("/api/")) return errorResponse(404, "not_found", "no such API route");
      return staticFile(request, env);
    },
  };

  // A form a person posted from the page (not a script asking for JSON). Delivered as it came; when
  // the leads worker refuses it, the person gets the page back with the problems next to the fields
  // and what they typed, instead of the JSON error a script gets.
  async function formPost(request, env) {
    const copy = request.clone();
    const answer = await delegate(request, env, "LEADS_SERVICE", {
      appId,
      capabilityVersion: versionOf("lead-capture"),
    });
    if (answer.status < 400) return answer; // 303 to the thank-you page (also for the honeypot), or 202
    const { code, fields } = await errorOf(answer);
    const { values, widget } = await echoedValues(copy, honeypot);
    const form = {
      summary: code === "turnstile_failed" && !widget ? NO_CHECK_SUMMARY : (SUMMARIES[code] ?? FALLBACK_SUMMARY),
      errors: code === "invalid_lead" && fields ? fields : {},
      values,
      labels,
    };
    /** @type {Record<string, string>} */
    const headers = {};
    const retryAfter = answer.headers.get("retry-after");
    if (retryAfter) headers["retry-after"] = retryAfter;
    return home(request, env, manifest, { status: answer.status, form, headers });
  }
}

// Whether a path names the home page's template to the static files, which decode the whole path,
// collapse slashes and try `<path>.html` (`/index`, `/%2Findex.html`, `//index.html/`): such a
// path gets the rendered page, never the raw template.
function namesHomeTemplate(raw) {
  let path;
  try {
    path = decodeURIComponent(raw);
  } catch {
    return false;
  }
  path = path
    .replace(/\/+/g, "/")
    .replace(/\/$/, "")
    .replace(/\.html$/, "");
  return path === "" || path === "/index";
}

// `/a//b/` → `/a/b`, `/` stays `/`: the path's non-empty segments, each percent-decoded, as
// shared/http.cpp's `Router::select` matches them (`/%69ndex.html` is `/index.html`, the rendered
// page, not the template the static files hold). `pathname` is what the site's routes match;
// `forward` the same path written for the worker a route hands it to (each decoded segment encoded
// again, so the worker decodes what was matched). A segment that does not decode, or decodes to
// one holding a `/`, stays as sent in both: it never matches a route by a slash it did not send.
function routePath(raw) {
  const match = [];
  const forward = [];
  for (const segment of raw.split("/")) {
    if (segment === "") continue;
    let decoded = null;
    try {
      decoded = decodeURIComponent(segment);
    } catch {}
    // (`.` and `..` too: a segment that names no step up when matched must not make one when sent.)
    const kept = decoded === null || decoded.includes("/") || decoded === "." || decoded === "..";
    match.push(kept ? segment : decoded);
    forward.push(kept ? segment : encodeURIComponent(decoded));
  }
  return { pathname: `/${match.join("/")}`, forward: `/${forward.join("/")}` };
}

// A static file, or the contract's JSON error where there is none: the ASSETS binding answers a
// missing file or another method than GET/HEAD in plain text (or not at all), and the site's errors
// are JSON like every worker's (docs/contract.md "Common rules"), `405` with `Allow`.
// Another method than GET or HEAD is never handed on to ASSETS: the binding has nothing else to
// give, and a TRACE handed on to the local dev's file server (a Node function behind Miniflare) threw
// in Miniflare and stopped all of scripts/dev. Whether the path is a file is asked with a HEAD of its
// own: `405` with `Allow` only for a file that exists, and a `404` otherwise, as for a GET (a 405
// would say that `POST /no-such-file.txt` names something).
async function staticFile(request, env) {
  if (!env.ASSETS) return errorResponse(404, "not_found", "no such page");
  const head = request.method === "HEAD";
  const read = head || request.method === "GET";
  const answer = await env.ASSETS.fetch(read ? request : new Request(request.url, { method: "HEAD" }));
  if (!read && answer.status < 400) {
    await answer.body?.cancel().catch(() => {});
    return errorResponse(405, "method_not_allowed", `${request.method} is not allowed here`, { allow: "GET, HEAD" });
  }
  if (answer.status < 400) return withPageHeaders(answer);
  await answer.body?.cancel().catch(() => {}); // its plain-text answer is replaced, not read
  // Any other refusal of the file server (e.g. 431 for headers it will not take) keeps its status
  // with the contract's JSON body.
  const refused =
    answer.status === 404
      ? errorResponse(404, "not_found", "no such page")
      : answer.status === 405
        ? errorResponse(405, "method_not_allowed", `${request.method} is not allowed here`, {
            allow: answer.headers.get("allow") ?? "GET, HEAD",
          })
        : errorResponse(
            answer.status,
            answer.status === 503 ? "service_unavailable" : answer.status >= 500 ? "internal" : "invalid_request",
            `the static files answered ${answer.status}`,
            // What a client needs from such an answer (416's range, 429/503's wait) is kept.
            Object.fromEntries(
              ["content-range", "retry-after"].flatMap((h) =>
                answer.headers.has(h) ? [[h, answer.headers.get(h)]] : [],
              ),
            ),
          );
  return head ? new Response(null, refused) : refused;
}

// monitoring's status page names the tenant by its id ("auto-repair status") and links nowhere: on
// the app's own origin it carries the business's name and a way back to its home page.
function ownStatusPage(answer, manifest) {
  const type = answer.headers.get("content-type") ?? "";
  const name = typeof manifest.name === "string" && manifest.name !== "" ? manifest.name : null;
  if (!answer.ok || !type.startsWith("text/html") || !name) return answer;
  return new HTMLRewriter()
    .on("title", {
      element: (el) => {
        el.setInnerContent(`Status — ${name}`);
      },
    })
    .on("h1", {
      element: (el) => {
        el.setInnerContent(`${name} status`);
        el.before(`<p><a href="/">← Back to ${escapeHtml(name)}</a></p>`, { html: true });
      },
    })
    .transform(answer);
}

// A browser's own form submission: a form body and a request for an HTML page. fetch() callers and
// the SDK ask for JSON and keep the contract's JSON answers.
function isBrowserFormPost(request) {
  const accept = request.headers.get("accept") ?? "";
  return FORM_TYPE.test(request.headers.get("content-type") ?? "") && prefersHtml(accept);
}

// The leads service's reading of Accept (docs/leads.md "HTML forms"), so the site and the service
// agree on who gets a page: `text/html`, in any case, with a weight above 0 and not below
// `application/json`'s when that is listed. A weight that is no qvalue counts as 1.
export function prefersHtml(accept) {
  let html = -1;
  let json = -1;
  for (const range of accept.split(",")) {
    const [type, ...params] = range.split(";");
    let q = 1;
    for (const param of params) {
      const weight = /^q=(.*)$/i.exec(param.trim());
      if (weight) q = /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(weight[1]) ? Number(weight[1]) : 1;
    }
    const media = type.trim().toLowerCase();
    if (media === "text/html") html = Math.max(html, q);
    if (media === "application/json") json = Math.max(json, q);
  }
  return html > 0 && html >= json;
}

async function errorOf(response) {
  try {
    const { error } = await response.json();
    return { code: String(error?.code ?? ""), fields: error?.fields };
  } catch {
    return { code: "", fields: undefined };
  }
}

// What the person typed, to put back into the page, and whether the Turnstile widget ran (put its
// input, even empty, into the form).
async function echoedValues(request, honeypot) {
  /** @type {Record<string, string>} */
  const values = {};
  let widget = false;
  const body = await readCapped(request, MAX_ECHOED_BODY);
  if (body === null) return { values, widget: true };
  try {
    const type = request.headers.get("content-type") ?? "";
    const form = await new Response(body, { headers: { "content-type": type } }).formData();
    for (const [name, value] of form) {
      if (NEVER_ECHOED.has(name)) widget = true; // the widget ran (its input is there, even empty)
      if (name === honeypot || NEVER_ECHOED.has(name) || typeof value !== "string") continue;
      values[name] = value.slice(0, MAX_ECHOED_VALUE);
    }
  } catch {
    // a body that is not a form: nothing to echo
  }
  return { values, widget };
}

// The body's bytes, or null once it is longer than `max` (then it is not read any further).
async function readCapped(request, max) {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

// The home page: the static template with the live block rendered through the SDK (the cms worker
// over Workers RPC or fetch; the manifest's snapshot when cms is down), this deployment's Turnstile
// widget and, after a refused post, the form's problems.
/**
 * @param {Request} request
 * @param {Record<string, any>} env
 * @param {import("@siteswarm/sdk").ClientManifest} manifest
 * @param {{ status?: number, form?: Parameters<typeof withFormState>[1], headers?: Record<string, string> }} [options]
 */
async function home(request, env, manifest, { status = 200, form, headers = {} } = {}) {
  if (!env.ASSETS) return errorResponse(404, "not_found", "no such page");
  const page = await env.ASSETS.fetch(new Request(new URL("/", request.url)));
  if (!page.ok) return page;
  const now = new Date();
  const html = await page.text();
  const rewriter = new HTMLRewriter();
  if ("cms" in (manifest.capabilities ?? {})) {
    const client = createPlatformClient({ manifest, bindings: env });
    renderHome(rewriter, await loadLive(client, now), now);
  }
  withTurnstile(rewriter, env);
  if (form) {
    withFormState(rewriter, form, await controlsOf(html));
    // The page shown again after a refused post is at the form's URL (/api/leads/submit): its
    // tracker would count that as a page of the site in the owner's stats. The visit was counted
    // when the page was first loaded.
    rewriter.on('script[src="/_sa/script.js"]', {
      element: (el) => {
        el.remove();
      },
    });
  }
  return rewriter.transform(
    new Response(html, {
      status,
      headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...PAGE_HEADERS, ...headers },
    }),
  );
}

// Every HTML page of the site: no other site may frame it (the contact form under a clickjacking
// overlay), and nothing it serves is sniffed into another type.
const PAGE_HEADERS = {
  "content-security-policy": "frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "strict-origin-when-cross-origin",
};
/** A static file's answer, an HTML page with PAGE_HEADERS. */
function withPageHeaders(answer) {
  if (!(answer.headers.get("content-type") ?? "").startsWith("text/html")) return answer;
  const page = new Response(answer.body, answer);
  for (const [name, value] of Object.entries(PAGE_HEADERS)) {
    // A page that brings its own policy (monitoring's status page: no scripts at all) keeps it, and
    // gets the app's as a second one: a browser enforces every policy it is sent, so this only
    // ever tightens (whatever frame-ancestors the page's own may say).
    if (name === "content-security-policy") page.headers.append(name, value);
    else page.headers.set(name, value);
  }
  return page;
}

// Crosses every Service Binding and back: each platform worker's /health, side by side.
async function platformHealth(env, appId) {
  /** @type {[string, { ok: boolean }][]} */
  const entries = await Promise.all(
    PLATFORM_SERVICES.map(async (binding) => [binding, await serviceHealth(env[binding], binding)]),
  );
  const services = Object.fromEntries(entries);
  const ok = entries.every(([, health]) => health.ok);
  return Response.json({ ok, app: appId, services }, { status: ok ? 200 : 503, headers: NO_STORE });
}

async function serviceHealth(service, binding) {
  if (typeof service?.fetch !== "function") return { ok: false, error: "binding_missing" };
  const started = Date.now();
  try {
    const response = await service.fetch("https://platform.internal/health", {
      signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS),
    });
    const body = await response.json().catch(() => ({}));
    return {
      ok: response.status === 200 && body.ok === true,
      status: response.status,
      service: body.service,
      version: body.version,
      elapsedMs: Date.now() - started,
    };
  } catch (err) {
    console.error(`health of ${binding} failed: ${err?.name ?? "error"}`);
    return { ok: false, error: "unreachable" };
  }
}
