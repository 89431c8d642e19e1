#include "shared/tenant_store.h"

#include "shared/json_util.h"

namespace ss {

namespace {

constexpr std::string_view kFindTenant = R"sql(
SELECT tenant_id, token_hash, admin_token_hash, config_json, enabled, created_at, updated_at
FROM tenants WHERE tenant_id = ?1
)sql";

// A new tenant only: its `changes` say whether this request created it.
constexpr std::string_view kCreateTenant = R"sql(
INSERT INTO tenants (tenant_id, token_hash, admin_token_hash, config_json, enabled, created_at,
                     updated_at)
VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)
ON CONFLICT (tenant_id) DO NOTHING
)sql";

// Every save: a NULL digest or config keeps the stored one.
constexpr std::string_view kUpdateTenant = R"sql(
UPDATE tenants SET token_hash = COALESCE(?2, token_hash),
                   admin_token_hash = COALESCE(?3, admin_token_hash),
                   config_json = COALESCE(?4, config_json),
                   enabled = 1, updated_at = ?5
WHERE tenant_id = ?1
)sql";

constexpr std::string_view kDisableTenant = R"sql(
UPDATE tenants SET enabled = 0, updated_at = ?2 WHERE tenant_id = ?1
)sql";

constexpr std::string_view kCountTenants = R"sql(SELECT COUNT(*) AS n FROM tenants)sql";

Result<std::optional<TenantRow>> tenant_found(json&& value) {
  Result<D1Result> r = D1::first_result(std::move(value));
  if (!r.ok()) return std::move(r).error();
  return r.value().first_as<TenantRow>();
}

// Whether the statement changed a row (disable, create, update).
Result<bool> row_changed(json&& value) {
  Result<D1Result> r = D1::all_result(std::move(value));
  if (!r.ok()) return std::move(r).error();
  return r.value().meta.changes > 0;
}

Result<std::int64_t> tenants_counted(json&& value) {
  Result<D1Result> r = D1::first_result(std::move(value));
  if (!r.ok()) return std::move(r).error();
  std::optional<json> row = r.value().first();
  return row ? int_or(*row, "n", 0) : std::int64_t{0};
}

}  // namespace

TenantRow TenantRow::decode(RowReader& r) {
  TenantRow row;
  row.tenant_id = r.text("tenant_id");
  row.token_hash = r.text("token_hash");
  row.admin_token_hash = r.text("admin_token_hash");
  row.config = r.json_text("config_json");
  if (!row.config.is_object()) row.config = json::object();
  row.enabled = r.flag("enabled");
  row.created_at = r.text("created_at");
  row.updated_at = r.text("updated_at");
  return row;
}

EffectOf<std::optional<TenantRow>> TenantStore::find(const std::string& tenant_id) const {
  return db_.first_decoded<std::optional<TenantRow>>(kFindTenant, json::array({tenant_id}),
                                                     tenant_found);
}

EffectOf<bool> TenantStore::write(bool create, const std::string& tenant_id,
                                  const std::optional<std::string>& token_hash,
                                  const std::optional<std::string>& admin_token_hash,
                                  const json* config, const std::string& now) const {
  json config_text = config != nullptr ? json(dump_json(*config)) : create ? json("{}") : json();
  return db_.run_decoded<bool>(
      create ? kCreateTenant : kUpdateTenant,
      json::array({tenant_id, token_hash ? json(*token_hash) : json(nullptr),
                   admin_token_hash ? json(*admin_token_hash) : json(nullptr),
                   std::move(config_text), now}),
      row_changed);
}

EffectOf<bool> TenantStore::disable(const std::string& tenant_id, const std::string& now) const {
  return db_.run_decoded<bool>(kDisableTenant, json::array({tenant_id, now}), row_changed);
}

EffectOf<std::int64_t> TenantStore::count() const {
  return db_.first_decoded<std::int64_t>(kCountTenants, json::array(), tenants_counted);
}

}  // namespace ss
