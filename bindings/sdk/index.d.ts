// Types for @siteswarm/sdk.

/** The options of {@link delegate}. */
export interface DelegateOptions {
  /** The app's `appId` from its manifest (`[a-z0-9][a-z0-9-]{0,62}`). */
  appId: string;
  /** Name of the secret binding holding the tenant token. Default `"SITESWARM_TENANT_TOKEN"`. */
  tokenBinding?: string;
  /** Semver of the capability the app speaks, sent as `X-SiteSwarm-Capability-Version`. Default `"1.0.0"`. */
  capabilityVersion?: string;
  /** A path prefix removed before forwarding, e.g. `"/_sa"` so `/_sa/beacon` reaches `/beacon`. */
  stripPrefix?: string;
}

/** Anything with a `fetch` method: a Service Binding (`Fetcher`). */
export interface ServiceBinding {
  fetch(request: Request): Promise<Response>;
}

/**
 * Forwards a public request to a platform worker over a Service Binding. Drops every incoming
 * `X-SiteSwarm-*` header and sets the app's own tenant id, token and capability version.
 * Answers `503 {"error":{"code":"service_unavailable"}}` when the binding or the token is missing.
 */
export function delegate(
  request: Request,
  env: Record<string, unknown>,
  bindingName: string,
  options: DelegateOptions,
): Promise<Response>;

/** A copy of `incoming` without any `X-SiteSwarm-*` header, plus the app's own three. */
export function tenantHeaders(
  incoming: Headers,
  context: { appId: string; token: string; capabilityVersion: string },
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
    options?: { status?: number; details?: Record<string, unknown> },
  );
  readonly name: "SiteSwarmError";
  readonly code: string;
  readonly status: number;
  readonly details?: Record<string, unknown>;
  /** The error as a JSON Response in the contract's shape. */
  toResponse(headers?: HeadersInit): Response;
  /** Builds the error from a service's JSON error answer. */
  static fromResponse(response: Response): Promise<SiteSwarmError>;
}

/** A JSON error Response in the contract's shape. */
export function errorResponse(
  status: number,
  code: string,
  message: string,
  headers?: HeadersInit,
  details?: Record<string, unknown>,
): Response;
