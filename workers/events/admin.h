#pragma once
// Operator routes of the ledger and its cron entry point.

#include "shared/app.h"

namespace ss::events {

// The public /health's consumer status is at most this old (per instance; docs/runbook-events.md):
// a stall that starts elsewhere shows there within it. The operator view and /health/consumers are
// never cached.
inline constexpr std::int64_t kPublicHealthMaxAgeMs = 1000;

void add_admin_routes(App& app);
// The ledger's own GET /health (public status, operator details). Added before the platform
// routes, so it answers /health instead of the generic one.
void add_health_route(App& app);
// */2 → workflow_runner, */15 → anomaly_detector, hourly → timeline_indexer + retention.
Task<Status> run_cron(Context& ctx, const std::string& cron);

}  // namespace ss::events
