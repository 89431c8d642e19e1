#include "workers/events/drain.h"

#include "workers/events/alerts.h"

namespace ss::events {

namespace {

// Adds one batch's report to the run's.
void add_batch(DrainReport& total, const DrainReport& batch) {
  total.read += batch.read;
  total.started += batch.started;
  total.duplicates += batch.duplicates;
  total.quarantined += batch.quarantined;
  total.capped += batch.capped;
  if (!batch.cursor.empty()) total.cursor = batch.cursor;
  total.budget_exhausted = total.budget_exhausted || batch.budget_exhausted;
  total.contended = total.contended || batch.contended;
  total.anomalies += batch.anomalies;
  total.windows_judged += batch.windows_judged;
  total.health_changes += batch.health_changes;
  total.patterns += batch.patterns;
  total.held += batch.held;
  total.work_budget_exhausted = total.work_budget_exhausted || batch.work_budget_exhausted;
  total.work_units += batch.work_units;
}

Task<Status> nothing_to_run() { co_return Unit{}; }

std::vector<std::string> kill_switches_of(const std::string& consumer) {
  std::vector<std::string> switches = {"kill:" + consumer};
  if (consumer == kWorkflowRunner) switches.push_back("kill:fanout");
  return switches;
}

}  // namespace

Task<Status> run_runner_batch(Context& ctx, DrainReport& report, const std::vector<EventRow>& rows,
                              const Cursor& cursor, const std::string& holder) {
  if (rows.empty()) return nothing_to_run();
  return run_workflow_batch(ctx, report, rows, cursor, holder);
}

// Picks the consumer's batch. A plain function returning the consumer's own (lazy) task, awaited
// at once by the caller, whose arguments it references: no coroutine frame of its own to forward it.
Task<Status> run_any_batch(Context& ctx, DrainReport& report, const std::vector<EventRow>& rows,
                           const Cursor& cursor, const std::string& holder) {
  if (report.consumer == kWorkflowRunner) {
    return run_runner_batch(ctx, report, rows, cursor, holder);
  }
  return run_analyser_batch(ctx, report, rows, cursor, holder);
}

Task<Status> run_analyser_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows, const Cursor&,
                                const std::string&) {
  const std::string& consumer = report.consumer;
  if (consumer == kAnomalyDetector) {
    // Runs with nothing new to read too: a window that ended since the last run is judged.
    bool full = static_cast<int>(rows.size()) == kDrainBatchSize;
    return run_anomaly_batch(ctx, report, rows, full);
  }
  if (rows.empty()) return nothing_to_run();
  if (consumer == kTimelineIndexer) return run_timeline_batch(ctx, report, rows);
  if (consumer == kReflexionAnalyzer) return run_reflexion_batch(ctx, report, rows);
  return run_health_batch(ctx, report, rows);
}

std::int64_t drain_batches_per_run(const Context& ctx) {
  return ctx.env_int("DRAIN_BATCHES_PER_RUN", kDefaultDrainBatchesPerRun, 1,
                     kMaxDrainBatchesPerRun);
}

Task<Result<DrainReport>> drain_consumer_with(Context& ctx, const std::string& consumer,
                                              std::int64_t max_batches, BatchStep step,
                                              InvocationSpend spent) {
  DrainReport report;
  report.consumer = consumer;
  DrainRun run;
  run.key.consumer = consumer;
  run.key.lock = lock_name(consumer);
  run.key.switches = kill_switches_of(consumer);
  // The run's budgets are the invocation's: what ran before it in the invocation is spent already.
  run.work_used = spent.work;
  run.subrequests_used = spent.subrequests;
  SS_CO_TRY(run.key.holder, co_await ctx.new_ulid());
  // One D1 batch: the lock (unless a switch is on), the switches, the cursor and the first batch.
  std::vector<D1Statement> open =
      DrainState::open_statements(run.key, ctx.now_ms(), kLockTtlMs, kDrainBatchSize);
  SS_CO_TRY(std::vector<D1Result> opened, co_await D1(kDb).batch(open));
  SS_CO_TRY(DrainOpening opening, DrainState::opening_of(opened));
  if (opening.killed || !opening.holds_lock) {
    report.killed = opening.killed;
    report.locked = !opening.killed;
    report.cursor = opening.cursor.event_id;
    co_return report;
  }
  report.cursor = opening.cursor.event_id;
  // The cursor as of this run's last commit made while it held the lock: a commit after the lock
  // was lost keeps its writes but not its cursor (kAdvanceCursorHeld), so that is where it stopped.
  std::string held_cursor = report.cursor;
  int batches = 0;
  Status result = Unit{};
  for (;;) {
    DrainReport batch;
    batch.consumer = consumer;
    batch.run = &run;
    batch.cursor = opening.cursor.event_id;
    run.batch_index = batches;
    run.batch_full = static_cast<int>(opening.rows.size()) == kDrainBatchSize;
    run.batches_left = batches + 1 < max_batches;
    run.tail_sent = false;
    run.tail_continues = false;
    run.tail_results.clear();
    run.chunk_cursor.clear();
    result = co_await step(ctx, batch, opening.rows, opening.cursor, run.key.holder);
    ++batches;
    if (!result) break;
    if (!run.tail_sent) {
      // The consumer committed nothing this batch (nothing new, or nothing it had to write): the
      // tail goes alone.
      result = co_await commit_batch(ctx, batch, {});
      if (!result) break;
    }
    add_batch(report, batch);
    if (!run.tail_continues) {
      // The release rode in that commit and deletes only this run's lock: nothing deleted means the
      // lock was another's by then, and the commit's cursor did not land either.
      report.lock_lost = run.tail_results.front().meta.changes == 0;
      break;
    }
    auto next = DrainState::opening_of(run.tail_results);
    if (!next) {
      result = std::move(next).error();
      break;
    }
    opening = std::move(next).value();
    if (opening.killed || !opening.holds_lock) {
      // A switch turned on during the run: the tail let the lock go (if it was still this run's),
      // and the next batch waits. Or the lock expired and another run took it: that run goes on
      // from the committed cursor.
      report.killed = opening.killed;
      report.lock_lost = !opening.killed || run.tail_results.front().meta.changes == 0;
      break;
    }
    held_cursor = opening.cursor.event_id;
  }
  if (report.lock_lost) {
    ctx.log("drain " + consumer + ": lock lost after " + std::to_string(batches) + " batches");
    // The last batch's own commit did not move the cursor, but a chunk commit of it (workflow_runner)
    // may have, while the run still held the lock: that is where the run stopped.
    report.cursor = run.chunk_cursor.empty() ? held_cursor : run.chunk_cursor;
  }
  if (!result && (!run.tail_sent || run.tail_continues)) {
    // The failed batch's commit (and its tail) did not land, or the failure came after a tail that
    // renewed the lock: let the lock go now (it expires by itself otherwise).
    std::vector<D1Statement> release = {
        DrainState::release_statement(run.key.lock, run.key.holder)};
    Status released = co_await commit(release);
    if (!released) ctx.log("lock release failed for " + consumer + " (it expires by itself)");
  }
  if (!result) co_return std::move(result).error();
  if (batches > 1) report.batches = batches;
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
