#pragma once
// anomaly_detector: judges every *completed* window since its cursor, on the ledger's clock.
//
// Counting: each event read after the cursor is counted into its type's 15-minute window (by
// recorded_at: when the ledger stored it, never the producer-minted event_id) and into the windows
// of the sequence rules it matches. Judging: the windows that ended after judged_until_ms and before
// the window "now" is in — and before the window of the last event read when the batch was full, so
// no window is judged before all of its events are counted — are judged once, then judged_until_ms
// moves past them. A run that only judges (nothing new to read) is normal: a cron run after a quiet
// window ends judges it.
//
// Rules (each anomaly is one anomaly.detected event with its evidence, once per rule, subject and
// window, and one operator alert):
//   rate:                   a type's window holds >= kMinAnomalyCount events and more than
//                           kAnomalyFactor x its trailing 24 h average per window;
//   delivery_failure_burst: >= 5 lead.delivery_failed of one tenant in 15 minutes;
//   monitor_flapping:       >= 3 monitor.incident_opened of one monitor in 6 hours.

#include "workers/events/cursor.h"

namespace ss::events {

inline constexpr std::int64_t kRateWindowMs = 15 * 60 * 1000;
inline constexpr int kBaselineWindows = 96;  // 24 h of 15-minute windows
inline constexpr std::int64_t kMinAnomalyCount = 20;
inline constexpr std::int64_t kAnomalyFactor = 3;
// A detector that has never judged starts this far back (it does not scan the whole history).
inline constexpr std::int64_t kFirstJudgeLookbackMs = 24 * 60 * 60 * 1000;
// A judge pass reads at most this many candidates of each kind (rate windows with enough events;
// signal windows at or over their rule's threshold), one D1 query each; ANOMALY_JUDGE_ROWS overrides
// it. When a list comes back full, judged_until_ms stops before the first window that list may not
// have returned whole, and the next run judges from there (a window judged twice raises nothing
// twice: the anomaly's idempotency key).
inline constexpr std::int64_t kDefaultJudgeRows = 200;
inline constexpr std::int64_t kMaxJudgeRows = 1000;
// When one window alone fills a page, it is read again whole, up to this many candidates of each kind
// (a candidate is a tenant or monitor at or over a rule's threshold, or an event type over the rate
// minimum: bounded by the platform's size, not by traffic).
inline constexpr std::int64_t kWholeWindowRows = 20000;
// Operator alerts for anomalies per clock hour (ANOMALY_ALERTS_PER_HOUR); past it, one
// anomaly_alerts_capped alert and the anomaly.detected events alone.
inline constexpr std::int64_t kDefaultAnomalyAlertsPerHour = 20;

struct SequenceRule {
  const char* name;
  const char* event_type;
  bool per_entity;  // count per entity (a monitor); otherwise per tenant
  std::int64_t window_ms;
  std::int64_t threshold;
};
const std::vector<SequenceRule>& sequence_rules();

// Counts `rows` (possibly none), commits them with the cursor, then judges completed windows.
// `full_batch`: the read returned a whole batch, so more events may be waiting.
Task<Status> run_anomaly_batch(Context& ctx, DrainReport& report, const std::vector<EventRow>& rows,
                               bool full_batch);

}  // namespace ss::events
