#include "workers/monitoring/routes.h"

#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "workers/monitoring/jobs.h"
#include "workers/monitoring/monitor.h"
#include "workers/monitoring/status_page.h"
#include "workers/monitoring/store.h"

#include <cmath>

namespace ss::monitoring {

namespace {

inline constexpr std::size_t kMaxMonitorBody = 32 * 1024;
inline constexpr int kAlertListLimit = 50;

Result<std::string> monitor_id_param(const Params& params) {
  auto it = params.find("id");
  if (it == params.end() || !is_valid_monitor_id(it->second)) {
    Error e{ErrorCode::invalid_request, "monitor id must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}"};
    return name_field(e, "id");
  }
  return it->second;
}

// A window's time as answered: UTC ("…Z"). Monitors written before windows were kept in UTC may
// still hold the offset they were sent with.
json utc_time(const json& v) {
  if (!v.is_string()) return v;
  std::optional<std::int64_t> ms = parse_rfc3339(v.get_ref<const std::string&>());
  return ms ? json(shown_rfc3339(format_rfc3339_ms(*ms))) : v;
}

json admin_view(const MonitorRow& row) {
  json out = json_object({{"id", row.monitor_id}});
  json spec = row.spec.is_object() ? row.spec : json::object();
  for (auto it = spec.begin(); it != spec.end(); ++it) out[it.key()] = it.value();
  if (auto windows = out.find("maintenance"); windows != out.end() && windows->is_array()) {
    for (json& w : *windows) {
      if (!w.is_object()) continue;
      for (const char* key : {"start", "end"}) {
        if (auto t = w.find(key); t != w.end()) *t = utc_time(*t);
      }
    }
    // Stored once, answered under both names (the contract's "maintenance windows" too).
    out["maintenanceWindows"] = *windows;
  }
  out["enabled"] = row.enabled;
  out["source"] = row.source;
  out["createdAt"] = row.created_at;
  out["updatedAt"] = row.updated_at;
  return out;
}

Task<Result<Response>> put_monitor(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(std::string id, monitor_id_param(params));
  SS_CO_CHECK(require_json_body(req, kMaxMonitorBody));
  SS_CO_CHECK(require_identity_coding(req));
  SS_CO_TRY(json body, parse_json_object(req.body));
  SS_CO_CHECK(check_monitor_keys(body, ""));
  SS_CO_TRY(MonitorSpec spec, parse_monitor(body, ctx.allow_local_outbound()));
  SS_CO_CHECK(check_service_available(spec, ctx.env("MONITOR_SERVICES")));
  MonitorStore store;
  std::string now = format_rfc3339(ctx.now_ms());
  SS_CO_TRY(MonitorStore::Saved saved_as,
            co_await store.upsert(tenant.id, id, monitor_json(spec, false), spec.enabled, "api",
                                  now, static_cast<std::int64_t>(kMaxMonitorsPerTenant)));
  if (saved_as == MonitorStore::Saved::capped) {
    co_return Error{ErrorCode::conflict,
                    "a tenant has at most " + std::to_string(kMaxMonitorsPerTenant) + " monitors"};
  }
  const bool created = saved_as == MonitorStore::Saved::created;
  co_await forget_status(ctx, tenant.id);  // at once after the write, whatever follows
  // A monitor disabled while down: its incident is closed at once (the cron is the backstop).
  if (!spec.enabled) co_await close_orphaned_incidents(ctx, tenant.id);
  SS_CO_TRY(std::optional<MonitorRow> saved, co_await store.find(tenant.id, id));
  if (!saved) co_return Error{ErrorCode::internal, "put_monitor(): the row vanished"};
  co_return Response::json_body(created ? 201 : 200, admin_view(*saved));
}

Task<Result<Response>> get_monitor(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(std::string id, monitor_id_param(params));
  SS_CO_TRY(std::optional<MonitorRow> row, co_await MonitorStore().find(tenant.id, id));
  if (!row) co_return Error{ErrorCode::not_found, "no monitor " + id};
  co_return Response::json_body(200, admin_view(*row));
}

Task<Result<Response>> delete_monitor(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(std::string id, monitor_id_param(params));
  SS_CO_TRY(bool removed, co_await MonitorStore().remove(tenant.id, id));
  if (!removed) co_return Error{ErrorCode::not_found, "no monitor " + id};
  co_await forget_status(ctx, tenant.id);
  co_await close_orphaned_incidents(ctx, tenant.id);  // its open incident, at once
  co_return Response::json_body(200, json_object({{"id", id}, {"deleted", true}}));
}

Task<Result<Response>> list_monitors(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(std::vector<MonitorRow> rows, co_await MonitorStore().list(tenant.id));
  json list = json::array();
  for (const auto& row : rows) list.push_back(admin_view(row));
  co_return Response::json_body(200, json_object({{"monitors", list}}));
}

Task<Result<Response>> monitor_alerts(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(std::string id, monitor_id_param(params));
  MonitorStore store;
  SS_CO_TRY(std::optional<MonitorRow> row, co_await store.find(tenant.id, id));
  if (!row) co_return Error{ErrorCode::not_found, "no monitor " + id};
  SS_CO_TRY(std::vector<AlertRow> alerts, co_await store.alerts_of(tenant.id, id, kAlertListLimit));
  json list = json::array();
  for (const auto& a : alerts) list.push_back(a.to_json());
  co_return Response::json_body(200, json_object({{"alerts", list}}));
}

Task<Result<Response>> v1_monitors(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_reader(ctx, req));
  SS_CO_TRY(json overview, co_await monitors_overview(ctx, tenant.id, true));
  co_return Response::json_body(200, overview);
}

json uptime_percent(const MonitorStats* s) {
  if (s == nullptr || s->checks <= 0) return nullptr;
  double up = 100.0 * static_cast<double>(s->checks - s->failures) / static_cast<double>(s->checks);
  return std::round(up * 1000.0) / 1000.0;
}

json nullable_int(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

// A monitor not probed yet (or not since it was enabled again): the contract's lastProbe object
// all the same, every value null, so a client reads lastProbe.ok without a null check first.
json no_probe() {
  return json_object({{"at", json(nullptr)},
                      {"ok", json(nullptr)},
                      {"status", json(nullptr)},
                      {"latencyMs", json(nullptr)},
                      {"reason", json(nullptr)}});
}

}  // namespace

Task<Result<json>> monitors_overview(Context& ctx, const std::string& tenant_id,
                                     bool include_urls) {
  MonitorStore store;
  std::int64_t now = ctx.now_ms();
  std::string week_start = format_rfc3339(now - 6 * kMsPerDay).substr(0, 10);
  std::string month_start = format_rfc3339(now - 29 * kMsPerDay).substr(0, 10);
  auto [rows, day24, week, month, incidents] = co_await when_all(
      store.list(tenant_id), store.raw_stats(tenant_id, now - kMsPerDay),
      store.day_stats(tenant_id, week_start), store.day_stats(tenant_id, month_start),
      store.current_incidents(tenant_id));
  if (!rows) co_return std::move(rows).error();
  if (!incidents) co_return std::move(incidents).error();
  if (!day24) co_return std::move(day24).error();
  if (!week) co_return std::move(week).error();
  if (!month) co_return std::move(month).error();
  auto stat = [](const std::map<std::string, MonitorStats>& m,
                 const std::string& id) -> const MonitorStats* {
    auto it = m.find(id);
    return it == m.end() ? nullptr : &it->second;
  };
  std::map<std::string, const IncidentRow*> incident_by_id;
  for (const IncidentRow& inc : *incidents) incident_by_id[inc.incident_id] = &inc;
  json list = json::array();
  for (const MonitorRow& row : *rows) {
    json incident = nullptr;
    if (row.incident_id) {
      auto found = incident_by_id.find(*row.incident_id);
      if (found != incident_by_id.end()) incident = found->second->to_json();
    }
    std::string state = "unknown";
    if (row.enabled && row.last_probe.is_object()) {
      state = get_bool(row.last_probe, "ok").value_or(false) ? "up" : "down";
    }
    const MonitorStats* d = stat(*day24, row.monitor_id);
    json m = json_object({{"id", row.monitor_id},
                          {"state", state},
                          {"enabled", row.enabled},
                          {"lastProbe", row.last_probe.is_object() ? row.last_probe : no_probe()},
                          {"incident", incident},
                          {"uptime",
                           {{"24h", uptime_percent(d)},
                            {"7d", uptime_percent(stat(*week, row.monitor_id))},
                            {"30d", uptime_percent(stat(*month, row.monitor_id))}}},
                          {"latencyMs",
                           {{"p50", d ? nullable_int(d->p50) : json(nullptr)},
                            {"p95", d ? nullable_int(d->p95) : json(nullptr)}}}});
    if (include_urls) {
      m["url"] = string_or(row.spec, "url", "");
    } else {
      // The public status page says when a monitor is in planned maintenance (its windows stay
      // private): its last probe ran inside a window that is still on, and no incident is open
      // (an outage that began before the window stays an outage, whatever window follows it).
      bool planned = false;
      auto probed_at = row.last_probe.is_object() ? get_string(row.last_probe, "at") : std::nullopt;
      auto probed_ms = probed_at ? parse_rfc3339(*probed_at) : std::nullopt;
      const json* windows = find_field(row.spec, "maintenance");
      if (!row.incident_id && probed_ms && windows && windows->is_array()) {
        for (const json& w : *windows) {
          auto start = get_string(w, "start");
          auto end = get_string(w, "end");
          auto start_ms = start ? parse_rfc3339(*start) : std::nullopt;
          auto end_ms = end ? parse_rfc3339(*end) : std::nullopt;
          planned = planned || (start_ms && end_ms && *start_ms <= *probed_ms && *start_ms <= now &&
                                now < *end_ms);
        }
      }
      m["maintenance"] = planned;
    }
    list.push_back(std::move(m));
  }
  co_return json_object({{"monitors", list}});
}

void add_monitor_routes(App& app) {
  app.router.add("GET", "/admin/monitors", list_monitors)
      .add("PUT", "/admin/monitors/{id}", put_monitor)
      .add("GET", "/admin/monitors/{id}", get_monitor)
      .add("DELETE", "/admin/monitors/{id}", delete_monitor)
      .add("GET", "/admin/monitors/{id}/alerts", monitor_alerts)
      .add("GET", "/v1/monitors", v1_monitors);
}

Status validate_tenant_config(const Context& ctx, const json& config) {
  if (Status known = check_known_keys(config, {"monitors"}, "config."); !known) return known;
  if (const json* list = find_field(config, "monitors"); list && list->is_array()) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      Status known = check_monitor_keys((*list)[i], "monitors[" + std::to_string(i) + "].");
      if (!known) return known;
    }
  }
  auto declared = parse_declared_monitors(config, ctx.allow_local_outbound());
  if (!declared) return std::move(declared).error();
  for (std::size_t i = 0; i < declared->size(); ++i) {
    Status available = check_service_available((*declared)[i].spec, ctx.env("MONITOR_SERVICES"));
    if (!available.ok()) {
      Error e = std::move(available).error();
      std::string prefix = "monitors[" + std::to_string(i) + "].";
      e.message = prefix + e.message;
      name_field(e, prefix + "service");
      return e;
    }
  }
  return Unit{};
}

Task<Status> sync_tenant_monitors(Context& ctx, const std::string& tenant_id, const json& config) {
  SS_CO_TRY(std::vector<DeclaredMonitor> declared,
            parse_declared_monitors(config, ctx.allow_local_outbound()));
  SS_CO_CHECK(co_await MonitorStore().sync_config_monitors(tenant_id, declared,
                                                           format_rfc3339(ctx.now_ms())));
  co_await forget_status(ctx, tenant_id);
  co_await close_orphaned_incidents(ctx, tenant_id);
  co_return Unit{};
}

json redact_tenant_config(json config) {
  json* list = config.is_object() && config.contains("monitors") ? &config["monitors"] : nullptr;
  if (list == nullptr || !list->is_array()) return config;
  for (json& m : *list) {
    if (!m.is_object() || !m.contains("alertChannels") || !m["alertChannels"].is_object()) continue;
    json& channels = m["alertChannels"];
    if (channels.contains("pagerduty") && channels["pagerduty"].is_object()) {
      channels["pagerduty"]["routingKey"] = "(hidden)";
    }
    if (channels.contains("slack") && channels["slack"].is_object()) {
      channels["slack"]["webhookUrl"] = "(hidden)";
    }
  }
  return config;
}

}  // namespace ss::monitoring
