#pragma once
// Tenant rows as D1 last gave them, kept per instance (one isolate in workerd) for a few seconds, so
// the hot public paths (a beacon, a lead, a cms read) do not read the tenants table on every request:
// with the cache, D1 load follows the number of tenants and isolates, not traffic.
//
// verified() answers only a *success* from the cache: a cached row that is enabled and whose token
// digest matches the presented one. (The status page also trusts a fresh *disabled* row, to answer
// 404: workers/monitoring/status_page.cpp.) For verified(), everything else — no entry, an entry
// older than kTenantCacheTtlMs, a disabled row, a digest that does not match (a rotated token) —
// reads D1 again, so a new tenant or a new token works at once. What can lag, by at most
// kTenantCacheTtlMs, is a revocation (disable, token rotation) made through *another* isolate; the
// operator routes of this instance drop their tenant's entry at once (docs/architecture.md, "Tenant
// rows cached per instance").
// Tenant admin authentication never uses the cache.

#include "shared/tenant_store.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ss {

inline constexpr std::int64_t kTenantCacheTtlMs = 30'000;
inline constexpr std::size_t kTenantCacheMaxEntries = 1024;

class TenantCache {
 public:
  // The row read for tenant_id at most kTenantCacheTtlMs before now_ms; nullptr otherwise. The
  // pointer is valid until the next co_await (another run may change the cache meanwhile).
  const TenantRow* fresh(const std::string& tenant_id, std::int64_t now_ms) const;
  // The fresh row when it may answer a request on its own: enabled, and its token digest is the
  // presented token's (compared in constant time). nullptr: read D1.
  const TenantRow* verified(const std::string& tenant_id, std::int64_t now_ms,
                            const std::string& token_digest) const;
  // When the fresh row of tenant_id stops being fresh (ms since the epoch); 0 when there is none.
  std::int64_t fresh_until(const std::string& tenant_id, std::int64_t now_ms) const;
  // Remembers what D1 answered (nullopt: no such tenant, which is not kept).
  // A read asked before the last forget() (generation() has moved since) is not kept: it may
  // predate the change that made the forget.
  void remember(const std::string& tenant_id, const std::optional<TenantRow>& row,
                std::int64_t asked_at_ms, std::uint64_t asked_generation);
  // Known tokens: the SHA-256 of the last tenant token that authenticated each cached tenant, so a
  // repeat token costs no crypto.sha256 effect. A digest is a fixed function of its token, so it
  // never goes stale: it is still compared with D1's (or the cached row's, or a serving copy's)
  // token hash on every request, and a rotated, revoked or wrong token is refused exactly as before.
  // Kept beside the tenant's entry (a re-read of the row keeps it; forget() and a tenant D1 no
  // longer has drop it), and only for a token that authenticated, so wrong tokens cannot fill it.
  // Tokens stay in the instance's memory; they are never logged or returned.
  // The digest of `token` when it last authenticated tenant_id (compared in constant time).
  std::optional<std::string> known_digest(const std::string& tenant_id,
                                          const std::string& token) const;
  // Remembers an authenticated token's digest; nothing when the tenant has no entry.
  void learn_token(const std::string& tenant_id, const std::string& token,
                   const std::string& digest);
  // The capability version a tenant calls with is logged when it is new to this instance's entry
  // (the last few versions logged are kept): true (log it) when it is, or the tenant has no entry.
  bool capability_changed(const std::string& tenant_id, const std::string& version);
  void forget(const std::string& tenant_id) {
    entries_.erase(tenant_id);
    ++generation_;
  }
  std::uint64_t generation() const { return generation_; }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    TenantRow row;
    std::int64_t read_at_ms = 0;
    std::string known_token;  // empty: none yet
    std::string known_digest;
    std::vector<std::string> logged_capabilities;  // at most kLoggedCapabilities, oldest first
  };
  std::map<std::string, Entry, std::less<>> entries_;
  std::uint64_t generation_ = 0;
};

// This instance's cache.
TenantCache& tenant_cache(Context& ctx);

// The tenant row from D1 (never the cache), remembered in the cache.
Task<Result<std::optional<TenantRow>>> read_tenant(Context& ctx, const std::string& tenant_id);

}  // namespace ss
