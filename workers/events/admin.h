#pragma once
// Operator routes of the ledger and its cron entry point.

#include "shared/app.h"

namespace ss::events {

// Every /admin route of the ledger: add_admin_config_routes (subscriptions, workflows, schemas,
// kill switches and the operator reads) and add_admin_drain_routes (drain, retention, replay,
// quarantine retry, alert delivery on demand). Two groups so a module can link one without the other
// (docs/performance.md "Size": the split candidates).
void add_admin_routes(App& app);
void add_admin_config_routes(App& app);
void add_admin_drain_routes(App& app);
// GET /api/entities/{entityType}/{entityId}/timeline (tenant or operator): the data path's read of the
// materialized timelines.
void add_timeline_route(App& app);
// The ledger's own GET /health (public status, operator details). Added before the platform
// routes, so it answers /health instead of the generic one.
void add_health_route(App& app);
// */2 → workflow_runner, */15 → anomaly_detector, hourly → timeline_indexer + retention.
Task<Status> run_cron(Context& ctx, const std::string& cron);
// The alert pass that ends every cron run (and POST /admin/alerts/deliver): stall alerts from a fresh
// health snapshot, then delivery of what is pending, under the "alerts" lock.
Task<Result<json>> alert_pass(Context& ctx);

}  // namespace ss::events
