// siteswarm-synthetic-monitoring: cron probes of client sites. This file wires the worker.
#include "shared/app.h"

namespace ss {

App make_monitoring_app() {
  App app;
  app.service = "siteswarm-synthetic-monitoring";
  app.db_binding = "MONITORING_DB";
  app.diagnostic_services = {"EVENTS_SERVICE"};
  add_platform_routes(app);
  return app;
}

}  // namespace ss
