// siteswarm-analytics-service: cookie-less pageview analytics. This file wires the worker.
#include "shared/app.h"

namespace ss {

App make_analytics_app() {
  App app;
  app.service = "siteswarm-analytics-service";
  app.db_binding = "ANALYTICS_DB";
  app.diagnostic_services = {"EVENTS_SERVICE"};
  add_platform_routes(app);
  return app;
}

}  // namespace ss
