// Types for @siteswarm/sdk.

/** The options of {@link delegate}. */
export interface DelegateOptions {
  /** The app's `appId` (`[a-z0-9][a-z0-9-]{0,62}`). Default: `manifest.appId`, else `env.SITESWARM_APP_ID`. */
  appId?: string;
  /** The app's manifest: its `appId` and the capability versions sent per binding. */
  manifest?: ClientManifest | JsonOf<ClientManifest>;
  /** Name of the secret binding holding the tenant token. Default `"SITESWARM_TENANT_TOKEN"`. */
  tokenBinding?: string;
  /** Semver of the capability the app speaks, sent as `X-SiteSwarm-Capability-Version`. Default `"1.0.0"`. */
  capabilityVersion?: string;
  /** A path prefix removed before forwarding, at a segment boundary: `"/_sa"` sends `/_sa/beacon` to `/beacon` (and `/_sample` as it is). */
  stripPrefix?: string;
}

/** Anything with a `fetch` method: a Service Binding (`Fetcher`). */
export interface ServiceBinding {
  fetch(request: Request): Promise<Response>;
}

/**
 * Forwards a public request to a platform worker over a Service Binding. Drops every incoming
 * `X-SiteSwarm-*` header and sets the app's own tenant id, token and capability version.
 * Answers `503 {"error":{"code":"service_unavailable"}}` when the binding is missing or throws. A
 * missing app id or token is logged once per isolate and left out (the incoming ones are dropped all
 * the same): a call that needs the tenant token is then answered `401 unauthenticated_tenant`.
 */
export function delegate(
  request: Request,
  env: object,
  bindingName: string,
  options?: DelegateOptions,
): Promise<Response>;

/** A copy of `incoming` without any `X-SiteSwarm-*` header, plus the app's own three. */
export function tenantHeaders(
  incoming: Headers,
  /** Each one given is set; one left out is not sent (the incoming ones are dropped all the same). */
  context: { appId?: string; token?: string; capabilityVersion?: string },
): Headers;

export const TENANT_ID_HEADER: "X-SiteSwarm-Tenant-Id";
export const TENANT_TOKEN_HEADER: "X-SiteSwarm-Tenant-Token";
export const CAPABILITY_VERSION_HEADER: "X-SiteSwarm-Capability-Version";

/** The contract's error body: `{"error":{"code","message", ...details}}`. */
export interface ErrorBody {
  error: { code: string; message: string; [detail: string]: unknown };
}

/** A platform error: the contract's `code`, its HTTP `status`, and extra fields such as `fields`. */
export class SiteSwarmError extends Error {
  constructor(
    code: string,
    message: string,
    options?: { status?: number; details?: Record<string, unknown>; retryAfter?: number },
  );
  readonly name: "SiteSwarmError";
  readonly code: string;
  readonly status: number;
  readonly details?: Record<string, unknown>;
  /** Per-field problems of a validation error (`invalid_lead`), when the service sent them. */
  readonly fields?: Record<string, string>;
  /** Seconds to wait before trying again, from the answer's `Retry-After` (a `429 rate_limited`). */
  readonly retryAfter?: number;
  /** The error as a JSON Response in the contract's shape (with `Retry-After` when it has one). */
  toResponse(headers?: HeadersInit): Response;
  /** Builds the error from a service's JSON error answer. */
  static fromResponse(response: Response): Promise<SiteSwarmError>;
}

/** A JSON error Response in the contract's shape, with `Cache-Control: no-store` unless `headers` say otherwise. */
export function errorResponse(
  status: number,
  code: string,
  message: string,
  headers?: HeadersInit,
  details?: Record<string, unknown>,
): Response;

// ---------------------------------------------------------------------------------------------
// The typed platform client.

/** A capability the app uses, as declared in its manifest. */
export interface CapabilityDeclaration {
  version: string;
}

/** One opening range of a day, `HH:MM` local time; a `close` before `open` runs past midnight. */
export interface OpeningRange {
  open: string;
  close: string;
}

export type Weekday = "mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun";

/** A snapshot's weekly hours (the manifest's `fallback.hours`). */
export interface Hours {
  /**
   * IANA time zone, e.g. `"America/New_York"`. Left out (or null): the manifest's
   * `config.cms.timezone`, else `"UTC"` — for cms once provisioned, and for the SDK's fallback.
   */
  timezone?: string | null;
  weekly: Partial<Record<Weekday, OpeningRange[]>>;
}

/** A date-range override or an emergency closure from now. */
export interface Override {
  id?: string;
  from?: string;
  to?: string;
  closed?: boolean;
  hours?: OpeningRange[];
  closedNow?: boolean;
  until?: string | null;
  message?: string;
  [key: string]: unknown;
}

/** How loud an announcement is. */
export type AnnouncementLevel = "info" | "warning" | "emergency";

/**
 * An announcement as a manifest's snapshot writes it (`fallback.announcements`); what cms and the
 * SDK answer for it is a {@link ContentAnnouncement}.
 */
export interface Announcement {
  text: string;
  /** Left out (or null): `"info"`, as cms reads it. */
  level?: AnnouncementLevel | null;
  startsAt?: string;
  endsAt?: string;
  [key: string]: unknown;
}

/** Hours as cms answers them: every weekday, Monday first (`[]`: closed that day). */
export interface ContentHours {
  /** IANA time zone, e.g. `"America/New_York"`. */
  timezone: string;
  weekly: Record<Weekday, OpeningRange[]>;
}

/**
 * An override as cms answers it (`GET /v1/content`, a status's `override`), and so does the SDK's
 * fallback from the manifest's snapshot. A date range has `from`/`to` (`YYYY-MM-DD`), `closed` and,
 * for special hours, `hours`; an emergency closure has `closedNow: true`, `from` (its start, RFC 3339
 * UTC) and `until` (RFC 3339 UTC, or null: until further notice).
 */
export interface ContentOverride {
  /** A ULID (a snapshot item's is fixed: time 0, its place in the snapshot). */
  id: string;
  from: string;
  to?: string;
  closed?: boolean;
  hours?: OpeningRange[];
  closedNow?: true;
  until?: string | null;
  /** `""` when there is none. */
  message: string;
  /** RFC 3339 UTC; null for an item of the manifest's snapshot (its creation time is unknown). */
  createdAt: string | null;
}

/** An announcement as cms answers it, and so does the SDK's fallback from the manifest's snapshot. */
export interface ContentAnnouncement {
  id: string;
  text: string;
  /** Always given (`"info"` where the snapshot or the Studio write left it out). */
  level: AnnouncementLevel;
  /** RFC 3339 UTC, to the second; null: no start (or end). */
  startsAt: string | null;
  endsAt: string | null;
  createdAt: string | null;
  updatedAt: string | null;
}

/** The manifest's snapshot of its dynamic content (zero lockout). */
export interface FallbackSnapshot {
  hours?: Hours;
  overrides?: Override[];
  announcements?: Announcement[];
}

/**
 * A type as TypeScript infers it from a JSON file (`resolveJsonModule`): its string literals widened
 * to `string`, `true`/`false` to `boolean`. A manifest imported from `swarm.config.json` is a
 * `JsonOf<ClientManifest>`, taken wherever a manifest is (the SDK checks the values as it reads them).
 */
export type JsonOf<T> = T extends string
  ? string
  : T extends boolean
    ? boolean
    : T extends readonly (infer U)[]
      ? JsonOf<U>[]
      : T extends object
        ? { [K in keyof T]: JsonOf<T[K]> }
        : T;

/** The client manifest (`swarm.config.json`). */
export interface ClientManifest {
  appId: string;
  name?: string;
  capabilities?: Record<string, CapabilityDeclaration>;
  config?: Record<string, unknown>;
  fallback?: FallbackSnapshot;
  [key: string]: unknown;
}

/** The leads worker's part of a manifest (`config.leads`). */
export interface LeadsConfig {
  /** Keep a copy of each lead (default `true`); `false` delivers without storing (to the `notify` channels: with none, a lead is kept nowhere). */
  storeSubmissions?: boolean;
  /** The bot-trap field's name (default `"company_website"`). */
  honeypotField?: string;
  turnstile?: "required" | "off";
  /** Either key may be left out: 5 per 60 s by default. */
  rateLimit?: { limit?: number; periodSeconds?: number };
  /** Where an HTML form post is sent (`303`) after success: a path of the site or an https:// URL. */
  redirectUrl?: string;
  /**
   * Extra field names the form may send beside name, email, phone and message. Each name once; not a
   * standard field (`name`, `email`, `phone`, `message`), not a Turnstile field (`turnstileToken`,
   * `cf-turnstile-response`), and not `id`, `created_at` or `turnstile_verified` (the CSV export's
   * own columns). Otherwise `400` naming `config.fields`.
   */
  fields?: string[];
  defaultCountryCode?: string;
  retentionDays?: number;
  notify?: {
    email?: { provider?: "resend" | "sendgrid"; to: string[]; from: string };
    sms?: { to: string[]; from?: string };
    /** Signed with `X-SiteSwarm-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "t.body")>`. */
    webhook?: { url: string; secret: string };
  };
}

/** What every monitor a manifest declares may set, whatever it probes (docs/monitoring.md "Monitors"). */
export interface MonitorSettings {
  id: string;
  method?: "GET" | "HEAD";
  /** The statuses that pass (default `[200]`); a single number is accepted too. */
  expectStatus?: number[] | number;
  maxLatencyMs?: number;
  /** The whole redirect walk's limit (default 10000, 100–30000); past it the probe fails `timeout`. */
  timeoutMs?: number;
  /** CSS selectors that must be on the page, e.g. `"form#contact"`. */
  mustContain?: string[];
  enabled?: boolean;
  alertChannels?: { pagerduty?: { routingKey: string }; slack?: { webhookUrl: string } };
  maintenance?: { start: string; end: string }[];
  /** The same as `maintenance` (the service answers both; sent together, they must agree). */
  maintenanceWindows?: { start: string; end: string }[];
}

/** A monitor of a site: its http(s) URL. */
export interface UrlMonitorDeclaration extends MonitorSettings {
  url: string;
  service?: never;
  path?: never;
}

/**
 * A monitor of a platform worker through the monitoring worker's service binding, e.g.
 * `{"id":"ledger","service":"events","path":"/health/consumers"}` (docs/monitoring.md "Watching the
 * platform itself"): `path` is `/health` (the default) or `/health/…`; `url`, when given, only
 * repeats the `service://…` form the admin API shows.
 */
export interface ServiceMonitorDeclaration extends MonitorSettings {
  service: string;
  path?: string;
  url?: string;
}

/** A monitor a manifest declares (`config.monitoring.monitors`); provisioning pushes it to monitoring. */
export type MonitorDeclaration = UrlMonitorDeclaration | ServiceMonitorDeclaration;

/** The capabilities a client app may declare. */
export type CapabilityName = "lead-capture" | "cms" | "monitoring" | "analytics" | "event-ledger";

/**
 * A client app's manifest (`swarm.config.ts`, or the same as `swarm.config.json`): what it is, which
 * platform capabilities it uses at which version, each worker's part of its configuration, and the
 * snapshot of its dynamic content served when cms is unreachable.
 *
 * ```ts
 * import type { SwarmConfig } from "@siteswarm/sdk";
 * export default { appId: "bakery", name: "…", capabilities: { cms: { version: "1.0.0" } } } satisfies SwarmConfig;
 * ```
 */
export interface SwarmConfig extends ClientManifest {
  /** `[a-z0-9][a-z0-9-]{0,62}`: the tenant id every platform worker knows the app by. */
  appId: string;
  name: string;
  capabilities: Partial<Record<CapabilityName, CapabilityDeclaration>>;
  config?: {
    leads?: LeadsConfig;
    cms?: { timezone: string };
    monitoring?: { monitors: MonitorDeclaration[] };
    analytics?: {
      /**
       * The site's own hosts (their referrers count as direct), at most 32: `example.com`,
       * `127.0.0.1`, `[::1]` (any case; a URL or `host:port` counts for its host), an
       * internationalised name in its `xn--` form. Otherwise `400` naming `config.hosts`.
       */
      hosts?: string[];
      /** The same list under the name provisioning's "site hosts" suggests: one of the two, or both identical. */
      siteHosts?: string[];
    };
    events?: Record<string, unknown>;
  };
  fallback?: FallbackSnapshot;
}

export interface PlatformClientOptions {
  /** The app's id (`[a-z0-9][a-z0-9-]{0,62}`); defaults to `manifest.appId`. */
  appId?: string;
  /**
   * The Worker's `env`: service bindings (`LEADS_SERVICE`, …) and the tenant token secret. Any
   * object: a typed `interface Env { … }` as wrangler's types write it is taken as it is.
   */
  bindings: object;
  /** Capability versions (sent as `X-SiteSwarm-Capability-Version`, default `"1.0.0"`) and the fallback snapshot. */
  manifest?: ClientManifest | JsonOf<ClientManifest>;
  /** Serve in-memory fakes when a binding is missing (never when it is present). Default `false`. */
  mockFallback?: boolean;
  /** Name of the secret binding holding the tenant token. Default `"SITESWARM_TENANT_TOKEN"`. */
  tokenBinding?: string;
  /**
   * Milliseconds a call may take before it fails as `503 service_unavailable`. Default 10,000 (above
   * the leads intake's own 5-second Turnstile wait).
   */
  timeoutMs?: number;
  /**
   * Milliseconds a cms read (`content`, `status`) may take before the manifest's snapshot answers
   * instead (or, without one, it fails as `503 service_unavailable`). Default 2,000.
   */
  cmsTimeoutMs?: number;
}

/** A lead: `name`, `email`, `phone`, `message`, tenant-declared extra fields, `turnstileToken`. */
export interface Lead {
  name?: string;
  email?: string;
  phone?: string;
  message?: string;
  turnstileToken?: string;
  [field: string]: string | undefined;
}

export interface LeadReceipt {
  ok: true;
  /** ULID. */
  leadId: string;
}

export interface NewEvent {
  /** Dotted lower-case name, e.g. `"price.changed"`. */
  event_type: string;
  /** `type:id`, e.g. `"order:42"`. */
  entity_ref: string;
  payload: Record<string, unknown>;
  idempotency_key?: string;
  event_id?: string;
  caused_by?: string;
  workflow_run_id?: string;
  source_system?: string;
  occurred_at?: string;
  sequence_no?: number;
}

export interface EmitResult {
  event_id: string;
  /** `true` when the idempotency key was seen before; `event_id` is then the first event's. */
  duplicate?: true;
}

/** An event as `GET /api/events` shows it (docs/runbook-events.md), and the mock likewise. */
export interface LedgerEvent {
  event_id: string;
  tenant_id: string | null;
  event_type: string;
  /** `entity_ref` split at its first colon: `order:1` is type `order`, id `1`. */
  entity_type: string;
  entity_id: string;
  entity_ref: string;
  payload: Record<string, unknown>;
  idempotency_key: string | null;
  caused_by: string | null;
  workflow_run_id: string | null;
  source_system: string | null;
  /** RFC 3339 UTC: the producer's time (normalised to UTC), else when the ledger recorded it. */
  occurred_at: string;
  recorded_at: string;
  sequence_no: number | null;
  [key: string]: unknown;
}

export interface EventQuery {
  /** Event type, may be a glob (`lead.*`). */
  type?: string;
  /** `type:id`, or a bare entity type for every entity of that type. */
  entity?: string;
  /**
   * The previous page's `next`: events inserted after that one (the ledger's insertion order, so a
   * late producer id is not skipped). An event_id the ledger does not hold starts at the first event
   * whose id sorts after it.
   */
  after?: string;
  /** 1–500 (default 100); anything else is 400 `invalid_request` naming `limit`. */
  limit?: number;
}

export interface EventPage {
  events: LedgerEvent[];
  next: string | null;
}

/**
 * `GET /v1/content`: the same shape whichever layer answers — cms-service (`"kv"`, `"d1"`, its
 * `"fallback"` replica) or, with the service unreachable, the SDK from the manifest's snapshot
 * (`"fallback"`, version 0, as the service answers that snapshot).
 */
export interface Content {
  tenantId: string;
  version: number;
  hours: ContentHours;
  overrides: ContentOverride[];
  /** Only those active now. */
  announcements: ContentAnnouncement[];
  source: "kv" | "d1" | "fallback";
}

export interface OpenStatus {
  open: boolean;
  reason: "regular_hours" | "closed" | "override";
  override: ContentOverride | null;
  nextChange: string | null;
  /** Where the content came from: the cms service's KV, D1 or fallback replica, or (`"fallback"`) the manifest's snapshot. */
  source?: "kv" | "d1" | "fallback";
}

export interface Pageview {
  url: string;
  referrer?: string;
  width?: number;
  /**
   * The visitor's own request to the app: its User-Agent, CF-Connecting-IP, DNT and Sec-GPC headers
   * and `request.cf` (country, colo) go with the pageview, which is then classified and counted as
   * that visitor's (a crawler's is counted as filtered). Without it the pageview is server-reported:
   * counted, with the SDK's own user agent and no visitor hash.
   */
  request?: Request;
}

/** The beacon's own fields, as the tracker sends them (docs/analytics.md). */
export interface BeaconFields {
  u: string;
  r?: string | null;
  w?: number | null;
}

/**
 * What `analytics.pageview` takes: a {@link Pageview}, the beacon's own fields, the page's URL
 * alone, or the visitor's Request (its URL and `Referer`, counted as that visitor's pageview).
 */
export type PageviewInput = Pageview | BeaconFields | string | Request;

export interface PlatformClient {
  readonly appId: string;
  leads: {
    /**
     * `POST /api/leads/submit`; a repeat with the same `idempotencyKey` (sent as `Idempotency-Key`)
     * returns the same `leadId`. A key must be printable ASCII without leading or trailing spaces
     * (else `400 invalid_request` before anything is sent) and at most 200 characters (else the
     * service's `400`); an empty key is no key. `request`: the visitor's own request to the app, whose
     * `CF-Connecting-IP` goes along for the service's rate limit (per tenant and client IP) and its
     * Turnstile check; without it every lead the app submits shares the tenant's one window for
     * requests without a client IP.
     */
    submit(lead: Lead, options?: { idempotencyKey?: string; request?: Request }): Promise<LeadReceipt>;
  };
  events: {
    /** `POST /api/events`. */
    emit(event: NewEvent): Promise<EmitResult>;
    /** `GET /api/events`. */
    list(query?: EventQuery): Promise<EventPage>;
  };
  cms: {
    /**
     * `getContent` over Workers RPC when the binding offers it, else `GET /v1/content`; the
     * manifest's snapshot when the service is missing or fails (an answer without the content's
     * shape counts as failing: `bad_response`). `hours.weekly` lists the days Monday first.
     */
    content(): Promise<Content>;
    /**
     * `getStatus` over Workers RPC when the binding offers it, else `GET /v1/status?at=`; computed
     * from the manifest's snapshot when the service is missing or fails. A string `at` is read as the
     * service reads it: an RFC 3339 date-time with its offset (no impossible day, hour 24 or leap
     * second); such a string, or `at` outside 2020–2099, is refused as the service refuses it:
     * `invalid_request` (400), `fields.at`, before any call. An empty string is "now", as `?at=` is.
     */
    status(at?: Date | string): Promise<OpenStatus>;
  };
  analytics: {
    /** `POST /beacon` `{u, r, w}`. */
    pageview(view: PageviewInput): Promise<void>;
  };
}

/**
 * A typed client of the platform workers. Every call carries the app's three tenant headers;
 * failures throw {@link SiteSwarmError} (`service_unavailable` 503 for a missing binding or token,
 * `bad_response` for a non-JSON error answer, otherwise the service's own code and status).
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient;

/**
 * `zone` when cms-service takes it as a time zone, else `undefined`: a name of the IANA tz database
 * exactly as written (links such as `"US/Eastern"` and `"UTC"` too; not `"utc"`, `"europe/paris"` or
 * ICU-only ids such as `"IST"`, which `Intl` alone would take) that the runtime's `Intl` knows.
 */
export function validZone(zone: unknown): string | undefined;
