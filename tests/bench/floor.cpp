// The shared floor of every worker's wasm, for scripts/bench: an App with only the platform routes
// (/health, /v1/tenant, /admin/tenants/{id}, /admin/diagnostics), so that its size is what the shared
// runtime, router, JSON library and libc cost before a worker adds a single route of its own.
#include "shared/app.h"

namespace ss {

App make_floor_app() {
  App app;
  app.service = "siteswarm-floor";
  app.db_binding = "FLOOR_DB";
  add_platform_routes(app);
  return app;
}

}  // namespace ss
