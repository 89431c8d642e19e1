#pragma once
// Probing that scales: the */5 cron only pages through the enabled monitors and enqueues probe
// jobs (kMonitorsPerJob monitors per message, kMaxQueueBatch messages per sendBatch); the worker
// consumes its own queue, probing kProbeConcurrency monitors at a time. Each probe claims its
// monitor for the tick in D1 first, so a redelivered message or a slow probe still running at the
// next tick never probes twice. Alerts go through the same queue from a D1 outbox.

#include "shared/app.h"

#include <string>
#include <vector>

namespace ss::monitoring {

inline constexpr const char* kJobsQueueBinding = "MONITOR_JOBS";
inline constexpr std::int64_t kTickMs = 5 * 60 * 1000;
inline constexpr int kMonitorsPerJob = 10;
inline constexpr int kCronPageSize = 1000;
// Workers allow 6 simultaneous open connections per invocation.
inline constexpr int kProbeConcurrency = 6;
// Longer than any probe can take (kMaxRedirects + 1 hops of kMaxTimeoutMs would be 180 s).
inline constexpr std::int64_t kProbeLeaseMs = 4 * 60 * 1000;
inline constexpr int kMaxAlertAttempts = 6;
inline constexpr std::int64_t kAlertLeaseMs = 60 * 1000;
// A pending alert untouched this long lost its queue message: the cron enqueues it again.
inline constexpr std::int64_t kStaleAlertMs = 10 * 60 * 1000;
inline constexpr int kDefaultProbeRetentionDays = 7;
inline constexpr int kDefaultRollupRetentionDays = 400;
inline constexpr int kMinRollupRetentionDays = 90;
inline constexpr int kPruneBatch = 5000;

Task<Status> run_cron(Context& ctx, const std::string& cron);
// The cron's work for one tick (a firing's scheduled time, epoch ms; each monitor is probed at most
// once per tick, and only for a tick later than its last): enqueue probes, close incidents nobody
// watches any more, clear the failure counts of disabled tenants' monitors, re-enqueue stale
// alerts, prune.
Task<Status> run_tick(Context& ctx, std::int64_t tick, const std::string& cron);
// POST /__test/tick (test hooks only).
void add_test_routes(App& app);
Task<QueueOutcome> consume(Context& ctx, std::vector<QueueMessage> batch);

// At most this many incidents are closed per call of close_orphaned_incidents (the cron's next tick
// takes the rest).
inline constexpr int kOrphanBatch = 50;
// Closes the open incidents of `tenant` ('' for all) whose monitor was deleted or disabled, whose
// tenant was disabled, or that a monitor made again under the same id no longer holds: each is
// resolved, its triggers answered by resolves (incident.h resolves_for) through the alert outbox,
// and `monitor.incident_resolved` emitted with `closedBy`. Called after every monitor write and
// by the cron (the backstop). A failure is logged, never the caller's: the next sweep tries again.
Task<Unit> close_orphaned_incidents(Context& ctx, const std::string& tenant);

// Probes one monitor now for `tick` (claim, fetch, verdict, state, alerts, events); false when it
// was not claimed. Exposed for the tests.
Task<Result<bool>> probe_monitor(Context& ctx, const std::string& tenant, const std::string& id,
                                 std::int64_t tick);

}  // namespace ss::monitoring
