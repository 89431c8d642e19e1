// siteswarm-leads-service: lead intake. This file wires the worker; routes live beside it.
#include "shared/app.h"

namespace ss {

App make_leads_app() {
  App app;
  app.service = "siteswarm-leads-service";
  app.db_binding = "LEADS_DB";
  app.diagnostic_services = {"EVENTS_SERVICE"};
  add_platform_routes(app);
  return app;
}

}  // namespace ss
