// siteswarm-events-service: the event ledger, whole, as the native harness runs it; deployed, it is
// three workers built from this library (parts.cpp). This file wires the worker; routes live beside it.
#include "shared/app.h"
#include "workers/events/admin.h"
#include "workers/events/api.h"
#include "workers/events/drain.h"
#include "workers/events/test_programs.h"

namespace ss {

App make_events_app() {
  App app;
  app.service = "siteswarm-events-service";
  app.db_binding = "EVENTS_DB";
  events::add_health_route(app);  // first: it takes /health from the platform routes
  add_platform_routes(app);
  events::add_api_routes(app);
  events::add_admin_routes(app);
  events::add_timeline_route(app);
  events::add_test_program_routes(app);
  app.scheduled = [](Context& ctx, const std::string& cron) {
    return events::run_cron(ctx, cron, events::whole_ledger());
  };
  app.queue = [](Context& ctx, const std::string&, std::vector<QueueMessage> batch) {
    return events::ingest_batch(ctx, std::move(batch));
  };
  return app;
}

}  // namespace ss
