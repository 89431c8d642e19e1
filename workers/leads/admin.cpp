// Tenant admin API (tenant id header + tenant admin token): list, read with delivery history, CSV
// export, GDPR erasure, dead letters; and the retention job. Every query is scoped by tenant_id,
// and a foreign id is a 404.
#include "workers/leads/admin.h"

#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/response_stream.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/ulid.h"
#include "workers/leads/config.h"
#include "workers/leads/store.h"

#include <algorithm>
#include <set>

namespace ss::leads {

namespace {

inline constexpr int kDefaultPage = 50;
inline constexpr int kMaxPage = 200;
// Leads per export chunk: one D1 query each. A page of the largest leads (32 KiB) is about 6 MiB in
// the core; a Workers invocation may run 1,000 D1 queries, so one export reaches 200,000 leads.
inline constexpr int kExportPage = 200;

json lead_view(const LeadRow& row) {
  // "leadId" beside "id": the name the submit answer gave it. The contract's own fields (name,
  // email, phone, message) also at the top, as a form's fields are read; every field in "fields".
  json fields = row.payload.is_object() ? row.payload : json::object();
  json view = json_object({{"id", row.id},
                           {"leadId", row.id},
                           {"createdAt", shown_rfc3339(row.created_at)},
                           {"turnstileVerified", row.turnstile_verified}});
  for (const char* name : {"name", "email", "phone", "message"}) {
    if (const json* v = find_field(fields, name); v && v->is_string()) view[name] = *v;
  }
  view["fields"] = std::move(fields);
  return view;
}

json optional_json(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }

// Delivery times are stored with milliseconds (the retry timers and the sweeper compare them);
// clients see whole seconds (shown_rfc3339_second, optional_time), as every time the platform answers.
json delivery_view(const DeliveryRow& row) {
  json v = json_object({{"id", row.id},
                        {"leadId", row.lead_id},
                        {"channel", row.channel},
                        {"provider", row.provider},
                        {"status", row.status},
                        {"attempts", row.attempts},
                        {"lastError", optional_json(row.last_error)},
                        {"createdAt", shown_rfc3339(row.created_at)},
                        {"updatedAt", shown_rfc3339_second(row.updated_at)},
                        {"deliveredAt", optional_time(row.delivered_at)}});
  if (!row.recipient.empty()) v["recipient"] = row.recipient;
  return v;
}

json attempt_view(const AttemptRow& a) {
  return json_object({{"attempt", a.attempt},
                      {"at", shown_rfc3339_second(a.attempted_at)},
                      {"ok", a.ok},
                      {"httpStatus", a.http_status ? json(*a.http_status) : json(nullptr)},
                      {"error", optional_json(a.error)}});
}

Result<int> page_size(const Request& req) {
  auto n = req.int_param("limit", kDefaultPage, 1, kMaxPage);
  if (!n) return std::move(n).error();
  return static_cast<int>(*n);
}

// `cursor` (a page's nextCursor: the last id on it, a ULID read in either case), '' when absent.
Result<std::string> page_cursor(const Request& req) {
  std::string cursor = canonical_ulid(req.query_param("cursor"));
  if (!cursor.empty() && !is_ulid(cursor))
    return invalid_field("cursor", "not a cursor from this API");
  return cursor;
}

Task<Result<Response>> list_leads(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(int limit, page_size(req));
  SS_CO_TRY(std::string cursor, page_cursor(req));
  // One row more than the page: the cursor is null on the last page, also when it is full.
  SS_CO_TRY(std::vector<LeadRow> rows, co_await LeadStore(kDb).list(tenant.id, cursor, limit + 1));
  const bool more = static_cast<int>(rows.size()) > limit;
  if (more) rows.resize(static_cast<std::size_t>(limit));
  json leads = json::array();
  for (const LeadRow& row : rows) leads.push_back(lead_view(row));
  json next = more ? leads.back()["id"] : json(nullptr);
  co_return Response::json_body(200, json_object({{"leads", leads}, {"nextCursor", next}}));
}

Task<Result<Response>> get_lead(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  std::string id = canonical_ulid(params.find("id")->second);
  LeadStore store(kDb);
  auto [lead, deliveries, attempts] =
      co_await when_all(store.find(tenant.id, id), store.deliveries_of(tenant.id, id),
                        store.attempts_of(tenant.id, id));
  if (!lead) co_return std::move(lead).error();
  if (!deliveries) co_return std::move(deliveries).error();
  if (!attempts) co_return std::move(attempts).error();
  if (!*lead) co_return Error{ErrorCode::not_found, "no lead " + id};
  json list = json::array();
  for (const DeliveryRow& d : *deliveries) {
    json view = delivery_view(d);
    json history = json::array();
    for (const AttemptRow& a : *attempts) {
      if (a.delivery_id == d.id) history.push_back(attempt_view(a));
    }
    view["history"] = std::move(history);
    list.push_back(std::move(view));
  }
  json view = lead_view(**lead);
  view["deliveries"] = std::move(list);
  co_return Response::json_body(200, view);
}

// A sign and digits only, as every phone number is stored (E.164: "+15550102000"): a spreadsheet
// reads it as a number, never as a formula, so it needs no apostrophe to be safe.
bool is_signed_digits(const std::string& v) {
  return v.size() > 1 && (v[0] == '+' || v[0] == '-') &&
         v.find_first_not_of("0123456789", 1) == std::string::npos;
}

// RFC 4180 quoting; a cell that a spreadsheet would run as a formula gets a leading apostrophe.
std::string csv_cell(const std::string& value) {
  std::string v = value;
  if (!v.empty() && !is_signed_digits(v) &&
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

// A lead's row: the columns, then `other_fields` — the stored fields no column names, as one JSON
// object (empty when there are none): a field the tenant's config no longer lists (or a stored
// config listed under a reserved name) is still in the file, never dropped from an export.
std::string csv_line(const LeadRow& row, const std::vector<std::string>& columns) {
  std::string line = csv_cell(row.id) + "," + csv_cell(shown_rfc3339(row.created_at)) + "," +
                     (row.turnstile_verified ? "1" : "0");
  for (const auto& c : columns) line += "," + csv_cell(string_or(row.payload, c, ""));
  json others = json::object();
  if (row.payload.is_object()) {
    for (auto it = row.payload.begin(); it != row.payload.end(); ++it) {
      if (std::find(columns.begin(), columns.end(), it.key()) == columns.end()) {
        others[it.key()] = it.value();
      }
    }
  }
  line += "," + csv_cell(others.empty() ? std::string() : dump_json(others));
  return line + "\r\n";
}

// Every lead of the tenant, newest first, streamed one page per chunk (docs/leads.md "CSV export"):
// the core holds one page of leads at a time whatever their number. The first page is read before
// the response opens, so a D1 outage at the start is still a clean 503.
Task<Result<Response>> export_csv(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  std::vector<std::string> columns = {"name", "email", "phone", "message"};
  auto config = parse_config(tenant.config, true);
  if (config) {
    // A config stored before check_config_for_write refused them may still repeat a name or list
    // a reserved one: one column each.
    for (const auto& f : config->extra_fields) {
      if (is_reserved_field(f) || std::find(columns.begin(), columns.end(), f) != columns.end()) {
        continue;
      }
      columns.push_back(f);
    }
  }
  std::vector<std::pair<std::string, std::string>> headers = {
      {"content-type", "text/csv; charset=utf-8"},
      {"content-disposition", "attachment; filename=\"leads-" + tenant.id + ".csv\""},
      {"cache-control", "no-store"}};
  if (req.method == "HEAD") {
    Response res = Response::empty(200);
    for (auto& [k, v] : headers) res.set_header(k, v);
    co_return res;
  }
  LeadStore store(kDb);
  SS_CO_TRY(std::vector<LeadRow> page, co_await store.list(tenant.id, "", kExportPage));
  SS_CO_CHECK(co_await response_open(200, headers));
  std::string chunk = "id,created_at,turnstile_verified";
  for (const auto& c : columns) chunk += "," + csv_cell(c);
  chunk += ",other_fields\r\n";
  for (;;) {
    for (const LeadRow& row : page) chunk += csv_line(row, columns);
    if (!chunk.empty()) SS_CO_CHECK(co_await response_write(std::move(chunk)));
    chunk.clear();
    // A short page is the last one. Keyset paging on the ULID: leads added meanwhile are newer
    // than the first page and not in this export; none is skipped or repeated.
    if (page.size() < static_cast<std::size_t>(kExportPage)) break;
    std::string before = page.back().id;
    page.clear();
    SS_CO_TRY(page, co_await store.list(tenant.id, before, kExportPage));
  }
  co_return Response::streamed_body();
}

Task<Result<Response>> erase_lead(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  std::string id = canonical_ulid(params.find("id")->second);
  SS_CO_TRY(bool erased, co_await LeadStore(kDb).erase(tenant.id, id));
  if (!erased) co_return Error{ErrorCode::not_found, "no lead " + id};
  ctx.log("lead erased for tenant " + tenant.id);
  co_return Response::empty(204);
}

Task<Result<Response>> dead_letters(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(int limit, page_size(req));
  std::string status = req.query_param("status");
  if (status.empty()) status = "dead";
  if (status != "dead" && status != "pending" && status != "delivered" && status != "cancelled") {
    co_return invalid_field("status", "dead, pending, delivered or cancelled");
  }
  SS_CO_TRY(std::string cursor, page_cursor(req));
  // One row more than the page, as the lead list: the cursor is null on the last page.
  SS_CO_TRY(std::vector<DeliveryRow> rows,
            co_await LeadStore(kDb).deliveries_by_status(tenant.id, status, cursor, limit + 1));
  const bool more = static_cast<int>(rows.size()) > limit;
  if (more) rows.resize(static_cast<std::size_t>(limit));
  json list = json::array();
  for (const DeliveryRow& row : rows) list.push_back(delivery_view(row));
  json next = more ? json(rows.back().id) : json(nullptr);
  co_return Response::json_body(200, json_object({{"deliveries", list}, {"nextCursor", next}}));
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
  LeadStore store(kDb);
  SS_CO_TRY(std::vector<TenantConfigRow> tenants, co_await store.tenant_configs());
  for (const TenantConfigRow& t : tenants) {
    auto doc = parse_json(t.config_json);
    auto config = doc ? parse_config(*doc, true) : Result<LeadsConfig>(doc.error());
    if (!config) {
      // Never silently: a tenant whose stored config cannot be read keeps its leads past its
      // retention until the config is fixed.
      ctx.log("retention: skipped for " + t.tenant_id + ": its leads config cannot be read (" +
              config.error().message + ")");
      continue;
    }
    if (!config->retention_days) continue;
    std::int64_t cutoff_ms =
        ctx.now_ms() - static_cast<std::int64_t>(*config->retention_days) * kMsPerDay;
    std::string cutoff = encode_ulid(cutoff_ms, UlidRandom{});
    SS_CO_TRY(std::int64_t removed, co_await store.delete_leads_before(t.tenant_id, cutoff));
    if (removed > 0) {
      ctx.log("retention: " + std::to_string(removed) + " leads of " + t.tenant_id + " removed");
    }
  }
  SS_CO_CHECK(co_await store.delete_expired_windows(ctx.now_ms()));
  SS_CO_CHECK(co_await store.delete_expired_claims(ctx.now_ms() - kIdempotencyWindowMs));
  co_return Unit{};
}

}  // namespace ss::leads
