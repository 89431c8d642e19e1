// siteswarm-cms-service: per-tenant hours, overrides and announcements. This file wires the worker.
#include "shared/app.h"

namespace ss {

App make_cms_app() {
  App app;
  app.service = "siteswarm-cms-service";
  app.db_binding = "CMS_DB";
  app.kv_binding = "CMS_CACHE";
  app.diagnostic_services = {"EVENTS_SERVICE"};
  add_platform_routes(app);
  return app;
}

}  // namespace ss
