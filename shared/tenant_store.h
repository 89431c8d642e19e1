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
  // create: inserts a new tenant, enabled (both digests given); false when the id exists already,
  // nothing changed — its own answer, so of concurrent creations of one id exactly one is true.
  // Otherwise updates the tenant, enabled again, a digest left out keeping the stored one (in the
  // same statement); false when there is no such tenant. Config is stored as JSON text; an update
  // without one (nullptr) keeps the stored config, a creation without one stores {}.
  EffectOf<bool> write(bool create, const std::string& tenant_id,
                       const std::optional<std::string>& token_hash,
                       const std::optional<std::string>& admin_token_hash, const json* config,
                       const std::string& now) const;
  // false when there is no such tenant.
  EffectOf<bool> disable(const std::string& tenant_id, const std::string& now) const;
  EffectOf<std::int64_t> count() const;

 private:
  D1 db_;
};

}  // namespace ss
