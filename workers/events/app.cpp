// siteswarm-events-service: the event ledger. This file wires the worker; routes live beside it.
#include "shared/app.h"

namespace ss {

App make_events_app() {
  App app;
  app.service = "siteswarm-events-service";
  app.db_binding = "EVENTS_DB";
  add_platform_routes(app);
  return app;
}

}  // namespace ss
