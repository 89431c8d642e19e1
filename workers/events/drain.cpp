#include "workers/events/drain.h"

#include "shared/effects.h"
#include "shared/glob.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/ulid.h"
#include "shared/url_guard.h"
#include "workers/events/filter_expr.h"
#include "workers/events/input_mapper.h"
#include "workers/events/ledger.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace ss::events {

namespace {

constexpr const char* kCrockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

struct Subscription {
  std::string id;
  std::string glob;
  std::string workflow_type;
  std::optional<FilterExpr> filter;
  std::optional<InputMapper> mapper;
};

struct WorkflowTarget {
  std::string service;  // binding name, or ""
  std::string path;
  std::string webhook;
};

struct StartOutcome {
  bool started = false;
  std::string run_id;
  int http_status = 0;
  std::string error;
};

std::string lock_name(const std::string& consumer) { return "drain:" + consumer; }

Task<Result<bool>> acquire_lock(Context& ctx, const std::string& name, const std::string& holder) {
  json params = json::array({name, holder, ctx.now_ms() + kLockTtlMs, ctx.now_ms()});
  SS_CO_TRY(json r,
            co_await D1(kDb).run_json(
                "INSERT INTO cron_locks (name, holder, expires_at_ms) VALUES (?1, ?2, ?3) "
                "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
                "expires_at_ms = excluded.expires_at_ms WHERE cron_locks.expires_at_ms <= ?4",
                params));
  const json* meta = find_field(r, "meta");
  co_return meta != nullptr&& int_or(*meta, "changes", 0) > 0;
}

Task<Status> release_lock(const std::string& name, const std::string& holder) {
  json params = json::array({name, holder});
  SS_CO_TRY(json r, co_await D1(kDb).run_json(
                        "DELETE FROM cron_locks WHERE name = ?1 AND holder = ?2", params));
  co_return Unit{};
}

Task<Result<std::string>> read_cursor(const std::string& consumer) {
  json params = json::array({consumer});
  SS_CO_TRY(json r, co_await D1(kDb).first_json(
                        "SELECT cursor FROM event_drain_state WHERE consumer = ?1", params));
  const json* row = row_of(r);
  co_return row ? string_or(*row, "cursor", "") : std::string();
}

D1Statement cursor_statement(const std::string& consumer, const std::string& cursor,
                             std::int64_t now_ms, int read) {
  return D1Statement{
      "INSERT INTO event_drain_state (consumer, cursor, last_run_at, events_read) "
      "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (consumer) DO UPDATE SET cursor = excluded.cursor, "
      "last_run_at = excluded.last_run_at, events_read = events_read + excluded.events_read",
      json::array({consumer, cursor, format_rfc3339(now_ms), read})};
}

Task<Result<bool>> switch_on(const std::vector<std::string>& names) {
  json params = json::array();
  std::string placeholders;
  for (const auto& n : names) {
    params.push_back(n);
    placeholders += (placeholders.empty() ? "?" : ", ?") + std::to_string(params.size());
  }
  SS_CO_TRY(json r,
            co_await D1(kDb).first_json("SELECT name FROM kill_switches WHERE enabled = 1 AND "
                                        "name IN (" +
                                            placeholders + ") LIMIT 1",
                                        params));
  co_return row_of(r) != nullptr;
}

Task<Result<std::vector<Subscription>>> load_subscriptions(Context& ctx) {
  SS_CO_TRY(json r, co_await D1(kDb).all_json("SELECT * FROM event_subscriptions WHERE enabled = 1 "
                                              "ORDER BY subscription_id"));
  std::vector<Subscription> subs;
  for (const json& row : rows_of(r)) {
    Subscription s;
    s.id = string_or(row, "subscription_id", "");
    s.glob = string_or(row, "event_type_glob", "");
    s.workflow_type = string_or(row, "workflow_type", "");
    std::string filter = string_or(row, "filter_expr", "");
    if (!filter.empty()) {
      auto parsed = FilterExpr::parse(filter);
      if (!parsed) {
        ctx.log("subscription " + s.id + " skipped: " + parsed.error().message);
        continue;
      }
      s.filter = std::move(parsed).value();
    }
    std::string mapper = string_or(row, "input_mapper", "");
    if (!mapper.empty()) {
      auto doc = parse_json(mapper);
      auto parsed = doc ? InputMapper::parse(*doc) : Result<InputMapper>(doc.error());
      if (!parsed) {
        ctx.log("subscription " + s.id + " skipped: " + parsed.error().message);
        continue;
      }
      s.mapper = std::move(parsed).value();
    }
    subs.push_back(std::move(s));
  }
  co_return subs;
}

Task<Result<std::map<std::string, WorkflowTarget>>> load_workflows() {
  SS_CO_TRY(json r, co_await D1(kDb).all_json(
                        "SELECT workflow_type, target_json FROM workflow_definitions"));
  std::map<std::string, WorkflowTarget> out;
  for (const json& row : rows_of(r)) {
    auto target = parse_json(string_or(row, "target_json", "{}"));
    if (!target) continue;
    WorkflowTarget t;
    t.service = string_or(*target, "service", "");
    t.path = string_or(*target, "path", "/");
    t.webhook = string_or(*target, "webhook", "");
    out[string_or(row, "workflow_type", "")] = t;
  }
  co_return out;
}

std::string idempotency_key(const std::string& consumer, const std::string& event_id,
                            const std::string& workflow_type) {
  return consumer + ":" + event_id + ":" + workflow_type;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// One POST to the workflow's target; a 2xx answer counts as started.
Task<StartOutcome> start_workflow(Context& ctx, const std::string& consumer, const json& event,
                                  const Subscription* sub, const WorkflowTarget* target) {
  StartOutcome out;
  auto id = co_await ctx.new_ulid();
  if (!id) {
    out.error = id.error().message;
    co_return out;
  }
  out.run_id = "run_" + *id;
  if (target == nullptr) {
    out.error = "no workflow definition for " + sub->workflow_type;
    co_return out;
  }
  std::string event_id = string_or(event, "event_id", "");
  const json* payload = find_field(event, "payload");
  json input = sub->mapper ? sub->mapper->apply(event) : (payload ? *payload : json::object());
  HttpCall call;
  call.method = "POST";
  call.headers = {{"content-type", "application/json"},
                  {"idempotency-key", idempotency_key(consumer, event_id, sub->workflow_type)}};
  call.body = dump_json(json{{"workflow_type", sub->workflow_type},
                             {"workflow_run_id", out.run_id},
                             {"event", event},
                             {"input", input}});
  Result<FetchReply> reply = Error{ErrorCode::internal, "unreachable"};
  if (!target->service.empty()) {
    call.url = "https://" + lower(target->service) + ".internal" + target->path;
    reply = co_await service_call(target->service, call);
  } else {
    // Judged again right before the call: the definition may predate the guard's rules, or have
    // been saved with ALLOW_LOCAL_OUTBOUND on.
    auto url = check_outbound_url(target->webhook, ctx.allow_local_outbound());
    if (!url) {
      out.error = "webhook URL refused: " + url.error().message;
      co_return out;
    }
    call.url = url->href;
    reply = co_await fetch(call);
  }
  if (!reply) {
    out.error = reply.error().message;
    co_return out;
  }
  out.http_status = reply->status;
  out.started = out.http_status >= 200 && out.http_status < 300;
  if (!out.started) out.error = "target answered " + std::to_string(out.http_status);
  co_return out;
}

D1Statement quarantine_statement(const std::string& consumer, const std::string& event_id,
                                 const std::string& reason, std::int64_t now_ms) {
  return D1Statement{
      "INSERT INTO events_quarantine (consumer, event_id, reason, attempts, quarantined_at) "
      "VALUES (?1, ?2, ?3, 1, ?4) ON CONFLICT (consumer, event_id) DO UPDATE SET "
      "reason = excluded.reason, attempts = attempts + 1, resolved_at = NULL",
      json::array({consumer, event_id, reason.substr(0, 500), format_rfc3339(now_ms)})};
}

struct FanoutContext {
  std::vector<Subscription> subs;
  std::map<std::string, WorkflowTarget> workflows;
  std::set<std::string> done_keys;  // dedupe keys already started for this consumer
  std::string holder;               // this run's id: the owner of the claims it makes
  std::string lock;                 // the drain lock to renew with every commit ("" for retries)
};

struct EventOutcome {
  std::vector<D1Statement> statements;
  int started = 0;
  int duplicates = 0;
  int subrequests = 0;
  bool capped = false;
  bool contended = false;      // another run holds a live claim on one of this event's starts
  std::string failure;         // non-empty: the event is poison for this consumer
  std::optional<Error> error;  // D1 failed: stop here, commit nothing for this event
};

// Fans one event out: match, cap, dedupe, start concurrently, and prepare the rows to commit.
// `deferred` holds the previous event's commit: when this event needs a claim batch, the two go to
// D1 together (one round trip instead of two) and `deferred` is emptied.
Task<EventOutcome> fan_out(Context& ctx, const std::string& consumer, const json& row,
                           const FanoutContext& fc, std::vector<D1Statement>& deferred) {
  EventOutcome out;
  std::string event_id = string_or(row, "event_id", "");
  auto payload = parse_json(string_or(row, "payload_json", "{}"));
  if (!payload || !payload->is_object()) {
    out.failure = "payload is not a JSON object";
    co_return out;
  }
  json event = event_view(row);
  std::string type = string_or(event, "event_type", "");
  std::vector<const Subscription*> matched;
  for (const Subscription& s : fc.subs) {
    if (glob_match(s.glob, type) && (!s.filter || s.filter->matches(event))) matched.push_back(&s);
  }
  if (matched.size() > kMaxFanout) {
    out.capped = true;
    json dropped = json::array();
    for (std::size_t i = kMaxFanout; i < matched.size(); ++i) dropped.push_back(matched[i]->id);
    matched.resize(kMaxFanout);
    if (type != "events.fanout_capped") {
      NewEvent cap;
      cap.event_type = "events.fanout_capped";
      cap.entity_type = "event";
      cap.entity_id = event_id;
      cap.tenant_id = get_string(event, "tenant_id");
      cap.payload = {{"event_id", event_id},        {"event_type", type},
                     {"consumer", consumer},        {"matched", kMaxFanout + dropped.size()},
                     {"started_limit", kMaxFanout}, {"dropped_subscriptions", dropped}};
      cap.idempotency_key = "fanout_capped:" + consumer + ":" + event_id;
      cap.source_system = "siteswarm-events-service";
      auto appended = co_await append_event(ctx, std::move(cap));
      if (!appended) ctx.log("fanout cap record failed: " + appended.error().message);
    }
  }
  std::vector<const Subscription*> todo;
  for (const Subscription* s : matched) {
    if (fc.done_keys.count(idempotency_key(consumer, event_id, s->workflow_type))) {
      ++out.duplicates;
    } else {
      todo.push_back(s);
    }
  }
  // Two subscriptions naming the same workflow start it once per event.
  std::set<std::string> seen;
  todo.erase(std::remove_if(todo.begin(), todo.end(),
                            [&](const Subscription* s) {
                              if (seen.insert(s->workflow_type).second) return false;
                              ++out.duplicates;
                              return true;
                            }),
             todo.end());

  // Claim before starting: only the run whose claim lands starts the workflow. A stale claim (older
  // than the lock TTL) was left by a dead run and is taken over.
  if (!todo.empty()) {
    std::vector<D1Statement> claims;
    for (const Subscription* s : todo) {
      claims.push_back(
          {"INSERT INTO event_consumer_dedupe (consumer, dedupe_key, event_id, created_at, status, "
           "holder, "
           "claimed_at_ms) VALUES (?1, ?2, ?3, ?4, 'claimed', ?5, ?6) ON CONFLICT (consumer, "
           "dedupe_key) "
           "DO UPDATE SET holder = excluded.holder, claimed_at_ms = excluded.claimed_at_ms WHERE "
           "event_consumer_dedupe.status = 'claimed' AND event_consumer_dedupe.claimed_at_ms <= ?7",
           json::array({consumer, idempotency_key(consumer, event_id, s->workflow_type), event_id,
                        format_rfc3339(ctx.now_ms()), fc.holder, ctx.now_ms(),
                        ctx.now_ms() - kLockTtlMs})});
    }
    ++out.subrequests;
    std::size_t offset = deferred.size();
    std::vector<D1Statement> batch = std::move(deferred);
    deferred.clear();
    batch.insert(batch.end(), claims.begin(), claims.end());
    auto claimed = co_await D1(kDb).batch_json(batch);
    if (!claimed) {
      out.error = claimed.error();
      co_return out;
    }
    std::vector<const Subscription*> mine;
    json lost = json::array();
    for (std::size_t i = 0; i < todo.size(); ++i) {
      std::size_t at = offset + i;
      const json* meta = claimed->is_array() && at < claimed->size()
                             ? find_field((*claimed)[at], "meta")
                             : nullptr;
      if (meta != nullptr && int_or(*meta, "changes", 0) > 0) {
        mine.push_back(todo[i]);
      } else {
        ++out.duplicates;
        lost.push_back(idempotency_key(consumer, event_id, todo[i]->workflow_type));
      }
    }
    todo = std::move(mine);
    if (!lost.empty()) {
      // Started by another run, or still being started by one: in the second case this run must not
      // move the cursor past the event, or a run that died holding the claim would lose the start.
      std::string in;
      json params = json::array({consumer});
      for (const json& k : lost) {
        params.push_back(k);
        in += (in.empty() ? "?" : ", ?") + std::to_string(params.size());
      }
      ++out.subrequests;
      auto held = co_await D1(kDb).first_json(
          "SELECT COUNT(*) AS n FROM event_consumer_dedupe WHERE "
          "consumer = ?1 AND status = 'claimed' AND dedupe_key IN (" +
              in + ")",
          params);
      if (!held) {
        out.error = held.error();
        co_return out;
      }
      const json* row = row_of(*held);
      out.contended = row != nullptr && int_or(*row, "n", 0) > 0;
    }
  }

  std::vector<Task<StartOutcome>> starts;
  for (const Subscription* s : todo) {
    auto wf = fc.workflows.find(s->workflow_type);
    starts.push_back(
        start_workflow(ctx, consumer, event, s, wf == fc.workflows.end() ? nullptr : &wf->second));
  }
  std::vector<StartOutcome> results = co_await when_all(std::move(starts));
  std::string now = format_rfc3339(ctx.now_ms());
  for (std::size_t i = 0; i < results.size(); ++i) {
    const StartOutcome& r = results[i];
    const Subscription* s = todo[i];
    ++out.subrequests;
    json claim =
        json::array({consumer, idempotency_key(consumer, event_id, s->workflow_type), fc.holder});
    if (r.started) {
      ++out.started;
      out.statements.push_back(
          {"UPDATE event_consumer_dedupe SET status = 'started' WHERE consumer = ?1 "
           "AND dedupe_key = ?2 AND holder = ?3",
           claim});
    } else {
      out.statements.push_back(
          {"DELETE FROM event_consumer_dedupe WHERE consumer = ?1 AND dedupe_key = ?2 "
           "AND holder = ?3 AND status = 'claimed'",
           claim});
      if (out.failure.empty()) out.failure = s->workflow_type + ": " + r.error;
    }
    if (!r.run_id.empty()) {
      out.statements.push_back(
          {"INSERT OR IGNORE INTO workflow_run_log (workflow_run_id, consumer, workflow_type, "
           "event_id, "
           "subscription_id, status, http_status, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
           "?8)",
           json::array({r.run_id, consumer, s->workflow_type, event_id, s->id,
                        r.started ? "started" : "failed",
                        r.http_status ? json(r.http_status) : json(nullptr), now})});
    }
  }
  co_return out;
}

Task<Result<FanoutContext>> load_fanout_context(Context& ctx, const std::string& consumer,
                                                const std::string& after, const std::string& last,
                                                std::string holder, std::string lock) {
  FanoutContext fc;
  fc.holder = std::move(holder);
  fc.lock = std::move(lock);
  SS_CO_TRY(fc.subs, co_await load_subscriptions(ctx));
  SS_CO_TRY(fc.workflows, co_await load_workflows());
  json params = json::array({consumer, after, last});
  SS_CO_TRY(json keys,
            co_await D1(kDb).all_json("SELECT dedupe_key FROM event_consumer_dedupe WHERE "
                                      "consumer = ?1 AND event_id > ?2 AND event_id <= ?3 AND "
                                      "status = 'started'",
                                      params));
  for (const json& k : rows_of(keys)) fc.done_keys.insert(string_or(k, "dedupe_key", ""));
  co_return fc;
}

int subrequest_budget(const Context& ctx) {
  auto budget = ctx.env_int("DRAIN_SUBREQUEST_BUDGET", kDefaultSubrequestBudget, 0, 999999);
  return static_cast<int>(std::max<std::int64_t>(20, budget));
}

Task<Status> run_workflow_batch(Context& ctx, DrainReport& report, const json& rows,
                                const std::string& cursor, const std::string& holder) {
  const std::string& consumer = report.consumer;
  std::string last = string_or(rows.back(), "event_id", "");
  SS_CO_TRY(FanoutContext fc,
            co_await load_fanout_context(ctx, consumer, cursor, last, holder, lock_name(consumer)));
  int budget = subrequest_budget(ctx);
  int used = 4;  // kill switch, lock, cursor, batch read
  // Each event's commit (dedupe, run log, quarantine, cursor, lock renewal) rides along with the
  // next D1 batch the drain makes anyway, so a steady drain costs about one round trip per event.
  std::vector<D1Statement> deferred;
  DrainReport pending = report;  // what `deferred` will have committed once it is flushed
  auto flush = [&]() -> Task<Status> {
    if (deferred.empty()) co_return Unit{};
    std::vector<D1Statement> batch = std::move(deferred);
    deferred.clear();
    SS_CO_TRY(json committed, co_await D1(kDb).batch_json(batch));
    co_return Unit{};
  };
  for (const json& row : rows) {
    // Stop before an event could overrun the platform's subrequest limit; the next run continues.
    if (used + 2 + static_cast<int>(kMaxFanout) + 3 > budget) {
      pending.budget_exhausted = true;
      break;
    }
    std::string event_id = string_or(row, "event_id", "");
    bool had_deferred = !deferred.empty();
    EventOutcome outcome = co_await fan_out(ctx, consumer, row, fc, deferred);
    if (outcome.error) co_return std::move(*outcome.error);
    if (had_deferred && deferred.empty())
      report = pending;  // the previous commit went with the claims
    if (!outcome.failure.empty()) {
      outcome.statements.push_back(
          quarantine_statement(consumer, event_id, outcome.failure, ctx.now_ms()));
    }
    if (!outcome.contended) {
      outcome.statements.push_back(cursor_statement(consumer, event_id, ctx.now_ms(), 1));
    }
    outcome.statements.push_back(
        {"UPDATE cron_locks SET expires_at_ms = ?3 WHERE name = ?1 AND holder = ?2",
         json::array({fc.lock, fc.holder, ctx.now_ms() + kLockTtlMs})});
    deferred.insert(deferred.end(), outcome.statements.begin(), outcome.statements.end());
    used += outcome.subrequests + (outcome.capped ? 3 : 0);
    ++pending.read;
    pending.started += outcome.started;
    pending.duplicates += outcome.duplicates;
    pending.capped += outcome.capped ? 1 : 0;
    pending.quarantined += outcome.failure.empty() ? 0 : 1;
    if (outcome.contended) {
      // The cursor stays before this event; the next run finds the other run's starts finished, or
      // takes over their claims once they are older than the lock TTL.
      --pending.read;
      pending.contended = true;
      break;
    }
    pending.cursor = event_id;
  }
  ++used;
  SS_CO_CHECK(co_await flush());
  report = pending;
  co_return Unit{};
}

// The aggregate consumers commit a whole batch at once: their rows plus the cursor past the batch.
Task<Status> commit_aggregates(Context& ctx, DrainReport& report, const json& rows,
                               std::vector<D1Statement> statements) {
  std::string last = string_or(rows.back(), "event_id", "");
  statements.push_back(
      cursor_statement(report.consumer, last, ctx.now_ms(), static_cast<int>(rows.size())));
  SS_CO_TRY(json committed, co_await D1(kDb).batch_json(statements));
  report.read = static_cast<int>(rows.size());
  report.cursor = last;
  co_return Unit{};
}

Task<Status> run_timeline_batch(Context& ctx, DrainReport& report, const json& rows) {
  std::vector<D1Statement> statements;
  for (const json& row : rows) {
    std::string event_id = string_or(row, "event_id", "");
    const json* tenant = find_field(row, "tenant_id");
    statements.push_back(
        {"INSERT INTO entity_timelines (tenant_key, entity_type, entity_id, event_count, "
         "first_event_id, last_event_id, last_event_type, last_occurred_at) "
         "VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5, ?6) ON CONFLICT (tenant_key, entity_type, entity_id) "
         "DO UPDATE SET event_count = event_count + 1, last_event_id = excluded.last_event_id, "
         "last_event_type = excluded.last_event_type, last_occurred_at = excluded.last_occurred_at "
         "WHERE excluded.last_event_id > entity_timelines.last_event_id",
         json::array({tenant && tenant->is_string() ? tenant->get<std::string>() : "",
                      string_or(row, "entity_type", ""), string_or(row, "entity_id", ""), event_id,
                      string_or(row, "event_type", ""), string_or(row, "occurred_at", "")})});
  }
  co_return co_await commit_aggregates(ctx, report, rows, std::move(statements));
}

bool counts_for_rates(const std::string& type) {
  return type.rfind("anomaly.", 0) != 0 && type.rfind("events.", 0) != 0;
}

Task<Status> run_anomaly_batch(Context& ctx, DrainReport& report, const json& rows) {
  std::vector<D1Statement> statements;
  std::set<std::string> types;
  for (const json& row : rows) {
    std::string type = string_or(row, "event_type", "");
    std::string event_id = string_or(row, "event_id", "");
    if (!counts_for_rates(type)) continue;
    std::int64_t at = ulid_time_ms(event_id).value_or(ctx.now_ms());
    types.insert(type);
    statements.push_back(
        {"INSERT INTO event_type_rates (event_type, window_start_ms, event_count, last_event_id) "
         "VALUES (?1, ?2, 1, ?3) ON CONFLICT (event_type, window_start_ms) DO UPDATE SET "
         "event_count = event_count + 1, last_event_id = excluded.last_event_id "
         "WHERE excluded.last_event_id > event_type_rates.last_event_id",
         json::array({type, at - at % kRateWindowMs, event_id})});
  }
  SS_CO_CHECK(co_await commit_aggregates(ctx, report, rows, std::move(statements)));

  // Compare each type's current window with its trailing 24 h average.
  std::int64_t window = ctx.now_ms() - ctx.now_ms() % kRateWindowMs;
  for (const std::string& type : types) {
    json params = json::array({type, window, window - kBaselineWindows * kRateWindowMs});
    SS_CO_TRY(json r, co_await D1(kDb).first_json(
                          "SELECT SUM(CASE WHEN window_start_ms = ?2 THEN event_count ELSE 0 END) "
                          "AS current, SUM(CASE WHEN window_start_ms < ?2 THEN event_count ELSE 0 "
                          "END) AS trailing FROM event_type_rates WHERE event_type = ?1 AND "
                          "window_start_ms >= ?3",
                          params));
    const json* row = row_of(r);
    std::int64_t current = row ? int_or(*row, "current", 0) : 0;
    std::int64_t trailing = row ? int_or(*row, "trailing", 0) : 0;
    double baseline = static_cast<double>(trailing) / kBaselineWindows;
    if (current < kMinAnomalyCount || static_cast<double>(current) <= kAnomalyFactor * baseline) {
      continue;
    }
    NewEvent alert;
    alert.event_type = "anomaly.detected";
    alert.entity_type = "event_type";
    alert.entity_id = type;
    alert.payload = {{"event_type", type},
                     {"window_start", format_rfc3339(window)},
                     {"count", current},
                     {"baseline_per_window", baseline},
                     {"window_minutes", kRateWindowMs / 60000}};
    alert.idempotency_key = "anomaly:" + type + ":" + std::to_string(window);
    alert.source_system = "siteswarm-events-service";
    SS_CO_TRY(Appended appended, co_await append_event(ctx, std::move(alert)));
    if (!appended.duplicate) ctx.log("anomaly.detected for " + type);
  }
  co_return Unit{};
}

}  // namespace

const std::vector<std::string>& consumer_names() {
  static const std::vector<std::string> kNames = {kWorkflowRunner, kTimelineIndexer,
                                                  kAnomalyDetector};
  return kNames;
}

bool is_consumer(std::string_view name) {
  for (const auto& n : consumer_names()) {
    if (n == name) return true;
  }
  return false;
}

json DrainReport::to_json() const {
  json j{{"read", read},
         {"started", started},
         {"duplicates", duplicates},
         {"quarantined", quarantined},
         {"capped", capped},
         {"cursor", cursor.empty() ? json(nullptr) : json(cursor)}};
  if (locked) j["locked"] = true;
  if (budget_exhausted) j["budget_exhausted"] = true;
  if (contended) j["contended"] = true;
  if (killed) j["killed"] = true;
  return j;
}

Task<Result<DrainReport>> drain_consumer(Context& ctx, const std::string& consumer) {
  DrainReport report;
  report.consumer = consumer;
  std::vector<std::string> switches = {"kill:" + consumer};
  if (consumer == kWorkflowRunner) switches.push_back("kill:fanout");
  SS_CO_TRY(bool killed, co_await switch_on(switches));
  if (killed) {
    report.killed = true;
    SS_CO_TRY(report.cursor, co_await read_cursor(consumer));
    co_return report;
  }
  SS_CO_TRY(std::string holder, co_await ctx.new_ulid());
  SS_CO_TRY(bool acquired, co_await acquire_lock(ctx, lock_name(consumer), holder));
  if (!acquired) {
    report.locked = true;
    SS_CO_TRY(report.cursor, co_await read_cursor(consumer));
    co_return report;
  }
  Status result = Unit{};
  auto cursor = co_await read_cursor(consumer);
  if (!cursor) {
    result = cursor.error();
  } else {
    report.cursor = *cursor;
    json params = json::array({*cursor, kDrainBatchSize});
    auto batch = co_await D1(kDb).all_json(
        "SELECT * FROM events WHERE event_id > ?1 ORDER BY event_id "
        "LIMIT ?2",
        params);
    if (!batch) {
      result = batch.error();
    } else if (!rows_of(*batch).empty()) {
      const json& rows = rows_of(*batch);
      if (consumer == kWorkflowRunner) {
        result = co_await run_workflow_batch(ctx, report, rows, *cursor, holder);
      } else if (consumer == kTimelineIndexer) {
        result = co_await run_timeline_batch(ctx, report, rows);
      } else {
        result = co_await run_anomaly_batch(ctx, report, rows);
      }
    }
  }
  Status released = co_await release_lock(lock_name(consumer), holder);
  if (!released) ctx.log("lock release failed for " + consumer + " (it expires by itself)");
  if (!result) co_return std::move(result).error();
  co_return report;
}

Task<Result<json>> retry_quarantined(Context& ctx, const std::string& consumer,
                                     const std::string& event_id) {
  json params = json::array({consumer, event_id});
  SS_CO_TRY(json q,
            co_await D1(kDb).first_json("SELECT * FROM events_quarantine WHERE consumer = ?1 AND "
                                        "event_id = ?2",
                                        params));
  if (row_of(q) == nullptr) {
    co_return Error{ErrorCode::not_found,
                    "event " + event_id + " is not quarantined for " + consumer};
  }
  json event_params = json::array({event_id});
  SS_CO_TRY(json found,
            co_await D1(kDb).first_json("SELECT * FROM events WHERE event_id = ?1", event_params));
  const json* row = row_of(found);
  if (row == nullptr) co_return Error{ErrorCode::not_found, "no event " + event_id};
  if (consumer != kWorkflowRunner) {
    co_return Error{ErrorCode::conflict, "only workflow_runner quarantines events"};
  }
  SS_CO_TRY(std::string holder, co_await ctx.new_ulid());
  SS_CO_TRY(FanoutContext fc, co_await load_fanout_context(
                                  ctx, consumer, ulid_predecessor(event_id), event_id, holder, ""));
  std::vector<D1Statement> nothing_deferred;
  EventOutcome outcome = co_await fan_out(ctx, consumer, *row, fc, nothing_deferred);
  if (outcome.error) co_return std::move(*outcome.error);
  std::string now = format_rfc3339(ctx.now_ms());
  if (outcome.failure.empty()) {
    outcome.statements.push_back(
        {"UPDATE events_quarantine SET resolved_at = ?3 WHERE consumer = ?1 "
         "AND event_id = ?2",
         json::array({consumer, event_id, now})});
  } else {
    outcome.statements.push_back(
        quarantine_statement(consumer, event_id, outcome.failure, ctx.now_ms()));
  }
  SS_CO_TRY(json committed, co_await D1(kDb).batch_json(outcome.statements));
  co_return json{{"consumer", consumer},
                 {"event_id", event_id},
                 {"resolved", outcome.failure.empty()},
                 {"started", outcome.started},
                 {"duplicates", outcome.duplicates},
                 {"reason", outcome.failure.empty() ? json(nullptr) : json(outcome.failure)}};
}

std::string ulid_predecessor(const std::string& ulid) {
  std::string s = ulid;
  for (std::size_t i = s.size(); i-- > 0;) {
    const char* pos = std::strchr(kCrockford, s[i]);
    if (pos == nullptr) return "";
    if (*pos != '0') {
      s[i] = kCrockford[pos - kCrockford - 1];
      return s;
    }
    s[i] = 'Z';
  }
  return "";  // all zeros: nothing is smaller
}

Task<Result<std::string>> replay_consumer(Context& ctx, const std::string& consumer,
                                          const std::string& from_event_id) {
  std::string cursor = ulid_predecessor(from_event_id);
  std::vector<D1Statement> statements = {cursor_statement(consumer, cursor, ctx.now_ms(), 0)};
  SS_CO_TRY(json committed, co_await D1(kDb).batch_json(statements));
  ctx.log("replay: " + consumer + " cursor set before " + from_event_id);
  co_return cursor;
}

Task<json> consumer_health(Context& ctx) {
  json consumers = json::object();
  bool any_lagging = false;
  for (const std::string& name : consumer_names()) {
    auto cursor = co_await read_cursor(name);
    if (!cursor) co_return json{{"consumers", nullptr}, {"degraded", true}};
    json params = json::array({*cursor});
    auto next = co_await D1(kDb).first_json(
        "SELECT event_id FROM events WHERE event_id > ?1 ORDER BY "
        "event_id LIMIT 1",
        params);
    if (!next) co_return json{{"consumers", nullptr}, {"degraded", true}};
    std::int64_t lag_ms = 0;
    if (const json* row = row_of(*next)) {
      auto t = ulid_time_ms(string_or(*row, "event_id", ""));
      if (t) lag_ms = std::max<std::int64_t>(0, ctx.now_ms() - *t);
    }
    bool lagging = lag_ms > kLagAlertMs;
    any_lagging = any_lagging || lagging;
    consumers[name] = {{"cursor", cursor->empty() ? json(nullptr) : json(*cursor)},
                       {"lag_seconds", lag_ms / 1000},
                       {"lagging", lagging}};
  }
  auto counts = co_await D1(kDb).first_json(
      "SELECT (SELECT COUNT(*) FROM events WHERE event_type = 'events.fanout_capped') AS capped, "
      "(SELECT COUNT(*) FROM events_quarantine WHERE resolved_at IS NULL) AS quarantined");
  const json* row = counts ? row_of(*counts) : nullptr;
  co_return json{{"consumers", consumers},
                 {"lagging", any_lagging},
                 {"fanout_capped", row ? int_or(*row, "capped", 0) : 0},
                 {"quarantined", row ? int_or(*row, "quarantined", 0) : 0}};
}

Task<Result<json>> apply_retention(Context& ctx, int days) {
  static constexpr int kRetentionBatch = 500;
  std::int64_t cutoff_ms = ctx.now_ms() - static_cast<std::int64_t>(days) * kMsPerDay;
  if (cutoff_ms <= 0) co_return json{{"redacted", 0}};
  std::string cutoff = encode_ulid(cutoff_ms, UlidRandom{});
  json params = json::array({cutoff, kRetentionBatch});
  SS_CO_TRY(json r,
            co_await D1(kDb).all_json(
                "SELECT event_id, tenant_id, event_type, recorded_at FROM events WHERE "
                "event_id < ?1 AND redacted_at IS NULL AND event_type != 'events.tombstoned' "
                "ORDER BY event_id LIMIT ?2",
                params));
  const json& rows = rows_of(r);
  if (rows.empty()) co_return json{{"redacted", 0}};

  // One tombstone per tenant, and a summary row per (day, tenant, type).
  struct Group {
    std::int64_t count = 0;
    std::string first, last;
  };
  std::map<std::string, std::map<std::pair<std::string, std::string>, Group>> by_tenant;
  for (const json& row : rows) {
    const json* t = find_field(row, "tenant_id");
    std::string tenant = t && t->is_string() ? t->get<std::string>() : "";
    std::string day = string_or(row, "recorded_at", "").substr(0, 10);
    Group& g = by_tenant[tenant][{day, string_or(row, "event_type", "")}];
    std::string id = string_or(row, "event_id", "");
    if (g.count++ == 0) g.first = id;
    g.last = id;
  }
  std::string first = string_or(rows.front(), "event_id", "");
  std::string last = string_or(rows.back(), "event_id", "");
  std::string now = format_rfc3339(ctx.now_ms());
  std::vector<D1Statement> statements;
  for (auto& [tenant, groups] : by_tenant) {
    NewEvent tomb;
    tomb.event_type = "events.tombstoned";
    tomb.entity_type = "retention";
    tomb.entity_id = first + ".." + last;
    if (!tenant.empty()) tomb.tenant_id = tenant;
    json summary = json::array();
    for (auto& [key, g] : groups) {
      summary.push_back({{"day", key.first},
                         {"event_type", key.second},
                         {"count", g.count},
                         {"first_event_id", g.first},
                         {"last_event_id", g.last}});
    }
    tomb.payload = {{"reason", "retention"}, {"retention_days", days}, {"summary", summary}};
    tomb.idempotency_key = "retention:" + first + ":" + last;
    tomb.source_system = "siteswarm-events-service";
    SS_CO_TRY(Appended appended, co_await append_event(ctx, std::move(tomb)));
    for (auto& [key, g] : groups) {
      statements.push_back(
          {"INSERT INTO events_retention_summaries (day, tenant_key, event_type, event_count, "
           "first_event_id, last_event_id, tombstone_event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
           "ON CONFLICT (day, tenant_key, event_type) DO UPDATE SET event_count = event_count + "
           "excluded.event_count, last_event_id = excluded.last_event_id, "
           "tombstone_event_id = excluded.tombstone_event_id",
           json::array(
               {key.first, tenant, key.second, g.count, g.first, g.last, appended.event_id})});
    }
  }
  statements.push_back(
      {"UPDATE events SET payload_json = '{\"_redacted\":true}', redacted_at = ?3 WHERE event_id "
       ">= ?1 "
       "AND event_id <= ?2 AND redacted_at IS NULL AND event_type != 'events.tombstoned'",
       json::array({first, last, now})});
  SS_CO_TRY(json committed, co_await D1(kDb).batch_json(statements));
  co_return json{{"redacted", rows.size()}, {"first_event_id", first}, {"last_event_id", last}};
}

}  // namespace ss::events
