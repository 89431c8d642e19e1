#include "workers/monitoring/status_page.h"

#include "shared/effects.h"
#include "shared/html.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/tenant_cache.h"
#include "shared/tenant_store.h"
#include "workers/monitoring/routes.h"
#include "workers/monitoring/store.h"

#include <cmath>
#include <cstdio>

namespace ss::monitoring {

namespace {

std::string cache_key(const std::string& tenant) { return "status:v1:" + tenant; }

json percent(std::int64_t checks, std::int64_t failures) {
  if (checks <= 0) return nullptr;
  double up = 100.0 * static_cast<double>(checks - failures) / static_cast<double>(checks);
  return std::round(up * 1000.0) / 1000.0;
}

// Builds the status data from D1: the overview of /v1/monitors without URLs, 90 daily bars per
// monitor and the recent incidents.
Task<Result<json>> build_status(Context& ctx, const std::string& tenant) {
  MonitorStore store;
  std::int64_t now = ctx.now_ms();
  std::int64_t today = now / kMsPerDay;
  std::string first_day = format_rfc3339((today - (kStatusDays - 1)) * kMsPerDay).substr(0, 10);
  auto [overview, days, incidents] =
      co_await when_all(monitors_overview(ctx, tenant, false), store.days(tenant, first_day),
                        store.recent_incidents(tenant, first_day, kStatusIncidents));
  if (!overview) co_return std::move(overview).error();
  if (!days) co_return std::move(days).error();
  if (!incidents) co_return std::move(incidents).error();

  std::map<std::string, std::map<std::string, const DayRollup*>> by_monitor;
  for (const DayRollup& d : *days) by_monitor[d.monitor_id][d.day] = &d;
  json monitors = json::array();
  std::string overall = "unknown";
  for (json m : (*overview)["monitors"]) {
    if (!get_bool(m, "enabled").value_or(true)) continue;
    std::string id = string_or(m, "id", "");
    json bars = json::array();
    std::int64_t checks = 0, failures = 0;
    for (std::int64_t d = today - (kStatusDays - 1); d <= today; ++d) {
      std::string day = format_rfc3339(d * kMsPerDay).substr(0, 10);
      const DayRollup* r = nullptr;
      if (auto it = by_monitor[id].find(day); it != by_monitor[id].end()) r = it->second;
      if (r) {
        checks += r->checks;
        failures += r->failures;
      }
      bars.push_back({{"day", day},
                      {"checks", r ? r->checks : 0},
                      {"failures", r ? r->failures : 0},
                      {"uptime", r ? percent(r->checks, r->failures) : json(nullptr)}});
    }
    m["uptime"]["90d"] = percent(checks, failures);
    m["days"] = std::move(bars);
    m.erase("enabled");
    std::string state = string_or(m, "state", "unknown");
    if (state == "down")
      overall = "down";
    else if (state == "up" && overall == "unknown")
      overall = "up";
    monitors.push_back(std::move(m));
  }
  json recent = json::array();
  for (const auto& i : *incidents) recent.push_back(i.to_json());
  co_return json_object({{"tenantId", tenant},
                         {"generatedAt", format_rfc3339(now)},
                         {"cacheSeconds", kStatusCacheSeconds},
                         {"state", overall},
                         {"monitors", monitors},
                         {"incidents", recent}});
}

}  // namespace

Task<Unit> forget_status(Context& ctx, const std::string& tenant) {
  auto removed = co_await Kv(kCacheBinding).remove(cache_key(tenant));
  if (!removed) ctx.log("status cache not cleared: " + removed.error().message);
  co_return Unit{};
}

namespace {

// The cached status data, or a fresh build (then cached). KV trouble only costs the cache.
Task<Result<json>> status_data(Context& ctx, const std::string& tenant) {
  Kv kv(kCacheBinding);
  auto cached = co_await kv.get(cache_key(tenant));
  if (cached && cached->has_value()) {
    auto parsed = parse_json(**cached);
    if (parsed && parsed->is_object()) co_return std::move(parsed).value();
  }
  SS_CO_TRY(json data, co_await build_status(ctx, tenant));
  auto put = co_await kv.put(cache_key(tenant), dump_json(data), kStatusCacheSeconds);
  if (!put) ctx.log("status cache not written: " + put.error().message);
  co_return data;
}

Task<Result<Response>> status_page(Context& ctx, const Request&, const Params& params) {
  std::string page = params.at("page");
  static constexpr std::string_view kJsonSuffix = ".json";
  bool as_json =
      page.size() > kJsonSuffix.size() &&
      page.compare(page.size() - kJsonSuffix.size(), kJsonSuffix.size(), kJsonSuffix) == 0;
  std::string tenant = as_json ? page.substr(0, page.size() - kJsonSuffix.size()) : page;
  if (!is_valid_tenant_id(tenant)) co_return Error{ErrorCode::not_found, "no status page"};
  // A public page: the tenant's row comes from this instance's cache while fresh (as for the hot
  // paths of every worker), so a spike does not read D1 per view — nor does a spike on a disabled
  // tenant's page: a fresh disabled row answers 404 at once (a re-enable through another isolate
  // shows within the cache's 30 s; through this one, at once, as its operator route drops the row).
  const TenantRow* cached = tenant_cache(ctx).fresh(tenant, ctx.now_ms());
  if (cached != nullptr && !cached->enabled) {
    co_return Error{ErrorCode::not_found, "no status page"};
  }
  if (cached == nullptr) {
    SS_CO_TRY(std::optional<TenantRow> row, co_await read_tenant(ctx, tenant));
    if (!row || !row->enabled) co_return Error{ErrorCode::not_found, "no status page"};
  }
  SS_CO_TRY(json data, co_await status_data(ctx, tenant));
  Response r = as_json ? Response::json_body(200, data)
                       : Response::text(200, render_status_html(data), "text/html; charset=utf-8");
  r.set_header("cache-control", "public, max-age=" + std::to_string(kStatusCacheSeconds));
  r.set_header("x-content-type-options", "nosniff");
  if (!as_json) {
    // No script runs on this page, ever: the policy says so to the browser too.
    r.set_header("content-security-policy",
                 "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  }
  co_return r;
}

std::string fmt_percent(const json& v) {
  if (!v.is_number()) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", v.get<double>());
  return buf;
}

const char* state_label(const std::string& state) {
  if (state == "up") return "Operational";
  if (state == "down") return "Down";
  return "No data yet";
}

}  // namespace

std::string render_status_html(const json& status) {
  std::string tenant = html_escape(string_or(status, "tenantId", ""));
  std::string overall = string_or(status, "state", "unknown");
  std::string h;
  h += "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  h += "<title>Status — " + tenant + "</title><style>";
  h += "body{font:16px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;"
       "background:#f6f7f9;color:#1d232b}main{max-width:760px;margin:0 auto;padding:16px;"
       "overflow-wrap:anywhere}"
       "h1{font-size:1.4rem;margin:.5rem 0}.banner{padding:12px 14px;border-radius:8px;"
       "font-weight:600;margin:12px 0}.banner.up{background:#d9f5e3;color:#0f5b2b}"
       ".banner.down{background:#fde0e0;color:#8a1414}.banner.planned{background:#fff4d6;color:#"
       "6b4e00}.banner.unknown{background:#e8eaee}"
       "section.monitor{background:#fff;border:1px solid #e1e4e8;border-radius:8px;"
       "padding:12px 14px;margin:12px 0}.row{display:flex;justify-content:space-between;"
       "gap:8px;flex-wrap:wrap}.name{font-weight:600;word-break:break-all}"
       ".state.up{color:#137a3a}.state.down{color:#b42318}.state.unknown{color:#6b7280}"
       ".bar{display:flex;gap:1px;height:28px;margin:10px 0 4px}.bar span{flex:1;"
       "border-radius:1px;background:#d1d5db}.bar .ok{background:#34a853}.bar .warn{"
       "background:#f4b400}.bar .bad{background:#d93025}.legend{display:flex;"
       "justify-content:space-between;gap:8px;font-size:.8rem;color:#6b7280}"
       ".legend span:last-child{white-space:nowrap}h2.name{font-size:1rem;margin:0}"
       ".key{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:.8rem;color:#4b5563;margin:0}"
       ".key i{display:inline-block;width:10px;height:10px;border-radius:1px;margin-right:4px;"
       "background:#d1d5db}.key .ok{background:#34a853}.key .warn{background:#f4b400}"
       ".key .bad{background:#d93025}"
       "ul{padding-left:1.2rem}li{margin:.3rem 0}footer{font-size:.8rem;color:#6b7280;"
       "margin:24px 0}</style></head><body><main>";
  h += "<h1>" + tenant + " status</h1>";
  const json* monitors = find_field(status, "monitors");
  // Down only where planned maintenance is under way: said as such.
  bool only_planned = overall == "down" && monitors && monitors->is_array();
  if (only_planned) {
    for (const json& m : *monitors) {
      if (string_or(m, "state", "") == "down" && !get_bool(m, "maintenance").value_or(false)) {
        only_planned = false;
      }
    }
  }
  h += "<p class=\"banner " + (only_planned ? std::string("planned") : html_escape(overall)) +
       "\">" +
       (overall == "up"     ? std::string("All systems operational")
        : only_planned      ? std::string("Planned maintenance in progress")
        : overall == "down" ? std::string("Some systems are down")
                            : std::string("No probe results yet")) +
       "</p>";
  if (monitors && monitors->is_array() && !monitors->empty()) {
    // What a day's colour means (each day's exact figure is its segment's title).
    h += "<p class=\"key\"><span><i class=\"ok\"></i>100% up</span><span><i class=\"warn\">"
         "</i>95% to under 100%</span><span><i class=\"bad\"></i>below 95%</span><span><i></i>no "
         "data</span></p>";
  }
  if (monitors && monitors->is_array()) {
    for (const json& m : *monitors) {
      std::string state = string_or(m, "state", "unknown");
      const json* uptime = find_field(m, "uptime");
      h += "<section class=\"monitor\"><div class=\"row\"><h2 class=\"name\">" +
           html_escape(string_or(m, "id", "")) + "</h2><span class=\"state " + html_escape(state) +
           "\">" + state_label(state) +
           (get_bool(m, "maintenance").value_or(false) ? " — planned maintenance" : "") +
           "</span></div>";
      // The bar is one image to a screen reader (its days' titles are hover-only): its label says
      // what the colours count.
      std::string segments;
      int counts[4] = {0, 0, 0, 0};  // 100 %, >= 95 %, lower, no data
      if (const json* days = find_field(m, "days"); days && days->is_array()) {
        for (const json& d : *days) {
          const json* up = find_field(d, "uptime");
          std::string cls;
          if (up && up->is_number()) {
            double v = up->get<double>();
            cls = v >= 100.0 ? "ok" : v >= 95.0 ? "warn" : "bad";
          }
          ++counts[cls == "ok" ? 0 : cls == "warn" ? 1 : cls == "bad" ? 2 : 3];
          segments += "<span" + (cls.empty() ? std::string() : " class=\"" + cls + "\"") +
                      " title=\"" + html_escape(string_or(d, "day", "")) + ": " +
                      (up && up->is_number() ? fmt_percent(*up) : std::string("no data")) +
                      "\"></span>";
        }
      }
      h += "<div class=\"bar\" role=\"img\" aria-label=\"Uptime of the last 90 days, days by "
           "colour: " +
           std::to_string(counts[0]) + " at 100%, " + std::to_string(counts[1]) +
           " at 95% to under 100%, " + std::to_string(counts[2]) + " below 95%, " +
           std::to_string(counts[3]) + " without data\">" + segments;
      h += "</div><div class=\"legend\"><span>90 days ago</span><span>" +
           fmt_percent(uptime ? uptime->value("90d", json(nullptr)) : json(nullptr)) +
           " uptime</span><span>today</span></div>";
      const json* last = find_field(m, "lastProbe");
      if (last && last->is_object() && get_string(*last, "at")) {  // "at" null: never probed
        std::string reason = string_or(*last, "reason", "");
        h += "<p class=\"legend\"><span>Last check " + html_escape(string_or(*last, "at", "")) +
             (reason.empty() ? "" : " — " + html_escape(reason)) + "</span><span>" +
             std::to_string(int_or(*last, "latencyMs", 0)) + " ms</span></p>";
      }
      h += "</section>";
    }
  }
  h += "<h2>Recent incidents</h2>";
  const json* incidents = find_field(status, "incidents");
  if (!incidents || !incidents->is_array() || incidents->empty()) {
    h += "<p>No incidents in the last 90 days.</p>";
  } else {
    h += "<ul>";
    for (const json& i : *incidents) {
      std::string resolved = string_or(i, "resolvedAt", "");
      h += "<li><strong>" + html_escape(string_or(i, "monitorId", "")) + "</strong> — " +
           html_escape(string_or(i, "reason", "")) + ", " +
           html_escape(string_or(i, "openedAt", "")) +
           (resolved.empty() ? std::string(" (ongoing)") : " to " + html_escape(resolved)) +
           "</li>";
    }
    h += "</ul>";
  }
  h += "<footer>Updated " + html_escape(string_or(status, "generatedAt", "")) +
       " · refreshed at most every " + std::to_string(int_or(status, "cacheSeconds", 60)) +
       " s</footer></main></body></html>";
  return h;
}

void add_status_routes(App& app) { app.router.add("GET", "/status/{page}", status_page); }

}  // namespace ss::monitoring
