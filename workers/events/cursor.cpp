#include "workers/events/cursor.h"

#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"

#include <algorithm>

namespace ss::events {

const std::vector<std::string>& consumer_names() {
  static const std::vector<std::string> kNames = {kWorkflowRunner, kTimelineIndexer,
                                                  kAnomalyDetector, kReflexionAnalyzer,
                                                  kCustomerHealthWatcher};
  return kNames;
}

bool is_consumer(std::string_view name) {
  for (const auto& n : consumer_names()) {
    if (n == name) return true;
  }
  return false;
}

json DrainReport::to_json() const {
  json j = json::object();
  j["read"] = read;
  j["started"] = started;
  j["duplicates"] = duplicates;
  j["quarantined"] = quarantined;
  j["capped"] = capped;
  j["cursor"] = cursor.empty() ? json(nullptr) : json(cursor);
  if (locked) j["locked"] = true;
  if (lock_lost) j["lock_lost"] = true;
  if (budget_exhausted) j["budget_exhausted"] = true;
  if (work_budget_exhausted) {
    // Only then: the contract pins the report's keys of an ordinary run.
    j["work_budget_exhausted"] = true;
    j["work_units"] = work_units;
  }
  if (contended) j["contended"] = true;
  if (batches > 1) j["batches"] = batches;  // a run that drained several batches back to back
  if (killed) j["killed"] = true;
  if (held > 0) j["held"] = held;
  if (consumer == kAnomalyDetector) {
    j["windows_judged"] = windows_judged;
    j["anomalies"] = anomalies;
  }
  if (consumer == kCustomerHealthWatcher) j["health_changes"] = health_changes;
  if (consumer == kReflexionAnalyzer) j["patterns"] = patterns;
  return j;
}

std::string lock_name(const std::string& consumer) { return "drain:" + consumer; }

bool DrainRun::continues_after(const DrainReport& batch) const {
  return batch_full && batches_left && !batch.budget_exhausted && !batch.contended && !batch.killed;
}

std::vector<D1Statement> DrainRun::tail(const DrainReport& batch, std::int64_t now_ms) const {
  if (continues_after(batch)) {
    return DrainState::continue_statements(key, now_ms + kLockTtlMs, kDrainBatchSize);
  }
  return {DrainState::release_statement(key.lock, key.holder)};
}

Task<Status> commit_batch(Context& ctx, DrainReport& report, std::vector<D1Statement> statements) {
  DrainRun* run = report.run;
  if (run == nullptr || run->tail_sent) SS_CO_RETURN_AWAIT(commit(statements));
  std::vector<D1Statement> tail = run->tail(report, ctx.now_ms());
  const std::size_t tail_size = tail.size();
  for (D1Statement& t : tail) statements.push_back(std::move(t));
  SS_CO_TRY(std::vector<D1Result> results, co_await D1(kDb).batch(statements));
  SS_CO_CHECK(check_batch_answered(results, statements.size()));
  run->tail_sent = true;
  run->tail_continues = run->continues_after(report);
  run->tail_results.assign(std::make_move_iterator(results.end() - static_cast<long>(tail_size)),
                           std::make_move_iterator(results.end()));
  co_return Unit{};
}

Task<Status> commit_with_cursor(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows,
                                std::vector<D1Statement> statements, bool last) {
  Cursor cursor{rows.back().seq, rows.back().event_id};
  const std::string now = format_rfc3339(ctx.now_ms());
  const int read = static_cast<int>(rows.size());
  statements.push_back(report.run != nullptr
                           ? DrainState::advance_held_statement(report.consumer, cursor, now, read,
                                                                report.run->key.lock,
                                                                report.run->key.holder)
                           : DrainState::advance_statement(report.consumer, cursor, now, read));
  if (last) {
    SS_CO_CHECK(co_await commit_batch(ctx, report, std::move(statements)));
  } else {
    SS_CO_CHECK(co_await commit(statements));
  }
  report.read = static_cast<int>(rows.size());
  report.cursor = cursor.event_id;
  co_return Unit{};
}

Task<Result<Cursor>> replay_consumer(Context& ctx, const std::string& consumer,
                                     const std::string& from_event_id) {
  SS_CO_TRY(std::optional<std::int64_t> seq, co_await EventStore::first_seq_of(from_event_id));
  if (!seq) {
    Error e{ErrorCode::not_found, "no event " + from_event_id};
    co_return std::move(name_field(e, "from_event_id", "no such event"));
  }
  Cursor cursor;
  cursor.seq = *seq - 1;
  SS_CO_TRY(cursor.event_id, co_await EventStore::event_id_before(*seq));
  // Under the consumer's drain lock: a run in progress commits its cursor with each batch, and would
  // silently overwrite a cursor moved under it. A consumer that is draining is a 409; the lock is
  // let go in the commit that moves the cursor.
  SS_CO_TRY(std::string holder, co_await ctx.new_ulid());
  const std::string lock = lock_name(consumer);
  SS_CO_TRY(bool locked, co_await DrainState::claim(lock, holder, ctx.now_ms(), kLockTtlMs));
  if (!locked) {
    co_return Error{ErrorCode::conflict,
                    "consumer " + consumer +
                        " is busy: a drain or another replay holds its lock; replay once it has "
                        "finished"};
  }
  std::vector<D1Statement> statements = {
      DrainState::advance_held_statement(consumer, cursor, format_rfc3339(ctx.now_ms()), 0, lock,
                                         holder),
      DrainState::release_statement(lock, holder)};
  Status moved = co_await commit(statements);
  if (!moved) {
    Status released = co_await DrainState::release(lock, holder);
    if (!released)
      ctx.log("replay: lock release failed for " + consumer + " (it expires by itself)");
    co_return std::move(moved).error();
  }
  ctx.log("replay: " + consumer + " cursor set before " + from_event_id + " (seq " +
          std::to_string(*seq) + ")");
  co_return cursor;
}

Task<json> consumer_health(Context& ctx) {
  auto rows = co_await AggregateStore::health(consumer_names());
  if (!rows) {
    ctx.log("health: " + rows.error().message);
    co_return json_object({{"status", "degraded"}});
  }
  json consumers = json::object();
  bool any_lagging = false;
  std::string reason;
  std::int64_t capped = 0;
  std::int64_t quarantined = 0;
  for (const ConsumerHealthRow& row : *rows) {
    std::int64_t lag_ms = 0;
    if (row.oldest_unread) {
      auto t = parse_rfc3339(*row.oldest_unread);
      if (t) lag_ms = std::max<std::int64_t>(0, ctx.now_ms() - *t);
    }
    bool lagging = lag_ms > kLagAlertMs && !row.killed;
    if (lagging && !any_lagging) {
      reason = "consumer " + row.consumer + " is stalled: its oldest unread event was recorded " +
               std::to_string(lag_ms / 60000) + " minutes ago";
    }
    any_lagging = any_lagging || lagging;
    consumers[row.consumer] = {{"cursor", row.cursor.empty() ? json(nullptr) : json(row.cursor)},
                               {"lag_seconds", lag_ms / 1000},
                               {"lagging", lagging},
                               {"killed", row.killed}};
    capped = row.capped;
    quarantined = row.quarantined;
  }
  json out = json_object({{"status", any_lagging ? "stalled" : "ok"},
                          {"consumers", consumers},
                          {"lagging", any_lagging},
                          {"fanout_capped", capped},
                          {"quarantined", quarantined}});
  if (any_lagging) out["reason"] = reason;
  co_return out;
}

}  // namespace ss::events
