#pragma once
// workflow_runner: fans each event out to at most kMaxFanout matching subscriptions (a cap hit is
// recorded as an events.fanout_capped event), claims each start in the per-consumer dedupe table
// before making it, logs each start in workflow_run_log, and quarantines a poison event so the
// cursor moves past it.

#include "workers/events/cursor.h"
#include "workers/events/fanout.h"

namespace ss::events {

// Workers Paid allows 10,000 subrequests per invocation (Free: 50); a run stops well before, and
// the next run continues at the cursor. DRAIN_SUBREQUEST_BUDGET overrides it (e.g. 45 on the Free
// plan).
inline constexpr int kDefaultSubrequestBudget = 9000;

// kill:high_risk_ops holds starts of workflow types whose risk_level is at least kHighRiskLevel (the
// seed's "risk_level >= 4"): the event is parked in events_quarantine with kHeldReason (its other
// starts go ahead) and released — started once, dedupe guarding — when the switch is turned off.
inline constexpr std::int64_t kHighRiskLevel = 4;
inline constexpr const char* kHighRiskSwitch = "kill:high_risk_ops";
inline constexpr const char* kHeldReason = "held: kill:high_risk_ops";
inline constexpr int kMaxReleasePerCall = 100;

// One batch of events read after `cursor` by the run holding the drain lock as `holder`.
Task<Status> run_workflow_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows, const Cursor& cursor,
                                const std::string& holder);

// Re-runs one quarantined event for workflow_runner; dedupe keeps already-started workflows from
// starting twice. Returns the new quarantine state.
Task<Result<json>> retry_quarantined(Context& ctx, const std::string& consumer,
                                     const std::string& event_id);

// Retries up to kMaxReleasePerCall events held by kill:high_risk_ops (after it was turned off):
// {"released","still_held"}. The cron calls it too, so a long backlog drains over several runs.
Task<Result<json>> release_held(Context& ctx);

}  // namespace ss::events
