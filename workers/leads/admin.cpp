// Tenant admin API (tenant id header + tenant admin token): list, read with delivery history, CSV
// export, GDPR erasure, dead letters; and the retention job. Every query is scoped by tenant_id,
// and a foreign id is a 404.
#include "workers/leads/admin.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/ulid.h"
#include "workers/leads/config.h"
#include "workers/leads/notify.h"

#include <set>

namespace ss::leads {

namespace {

inline constexpr int kDefaultPage = 50;
inline constexpr int kMaxPage = 200;
inline constexpr int kMaxExportRows = 10000;

json lead_view(const json& row) {
  auto payload = parse_json(string_or(row, "payload", "{}"));
  return json{{"id", string_or(row, "id", "")},
              {"createdAt", string_or(row, "created_at", "")},
              {"turnstileVerified", int_or(row, "turnstile_verified", 0) == 1},
              {"fields", payload ? *payload : json::object()}};
}

json delivery_view(const json& row) {
  std::string provider = string_or(row, "provider", "");
  std::string recipient;
  if (auto colon = provider.find(':'); colon != std::string::npos) {
    recipient = provider.substr(colon + 1);
    provider = provider.substr(0, colon);
  }
  const json* last_error = find_field(row, "last_error");
  const json* delivered = find_field(row, "delivered_at");
  json v{{"id", string_or(row, "id", "")},
         {"leadId", string_or(row, "lead_id", "")},
         {"channel", string_or(row, "channel", "")},
         {"provider", provider},
         {"status", string_or(row, "status", "")},
         {"attempts", int_or(row, "attempts", 0)},
         {"lastError", last_error && last_error->is_string() ? *last_error : json(nullptr)},
         {"createdAt", string_or(row, "created_at", "")},
         {"updatedAt", string_or(row, "updated_at", "")},
         {"deliveredAt", delivered && delivered->is_string() ? *delivered : json(nullptr)}};
  if (!recipient.empty()) v["recipient"] = recipient;
  return v;
}

Result<int> page_size(const Request& req) {
  auto n = req.int_param("limit", kDefaultPage, 1, kMaxPage);
  if (!n) return std::move(n).error();
  return static_cast<int>(*n);
}

Task<Result<Response>> list_leads(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(int limit, page_size(req));
  std::string cursor = req.query_param("cursor");
  if (!cursor.empty() && !is_ulid(cursor)) {
    co_return Error{ErrorCode::invalid_request, "cursor: not a cursor from this API"}.with(
        "field", "cursor");
  }
  json params = json::array({tenant.id, cursor, limit});
  SS_CO_TRY(json r,
            co_await D1(kDb).all_json("SELECT * FROM leads WHERE tenant_id = ?1 AND (?2 = '' OR "
                                      "id < ?2) ORDER BY id DESC LIMIT ?3",
                                      params));
  json leads = json::array();
  for (const json& row : rows_of(r)) leads.push_back(lead_view(row));
  json next = static_cast<int>(leads.size()) == limit ? leads.back()["id"] : json(nullptr);
  co_return Response::json_body(200, {{"leads", leads}, {"nextCursor", next}});
}

Task<Result<Response>> get_lead(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  std::string id = params.find("id")->second;
  json p = json::array({tenant.id, id});
  std::vector<Task<Result<json>>> work;
  work.push_back(
      as_task(D1(kDb).first_json("SELECT * FROM leads WHERE tenant_id = ?1 AND id = ?2", p)));
  work.push_back(
      as_task(D1(kDb).all_json("SELECT * FROM lead_deliveries WHERE tenant_id = ?1 AND "
                               "lead_id = ?2 ORDER BY id",
                               p)));
  auto done = co_await when_all(std::move(work));
  for (auto& d : done) {
    if (!d) co_return std::move(d).error();
  }
  const json* row = row_of(*done[0]);
  if (row == nullptr) co_return Error{ErrorCode::not_found, "no lead " + id};
  json deliveries = json::array();
  std::vector<std::string> ids;
  for (const json& d : rows_of(*done[1])) {
    deliveries.push_back(delivery_view(d));
    ids.push_back(string_or(d, "id", ""));
  }
  // The attempts of each delivery, in one query.
  if (!ids.empty()) {
    std::string in;
    json ap = json::array();
    for (const auto& d : ids) {
      ap.push_back(d);
      in += (in.empty() ? "?" : ", ?") + std::to_string(ap.size());
    }
    SS_CO_TRY(json attempts,
              co_await D1(kDb).all_json("SELECT * FROM delivery_attempts WHERE delivery_id IN (" +
                                            in + ") ORDER BY delivery_id, attempt",
                                        ap));
    for (json& d : deliveries) {
      json list = json::array();
      for (const json& a : rows_of(attempts)) {
        if (string_or(a, "delivery_id", "") != d["id"]) continue;
        const json* err = find_field(a, "error");
        const json* status = find_field(a, "http_status");
        list.push_back({{"attempt", int_or(a, "attempt", 0)},
                        {"at", string_or(a, "attempted_at", "")},
                        {"ok", int_or(a, "ok", 0) == 1},
                        {"httpStatus", status && status->is_number() ? *status : json(nullptr)},
                        {"error", err && err->is_string() ? *err : json(nullptr)}});
      }
      d["history"] = list;
    }
  }
  json view = lead_view(*row);
  view["deliveries"] = deliveries;
  co_return Response::json_body(200, view);
}

// RFC 4180 quoting; a cell that a spreadsheet would run as a formula gets a leading apostrophe.
std::string csv_cell(const std::string& value) {
  std::string v = value;
  if (!v.empty() &&
      (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@' || v[0] == '\t' || v[0] == '\r')) {
    v.insert(v.begin(), '\'');
  }
  bool quote = v.find_first_of(",\"\r\n") != std::string::npos || v != value;
  if (!quote) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

Task<Result<Response>> export_csv(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  json params = json::array({tenant.id, kMaxExportRows});
  SS_CO_TRY(json r,
            co_await D1(kDb).all_json("SELECT * FROM leads WHERE tenant_id = ?1 ORDER BY id DESC "
                                      "LIMIT ?2",
                                      params));
  std::vector<std::string> columns = {"name", "email", "phone", "message"};
  auto config = parse_config(tenant.config, true);
  if (config) {
    for (const auto& f : config->extra_fields) columns.push_back(f);
  }
  std::string out = "id,created_at,turnstile_verified";
  for (const auto& c : columns) out += "," + csv_cell(c);
  out += "\r\n";
  for (const json& row : rows_of(r)) {
    auto payload = parse_json(string_or(row, "payload", "{}"));
    out += csv_cell(string_or(row, "id", "")) + "," + csv_cell(string_or(row, "created_at", "")) +
           "," + std::to_string(int_or(row, "turnstile_verified", 0));
    for (const auto& c : columns) out += "," + csv_cell(payload ? string_or(*payload, c, "") : "");
    out += "\r\n";
  }
  Response res = Response::text(200, std::move(out), "text/csv; charset=utf-8");
  res.set_header("content-disposition", "attachment; filename=\"leads-" + tenant.id + ".csv\"");
  res.set_header("cache-control", "no-store");
  co_return res;
}

Task<Result<Response>> erase_lead(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  std::string id = params.find("id")->second;
  json p = json::array({tenant.id, id});
  std::vector<D1Statement> writes = {
      {"DELETE FROM leads WHERE tenant_id = ?1 AND id = ?2", p},
      {"DELETE FROM lead_idempotency WHERE tenant_id = ?1 AND lead_id = ?2", p},
      {"UPDATE lead_deliveries SET last_error = NULL, status = CASE status WHEN 'pending' THEN "
       "'cancelled' ELSE status END WHERE tenant_id = ?1 AND lead_id = ?2",
       p}};
  SS_CO_TRY(json results, co_await D1(kDb).batch_json(writes));
  const json* meta =
      results.is_array() && !results.empty() ? find_field(results[0], "meta") : nullptr;
  if (meta == nullptr || int_or(*meta, "changes", 0) == 0)
    co_return Error{ErrorCode::not_found, "no lead " + id};
  ctx.log("lead erased for tenant " + tenant.id);
  co_return Response::empty(204);
}

Task<Result<Response>> dead_letters(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(int limit, page_size(req));
  std::string status = req.query_param("status");
  if (status.empty()) status = "dead";
  if (status != "dead" && status != "pending" && status != "delivered" && status != "cancelled") {
    co_return Error{ErrorCode::invalid_request, "status: dead, pending, delivered or cancelled"}
        .with("field", "status");
  }
  json p = json::array({tenant.id, status, limit});
  SS_CO_TRY(json r,
            co_await D1(kDb).all_json("SELECT * FROM lead_deliveries WHERE tenant_id = ?1 AND "
                                      "status = ?2 ORDER BY id DESC LIMIT ?3",
                                      p));
  json list = json::array();
  for (const json& row : rows_of(r)) list.push_back(delivery_view(row));
  co_return Response::json_body(200, {{"deliveries", list}});
}

}  // namespace

void add_admin_routes(App& app) {
  app.router.add("GET", "/api/leads", list_leads)
      .add("GET", "/api/leads/export.csv", export_csv)
      .add("GET", "/api/leads/deliveries", dead_letters)
      .add("GET", "/api/leads/{id}", get_lead)
      .add("DELETE", "/api/leads/{id}", erase_lead);
}

Task<Status> enforce_retention(Context& ctx) {
  SS_CO_TRY(json tenants, co_await D1(kDb).all_json("SELECT tenant_id, config_json FROM tenants"));
  for (const json& t : rows_of(tenants)) {
    auto doc = parse_json(string_or(t, "config_json", "{}"));
    auto config = doc ? parse_config(*doc, true) : Result<LeadsConfig>(doc.error());
    if (!config || !config->retention_days) continue;
    std::int64_t cutoff_ms =
        ctx.now_ms() - static_cast<std::int64_t>(*config->retention_days) * kMsPerDay;
    std::string cutoff = encode_ulid(cutoff_ms, UlidRandom{});
    json p = json::array({string_or(t, "tenant_id", ""), cutoff});
    std::vector<D1Statement> writes = {
        {"DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM lead_deliveries WHERE "
         "tenant_id = ?1 AND lead_id < ?2)",
         p},
        {"DELETE FROM lead_deliveries WHERE tenant_id = ?1 AND lead_id < ?2", p},
        {"DELETE FROM lead_idempotency WHERE tenant_id = ?1 AND lead_id < ?2", p},
        {"DELETE FROM leads WHERE tenant_id = ?1 AND id < ?2", p}};
    SS_CO_TRY(json done, co_await D1(kDb).batch_json(writes));
    const json* meta = done.is_array() && done.size() == 4 ? find_field(done[3], "meta") : nullptr;
    if (meta && int_or(*meta, "changes", 0) > 0) {
      ctx.log("retention: " + std::to_string(int_or(*meta, "changes", 0)) + " leads of " +
              string_or(t, "tenant_id", "") + " removed");
    }
  }
  json expired = json::array({ctx.now_ms()});
  SS_CO_TRY(json cleaned, co_await D1(kDb).run_json(
                              "DELETE FROM rate_limit_windows WHERE expires_at_ms < ?1", expired));
  co_return Unit{};
}

}  // namespace ss::leads
