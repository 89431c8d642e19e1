// Split candidate split_runner (docs/performance.md "Size", "Splitting the ledger"): the */2 cron
// alone: held starts released, workflow_runner drained.
#include "tests/bench/split/split_steps.h"
#include "workers/events/api.h"
#include "workers/events/test_programs.h"

namespace ss {

App make_split_runner_app() {
  App app;
  app.service = "siteswarm-events-service";
  app.db_binding = "EVENTS_DB";
  add_platform_routes(app);
  app.scheduled = [](Context& ctx, const std::string& cron) {
    return events::split::runner_cron(ctx, cron);
  };
  return app;
}

}  // namespace ss
