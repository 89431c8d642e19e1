#include "shared/tenant_cache.h"

#include "shared/app.h"
#include "shared/bytes.h"

namespace ss {

const TenantRow* TenantCache::fresh(const std::string& tenant_id, std::int64_t now_ms) const {
  auto it = entries_.find(tenant_id);
  if (it == entries_.end()) return nullptr;
  std::int64_t age = now_ms - it->second.read_at_ms;
  // A clock that went backwards (another host's time) counts as stale, like an old entry.
  if (age < 0 || age >= kTenantCacheTtlMs) return nullptr;
  return &it->second.row;
}

std::int64_t TenantCache::fresh_until(const std::string& tenant_id, std::int64_t now_ms) const {
  if (fresh(tenant_id, now_ms) == nullptr) return 0;
  return entries_.find(tenant_id)->second.read_at_ms + kTenantCacheTtlMs;
}

const TenantRow* TenantCache::verified(const std::string& tenant_id, std::int64_t now_ms,
                                       const std::string& token_digest) const {
  const TenantRow* row = fresh(tenant_id, now_ms);
  if (row == nullptr || !row->enabled || row->token_hash.empty() ||
      !constant_time_equal(row->token_hash, token_digest)) {
    return nullptr;
  }
  return row;
}

void TenantCache::remember(const std::string& tenant_id, const std::optional<TenantRow>& row,
                           std::int64_t asked_at_ms, std::uint64_t asked_generation) {
  if (asked_generation != generation_) return;
  if (!row) {
    entries_.erase(tenant_id);
    return;
  }
  auto it = entries_.find(tenant_id);
  if (it != entries_.end()) {
    it->second.row = *row;  // the known token stays: it is checked against this row
    it->second.read_at_ms = asked_at_ms;
    return;
  }
  if (entries_.size() >= kTenantCacheMaxEntries) {
    // Full: the entry read longest ago goes (a scan of at most kTenantCacheMaxEntries, only when an
    // instance serves more tenants than that).
    auto oldest = entries_.begin();
    for (auto e = entries_.begin(); e != entries_.end(); ++e) {
      if (e->second.read_at_ms < oldest->second.read_at_ms) oldest = e;
    }
    entries_.erase(oldest);
  }
  entries_.emplace(tenant_id, Entry{*row, asked_at_ms, {}, {}, {}});
}

std::optional<std::string> TenantCache::known_digest(const std::string& tenant_id,
                                                     const std::string& token) const {
  auto it = entries_.find(tenant_id);
  if (it == entries_.end() || it->second.known_token.empty() ||
      !constant_time_equal(it->second.known_token, token)) {
    return std::nullopt;
  }
  return it->second.known_digest;
}

void TenantCache::learn_token(const std::string& tenant_id, const std::string& token,
                              const std::string& digest) {
  auto it = entries_.find(tenant_id);
  if (it == entries_.end()) return;
  it->second.known_token = token;
  it->second.known_digest = digest;
}

bool TenantCache::capability_changed(const std::string& tenant_id, const std::string& version) {
  auto it = entries_.find(tenant_id);
  if (it == entries_.end()) return true;
  std::vector<std::string>& logged = it->second.logged_capabilities;
  for (const std::string& v : logged) {
    if (v == version) return false;
  }
  static constexpr std::size_t kLoggedCapabilities = 4;
  if (logged.size() >= kLoggedCapabilities) logged.erase(logged.begin());
  logged.push_back(version);
  return true;
}

TenantCache& tenant_cache(Context& ctx) { return ctx.instance_local<TenantCache>(); }

Task<Result<std::optional<TenantRow>>> read_tenant(Context& ctx, const std::string& tenant_id) {
  std::int64_t asked_at = ctx.now_ms();
  std::uint64_t asked_generation = tenant_cache(ctx).generation();
  SS_CO_TRY(std::optional<TenantRow> row,
            co_await TenantStore(ctx.app().db_binding).find(tenant_id));
  // Aged from when the read was asked: the row may have changed while D1 answered.
  tenant_cache(ctx).remember(tenant_id, row, asked_at, asked_generation);
  co_return row;
}

}  // namespace ss
