#pragma once
// Operator routes of the ledger and its cron entry point.

#include "shared/app.h"
#include "workers/events/drain.h"

namespace ss::events {

// Where the workflow runner's work runs, as a module is deployed (docs/architecture.md "The ledger's
// three workers"): in this module (the whole ledger of the native harness, and
// siteswarm-events-runner) or in siteswarm-events-runner over the EVENTS_RUNNER Service Binding (the
// entry worker, siteswarm-events-service). Function pointers chosen by the module's factory, so a
// module links only the consumers it drains. A null pointer is a part the module does not serve.
struct LedgerWiring {
  // One consumer's drain of up to `batches` batches: its report (DrainReport::to_json()).
  Task<Result<json>> (*drain)(Context& ctx, const std::string& consumer,
                              std::int64_t batches) = nullptr;
  // The */2 cron's runner part (held starts released, then workflow_runner drained): its report.
  Task<Result<json>> (*runner_cron)(Context& ctx) = nullptr;
  // Held starts released now (PUT /admin/kill-switches/kill:high_risk_ops turned off).
  Task<Result<json>> (*release)(Context& ctx) = nullptr;
  // The hourly cron's retention (batch after batch until caught up) and the alert pass that ends
  // every cron run: here, or in the config worker.
  Task<Result<json>> (*retention)(Context& ctx) = nullptr;
  Task<Result<json>> (*alerts)(Context& ctx) = nullptr;
  // POST /admin/events/drain here drains workflow_runner alone (the runner worker).
  bool runner_only = false;
};
// Everything in this module: the whole ledger.
LedgerWiring whole_ledger();
// One consumer's drain through `step`, as its report (what a LedgerWiring's drain answers).
Task<Result<json>> drain_report(Context& ctx, const std::string& consumer, std::int64_t batches,
                                BatchStep step);
// The pieces of a LedgerWiring that run here (the whole ledger's, and the runner worker's).
Task<Result<json>> drain_here(Context& ctx, const std::string& consumer, std::int64_t batches);
Task<Result<json>> runner_cron_here(Context& ctx);
Task<Result<json>> runner_cron_here(Context& ctx, std::int64_t batches);
Task<Result<json>> release_here(Context& ctx);
Task<Result<json>> retention_here(Context& ctx);

// Every /admin route of the whole ledger: the groups below, with whole_ledger().
void add_admin_routes(App& app);
// Subscriptions, workflows, schemas, kill switches and the operator reads.
void add_admin_config_routes(App& app, const LedgerWiring& wiring);
// The same methods and paths, each answered by `forward` (the entry worker sends them on).
void forward_admin_config_routes(App& app, const Handler& forward);
// POST /admin/events/drain.
void add_drain_route(App& app, const LedgerWiring& wiring);
// POST /admin/consumers/{name}/replay.
void add_replay_route(App& app);
// Retention and alert delivery on demand: POST /admin/events/retention (one batch),
// POST /admin/alerts/deliver (the alert pass), and POST /admin/events/retention-run (the hourly
// cron's retention, called by the entry worker).
inline constexpr const char* kRetentionPath = "/admin/events/retention";
inline constexpr const char* kAlertsDeliverPath = "/admin/alerts/deliver";
void add_upkeep_routes(App& app);
// POST /admin/quarantine/{consumer}/{eventId}/retry (workflow_runner's quarantine).
inline constexpr const char* kQuarantineRetryPath = "/admin/quarantine/{consumer}/{eventId}/retry";
void add_quarantine_retry_route(App& app);
// The runner worker's own operator routes, called by the other two: POST /admin/events/runner-cron
// (the */2 cron's runner part) and POST /admin/events/release (held starts released now).
void add_runner_routes(App& app);
// GET /api/entities/{entityType}/{entityId}/timeline (tenant or operator): the data path's read of the
// materialized timelines.
void add_timeline_route(App& app);
// The ledger's own GET /health (public status, operator details). Added before the platform
// routes, so it answers /health instead of the generic one.
void add_health_route(App& app);
// */2 → workflow_runner, */15 → anomaly_detector, hourly → timeline_indexer + retention.
Task<Status> run_cron(Context& ctx, const std::string& cron, LedgerWiring wiring);
// The alert pass that ends every cron run (and POST /admin/alerts/deliver): stall alerts from a fresh
// health snapshot, then delivery of what is pending, under the "alerts" lock.
Task<Result<json>> alert_pass(Context& ctx);

}  // namespace ss::events
