#pragma once
// The ledger's consumers. Each drains the stream with its own cursor:
//
//   lock → read `seq > cursor ORDER BY seq LIMIT 500` → process → commit (cursor included)
//
// This file runs one drain call of a consumer (drain.cpp: batch after batch while they come back
// full, up to DRAIN_BATCHES_PER_RUN, under one lock); the cursors, locks, replay and lag live in
// cursor.h; each consumer has its own file: workflow_runner (fan-out to workflows, dedupe,
// quarantine), timeline_indexer (per-entity event lists and summaries), anomaly_detector
// (windowed rates and sequences), reflexion_analyzer (failure patterns), customer_health_watcher
// (tenant scores), and retention (payload redaction). All are idempotent under replay: dedupe rows
// for workflow starts, "seq newer than the last one counted" guards for the aggregates.

#include "shared/app.h"
#include "workers/events/anomaly_detector.h"
#include "workers/events/cursor.h"
#include "workers/events/customer_health_watcher.h"
#include "workers/events/reflexion_analyzer.h"
#include "workers/events/retention.h"
#include "workers/events/timeline_indexer.h"
#include "workers/events/workflow_runner.h"

namespace ss::events {

inline constexpr std::int64_t kQuarantineAlertPeriodMs = 60 * 60 * 1000;

// DRAIN_BATCHES_PER_RUN (kDefaultDrainBatchesPerRun): how many batches a cron run may drain.
std::int64_t drain_batches_per_run(const Context& ctx);

// One batch of one consumer: reads `rows` (after `cursor`), writes its products and queues its
// commit on report.run.
using BatchStep = Task<Status> (*)(Context& ctx, DrainReport& report,
                                   const std::vector<EventRow>& rows, const Cursor& cursor,
                                   const std::string& holder);
// The batch steps: workflow_runner's, the four analysers', and every consumer's (dispatching on
// report.consumer to one of the other two). A module that drains only some consumers names the
// step that runs them, and links only their code (the ledger's three workers: docs/architecture.md).
Task<Status> run_runner_batch(Context& ctx, DrainReport& report, const std::vector<EventRow>& rows,
                              const Cursor& cursor, const std::string& holder);
Task<Status> run_analyser_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows, const Cursor& cursor,
                                const std::string& holder);
Task<Status> run_any_batch(Context& ctx, DrainReport& report, const std::vector<EventRow>& rows,
                           const Cursor& cursor, const std::string& holder);
// Runs one consumer through `step` (which must handle it): one batch, then batch after batch while
// each comes back full and did not stop early, up to `max_batches`. The lock is held across the
// batches (renewed with each commit), the cursor committed with each batch, and the kill switches
// read again before each batch: a switch turned on mid-run stops it at the next batch. Costs one D1
// round trip to open (lock, switches, cursor and the first batch in one D1 batch); each later batch
// is read inside the previous one's commit, and the lock is released inside the last. Errors (D1
// down) leave the cursor at the last committed batch and are returned (the batches before it stay
// done). `spent`: what the invocation already spent of workflow_runner's budgets (InvocationSpend).
Task<Result<DrainReport>> drain_consumer_with(Context& ctx, const std::string& consumer,
                                              std::int64_t max_batches, BatchStep step,
                                              InvocationSpend spent = {});

}  // namespace ss::events
