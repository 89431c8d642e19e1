// The SDK as client apps, examples/bakery/worker.js and tests/integration/sdk*.test.mjs use it, typed
// against bindings/sdk/index.d.ts (what an app author's editor sees). `tsc --noEmit` in scripts/test;
// never run. A call the types refuse here is a call the examples and tests make: the .d.ts is wrong.
import {
  CAPABILITY_VERSION_HEADER,
  type ClientManifest,
  type Content,
  type ContentAnnouncement,
  createPlatformClient,
  delegate,
  type EmitResult,
  type EventPage,
  errorResponse,
  type LeadReceipt,
  type OpenStatus,
  type PlatformClient,
  SiteSwarmError,
  TENANT_ID_HEADER,
  type SwarmConfig,
  TENANT_TOKEN_HEADER,
  tenantHeaders,
} from "@siteswarm/sdk";
import autoRepair from "../../examples/auto-repair/swarm.config.ts";
import bakery from "../../examples/bakery/swarm.config.json";
import agency from "../../examples/software-agency/swarm.config.ts";

declare const env: Record<string, unknown>;
// A Worker's env as wrangler's generated types (or an app author) write it: an interface, which is
// not assignable to an index signature, so the SDK takes any object.
interface Env {
  LEADS_SERVICE: { fetch(request: Request): Promise<Response> };
  SITESWARM_TENANT_TOKEN: string;
  SITESWARM_APP_ID: string;
}
declare const typedEnv: Env;
declare const binding: { fetch(request: Request): Promise<Response> };

export async function usage(): Promise<void> {
  // A JSON import widens literals ("info" → string): the SDK takes it as it is (JsonOf<ClientManifest>).
  createPlatformClient({ manifest: bakery, bindings: env });
  await delegate(new Request("https://b.example/api/leads"), env, "LEADS_SERVICE", { manifest: bakery });
  const manifest: ClientManifest = { appId: "bakery", capabilities: bakery.capabilities };
  const version: string | undefined = manifest.capabilities?.["lead-capture"]?.version;

  // Route delegation, as the bakery does it.
  const res: Response = await delegate(new Request("https://b.example/api/leads"), env, "LEADS_SERVICE", {
    appId: manifest.appId,
    capabilityVersion: version,
  });
  await delegate(new Request("https://b.example/_sa/beacon"), { ANALYTICS_SERVICE: binding }, "ANALYTICS_SERVICE", {
    appId: "bakery",
    stripPrefix: "/_sa",
    tokenBinding: "SITESWARM_TENANT_TOKEN",
  });
  // The contract's three-argument form, and the manifest form.
  await delegate(new Request("https://b.example/api/leads"), env, "LEADS_SERVICE");
  await delegate(new Request("https://b.example/api/leads"), env, "LEADS_SERVICE", { manifest });
  const headers: Headers = tenantHeaders(res.headers, { appId: "bakery", token: "t", capabilityVersion: "1.0.0" });
  headers.get(TENANT_ID_HEADER) ?? headers.get(TENANT_TOKEN_HEADER) ?? headers.get(CAPABILITY_VERSION_HEADER);
  const notFound: Response = errorResponse(404, "not_found", "no such page");
  errorResponse(429, "rate_limited", "slow down", { "Retry-After": "30" }, { retryAfter: 30 });

  // The typed client, as tests/integration/sdk-client.test.mjs drives it.
  const client = createPlatformClient({ appId: "bakery", manifest, bindings: { LEADS_SERVICE: binding, ...env } });
  const mock = createPlatformClient({ bindings: {}, manifest, mockFallback: true, tokenBinding: "TOKEN" });
  const appId: string = client.appId;
  const receipt: LeadReceipt = await client.leads.submit({ name: "Ada", email: "ada@example.com", message: "Hi" });
  const leadId: string = receipt.leadId;
  await client.leads.submit({ phone: "+1 555 010 9999", company: "x" }, { idempotencyKey: "k" });
  // The visitor's request, for the service's rate limit and Turnstile check by client IP.
  await client.leads.submit({ email: "ada@example.com" }, { request: new Request("https://b.example/contact") });
  const emitted: EmitResult = await client.events.emit({
    event_type: "order.placed",
    entity_ref: "order:1",
    payload: { n: 1 },
    idempotency_key: "order-1",
  });
  const duplicate: boolean = emitted.duplicate === true;
  const page: EventPage = await mock.events.list({ type: "order.*", limit: 10 });
  for (const event of page.events) event.tenant_id?.toUpperCase() ?? event.event_type;
  // Every key an event is shown with is typed as the ledger writes it.
  const [shown] = page.events;
  const eventKeys: [string, string, string, string, string | null, string | null, number | null] = [
    shown.entity_type,
    shown.entity_id,
    shown.entity_ref,
    shown.occurred_at,
    shown.idempotency_key,
    shown.caused_by ?? shown.workflow_run_id ?? shown.source_system,
    shown.sequence_no,
  ];
  const recordedAt: string = shown.recorded_at;
  await client.events.list();
  const content: Content = await client.cms.content();
  const source: "kv" | "d1" | "fallback" = content.source;
  const status: OpenStatus = await client.cms.status(new Date());
  await client.cms.status("2026-05-26T14:00:00Z");
  const open: boolean = status.open;
  await client.analytics.pageview({ url: "https://b.example/", referrer: "", width: 390 });
  // The beacon's own fields, the URL alone, or the visitor's request.
  await client.analytics.pageview({ u: "https://b.example/", r: null, w: 390 });
  await client.analytics.pageview("https://b.example/menu");
  await client.analytics.pageview(new Request("https://b.example/menu"));
  // A typed Env interface, in both places an env goes.
  await delegate(new Request("https://b.example/api/leads"), typedEnv, "LEADS_SERVICE");
  createPlatformClient({ appId: "bakery", bindings: typedEnv });

  try {
    await client.leads.submit({ email: "nope" });
  } catch (err) {
    if (err instanceof SiteSwarmError) {
      const fields: Record<string, string> | undefined = err.fields;
      const shaped: Response = err.toResponse({ "cache-control": "no-store" });
      [err.code, err.status, err.message, err.details, fields, shaped];
    }
  }
  const fromAnswer: SiteSwarmError = await SiteSwarmError.fromResponse(notFound);
  new SiteSwarmError("invalid_lead", "bad", { status: 400, details: { fields: { email: "invalid" } } });
  [appId, leadId, duplicate, source, open, fromAnswer, eventKeys, recordedAt];
}

// The typed manifests (examples/*/swarm.config.ts) are SwarmConfigs and feed the client as they are;
// SwarmConfig refuses what the platform would refuse at provisioning.
export function manifests(): void {
  const typed: SwarmConfig[] = [autoRepair, agency];
  for (const manifest of typed) createPlatformClient({ manifest, bindings: env });
  const monitors: (string | undefined)[] = (autoRepair.config.monitoring.monitors ?? []).map((m) => m.url);
  const bad: SwarmConfig = {
    appId: "x",
    name: "x",
    capabilities: {
      // @ts-expect-error: not a capability of the platform
      "lead-capturing": { version: "1.0.0" },
    },
    // @ts-expect-error: turnstile is "required" or "off"
    config: { leads: { turnstile: "sometimes" } },
  };
  const noMonitorUrl: SwarmConfig = {
    appId: "x",
    name: "x",
    capabilities: {},
    // @ts-expect-error: a monitor needs its url
    config: { monitoring: { monitors: [{ id: "home" }] } },
  };
  // Every field the monitoring worker takes in a manifest's monitor (docs/monitoring.md "Monitors"):
  // the probe's timeout, a single expected status, and a platform worker probed through its binding.
  const everyMonitorField: SwarmConfig = {
    appId: "x",
    name: "x",
    capabilities: { monitoring: { version: "1.0.0" } },
    config: {
      monitoring: {
        monitors: [
          { id: "home", url: "https://example.com/", timeoutMs: 5000, expectStatus: 200 },
          { id: "ledger", service: "events", path: "/health/consumers", maxLatencyMs: 2000 },
          { id: "cms", service: "cms" },
        ],
      },
    },
  };
  const urlAndService: SwarmConfig = {
    appId: "x",
    name: "x",
    capabilities: {},
    // @ts-expect-error: a site's monitor has no service path (one target or the other)
    config: { monitoring: { monitors: [{ id: "home", url: "https://example.com/", path: "/health" }] } },
  };
  // Snapshot hours may leave their zone out: they are in config.cms.timezone, else UTC (docs/cms.md).
  const zoneless: SwarmConfig = {
    appId: "x",
    name: "x",
    capabilities: { cms: { version: "1.0.0" } },
    config: { cms: { timezone: "Europe/Paris" } },
    fallback: { hours: { weekly: { mon: [{ open: "08:00", close: "17:00" }] } } },
  };
  const badZone: SwarmConfig = {
    appId: "x",
    name: "x",
    capabilities: {},
    // @ts-expect-error: a zone, when given, is an IANA name (a string)
    fallback: { hours: { timezone: 1, weekly: {} } },
  };
  // An announcement's level may be left out (or null): it is "info" (docs/cms.md "Model"), so a
  // snapshot written as cms takes it is a SwarmConfig; what the SDK answers always has a level.
  const levelless: SwarmConfig = {
    appId: "x",
    name: "x",
    capabilities: { cms: { version: "1.0.0" } },
    fallback: {
      announcements: [{ text: "Fresh bread" }, { text: "Hello", level: null }, { text: "!", level: "warning" }],
    },
  };
  const badLevel: SwarmConfig = {
    appId: "x",
    name: "x",
    capabilities: {},
    // @ts-expect-error: a level, when given, is info, warning or emergency
    fallback: { announcements: [{ text: "x", level: "loud" }] },
  };
  [monitors, bad, noMonitorUrl, everyMonitorField, urlAndService, zoneless, badZone, levelless, badLevel];
}

// What cms answers (and the SDK's fallback) always carries the level.
export async function answeredLevels(client: PlatformClient): Promise<void> {
  const content: Content = await client.cms.content();
  for (const a of content.announcements) {
    const level: "info" | "warning" | "emergency" = a.level;
    const item: ContentAnnouncement = a;
    [level, item];
  }
}
