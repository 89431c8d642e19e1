// Split candidate split_config (docs/performance.md "Size", "Splitting the ledger"): the operator
// config routes alone (subscriptions, workflows, schemas, kill switches, reads).
#include "tests/bench/split/split_steps.h"
#include "workers/events/api.h"
#include "workers/events/test_programs.h"

namespace ss {

App make_split_config_app() {
  App app;
  app.service = "siteswarm-events-service";
  app.db_binding = "EVENTS_DB";
  add_platform_routes(app);
  events::add_admin_config_routes(app);
  return app;
}

}  // namespace ss
