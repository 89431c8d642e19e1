#pragma once
// GET /v1/stats?from=YYYY-MM-DD&to=YYYY-MM-DD&by=…: read from the D1 rollups only.
//
// Days are UTC and inclusive. Defaults: to = today, from = 29 days before `to` (30 days). A range
// may span at most kMaxRangeDays days. by = day (default; every day of the range, zeros included,
// oldest first) or a dimension (path, referrer, country, colo, device, browser, utm_source,
// utm_medium, utm_campaign; top `limit` keys by pageviews, default 100, at most 1000).
//
// Totals: pageviews; visitors = the sum over days of distinct daily visitor hashes (a person on
// two days counts twice: salts rotate daily, by design); bounceRate = visitors with exactly one
// pageview that day / visitors, a fraction from 0 to 1; filtered = bot hits.

#include "shared/http.h"
#include "workers/analytics/store.h"

#include <cstdint>
#include <string>

namespace ss::analytics {

inline constexpr int kMaxRangeDays = 366;
inline constexpr int kDefaultRangeDays = 30;
inline constexpr int kDefaultStatsLimit = 100;
inline constexpr int kMaxStatsLimit = 1000;

struct StatsQuery {
  std::string from;  // YYYY-MM-DD, from 1970-01-01
  std::string to;
  std::int64_t from_day = 0;  // the same two, as days since 1970-01-01
  std::int64_t to_day = 0;
  std::string by = "day";
  int limit = kDefaultStatsLimit;
};

// 400 invalid_request naming the field ("from", "to", "by", "limit") on bad input.
Result<StatsQuery> parse_stats_query(const Request& req, std::int64_t now_ms);

// {"from","to","by","totals":{"pageviews","visitors","bounceRate","filtered"},
//  "rows":[{"key","pageviews","visitors"}]}
Task<Result<json>> read_stats(const AnalyticsStore& store, const std::string& tenant,
                              StatsQuery query);

void add_stats_routes(App& app);

}  // namespace ss::analytics
