#include "shared/tenant_store.h"

#include "shared/json_util.h"

namespace ss {

namespace {

constexpr std::string_view kFindTenant = R"sql(
SELECT tenant_id, token_hash, admin_token_hash, config_json, enabled, created_at, updated_at
FROM tenants WHERE tenant_id = ?1
)sql";

constexpr std::string_view kUpsertTenant = R"sql(
INSERT INTO tenants (tenant_id, token_hash, admin_token_hash, config_json, enabled, created_at,
                     updated_at)
VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)
ON CONFLICT (tenant_id) DO UPDATE SET token_hash = ?2, admin_token_hash = ?3, config_json = ?4,
                                      enabled = 1, updated_at = ?5
)sql";

constexpr std::string_view kDisableTenant = R"sql(
UPDATE tenants SET enabled = 0, updated_at = ?2 WHERE tenant_id = ?1
)sql";

constexpr std::string_view kCountTenants = R"sql(SELECT COUNT(*) AS n FROM tenants)sql";

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

Task<Result<std::optional<TenantRow>>> TenantStore::find(const std::string& tenant_id) const {
  json params = json::array({tenant_id});
  SS_CO_TRY(D1Result r, co_await db_.first(kFindTenant, params));
  co_return r.first_as<TenantRow>();
}

Task<Status> TenantStore::upsert(const std::string& tenant_id, const std::string& token_hash,
                                 const std::string& admin_token_hash, const json& config,
                                 const std::string& now) const {
  json params = json::array({tenant_id, token_hash, admin_token_hash, dump_json(config), now});
  SS_CO_TRY(D1Result ignored, co_await db_.run(kUpsertTenant, params));
  co_return Unit{};
}

Task<Result<bool>> TenantStore::disable(const std::string& tenant_id,
                                        const std::string& now) const {
  json params = json::array({tenant_id, now});
  SS_CO_TRY(D1Result r, co_await db_.run(kDisableTenant, params));
  co_return r.meta.changes > 0;
}

Task<Result<std::int64_t>> TenantStore::count() const {
  SS_CO_TRY(D1Result r, co_await db_.first(kCountTenants));
  std::optional<json> row = r.first();
  co_return row ? int_or(*row, "n", 0) : 0;
}

}  // namespace ss
