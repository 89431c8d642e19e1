#pragma once
// The ledger's consumers. Each drains the stream with its own cursor:
//
//   lock → read `event_id > cursor ORDER BY event_id LIMIT 500` → process → commit (with cursor)
//
// workflow_runner fans each event out to at most kMaxFanout matching subscriptions (a cap hit is
// recorded as an events.fanout_capped event), checks per-consumer dedupe before starting a
// workflow, logs each start in workflow_run_log, and quarantines a poison event so the cursor moves
// past it. timeline_indexer keeps per-entity summaries; anomaly_detector keeps per-type rates and
// emits anomaly.detected when a type's rate jumps far above its trailing baseline. All are
// idempotent under replay: dedupe rows for workflow starts, "newer than last_event_id" guards for
// the aggregates.

#include "shared/app.h"

#include <string>
#include <vector>

namespace ss::events {

inline constexpr int kDrainBatchSize = 500;
inline constexpr std::size_t kMaxFanout = 8;
inline constexpr std::int64_t kLockTtlMs = 5 * 60 * 1000;
inline constexpr std::int64_t kLagAlertMs = 60 * 60 * 1000;
inline constexpr std::int64_t kRateWindowMs = 15 * 60 * 1000;
inline constexpr int kBaselineWindows = 96;  // 24 h of 15-minute windows
inline constexpr std::int64_t kMinAnomalyCount = 20;
inline constexpr std::int64_t kAnomalyFactor = 3;
// Workers Paid allows 10,000 subrequests per invocation (Free: 50); a run stops well before, and
// the next run continues at the cursor. DRAIN_SUBREQUEST_BUDGET overrides it (45 on Free plans).
inline constexpr int kDefaultSubrequestBudget = 9000;

inline constexpr const char* kWorkflowRunner = "workflow_runner";
inline constexpr const char* kTimelineIndexer = "timeline_indexer";
inline constexpr const char* kAnomalyDetector = "anomaly_detector";
const std::vector<std::string>& consumer_names();
bool is_consumer(std::string_view name);

struct DrainReport {
  std::string consumer;
  int read = 0;
  int started = 0;
  int duplicates = 0;
  int quarantined = 0;
  int capped = 0;
  std::string cursor;
  bool locked = false;            // another run holds the lock: this one did nothing
  bool killed = false;            // a kill switch is on: nothing read, cursor unchanged
  bool budget_exhausted = false;  // stopped early to stay under the subrequest limit
  bool contended = false;         // stopped at an event whose start another run is still making
  json to_json() const;
};

// Runs one consumer once (one batch). Errors (D1 down) leave the cursor at the last committed
// event.
Task<Result<DrainReport>> drain_consumer(Context& ctx, const std::string& consumer);

// Re-runs one quarantined event for workflow_runner; dedupe keeps already-started workflows from
// starting twice. Returns the new quarantine state.
Task<Result<json>> retry_quarantined(Context& ctx, const std::string& consumer,
                                     const std::string& event_id);

// Sets a consumer's cursor so that it reads from_event_id (inclusive) again.
Task<Result<std::string>> replay_consumer(Context& ctx, const std::string& consumer,
                                          const std::string& from_event_id);

// {"consumers":{name:{"cursor","lag_seconds","lagging"}},"fanout_capped":n,"quarantined":n}
Task<json> consumer_health(Context& ctx);

// The largest 26-character Crockford string below `ulid` ("" for the smallest).
std::string ulid_predecessor(const std::string& ulid);

// Retention: events recorded before now - days lose their payload to a summary + tombstone event.
Task<Result<json>> apply_retention(Context& ctx, int days);

}  // namespace ss::events
