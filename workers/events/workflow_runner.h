#pragma once
// workflow_runner: fans each event out to the workflows its matching subscriptions name, at most
// kMaxFanout of them (a cap hit is recorded as an events.fanout_capped event), claims each start in
// the per-consumer dedupe table before making it, logs each start in workflow_run_log, and
// quarantines a poison event so the cursor moves past it.

#include "workers/events/cursor.h"
#include "workers/events/fanout.h"

namespace ss::events {

// Workers Paid allows 10,000 subrequests per invocation (Free: 50); a run stops well before, and
// the next run continues at the cursor. DRAIN_SUBREQUEST_BUDGET overrides it (e.g. 45 on the Free
// plan). The budget is the run's, shared by all the batches it drains (DrainRun).
inline constexpr int kDefaultSubrequestBudget = 9000;
// What a batch spends besides its starts: the opening D1 batch (lock, switches, cursor and events;
// a later batch reads them inside the previous commit) and the four reads of the fan-out context
// before; the commit, which carries the lock's release or renewal, after. Each chunk adds one claims
// batch, each capped event its record (3) and alert (1).
inline constexpr int kDrainFixedSubrequests = 5;
inline constexpr int kDrainClosingSubrequests = 1;

// A batch is claimed and committed in chunks of at most this many starts: one D1 batch per chunk
// (its claims, carrying the previous chunk's commit) plus the last commit, so 500 events × 8 starts
// cost 5 D1 round trips. It bounds what a run that dies mid-chunk leaves claimed (re-sent with the
// same Idempotency-Key once its claims are older than the lock TTL). DRAIN_CHUNK_STARTS lowers it
// (1-1000): smaller chunks leave less to re-send after a crash, at one more D1 round trip each.
inline constexpr std::size_t kMaxChunkStarts = 1000;
// Starts in flight at once: Workers allow 6 simultaneous open connections per invocation (more
// would wait inside the runtime anyway, and count against the same wall time).
inline constexpr std::size_t kMaxConcurrentStarts = 6;
// No start is sent on a claim older than this (half the lock TTL): a claim older than the TTL may be
// taken over by another run, which would start the same workflow again. The starts not sent in time
// are released and the cursor stops before their event; the next run continues there.
inline constexpr std::int64_t kClaimFreshMs = kLockTtlMs / 2;

// kill:high_risk_ops holds starts of workflow types whose risk_level is at least kHighRiskLevel (the
// "risk_level >= 4"): the event is parked in events_quarantine with kHeldReason (its other
// starts go ahead) and released — started once, dedupe guarding — when the switch is turned off.
inline constexpr std::int64_t kHighRiskLevel = 4;
inline constexpr const char* kHighRiskSwitch = "kill:high_risk_ops";
// kHeldReason (store.h): the reason of such a row.
inline constexpr int kMaxReleasePerCall = 100;

// One batch of events read after `cursor` by the run holding the drain lock as `holder`.
Task<Status> run_workflow_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows, const Cursor& cursor,
                                const std::string& holder);

// Re-runs one quarantined event for workflow_runner; dedupe keeps already-started workflows from
// starting twice. Returns the new quarantine state. `seq` picks the row of one event when two
// tenants' events share the event_id (nullopt: the open one first).
Task<Result<json>> retry_quarantined(Context& ctx, const std::string& consumer,
                                     const std::string& event_id,
                                     std::optional<std::int64_t> seq = std::nullopt);

// Retries up to kMaxReleasePerCall events held by kill:high_risk_ops (after it was turned off):
// {"released","still_held","quarantined"} (+ "work_budget_exhausted": true when the pass's work
// budget stopped it early). The */2 cron calls it too, so a long backlog drains over several runs.
// A pass shares one DRAIN_WORK_BUDGET across its events, as a drain run does: the events it cannot
// afford stay held for the next pass (only its first event goes whatever it costs; alone over the
// budget, it is quarantined). The kill switches are read once per pass: nothing is released while
// kill:high_risk_ops, kill:fanout or kill:workflow_runner is on (a stop turned on during a pass
// holds the next one). A pass makes the same few D1 queries whatever its size (the fan-out context
// is read once for all its events, the claims and the commit are one batch each); one event that
// cannot be released (gone, unreadable, poison, a start refused) is quarantined with its reason and
// does not stop the others. An error is the pass's own (e.g. D1 unreachable): nothing was committed.
// The pass counts its subrequests (its D1 calls and one per start) against DRAIN_SUBREQUEST_BUDGET
// as a drain run does: it stops before the first held event whose starts would pass it (+
// "budget_exhausted": true; its first event goes whatever it costs). `spent` (the */2 cron's): what
// the pass spent of both budgets is added there, and the drain run that follows in the same
// invocation starts from it (drain_consumer_with), so the two together stay within each budget.
Task<Result<json>> release_held(Context& ctx, InvocationSpend* spent = nullptr);
// The */2 cron's retries of quarantined events whose failed starts may pass (a target's 5xx, 408 or
// 429, a timeout, a network error) and whose retry is due (migration 0009): each runs its fan-out
// again (what already started is a duplicate), up to kMaxReleasePerCall, under the same switches and
// budgets as release_held. {"released" (now resolved), "still_held" (not reached), "quarantined"
// (failed again: a later retry is due, or none after the last attempt)}.
Task<Result<json>> retry_due(Context& ctx, InvocationSpend* spent = nullptr);

}  // namespace ss::events
