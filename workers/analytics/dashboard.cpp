#include "workers/analytics/dashboard.h"

#include "shared/html.h"
#include "shared/json_util.h"
#include "shared/tenant.h"
#include "workers/analytics/intake.h"
#include "workers/analytics/stats.h"

#include <algorithm>
#include <cstdio>

namespace ss::analytics {

namespace {

constexpr int kChartWidth = 720;
constexpr int kChartHeight = 220;
constexpr int kChartPad = 30;
constexpr std::size_t kChartDotsUpTo = 31;  // days; a longer range is read by its line
constexpr std::string_view kCsp =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'";

std::string number(std::int64_t n) { return std::to_string(n); }

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::int64_t int_field(const json& row, const char* key) { return int_or(row, key, 0); }

std::string chart(const json& rows) {
  std::int64_t max = 1;
  for (const json& r : rows)
    max = std::max({max, int_field(r, "pageviews"), int_field(r, "visitors")});
  const std::size_t n = rows.size();
  const double plot_w = kChartWidth - 2.0 * kChartPad;
  const double plot_h = kChartHeight - 2.0 * kChartPad;
  const double slot = n ? plot_w / static_cast<double>(n) : plot_w;
  std::string svg = "<svg role=\"img\" viewBox=\"0 0 " + number(kChartWidth) + " " +
                    number(kChartHeight) +
                    "\" aria-labelledby=\"chart-title\"><title id=\"chart-title\">Pageviews (bars) "
                    "and visitors (line) per day</title>";
  svg += "<line x1=\"" + number(kChartPad) + "\" y1=\"" + number(kChartHeight - kChartPad) +
         "\" x2=\"" + number(kChartWidth - kChartPad) + "\" y2=\"" +
         number(kChartHeight - kChartPad) + "\" stroke=\"#999\"/>";
  svg +=
      "<text x=\"4\" y=\"" + number(kChartPad) + "\" font-size=\"11\">" + number(max) + "</text>";
  std::string points;
  for (std::size_t i = 0; i < n; ++i) {
    const json& r = rows[i];
    double pv_h =
        plot_h * static_cast<double>(int_field(r, "pageviews")) / static_cast<double>(max);
    double x = kChartPad + slot * static_cast<double>(i);
    svg += "<rect class=\"pv\" x=\"" + fixed(x + slot * 0.15) + "\" y=\"" +
           fixed(kChartHeight - kChartPad - pv_h) + "\" width=\"" + fixed(slot * 0.7) +
           "\" height=\"" + fixed(pv_h) + "\" fill=\"#4a7bd0\"><title>" +
           html_escape(string_or(r, "key", "")) + ": " + number(int_field(r, "pageviews")) +
           " pageviews, " + number(int_field(r, "visitors")) + " visitors</title></rect>";
    double vy = kChartHeight - kChartPad -
                plot_h * static_cast<double>(int_field(r, "visitors")) / static_cast<double>(max);
    points += fixed(x + slot / 2) + "," + fixed(vy) + " ";
    // A dot on each day of a range up to a month: a line through one point draws nothing, so a
    // one-day range showed no visitors at all.
    if (n <= kChartDotsUpTo) {
      svg += "<circle class=\"visitors\" cx=\"" + fixed(x + slot / 2) + "\" cy=\"" + fixed(vy) +
             "\" r=\"3\" fill=\"#d0644a\"/>";
    }
  }
  if (n > 0) {
    svg +=
        "<polyline class=\"visitors\" fill=\"none\" stroke=\"#d0644a\" stroke-width=\"2\" "
        "points=\"" +
        points + "\"/>";
    svg += "<text x=\"" + number(kChartPad) + "\" y=\"" + number(kChartHeight - 8) +
           "\" font-size=\"11\">" + html_escape(string_or(rows[0], "key", "")) + "</text>";
    svg += "<text x=\"" + number(kChartWidth - kChartPad) + "\" y=\"" + number(kChartHeight - 8) +
           "\" font-size=\"11\" text-anchor=\"end\">" +
           html_escape(string_or(rows[n - 1], "key", "")) + "</text>";
  }
  svg += "</svg>";
  return svg;
}

std::string top_table(const std::string& title, const json& rows) {
  std::string html = "<section><h2>" + html_escape(title) +
                     "</h2><table><thead><tr><th scope=\"col\">" + html_escape(title) +
                     "</th><th scope=\"col\">Pageviews</th><th scope=\"col\">Visitors</th></tr>"
                     "</thead><tbody>";
  if (rows.empty()) html += "<tr><td colspan=\"3\">No data yet</td></tr>";
  for (const json& r : rows) {
    html += "<tr><td>" + html_escape(string_or(r, "key", "")) + "</td><td>" +
            number(int_field(r, "pageviews")) + "</td><td>" + number(int_field(r, "visitors")) +
            "</td></tr>";
  }
  return html + "</tbody></table></section>";
}

}  // namespace

std::string render_dashboard(const std::string& tenant, const json& daily,
                             const std::vector<std::pair<std::string, json>>& top_lists) {
  const json& totals = daily.contains("totals") ? daily["totals"] : json::object();
  double bounce = 0;
  if (const json* b = find_field(totals, "bounceRate"); b && b->is_number()) {
    bounce = b->get<double>();
  }
  std::string from = html_escape(string_or(daily, "from", ""));
  std::string to = html_escape(string_or(daily, "to", ""));
  std::string html =
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>Analytics — " +
      html_escape(tenant) +
      "</title><style>"
      "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:960px;padding:0 "
      "1rem;color:#222}"
      ".cards{display:flex;gap:1rem;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;"
      "padding:.75rem 1rem;min-width:8rem}.card b{display:block;font-size:1.6rem}"
      ".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:1rem}"
      "table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.2rem .4rem;"
      "border-bottom:1px solid #eee}td+td,th+th{text-align:right}"
      // A long key (a path, a referrer) wraps anywhere; headers and numbers never break inside a
      // word ("Pagevi|ews").
      "td:first-child{overflow-wrap:anywhere}th,td+td{white-space:nowrap}"
      "figure{margin:1rem 0}svg{width:100%;height:auto}"
      // The chart scales with the page: on a phone (about half its 720 units wide) its labels
      // would be 5 px; 26 units keep them about 12 px.
      "@media(max-width:600px){svg text{font-size:26px}}"
      "</style></head><body><header><h1>Analytics for " +
      html_escape(tenant) +
      "</h1>"
      "<p>" +
      from + " to " + to +
      " (UTC days)</p>"
      "<form method=\"get\"><label>From <input type=\"date\" name=\"from\" value=\"" +
      from + "\"></label> <label>To <input type=\"date\" name=\"to\" value=\"" + to +
      "\"></label> <button type=\"submit\">Show</button></form></header><main>"
      "<div class=\"cards\">"
      "<div class=\"card\" id=\"pageviews\">Pageviews<b>" +
      number(int_field(totals, "pageviews")) +
      "</b></div>"
      "<div class=\"card\" id=\"visitors\">Visitors<b>" +
      number(int_field(totals, "visitors")) +
      "</b></div>"
      "<div class=\"card\" id=\"bounce\">Bounce rate<b>" +
      fixed(bounce * 100) +
      "%</b></div>"
      "<div class=\"card\" id=\"filtered\">Bot hits filtered<b>" +
      number(int_field(totals, "filtered")) +
      "</b></div>"
      "</div><figure>" +
      chart(daily.contains("rows") ? daily["rows"] : json::array()) +
      "<figcaption>Bars: pageviews. Line: visitors.</figcaption></figure><div class=\"grid\">";
  for (const auto& [title, rows] : top_lists) html += top_table(title, rows);
  html += "</div></main></body></html>";
  return html;
}

namespace {

Task<Result<Response>> get_dashboard(Context& ctx, const Request& req, const Params&) {
  apply_test_clock(ctx, req);
  const std::int64_t now = ctx.now_ms();  // before any effect moves the clock
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant_admin(ctx, req));
  SS_CO_TRY(StatsQuery query, parse_stats_query(req, now));
  AnalyticsStore store{std::string(kAnalyticsDb)};
  const std::pair<const char*, const char*> lists[] = {{"path", "Pages"},
                                                       {"referrer", "Referrers"},
                                                       {"country", "Countries"},
                                                       {"device", "Devices"},
                                                       {"browser", "Browsers"}};
  query.by = "day";
  std::vector<Task<Result<json>>> reads;
  reads.push_back(read_stats(store, tenant.id, query));
  for (const auto& [dim, title] : lists) {
    StatsQuery q = query;
    q.by = dim;
    q.limit = kDashboardTopRows;
    reads.push_back(read_stats(store, tenant.id, q));
  }
  std::vector<Result<json>> results = co_await when_all(std::move(reads));
  for (auto& r : results) {
    if (!r) co_return std::move(r).error();
  }
  std::vector<std::pair<std::string, json>> top;
  for (std::size_t i = 0; i < std::size(lists); ++i) {
    top.emplace_back(lists[i].second, results[i + 1].value()["rows"]);
  }
  Response r = Response::text(200, render_dashboard(tenant.id, results[0].value(), top),
                              "text/html; charset=utf-8");
  r.set_header("content-security-policy", std::string(kCsp));
  r.set_header("cache-control", "private, no-store");
  r.set_header("x-content-type-options", "nosniff");
  r.set_header("referrer-policy", "no-referrer");
  co_return r;
}

}  // namespace

void add_dashboard_routes(App& app) { app.router.add("GET", "/dashboard", get_dashboard); }

}  // namespace ss::analytics
