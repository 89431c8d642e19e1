#pragma once
// What the split candidates (tests/bench/split/*.cpp) run of the ledger's cron path: one worker
// draining only workflow_runner, another only the four analysers (plus retention and the alert pass).
// Each gives drain_consumer_with() only its consumers' batch steps, so the linker drops the others:
// the module's size is what that worker would ship (docs/performance.md "Size", "Splitting the ledger").
#include "shared/app.h"
#include "workers/events/admin.h"
#include "workers/events/drain.h"

namespace ss::events::split {

// The default of EVENTS_RETENTION_DAYS: the setting's reader lives with the admin routes, and what a
// candidate links matters here, not which day it redacts.
inline constexpr int kRetentionDays = 730;

inline Task<Status> runner_step(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows, const Cursor& cursor,
                                const std::string& holder) {
  if (rows.empty()) co_return Unit{};
  SS_CO_RETURN_AWAIT(run_workflow_batch(ctx, report, rows, cursor, holder));
}

inline Task<Status> analyser_step(Context& ctx, DrainReport& report,
                                  const std::vector<EventRow>& rows, const Cursor&,
                                  const std::string&) {
  const std::string& consumer = report.consumer;
  if (consumer == kAnomalyDetector) {
    const bool full = static_cast<int>(rows.size()) == kDrainBatchSize;
    SS_CO_RETURN_AWAIT(run_anomaly_batch(ctx, report, rows, full));
  }
  if (rows.empty()) co_return Unit{};
  if (consumer == kTimelineIndexer) SS_CO_RETURN_AWAIT(run_timeline_batch(ctx, report, rows));
  if (consumer == kReflexionAnalyzer) SS_CO_RETURN_AWAIT(run_reflexion_batch(ctx, report, rows));
  SS_CO_RETURN_AWAIT(run_health_batch(ctx, report, rows));
}

// */2: held starts released, then workflow_runner drained (as run_cron does for that pattern).
inline Task<Status> runner_cron(Context& ctx, const std::string&) {
  auto released = co_await release_held(ctx);
  if (!released) ctx.log("release of held starts failed: " + released.error().message);
  const std::string consumer = kWorkflowRunner;
  auto report =
      co_await drain_consumer_with(ctx, consumer, drain_batches_per_run(ctx), &runner_step);
  if (!report) co_return std::move(report).error();
  co_return Unit{};
}

// The analysers' crons, retention and the alert pass (as run_cron does for their patterns).
inline Task<Status> analyser_cron(Context& ctx, const std::string&) {
  const std::vector<std::string> consumers = {kTimelineIndexer, kAnomalyDetector,
                                              kReflexionAnalyzer, kCustomerHealthWatcher};
  for (const std::string& name : consumers) {
    auto report =
        co_await drain_consumer_with(ctx, name, drain_batches_per_run(ctx), &analyser_step);
    if (!report) ctx.log("drain " + name + " failed: " + report.error().message);
  }
  auto retained = co_await apply_retention(ctx, kRetentionDays);
  if (!retained) ctx.log("retention failed: " + retained.error().message);
  auto alerts = co_await alert_pass(ctx);
  if (!alerts) ctx.log("alert pass failed: " + alerts.error().message);
  co_return Unit{};
}

}  // namespace ss::events::split
