// The bakery's site: static pages (the ASSETS binding serves examples/bakery/public before this
// code runs) plus a few routes delegated to the platform over Service Bindings. No secret, no
// database and no business rule lives here; the tenant token is the SITESWARM_TENANT_TOKEN secret.
import { createPlatformClient, delegate, errorResponse } from "@siteswarm/sdk";
import { loadLive, renderHome } from "./render.js";
import manifest from "./swarm.config.json";

const { appId, capabilities } = manifest;
const PLATFORM_SERVICES = ["LEADS_SERVICE", "CMS_SERVICE", "MONITOR_SERVICE", "ANALYTICS_SERVICE", "EVENTS_SERVICE"];
const SERVICE = "siteswarm-example-bakery";
const HEALTH_TIMEOUT_MS = 3000;

// Route subtrees handed to a platform worker: `prefix` and everything under `prefix/`.
// `strip` removes the site's own prefix where the service's routes do not carry it.
const DELEGATED = [
  { prefix: "/api/leads", binding: "LEADS_SERVICE", capability: "lead-capture" },
  { prefix: "/api/events", binding: "EVENTS_SERVICE", capability: "event-ledger" },
  { prefix: "/_sa", binding: "ANALYTICS_SERVICE", capability: "analytics", strip: true },
  { prefix: "/api/cms", binding: "CMS_SERVICE", capability: "cms", strip: true },
];

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/health") return Response.json({ ok: true, service: SERVICE });
    if (pathname === "/api/platform/health") return platformHealth(env);
    if ((pathname === "/" || pathname === "/index.html") && request.method === "GET") return home(request, env);

    const route = DELEGATED.find((r) => pathname === r.prefix || pathname.startsWith(`${r.prefix}/`));
    if (route) {
      return delegate(request, env, route.binding, {
        appId,
        capabilityVersion: capabilities[route.capability]?.version,
        stripPrefix: route.strip ? route.prefix : undefined,
      });
    }
    if (pathname.startsWith("/api/")) return errorResponse(404, "not_found", "no such API route");
    return env.ASSETS ? env.ASSETS.fetch(request) : errorResponse(404, "not_found", "no such page");
  },
};

// The home page: the static template with the live hours block rendered through the SDK (the cms
// worker over Workers RPC or fetch; the manifest's snapshot when cms is down).
async function home(request, env) {
  if (!env.ASSETS) return errorResponse(404, "not_found", "no such page");
  const page = await env.ASSETS.fetch(new Request(new URL("/", request.url)));
  if (!page.ok) return page;
  const client = createPlatformClient({ manifest, bindings: env });
  const now = new Date();
  const html = renderHome(await page.text(), await loadLive(client, now), now);
  return new Response(html, {
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}

// Crosses every Service Binding and back: each platform worker's /health, side by side.
async function platformHealth(env) {
  const entries = await Promise.all(
    PLATFORM_SERVICES.map(async (binding) => [binding, await serviceHealth(env[binding], binding)]),
  );
  const services = Object.fromEntries(entries);
  const ok = entries.every(([, health]) => health.ok);
  return Response.json({ ok, app: appId, services }, { status: ok ? 200 : 503 });
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
