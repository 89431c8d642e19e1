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

// One batch of events read after `cursor` by the run holding the drain lock as `holder`.
Task<Status> run_workflow_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows, const Cursor& cursor,
                                const std::string& holder);

// Re-runs one quarantined event for workflow_runner; dedupe keeps already-started workflows from
// starting twice. Returns the new quarantine state.
Task<Result<json>> retry_quarantined(Context& ctx, const std::string& consumer,
                                     const std::string& event_id);

}  // namespace ss::events
