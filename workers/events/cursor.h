#pragma once
// Consumers, their cursors and locks: what one drain run reports, the lock that keeps two runs of a
// consumer apart, replay (moving a cursor back) and lag (/health).

#include "shared/app.h"
#include "workers/events/store.h"

#include <string>
#include <vector>

namespace ss::events {

inline constexpr int kDrainBatchSize = 500;
inline constexpr std::int64_t kLockTtlMs = 5 * 60 * 1000;
inline constexpr std::int64_t kLagAlertMs = 60 * 60 * 1000;
// How many batches one cron run of a consumer may drain back to back while each comes back full
// (DRAIN_BATCHES_PER_RUN overrides it within 1..kMaxDrainBatchesPerRun; docs/runbook-events.md,
// "Draining on cron"). Sized from Workers' per-invocation limits and the drainers bench: once the run
// is open a batch costs timeline/reflexion ~1.1 D1 calls, anomaly/health ~3 and workflow_runner ~5.3,
// so 100 batches (50,000 events) make at most ~530 of the 1,000 D1 queries an invocation may make
// (the runner; the others <= ~300), and <= 0.13 ms of CPU an event is <= 7 s of the 30 s default CPU
// limit. workflow_runner also stops at its per-run subrequest and work budgets (work_budget.h),
// whichever comes first. The maximum, 150, keeps the costliest drainer (workflow_runner) near ~800
// D1 calls, under the 1,000 with room for its held-start release and the lock. A run longer than
// the cron interval only makes the next tick find the lock taken.
inline constexpr std::int64_t kDefaultDrainBatchesPerRun = 100;
inline constexpr std::int64_t kMaxDrainBatchesPerRun = 150;

inline constexpr const char* kWorkflowRunner = "workflow_runner";
inline constexpr const char* kTimelineIndexer = "timeline_indexer";
inline constexpr const char* kAnomalyDetector = "anomaly_detector";
inline constexpr const char* kReflexionAnalyzer = "reflexion_analyzer";
inline constexpr const char* kCustomerHealthWatcher = "customer_health_watcher";
const std::vector<std::string>& consumer_names();
bool is_consumer(std::string_view name);

struct DrainReport;

// What the same Workers invocation spent of workflow_runner's per-invocation budgets before its
// drain run (the */2 cron's release pass of held starts): DRAIN_SUBREQUEST_BUDGET's subrequests (D1
// calls and starts) and DRAIN_WORK_BUDGET's work units. The drain run starts from it, so the two
// together stay within each budget (only the run's first event goes whatever it costs).
struct InvocationSpend {
  int subrequests = 0;
  std::uint64_t work = 0;
};

// One drain run across its batches (drain.cpp owns it; a consumer sees it through
// DrainReport::run). A batch's last commit carries the run's tail in the same D1 batch: the lock's
// release when the run ends there, or — when the batch came back full and the run may go on — the
// lock's renewal and the next batch's opening reads (DrainState::continue_statements). So a run pays
// one D1 round trip to open, and none of its own after that.
struct DrainRun {
  DrainOpeningKey key;
  int batch_index = 0;        // 0 for the run's first batch
  bool batch_full = false;    // the batch in hand read a whole kDrainBatchSize
  bool batches_left = false;  // the run may read another batch after this one
  // workflow_runner's per-run budgets (work_budget.h, DRAIN_SUBREQUEST_BUDGET): what the run's
  // earlier batches spent.
  std::uint64_t work_used = 0;
  int subrequests_used = 0;
  // workflow_runner commits a batch in chunks, each chunk's commit riding with the next chunk's
  // claims: the cursor (event_id) of the last such commit that landed while the run held the lock,
  // "" when none of the batch in hand did. A run that loses its lock later in that batch reports it.
  std::string chunk_cursor;
  // Set by the commit that carried the tail.
  bool tail_sent = false;
  bool tail_continues = false;
  std::vector<D1Result> tail_results;

  // The tail for `batch`: the run goes on only after a full batch that did not stop early.
  bool continues_after(const DrainReport& batch) const;
  std::vector<D1Statement> tail(const DrainReport& batch, std::int64_t now_ms) const;
};

struct DrainReport {
  std::string consumer;
  DrainRun* run = nullptr;  // the run this batch belongs to (null outside a drain run)
  int read = 0;
  int started = 0;
  int duplicates = 0;
  int quarantined = 0;
  int capped = 0;
  std::string cursor;   // event_id of the last event processed ("" before the first)
  bool locked = false;  // another run holds the lock: this one did nothing
  // The lock expired and was taken during the run: its last batch's writes stand but its cursor
  // did not move; `cursor` is where this run last committed it (a batch's earlier chunk commit
  // included, DrainRun::chunk_cursor).
  bool lock_lost = false;
  bool killed = false;            // a kill switch is on: nothing read, cursor unchanged
  bool budget_exhausted = false;  // stopped early (subrequests, claim age, work): run again
  bool contended = false;         // stopped at an event whose start another run is still making
  int anomalies = 0;              // anomaly_detector: anomaly.detected events appended
  int windows_judged = 0;         // anomaly_detector: completed windows judged this run
  int health_changes = 0;         // customer_health_watcher: tenant.health_changed appended
  int patterns = 0;               // reflexion_analyzer: failures counted into reflexion_log
  int held = 0;                   // workflow_runner: starts held by kill:high_risk_ops
  // workflow_runner: budget_exhausted because DRAIN_WORK_BUDGET was spent (work_budget.h).
  bool work_budget_exhausted = false;
  std::uint64_t work_units = 0;  // workflow_runner: the work counted this run
  int batches = 0;               // batches drained, when a run drained more than one
  json to_json() const;
};

// The name of a consumer's drain lock in cron_locks.
std::string lock_name(const std::string& consumer);

// Commits a batch's last statements, with its run's tail when it has one (report.run) and has not
// sent it yet. An empty list still goes to D1 when there is a tail.
Task<Status> commit_batch(Context& ctx, DrainReport& report, std::vector<D1Statement> statements);

// The aggregate consumers commit a whole batch at once: their rows plus the cursor past the batch.
// `last`: nothing else of the batch is committed after it, so the run's tail rides along.
Task<Status> commit_with_cursor(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows,
                                std::vector<D1Statement> statements, bool last = true);

// Sets a consumer's cursor just before the first insertion of from_event_id, so that it reads that
// event and everything inserted after it again. An event_id the ledger does not hold is 404. Done
// under the consumer's drain lock, so a run in progress cannot overwrite it: while one holds the
// lock, 409 conflict.
Task<Result<Cursor>> replay_consumer(Context& ctx, const std::string& consumer,
                                     const std::string& from_event_id);

// {"status","reason"?,"consumers":{name:{"cursor","lag_seconds","lagging","killed"}},"lagging",
// "fanout_capped","quarantined"} from one D1 query. status is "ok", "stalled" (a consumer that no
// kill switch stops has an oldest unread event recorded over kLagAlertMs ago; "reason" names it) or
// "degraded" (D1 failed; the other fields are then absent). Lag is measured from when the ledger
// recorded the event, never from its producer-minted id. A consumer stopped by its kill switch is
// reported (killed: true) but is not a stall: the operator stopped it on purpose.
Task<json> consumer_health(Context& ctx);

}  // namespace ss::events
