// Split candidate split_data_config (docs/performance.md "Size", "Splitting the ledger"): the data
// path plus the operator config routes (no drains).
#include "tests/bench/split/split_steps.h"
#include "workers/events/api.h"
#include "workers/events/test_programs.h"

namespace ss {

App make_split_data_config_app() {
  App app;
  app.service = "siteswarm-events-service";
  app.db_binding = "EVENTS_DB";
  events::add_health_route(app);
  add_platform_routes(app);
  events::add_api_routes(app);
  events::add_timeline_route(app);
  app.queue = [](Context& ctx, const std::string&, std::vector<QueueMessage> batch) {
    return events::ingest_batch(ctx, std::move(batch));
  };
  events::add_admin_config_routes(app);
  return app;
}

}  // namespace ss
