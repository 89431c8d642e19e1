// What every plain-JS peer worker of the benches (leads-js.js, analytics-js.js) does the same way as the
// C++ workers' shared code: the contract's JSON errors, SHA-256 through WebCrypto, and tenant
// authentication (SHA-256 of X-SiteSwarm-Tenant-Token against tenants.token_hash, enabled, capability
// major 1; shared/tenant.cpp), with the same per-isolate cache of tenant rows (shared/tenant_cache.h:
// a row at most 30 s old answers a match; anything else reads D1) and of the digest of the last token
// that authenticated each tenant (TenantCache::known_digest), so the peers are compared like for like.
const TENANT_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

const STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  invalid_lead: 400,
  unsupported_capability_version: 400,
  unauthenticated_tenant: 401,
  turnstile_failed: 403,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  service_unavailable: 503,
  dependency_unavailable: 503,
};

/** The contract's error body: `{"error":{"code","message",…}}` with the code's status. */
export const fail = (code, message, extra = {}, headers = {}) =>
  Response.json({ error: { code, message, ...extra } }, { status: STATUS[code] ?? 500, headers });

export const encoder = new TextEncoder();
const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
export const sha256 = async (text) => hex(await crypto.subtle.digest("SHA-256", encoder.encode(text)));

const TENANT_CACHE_MS = 30_000;
const TENANT_CACHE_MAX = 1024;
const tenantRows = new Map(); // tenant id -> { row, readAt }
const knownTokens = new Map(); // tenant id -> { token, digest } of the last token that authenticated

async function readTenant(db, tenantId) {
  const readAt = Date.now();
  const row = await db
    .prepare("SELECT token_hash, config_json, enabled FROM tenants WHERE tenant_id = ?1")
    .bind(tenantId)
    .first();
  if (row) tenantRows.set(tenantId, { row, readAt });
  else tenantRows.delete(tenantId);
  return row;
}

function cachedTenant(tenantId) {
  const hit = tenantRows.get(tenantId);
  return hit && Date.now() - hit.readAt < TENANT_CACHE_MS ? hit.row : null;
}

/** `{ row }` (tenant_id, config_json) for a request whose tenant headers check out in `db`, else `{ error }`. */
export async function authenticateTenant(request, db) {
  const tenantId = request.headers.get("x-siteswarm-tenant-id") ?? "";
  const token = request.headers.get("x-siteswarm-tenant-token") ?? "";
  // The error is built only when it is the answer (a Response per request would be work the C++
  // side does not do).
  const unauthenticated = () => ({
    error: fail(
      "unauthenticated_tenant",
      "tenant authentication failed: send a valid X-SiteSwarm-Tenant-Id and X-SiteSwarm-Tenant-Token",
    ),
  });
  if (!TENANT_ID.test(tenantId) || !token) return unauthenticated();
  let row;
  // A repeat token's digest is known (shared/tenant_cache.h, TenantCache::known_digest): no hash.
  const known = knownTokens.get(tenantId);
  let digest = known?.token === token ? known.digest : null;
  if (cachedTenant(tenantId)) {
    digest ??= await sha256(token);
    row = cachedTenant(tenantId);
    if (!row?.enabled || row.token_hash !== digest) row = await readTenant(db, tenantId);
  } else {
    [row, digest] = await Promise.all([readTenant(db, tenantId), digest ?? sha256(token)]);
  }
  if (!row?.enabled || row.token_hash !== digest) return unauthenticated();
  if (known?.token !== token) {
    if (knownTokens.size >= TENANT_CACHE_MAX && !knownTokens.has(tenantId)) knownTokens.clear();
    knownTokens.set(tenantId, { token, digest });
  }
  const version = request.headers.get("x-siteswarm-capability-version");
  if (version && version.split(".")[0] !== "1") {
    return { error: fail("unsupported_capability_version", "capability version not supported") };
  }
  return { row: { ...row, tenant_id: tenantId } };
}
