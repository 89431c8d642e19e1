// siteswarm-synthetic-monitoring: cron probes of client sites, incidents after 3 consecutive
// failures, PagerDuty/Slack alerts, uptime history and public status pages. This file wires the
// worker; each concern lives beside it (monitor, probe, incident, store, jobs, routes,
// status_page).
#include "shared/app.h"
#include "shared/printf_lite.h"
#include "workers/monitoring/jobs.h"
#include "workers/monitoring/routes.h"
#include "workers/monitoring/status_page.h"

namespace ss {

App make_monitoring_app() {
  use_printf_fixed();  // the status page prints uptime with "%.2f%%"
  App app;
  app.service = "siteswarm-synthetic-monitoring";
  app.db_binding = "MONITORING_DB";
  app.kv_binding = monitoring::kCacheBinding;
  app.diagnostic_services = {"EVENTS_SERVICE"};
  app.validate_tenant_config = monitoring::validate_tenant_config;
  app.apply_tenant_config = monitoring::sync_tenant_monitors;
  app.redact_tenant_config = monitoring::redact_tenant_config;
  add_platform_routes(app);
  monitoring::add_monitor_routes(app);
  monitoring::add_status_routes(app);
  monitoring::add_test_routes(app);
  app.scheduled = monitoring::run_cron;
  app.queue = [](Context& ctx, const std::string&, std::vector<QueueMessage> batch) {
    return monitoring::consume(ctx, std::move(batch));
  };
  return app;
}

}  // namespace ss
