// Split candidate split_drains (docs/performance.md "Size", "Splitting the ledger"): the drain
// routes, the test programs and every cron (the other half of split_data_config).
#include "tests/bench/split/split_steps.h"
#include "workers/events/api.h"
#include "workers/events/test_programs.h"

namespace ss {

App make_split_drains_app() {
  App app;
  app.service = "siteswarm-events-service";
  app.db_binding = "EVENTS_DB";
  add_platform_routes(app);
  events::add_admin_drain_routes(app);
  events::add_test_program_routes(app);
  app.scheduled = [](Context& ctx, const std::string& cron) { return events::run_cron(ctx, cron); };
  return app;
}

}  // namespace ss
