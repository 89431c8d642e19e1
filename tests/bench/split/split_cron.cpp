// Split candidate split_cron (docs/performance.md "Size", "Splitting the ledger"): every cron and
// nothing else: the drainers, retention, alerts.
#include "tests/bench/split/split_steps.h"
#include "workers/events/api.h"
#include "workers/events/test_programs.h"

namespace ss {

App make_split_cron_app() {
  App app;
  app.service = "siteswarm-events-service";
  app.db_binding = "EVENTS_DB";
  add_platform_routes(app);
  app.scheduled = [](Context& ctx, const std::string& cron) { return events::run_cron(ctx, cron); };
  return app;
}

}  // namespace ss
