// siteswarm-analytics-service: cookie-less pageview analytics. This file wires the worker; the
// routes and the consumer live beside it (docs/analytics.md describes the whole pipeline).
#include "shared/app.h"
#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/printf_lite.h"
#include "shared/text.h"
#include "shared/url_guard.h"
#include "workers/analytics/beacon.h"
#include "workers/analytics/dashboard.h"
#include "workers/analytics/intake.h"
#include "workers/analytics/retention.h"
#include "workers/analytics/rollup.h"
#include "workers/analytics/stats.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace ss {

namespace {

constexpr std::size_t kMaxSiteHosts = 32;
constexpr std::size_t kMaxHostLength = 253;

// An entry of config.hosts must name a host: a bare host as a URL writes it ("example.com",
// "127.0.0.1", "[::1]", any case), or a URL or host:port whose host is taken (site_host() in
// intake.cpp reads it the same way), since a referrer's host is compared without port or path.
// What the URL guard's WHATWG parser refuses (a space, userinfo, a Unicode name — a URL carries
// its xn-- form) is 400, never kept unused.
bool is_host_name(const std::string& host) {
  if (host.empty() || host.size() > kMaxHostLength) return false;
  auto parsed = parse_http_url(analytics::host_as_url(host));
  // And the host it counts for is one a referrer can carry: `*.shop.example`, `*` or
  // `shop!.example` would be kept and never match (no wildcard is read).
  return parsed && !parsed->has_userinfo && !parsed->host.empty() &&
         analytics::plausible_host(ascii_lower(analytics::site_host(host)));
}

// Tenant config of this worker: {"hosts": ["example.com", …]} — the site's own hosts, whose
// referrers count as direct. "siteHosts" (the words tenant provisioning uses for them) is the same
// list under another name: one of the two, or both the identical list (docs/analytics.md).
Status validate_analytics_config(const Context&, const json& config) {
  if (Status known = check_known_keys(config, {"hosts", "siteHosts"}, "config."); !known)
    return known;
  const json* hosts = find_field(config, "hosts");
  const json* alias = find_field(config, "siteHosts");
  std::string name = "config.hosts";
  // Both sent: they agree when they name the same hosts, however each spells them (case, a URL
  // or a bare host, order).
  auto named = [](const json& list) {
    std::vector<std::string> out;
    if (!list.is_array()) return out;
    for (const json& h : list) {
      if (h.is_string()) out.push_back(ascii_lower(analytics::site_host(h.get<std::string>())));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  if (hosts && alias && *hosts != *alias &&
      (!hosts->is_array() || !alias->is_array() || named(*hosts) != named(*alias))) {
    return invalid_field("config.siteHosts", "differs from config.hosts: send one of the two");
  }
  if (!hosts && alias) {
    hosts = alias;
    name = "config.siteHosts";
  }
  if (!hosts) return Unit{};
  if (!hosts->is_array() || hosts->size() > kMaxSiteHosts) {
    return invalid_field(name, "must be a list of at most 32 hosts");
  }
  for (const json& h : *hosts) {
    if (!h.is_string() || !is_host_name(h.get_ref<const std::string&>())) {
      return invalid_field(name,
                           "every entry must be a host such as example.com, 127.0.0.1 or [::1] "
                           "(or a URL; an internationalised name in its xn-- form)");
    }
  }
  return Unit{};
}

// A test-only way (SITESWARM_TEST_HOOKS=1) to run the hourly maintenance at a chosen instant in
// workerd, where a cron's scheduledTime does not reach the core: X-SiteSwarm-Test-Now sets the
// clock.
Task<Result<Response>> test_maintenance(Context& ctx, const Request& req, const Params&) {
  analytics::apply_test_clock(ctx, req);
  analytics::AnalyticsStore store{std::string(analytics::kAnalyticsDb)};
  SS_CO_CHECK(co_await analytics::run_maintenance(ctx, store, ctx.now_ms()));
  SS_CO_TRY(std::vector<std::string> days, co_await store.salt_days());
  co_return Response::json_body(200, json_object({{"ok", true}, {"saltDays", days}}));
}

}  // namespace

App make_analytics_app() {
  use_printf_fixed();  // the dashboard's chart coordinates are "%.1f"
  App app;
  app.service = "siteswarm-analytics-service";
  app.db_binding = "ANALYTICS_DB";
  app.diagnostic_services = {"EVENTS_SERVICE"};
  app.validate_tenant_config = validate_analytics_config;
  add_platform_routes(app);
  auto state = std::make_shared<analytics::InstanceState>();
  analytics::add_intake_routes(app, state);
  analytics::add_stats_routes(app);
  analytics::add_dashboard_routes(app);
  app.router.add("POST", "/__test/maintenance", test_maintenance);
  app.queue = [](Context& ctx, const std::string&, std::vector<QueueMessage> batch) {
    return analytics::consume_batch(
        ctx, analytics::AnalyticsStore(std::string(analytics::kAnalyticsDb)), std::move(batch));
  };
  app.scheduled = [](Context& ctx, const std::string&) -> Task<Status> {
    return analytics::run_maintenance(
        ctx, analytics::AnalyticsStore(std::string(analytics::kAnalyticsDb)), ctx.now_ms());
  };
  return app;
}

}  // namespace ss
