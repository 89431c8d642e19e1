#pragma once
// GET /dashboard (tenant admin token): one self-contained HTML page — a server-rendered SVG chart
// of pageviews and visitors per day and the top pages, referrers, countries, devices and browsers.
// No JavaScript, nothing fetched from anywhere (the Content-Security-Policy says so), every value
// HTML-escaped. Takes the same from/to as /v1/stats.

#include "shared/app.h"

#include <string>
#include <string_view>

namespace ss::analytics {

inline constexpr int kDashboardTopRows = 10;

// The page for one tenant from the JSON of read_stats (by=day) and one top list per dimension.
std::string render_dashboard(const std::string& tenant, const json& daily,
                             const std::vector<std::pair<std::string, json>>& top_lists);

void add_dashboard_routes(App& app);

}  // namespace ss::analytics
