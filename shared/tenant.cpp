#include "shared/tenant.h"

#include "shared/app.h"
#include "shared/bytes.h"
#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/tenant_cache.h"
#include "shared/tenant_store.h"
#include "shared/text.h"

#include <cctype>

namespace ss {

Error tenant_unauthenticated() {
  return Error{ErrorCode::unauthenticated_tenant,
               "tenant authentication failed: send a valid X-SiteSwarm-Tenant-Id and "
               "X-SiteSwarm-Tenant-Token"};
}

namespace {
Error unauthenticated() { return tenant_unauthenticated(); }
Error admin_unauthorized() {
  return Error{ErrorCode::unauthenticated_tenant,
               "tenant admin authentication failed: send a valid X-SiteSwarm-Tenant-Id and "
               "Authorization: Bearer <tenant admin token>"};
}

enum class Secret { token, admin_token };

const std::string& stored_digest(const TenantRow& row, Secret which) {
  return which == Secret::token ? row.token_hash : row.admin_token_hash;
}

Tenant tenant_of(const std::string& tenant_id, const TenantRow& row) {
  Tenant tenant;
  tenant.id = tenant_id;
  tenant.config = row.config;
  return tenant;
}

std::optional<Tenant> tenant_if_matches(const std::string& tenant_id, const TenantRow& row,
                                        const std::string& digest, Secret which) {
  const std::string& stored = stored_digest(row, which);
  if (!row.enabled || stored.empty() || !constant_time_equal(stored, digest)) return std::nullopt;
  return tenant_of(tenant_id, row);
}

// Hashes the presented secret and compares it with the tenant's stored digest; nullopt when the
// tenant is unknown, disabled or the secret does not match. A tenant token is first checked
// against this instance's cached row (shared/tenant_cache.h): a match answers without D1; anything
// else reads D1 (and refreshes the cache). Without a fresh cached row, the D1 read and the hash run
// concurrently. A tenant token that authenticated before in this instance has its digest already
// (TenantCache::known_digest): with a fresh cached row it costs no effect at all. A tenant admin
// token always reads D1 and is always hashed.
Task<Result<std::optional<Tenant>>> verify_secret(Context& ctx, const std::string& tenant_id,
                                                  std::string secret, Secret which) {
  const bool cacheable = which == Secret::token;
  std::optional<std::string> known =
      cacheable ? tenant_cache(ctx).known_digest(tenant_id, secret) : std::nullopt;
  const bool was_known = known.has_value();
  const bool fresh = cacheable && tenant_cache(ctx).fresh(tenant_id, ctx.now_ms()) != nullptr;
  std::string digest;
  std::optional<TenantRow> read;  // D1's answer, when D1 was asked
  const TenantRow* row = nullptr;
  if (!fresh && !known) {
    auto [found, hashed] = co_await when_all(read_tenant(ctx, tenant_id), sha256_hex(secret));
    if (!found) co_return std::move(found).error();
    if (!hashed) co_return std::move(hashed).error();
    digest = std::move(*hashed);
    read = std::move(*found);
  } else {
    if (known) {
      digest = std::move(*known);
    } else {
      SS_CO_TRY(std::string hashed, co_await sha256_hex(secret));
      digest = std::move(hashed);
    }
    // Looked up after the await (the cache may have changed meanwhile); valid until the next one.
    row = fresh ? tenant_cache(ctx).verified(tenant_id, ctx.now_ms(), digest) : nullptr;
    if (row == nullptr) {
      SS_CO_TRY(std::optional<TenantRow> found, co_await read_tenant(ctx, tenant_id));
      read = std::move(found);
    }
  }
  if (row == nullptr && read) row = &*read;
  if (row == nullptr) co_return std::optional<Tenant>{};
  std::optional<Tenant> verified = tenant_if_matches(tenant_id, *row, digest, which);
  if (verified && cacheable && !was_known) tenant_cache(ctx).learn_token(tenant_id, secret, digest);
  co_return verified;
}

}  // namespace

bool is_valid_tenant_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxTenantIdLength) return false;
  static constexpr CharClass kTenantIdTail = CharClass(kLowerAlnum).chars("-");
  return kLowerAlnum.contains(id[0]) && kTenantIdTail.all_of(id.substr(1));
}

Status check_capability(Context& ctx, const Request& req, const std::string& tenant_id) {
  std::string version = req.header("x-siteswarm-capability-version");
  if (version.empty()) return Unit{};
  std::string shown = version.substr(0, 32);
  // A semantic version (MAJOR.MINOR.PATCH…) of the one major spoken; anything else, one answer.
  if (semver_major(version) != kSupportedCapabilityMajor) {
    Error e{ErrorCode::unsupported_capability_version,
            "capability version " + shown + " is not supported: send a semantic version 1.x.y"};
    return std::move(
        name_field(e, "X-SiteSwarm-Capability-Version", "send a semantic version 1.x.y"));
  }
  if (tenant_cache(ctx).capability_changed(tenant_id, shown)) {
    ctx.log("tenant " + tenant_id + " calls with capability version " + shown);
  }
  return Unit{};
}

std::string bearer_token(const Request& req) {
  // RFC 9110 §11.1: the scheme is case-insensitive ("bearer", "BEARER"), then one or more spaces.
  std::string auth = req.header("authorization");
  static constexpr std::string_view kScheme = "bearer";
  if (auth.size() <= kScheme.size() || auth[kScheme.size()] != ' ') return "";
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (static_cast<char>(std::tolower(static_cast<unsigned char>(auth[i]))) != kScheme[i]) {
      return "";
    }
  }
  std::size_t start = auth.find_first_not_of(' ', kScheme.size());
  return start == std::string::npos ? "" : auth.substr(start);
}

Task<Result<Tenant>> authenticate_tenant(Context& ctx, const Request& req) {
  std::string id = req.header("x-siteswarm-tenant-id");
  std::string token = req.header("x-siteswarm-tenant-token");
  if (id.empty() || !is_valid_tenant_id(id) || token.empty()) co_return unauthenticated();
  SS_CO_TRY(std::optional<Tenant> verified,
            co_await verify_secret(ctx, id, std::move(token), Secret::token));
  if (!verified) co_return unauthenticated();
  Tenant tenant = std::move(*verified);
  SS_CO_CHECK(check_capability(ctx, req, tenant.id));
  tenant.capability_version = req.header("x-siteswarm-capability-version");
  co_return tenant;
}

Task<Result<Tenant>> authenticate_tenant_reader(Context& ctx, const Request& req) {
  if (!bearer_token(req).empty() && req.header("x-siteswarm-tenant-token").empty()) {
    SS_CO_RETURN_AWAIT(authenticate_tenant_admin(ctx, req));
  }
  SS_CO_RETURN_AWAIT(authenticate_tenant(ctx, req));
}

Task<Result<Tenant>> authenticate_tenant_admin(Context& ctx, const Request& req) {
  std::string id = req.header("x-siteswarm-tenant-id");
  std::string token = bearer_token(req);
  if (id.empty() || !is_valid_tenant_id(id) || token.empty()) co_return admin_unauthorized();
  SS_CO_TRY(std::optional<Tenant> verified,
            co_await verify_secret(ctx, id, std::move(token), Secret::admin_token));
  if (!verified) co_return admin_unauthorized();
  SS_CO_CHECK(check_capability(ctx, req, verified->id));
  co_return std::move(*verified);
}

Status authenticate_operator(Context& ctx, const Request& req) {
  Error refused{ErrorCode::unauthorized, "operator endpoint: send Authorization: Bearer <token>"};
  std::string expected = ctx.env("PLATFORM_ADMIN_TOKEN");
  std::string presented = bearer_token(req);
  if (expected.empty() || presented.empty()) return refused;
  // Compared in time that depends only on the presented token's length (constant_time_equal):
  // nothing about the configured token leaks, and no hash (no crossing to the host) is needed.
  if (!constant_time_equal(expected, presented)) return refused;
  return Unit{};
}

}  // namespace ss
