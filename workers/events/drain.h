#pragma once
// The ledger's consumers. Each drains the stream with its own cursor:
//
//   lock → read `event_id > cursor ORDER BY event_id LIMIT 500` → process → commit (cursor
//   included)
//
// This file runs one consumer once (drain.cpp); the cursors, locks, replay and lag live in
// cursor.h; each consumer has its own file: workflow_runner (fan-out to workflows, dedupe,
// quarantine), timeline_indexer (per-entity summaries), anomaly_detector (per-type rates), and
// retention (payload redaction). All are idempotent under replay: dedupe rows for workflow starts,
// "newer than last_event_id" guards for the aggregates.

#include "shared/app.h"
#include "workers/events/anomaly_detector.h"
#include "workers/events/cursor.h"
#include "workers/events/retention.h"
#include "workers/events/timeline_indexer.h"
#include "workers/events/workflow_runner.h"

namespace ss::events {

// Runs one consumer once (one batch). Errors (D1 down) leave the cursor at the last committed
// event.
Task<Result<DrainReport>> drain_consumer(Context& ctx, const std::string& consumer);

}  // namespace ss::events
