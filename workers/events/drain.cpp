#include "workers/events/drain.h"

#include "workers/events/alerts.h"

namespace ss::events {

Task<Result<DrainReport>> drain_consumer(Context& ctx, const std::string& consumer) {
  DrainReport report;
  report.consumer = consumer;
  std::vector<std::string> switches = {"kill:" + consumer};
  if (consumer == kWorkflowRunner) switches.push_back("kill:fanout");
  SS_CO_TRY(bool killed, co_await DrainState::any_switch_on(switches));
  if (killed) {
    report.killed = true;
    SS_CO_TRY(Cursor cursor, co_await DrainState::cursor(consumer));
    report.cursor = cursor.event_id;
    co_return report;
  }
  SS_CO_TRY(std::string holder, co_await ctx.new_ulid());
  SS_CO_TRY(bool acquired,
            co_await DrainState::claim(lock_name(consumer), holder, ctx.now_ms(), kLockTtlMs));
  if (!acquired) {
    report.locked = true;
    SS_CO_TRY(Cursor cursor, co_await DrainState::cursor(consumer));
    report.cursor = cursor.event_id;
    co_return report;
  }
  Status result = Unit{};
  auto cursor = co_await DrainState::cursor(consumer);
  if (!cursor) {
    result = cursor.error();
  } else {
    report.cursor = cursor->event_id;
    auto batch = co_await EventStore::after_cursor(cursor->seq, kDrainBatchSize);
    if (!batch) {
      result = batch.error();
    } else if (consumer == kAnomalyDetector) {
      // Runs with nothing new to read too: a window that ended since the last run is judged.
      bool full = static_cast<int>(batch->size()) == kDrainBatchSize;
      result = co_await run_anomaly_batch(ctx, report, *batch, full);
    } else if (!batch->empty()) {
      if (consumer == kWorkflowRunner) {
        result = co_await run_workflow_batch(ctx, report, *batch, *cursor, holder);
      } else if (consumer == kTimelineIndexer) {
        result = co_await run_timeline_batch(ctx, report, *batch);
      } else if (consumer == kReflexionAnalyzer) {
        result = co_await run_reflexion_batch(ctx, report, *batch);
      } else {
        result = co_await run_health_batch(ctx, report, *batch);
      }
    }
  }
  Status released = co_await DrainState::release(lock_name(consumer), holder);
  if (!released) ctx.log("lock release failed for " + consumer + " (it expires by itself)");
  if (!result) co_return std::move(result).error();
  if (report.quarantined > 0) {
    // One alert per consumer and hour while its quarantine keeps growing.
    std::int64_t hour = ctx.now_ms() / kQuarantineAlertPeriodMs;
    AlertDraft alert;
    alert.key = "quarantine_growing:" + consumer + ":" + std::to_string(hour);
    alert.kind = "quarantine_growing";
    alert.summary = "events consumer " + consumer + " quarantined " +
                    std::to_string(report.quarantined) + " event(s); see /admin/quarantine";
    alert.details = {{"consumer", consumer},
                     {"quarantined_this_run", report.quarantined},
                     {"cursor", report.cursor}};
    Status raised = co_await raise_alert(ctx, alert);
    if (!raised) ctx.log("quarantine alert not recorded: " + raised.error().message);
  }
  co_return report;
}

}  // namespace ss::events
