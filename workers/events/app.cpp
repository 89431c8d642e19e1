// siteswarm-events-service: the event ledger. This file wires the worker; routes live beside it.
#include "shared/app.h"
#include "workers/events/api.h"

namespace ss {

App make_events_app() {
  App app;
  app.service = "siteswarm-events-service";
  app.db_binding = "EVENTS_DB";
  add_platform_routes(app);
  events::add_api_routes(app);
  app.queue = [](Context& ctx, const std::string&, std::vector<QueueMessage> batch) {
    return events::ingest_batch(ctx, std::move(batch));
  };
  return app;
}

}  // namespace ss
