#include "workers/analytics/stats.h"

#include "shared/app.h"
#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "workers/analytics/intake.h"
#include "workers/analytics/rollup.h"
#include "workers/analytics/visitor.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace ss::analytics {

namespace {

Result<std::int64_t> day_param(const Request& req, const std::string& name,
                               std::int64_t fallback_ms) {
  std::string text = req.query_param(name);
  if (text.empty()) return fallback_ms;
  std::optional<std::int64_t> ms = parse_date(text);
  // Pageviews are stamped from 1970 on: an earlier date is no day the rollups can hold.
  if (text.size() != 10 || !ms || *ms < 0) {
    return invalid_field(name, "must be a date YYYY-MM-DD from 1970-01-01");
  }
  return *ms;
}

}  // namespace

Result<StatsQuery> parse_stats_query(const Request& req, std::int64_t now_ms) {
  StatsQuery q;
  Result<std::int64_t> to = day_param(req, "to", now_ms);
  if (!to) return std::move(to).error();
  Result<std::int64_t> from =
      day_param(req, "from", std::max<std::int64_t>(0, *to - (kDefaultRangeDays - 1) * kMsPerDay));
  if (!from) return std::move(from).error();
  if (*from > *to) return invalid_field("from", "must not be after to");
  if ((*to - *from) / kMsPerDay + 1 > kMaxRangeDays) {
    return invalid_field("from",
                         "the range may span at most " + std::to_string(kMaxRangeDays) + " days");
  }
  q.from = utc_day(*from);
  q.to = utc_day(*to);
  q.from_day = *from / kMsPerDay;
  q.to_day = *to / kMsPerDay;
  std::string by = req.query_param("by");
  if (!by.empty()) {
    const auto& dims = dimension_names();
    if (by != "day" && std::find(dims.begin(), dims.end(), by) == dims.end()) {
      return invalid_field("by",
                           "must be day, path, referrer, country, device, browser, colo, "
                           "utm_source, utm_medium or utm_campaign");
    }
    q.by = by;
  }
  Result<std::int64_t> limit = req.int_param("limit", kDefaultStatsLimit, 1, kMaxStatsLimit);
  if (!limit) {
    return invalid_field("limit", "must be 1–" + std::to_string(kMaxStatsLimit));
  }
  q.limit = static_cast<int>(*limit);
  return q;
}

Task<Result<json>> read_stats(const AnalyticsStore& store, const std::string& tenant,
                              StatsQuery query) {
  auto rows_task = query.by == "day"
                       ? store.by_day(tenant, query.from, query.to)
                       : store.by_dimension(tenant, query.by, query.from, query.to, query.limit);
  auto [totals_r, rows_r] =
      co_await when_all(store.totals(tenant, query.from, query.to), std::move(rows_task));
  SS_CO_TRY(Totals totals, std::move(totals_r));
  SS_CO_TRY(std::vector<KeyCount> rows, std::move(rows_r));
  json out_rows = json::array();
  if (query.by == "day") {
    std::map<std::string, const KeyCount*> by_key;
    for (const KeyCount& k : rows) by_key[k.key] = &k;
    for (std::int64_t d = query.from_day; d <= query.to_day; ++d) {
      std::string day = utc_day(d * kMsPerDay);
      auto it = by_key.find(day);
      out_rows.push_back({{"key", day},
                          {"pageviews", it == by_key.end() ? 0 : it->second->pageviews},
                          {"visitors", it == by_key.end() ? 0 : it->second->visitors}});
    }
  } else {
    for (const KeyCount& k : rows) {
      out_rows.push_back({{"key", k.key}, {"pageviews", k.pageviews}, {"visitors", k.visitors}});
    }
  }
  double bounce_rate = totals.visitors > 0 ? static_cast<double>(totals.bounces) /
                                                 static_cast<double>(totals.visitors)
                                           : 0.0;
  bounce_rate = std::round(bounce_rate * 10000.0) / 10000.0;
  co_return json_object({{"from", query.from},
                         {"to", query.to},
                         {"totals",
                          {{"pageviews", totals.pageviews},
                           {"visitors", totals.visitors},
                           {"bounceRate", bounce_rate},
                           {"filtered", totals.filtered}}},
                         {"rows", std::move(out_rows)}});
}

namespace {

Task<Result<Response>> get_stats(Context& ctx, const Request& req, const Params&) {
  apply_test_clock(ctx, req);
  const std::int64_t now = ctx.now_ms();  // before any effect moves the clock
  // Stats are the tenant's own: the tenant id comes from its token, no parameter can name another.
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_reader(ctx, req));
  SS_CO_TRY(StatsQuery query, parse_stats_query(req, now));
  AnalyticsStore store{std::string(kAnalyticsDb)};
  SS_CO_TRY(json body, co_await read_stats(store, tenant.id, query));
  Response r = Response::json_body(200, body);
  r.set_header("cache-control", "private, no-store");
  co_return r;
}

}  // namespace

void add_stats_routes(App& app) { app.router.add("GET", "/v1/stats", get_stats); }

}  // namespace ss::analytics
