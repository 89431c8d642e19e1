#pragma once
// Tenant context: who is calling, proven rather than claimed.
//
// A tenant id header can arrive straight from the internet (route delegation forwards raw
// requests), so it is never enough: the token must hash (SHA-256, computed by the host) to the
// stored digest. Services keep only digests. Failures are 401 unauthenticated_tenant, decided
// before any tenant data is touched, with one message whatever was wrong (no enumeration).

#include "shared/effects.h"
#include "shared/http.h"

#include <string>
#include <string_view>

namespace ss {

inline constexpr std::size_t kMaxTenantIdLength = 63;
inline constexpr int kSupportedCapabilityMajor = 1;

struct Tenant {
  std::string id;
  json config = json::object();
  std::string capability_version;
};

// [a-z0-9][a-z0-9-]{0,62}
bool is_valid_tenant_id(std::string_view id);

// The one answer for every failed tenant authentication, whatever was wrong (no id, malformed id,
// unknown or disabled tenant, no or bad token): telling them apart would let anyone enumerate
// tenant ids. 401 unauthenticated_tenant.
Error tenant_unauthenticated();

// X-SiteSwarm-Tenant-Id + X-SiteSwarm-Tenant-Token (+ X-SiteSwarm-Capability-Version, major 1).
Task<Result<Tenant>> authenticate_tenant(Context& ctx, const Request& req);
// X-SiteSwarm-Tenant-Id + Authorization: Bearer <tenant admin token> (+ the capability version).
Task<Result<Tenant>> authenticate_tenant_admin(Context& ctx, const Request& req);
// A tenant's own reads (stats, monitor overviews): its tenant token (what a site's delegation sends)
// or its tenant admin token (what a dashboard or a script sends) both prove the tenant; the admin
// token is used when a bearer token comes without X-SiteSwarm-Tenant-Token.
Task<Result<Tenant>> authenticate_tenant_reader(Context& ctx, const Request& req);
// Authorization: Bearer <PLATFORM_ADMIN_TOKEN> (401 unauthorized otherwise, also when unset).
// No effect: the token is compared in place, so this is a plain function, not a task.
Status authenticate_operator(Context& ctx, const Request& req);

std::string bearer_token(const Request& req);

// The X-SiteSwarm-Capability-Version of an authenticated tenant call: absent, or a major this
// service speaks (400 unsupported_capability_version otherwise). Logged when a tenant's version is
// new to this instance (TenantCache::capability_changed), not on every request (a log line per
// request would cost every answer its replay, docs/abi.md "Replayable answers").
Status check_capability(Context& ctx, const Request& req, const std::string& tenant_id);

}  // namespace ss
