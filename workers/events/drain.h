#pragma once
// The ledger's consumers. Each drains the stream with its own cursor:
//
//   lock → read `seq > cursor ORDER BY seq LIMIT 500` → process → commit (cursor included)
//
// This file runs one consumer once (drain.cpp); the cursors, locks, replay and lag live in
// cursor.h; each consumer has its own file: workflow_runner (fan-out to workflows, dedupe,
// quarantine), timeline_indexer (per-entity summaries), anomaly_detector (windowed rates and
// sequences), reflexion_analyzer (failure patterns), customer_health_watcher (tenant scores), and
// retention (payload redaction). All are idempotent under replay: dedupe rows for workflow starts,
// "seq newer than the last one counted" guards for the aggregates.

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

// Runs one consumer once (one batch). Errors (D1 down) leave the cursor at the last committed
// event.
Task<Result<DrainReport>> drain_consumer(Context& ctx, const std::string& consumer);

}  // namespace ss::events
