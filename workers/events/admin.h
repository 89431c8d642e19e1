#pragma once
// Operator routes of the ledger and its cron entry point.

#include "shared/app.h"

namespace ss::events {

void add_admin_routes(App& app);
// */2 → workflow_runner, */15 → anomaly_detector, hourly → timeline_indexer + retention.
Task<Status> run_cron(Context& ctx, const std::string& cron);

}  // namespace ss::events
