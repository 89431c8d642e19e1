#pragma once
// The ledger's public surface: POST/GET /api/events, and the queue consumer behind emit_event().

#include "shared/app.h"

namespace ss::events {

void add_api_routes(App& app);
// Appends every message of a siteswarm-events batch (deduplicated by event_id); retries on D1
// errors.
Task<QueueOutcome> ingest_batch(Context& ctx, std::vector<QueueMessage> batch);

}  // namespace ss::events
