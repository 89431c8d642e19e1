#pragma once
// The tenants table every platform worker keeps in its own D1 (migrations/<db>/0001_tenants.sql):
// every statement on it, as named constants behind typed functions.

#include "shared/effects.h"

#include <optional>
#include <string>

namespace ss {

struct TenantRow {
  std::string tenant_id;
  std::string token_hash;
  std::string admin_token_hash;
  json config = json::object();
  bool enabled = false;
  std::string created_at;
  std::string updated_at;

  static TenantRow decode(RowReader& r);
};

class TenantStore {
 public:
  explicit TenantStore(std::string binding) : db_(std::move(binding)) {}

  // Each returns the D1 effect itself, decoded to its type when it completes (no coroutine of its
  // own: awaiting it yields the same Result a Task would).
  EffectOf<std::optional<TenantRow>> find(const std::string& tenant_id) const;
  // Creates the tenant (when both digests are given) or updates it, enabled again, with config
  // stored as JSON text and a digest left out keeping the stored one; one D1 batch, so concurrent
  // saves of a new tenant see exactly one `created`. `missing`: no such tenant and not both
  // digests, nothing written.
  enum class Saved { created, updated, missing };
  EffectOf<Saved> save(const std::string& tenant_id, const std::optional<std::string>& token_hash,
                       const std::optional<std::string>& admin_token_hash, const json& config,
                       const std::string& now) const;
  // false when there is no such tenant.
  EffectOf<bool> disable(const std::string& tenant_id, const std::string& now) const;
  EffectOf<std::int64_t> count() const;

 private:
  D1 db_;
};

}  // namespace ss
