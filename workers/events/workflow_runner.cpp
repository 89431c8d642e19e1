#include "workers/events/workflow_runner.h"

#include "shared/effects.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/url_guard.h"
#include "workers/events/alerts.h"
#include "workers/events/ledger.h"
#include "workers/events/reflexion_analyzer.h"

#include <algorithm>
#include <map>

namespace ss::events {

namespace {

struct WorkflowTarget {
  std::string service;  // binding name, or ""
  std::string path;
  std::string webhook;
  std::int64_t risk_level = 0;
};

struct StartOutcome {
  bool started = false;
  bool completed = false;  // the target answered {"status":"completed"}: it ran synchronously
  std::string run_id;
  int http_status = 0;
  std::string error;
};

struct FanoutContext {
  std::vector<Subscription> subs;
  std::map<std::string, WorkflowTarget> workflows;
  // Dedupe keys already started for this consumer, per event (seq).
  std::map<std::int64_t, std::set<std::string>> done_keys;
  std::string holder;           // this run's id: the owner of the claims it makes
  std::string lock;             // the drain lock to renew with every commit ("" for retries)
  bool hold_high_risk = false;  // kill:high_risk_ops is on: risk_level >= 4 starts are held
};

struct EventOutcome {
  std::vector<D1Statement> statements;
  int started = 0;
  int duplicates = 0;
  int subrequests = 0;
  bool capped = false;
  bool contended = false;      // another run holds a live claim on one of this event's starts
  std::string failure;         // non-empty: the event is poison for this consumer
  int held = 0;                // starts held by kill:high_risk_ops (released when it is off)
  std::optional<Error> error;  // D1 failed: stop here, commit nothing for this event
};

Task<Result<std::vector<Subscription>>> load_subscriptions(Context& ctx) {
  SS_CO_TRY(std::vector<SubscriptionRow> rows, co_await ConfigStore::enabled_subscriptions());
  std::vector<Subscription> subs;
  for (const SubscriptionRow& row : rows) {
    auto compiled = Subscription::compile(row);
    if (!compiled) {
      ctx.log("subscription " + row.subscription_id + " skipped: " + compiled.error().message);
      continue;
    }
    subs.push_back(std::move(compiled).value());
  }
  co_return subs;
}

Task<Result<std::map<std::string, WorkflowTarget>>> load_workflows() {
  SS_CO_TRY(std::vector<WorkflowRow> rows, co_await ConfigStore::workflows());
  std::map<std::string, WorkflowTarget> out;
  for (const WorkflowRow& row : rows) {
    auto target = parse_json(row.target_json);
    if (!target) continue;
    WorkflowTarget t;
    t.service = string_or(*target, "service", "");
    t.path = string_or(*target, "path", "/");
    t.webhook = string_or(*target, "webhook", "");
    t.risk_level = row.risk_level;
    out[row.workflow_type] = t;
  }
  co_return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// One POST to the workflow's target; a 2xx answer counts as started.
Task<StartOutcome> start_workflow(Context& ctx, const std::string& key, const json& event,
                                  json input, const Subscription* sub,
                                  const WorkflowTarget* target) {
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
  HttpCall call;
  call.method = "POST";
  // The run's identity travels as headers too: a platform worker handling the start stamps it on
  // the events it emits (shared/emit.h).
  call.headers = {{"content-type", "application/json"},
                  {"idempotency-key", key},
                  {"x-siteswarm-workflow-run-id", out.run_id},
                  {"x-siteswarm-workflow-type", sub->workflow_type}};
  call.body = dump_json(json{{"workflow_type", sub->workflow_type},
                             {"workflow_run_id", out.run_id},
                             {"event", event},
                             {"input", std::move(input)}});
  Result<FetchReply> reply = Error{ErrorCode::internal, "unreachable"};
  if (!target->service.empty()) {
    // Over a service binding the start carries the tenant whose event caused it (the binding is
    // reachable only from the platform; there is no tenant token to send: the ledger keeps hashes).
    const json* tenant = find_field(event, "tenant_id");
    if (tenant != nullptr && tenant->is_string()) {
      call.headers["x-siteswarm-tenant-id"] = tenant->get<std::string>();
    }
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
  out.started = reply->ok();
  if (!out.started) out.error = "target answered " + std::to_string(out.http_status);
  // A target that ran the workflow synchronously says so: {"status":"completed"}.
  if (out.started) {
    auto answer = parse_json(reply->body);
    out.completed = answer && string_or(*answer, "status", "") == "completed";
  }
  co_return out;
}

// Appends the events.fanout_capped record of a cap hit (once per consumer and event) and raises
// the operator alert: one per subscription that broke the cap (the first one dropped) and hour.
Task<Unit> record_cap(Context& ctx, const std::string& consumer, const EventRow& row,
                      const FanoutPlan& plan, const std::vector<Subscription>& subs) {
  NewEvent cap;
  cap.event_type = "events.fanout_capped";
  cap.entity_type = "event";
  cap.entity_id = row.event_id;
  cap.tenant_id = row.tenant_id;
  json dropped = json::array();
  for (const std::string& id : plan.dropped) dropped.push_back(id);
  cap.payload = {{"event_id", row.event_id},    {"event_type", row.event_type},
                 {"consumer", consumer},        {"matched", plan.matched},
                 {"started_limit", kMaxFanout}, {"dropped_subscriptions", dropped}};
  cap.idempotency_key = "fanout_capped:" + consumer + ":" + row.event_id;
  cap.source_system = "siteswarm-events-service";
  auto appended = co_await append_event(ctx, std::move(cap));
  if (!appended) ctx.log("fanout cap record failed: " + appended.error().message);

  json patterns = json::array();
  for (const std::string& id : plan.dropped) {
    for (const Subscription& s : subs) {
      if (s.id == id) {
        patterns.push_back({{"subscription_id", id},
                            {"event_type_glob", s.glob},
                            {"workflow_type", s.workflow_type}});
      }
    }
  }
  AlertDraft alert;
  alert.key = "fanout_capped:" + plan.dropped.front() + ":" +
              std::to_string(ctx.now_ms() / kCapAlertPeriodMs);
  alert.kind = "fanout_capped";
  alert.summary = "event " + row.event_type + " " + row.event_id + " matched " +
                  std::to_string(plan.matched) + " subscriptions; " +
                  std::to_string(plan.dropped.size()) + " dropped over the cap of " +
                  std::to_string(kMaxFanout);
  alert.details = {{"event_id", row.event_id},
                   {"event_type", row.event_type},
                   {"tenant_id", row.tenant_id ? json(*row.tenant_id) : json(nullptr)},
                   {"consumer", consumer},
                   {"matched", plan.matched},
                   {"started_limit", kMaxFanout},
                   {"dropped_patterns", patterns},
                   {"cap_record_event_id", appended ? json(appended->event_id) : json(nullptr)}};
  Status raised = co_await raise_alert(ctx, alert);
  if (!raised) ctx.log("fanout cap alert not recorded: " + raised.error().message);
  co_return Unit{};
}

// The seed's producer events of the runner: workflow.run_started (and workflow.run_completed when the
// target ran it synchronously) or workflow.run_failed, written in the same commit as the start's
// dedupe row. Their caused_by is the event that triggered the run. A run triggered by a
// workflow.run_* event records none: a subscription on workflow.* (or *) would otherwise feed itself
// forever. WORKFLOW_RUN_EVENTS=0 switches them off (the fan-out tests do, to count only starts).
Task<Unit> add_run_events(Context& ctx, const EventRow& row, const FanoutDecision& d,
                          const StartOutcome& r, std::vector<D1Statement>& statements) {
  if (row.event_type.rfind("workflow.run_", 0) == 0 || r.run_id.empty()) co_return Unit{};
  if (ctx.env("WORKFLOW_RUN_EVENTS") == "0") co_return Unit{};  // switched off by configuration
  std::vector<std::string> types;
  if (r.started) {
    types.push_back("workflow.run_started");
    if (r.completed) types.push_back("workflow.run_completed");
  } else {
    types.push_back("workflow.run_failed");
  }
  std::string now = format_rfc3339_ms(ctx.now_ms());
  for (const std::string& type : types) {
    auto id = co_await ctx.new_ulid();
    if (!id) {
      ctx.log(type + " not recorded: " + id.error().message);
      continue;
    }
    json payload{
        {"workflow_type", d.subscription->workflow_type}, {"workflow_run_id", r.run_id},
        {"subscription_id", d.subscription->id},          {"trigger_event_id", row.event_id},
        {"trigger_event_type", row.event_type},           {"idempotency_key", d.key}};
    if (r.http_status != 0) payload["http_status"] = r.http_status;
    if (!r.started) {
      payload["error"] = r.error;
      payload["error_class"] = error_class_of("workflow.run_failed", {{"error", r.error}});
    }
    EventInsert e;
    e.event_id = *id;
    e.tenant_id = row.tenant_id;
    e.event_type = type;
    e.entity_type = "workflow_run";
    e.entity_id = r.run_id;
    e.payload_json = dump_json(payload);
    // Started once per dedupe key; a failure or completion once per run.
    e.idempotency_key = type == "workflow.run_started" ? type + ":" + d.key : type + ":" + r.run_id;
    e.caused_by = "event:" + row.event_id;
    e.workflow_run_id = r.run_id;
    e.source_system = "siteswarm-events-service";
    e.occurred_at = now;
    e.recorded_at = now;
    statements.push_back(EventStore::insert_statement(e));
  }
  co_return Unit{};
}

// Carries out the plan for one event: record a cap hit, claim, start concurrently, and prepare the
// rows to commit. `deferred` holds the previous event's commit: when this event needs a claim
// batch, the two go to D1 together (one round trip instead of two) and `deferred` is emptied.
Task<EventOutcome> fan_out(Context& ctx, const std::string& consumer, const EventRow& row,
                           const FanoutContext& fc, std::vector<D1Statement>& deferred) {
  EventOutcome out;
  auto payload = parse_json(row.payload_json);
  if (!payload || !payload->is_object()) {
    out.failure = "payload is not a JSON object";
    co_return out;
  }
  json event = row.view();
  static const std::set<std::string> kNone;
  auto done = fc.done_keys.find(row.seq);
  FanoutPlan plan =
      plan_fanout(consumer, event, fc.subs, done == fc.done_keys.end() ? kNone : done->second);
  out.duplicates = plan.duplicates;
  if (plan.capped()) {
    out.capped = true;
    if (row.event_type != "events.fanout_capped") {
      co_await record_cap(ctx, consumer, row, plan, fc.subs);
    }
  }
  std::vector<FanoutDecision> todo;
  for (FanoutDecision& d : plan.start) {
    auto wf = fc.workflows.find(d.subscription->workflow_type);
    bool high_risk = wf != fc.workflows.end() && wf->second.risk_level >= kHighRiskLevel;
    if (fc.hold_high_risk && high_risk) {
      ++out.held;  // not claimed, not started: the event is parked until the switch is off
    } else {
      todo.push_back(std::move(d));
    }
  }

  // Claim before starting: only the run whose claim lands starts the workflow. A stale claim (older
  // than the lock TTL) was left by a dead run and is taken over.
  if (!todo.empty()) {
    std::string now = format_rfc3339(ctx.now_ms());
    std::size_t offset = deferred.size();
    std::vector<D1Statement> batch = std::move(deferred);
    deferred.clear();
    for (const FanoutDecision& d : todo) {
      batch.push_back(Dedupe::claim_statement(consumer, row.seq, d.key, row.event_id, now,
                                              fc.holder, ctx.now_ms(), ctx.now_ms() - kLockTtlMs));
    }
    ++out.subrequests;
    auto claimed = co_await D1(kDb).batch(batch);
    if (!claimed) {
      out.error = claimed.error();
      co_return out;
    }
    std::vector<FanoutDecision> mine;
    std::vector<std::string> lost;
    for (std::size_t i = 0; i < todo.size(); ++i) {
      std::size_t at = offset + i;
      if (at < claimed->size() && (*claimed)[at].meta.changes > 0) {
        mine.push_back(std::move(todo[i]));
      } else {
        ++out.duplicates;
        lost.push_back(todo[i].key);
      }
    }
    todo = std::move(mine);
    if (!lost.empty()) {
      // Started by another run, or still being started by one: in the second case this run must not
      // move the cursor past the event, or a run that died holding the claim would lose the start.
      ++out.subrequests;
      auto held = co_await Dedupe::live_claims(consumer, row.seq, lost);
      if (!held) {
        out.error = held.error();
        co_return out;
      }
      out.contended = *held > 0;
    }
  }

  std::vector<Task<StartOutcome>> starts;
  for (const FanoutDecision& d : todo) {
    const Subscription* s = d.subscription;
    auto wf = fc.workflows.find(s->workflow_type);
    json input = s->mapper ? s->mapper->apply(event) : *payload;
    starts.push_back(start_workflow(ctx, d.key, event, std::move(input), s,
                                    wf == fc.workflows.end() ? nullptr : &wf->second));
  }
  std::vector<StartOutcome> results = co_await when_all(std::move(starts));
  std::string now = format_rfc3339(ctx.now_ms());
  for (std::size_t i = 0; i < results.size(); ++i) {
    const StartOutcome& r = results[i];
    const FanoutDecision& d = todo[i];
    ++out.subrequests;
    co_await add_run_events(ctx, row, d, r, out.statements);
    if (r.started) {
      ++out.started;
      out.statements.push_back(Dedupe::started_statement(consumer, row.seq, d.key, fc.holder));
    } else {
      out.statements.push_back(Dedupe::unclaim_statement(consumer, row.seq, d.key, fc.holder));
      if (out.failure.empty()) out.failure = d.subscription->workflow_type + ": " + r.error;
    }
    if (!r.run_id.empty()) {
      out.statements.push_back(
          Dedupe::run_log_statement(r.run_id, consumer, d.subscription->workflow_type, row.event_id,
                                    d.subscription->id, r.started, r.http_status, now));
    }
  }
  co_return out;
}

// Everything fan-out needs for the events with seq in (after, last].
Task<Result<FanoutContext>> load_fanout_context(Context& ctx, const std::string& consumer,
                                                std::int64_t after, std::int64_t last,
                                                std::string holder, std::string lock) {
  FanoutContext fc;
  fc.holder = std::move(holder);
  fc.lock = std::move(lock);
  SS_CO_TRY(fc.subs, co_await load_subscriptions(ctx));
  SS_CO_TRY(fc.workflows, co_await load_workflows());
  SS_CO_TRY(auto keys, co_await Dedupe::started_keys(consumer, after, last));
  for (auto& [seq, key] : keys) fc.done_keys[seq].insert(std::move(key));
  std::vector<std::string> high_risk_switch = {kHighRiskSwitch};
  SS_CO_TRY(fc.hold_high_risk, co_await DrainState::any_switch_on(high_risk_switch));
  co_return fc;
}

int subrequest_budget(const Context& ctx) {
  auto budget = ctx.env_int("DRAIN_SUBREQUEST_BUDGET", kDefaultSubrequestBudget, 0, 999999);
  return static_cast<int>(std::max<std::int64_t>(20, budget));
}

}  // namespace

Task<Status> run_workflow_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows, const Cursor& cursor,
                                const std::string& holder) {
  const std::string& consumer = report.consumer;
  SS_CO_TRY(FanoutContext fc,
            co_await load_fanout_context(ctx, consumer, cursor.seq, rows.back().seq, holder,
                                         lock_name(consumer)));
  int budget = subrequest_budget(ctx);
  int used = 5;  // kill switch, lock, cursor, batch read, kill:high_risk_ops
  // Each event's commit (dedupe, run log, quarantine, cursor, lock renewal) rides along with the
  // next D1 batch the drain makes anyway, so a steady drain costs about one round trip per event.
  std::vector<D1Statement> deferred;
  DrainReport pending = report;  // what `deferred` will have committed once it is flushed
  for (const EventRow& row : rows) {
    // Stop before an event could overrun the platform's subrequest limit; the next run continues.
    if (used + 2 + static_cast<int>(kMaxFanout) + 4 > budget) {
      pending.budget_exhausted = true;
      break;
    }
    bool had_deferred = !deferred.empty();
    EventOutcome outcome = co_await fan_out(ctx, consumer, row, fc, deferred);
    if (outcome.error) co_return std::move(*outcome.error);
    if (had_deferred && deferred.empty()) report = pending;  // the previous commit went with claims
    std::string now = format_rfc3339(ctx.now_ms());
    if (!outcome.failure.empty()) {
      outcome.statements.push_back(
          Quarantine::put_statement(consumer, row.seq, row.event_id, outcome.failure, now));
    } else if (outcome.held > 0) {
      outcome.statements.push_back(
          Quarantine::put_statement(consumer, row.seq, row.event_id, kHeldReason, now));
    }
    if (!outcome.contended) {
      outcome.statements.push_back(
          DrainState::advance_statement(consumer, Cursor{row.seq, row.event_id}, now, 1));
    }
    outcome.statements.push_back(
        DrainState::renew_statement(fc.lock, fc.holder, ctx.now_ms() + kLockTtlMs));
    deferred.insert(deferred.end(), outcome.statements.begin(), outcome.statements.end());
    used += outcome.subrequests + (outcome.capped ? 4 : 0);  // cap record (3) + alert (1)
    ++pending.read;
    pending.started += outcome.started;
    pending.duplicates += outcome.duplicates;
    pending.capped += outcome.capped ? 1 : 0;
    pending.quarantined += outcome.failure.empty() ? 0 : 1;
    pending.held += outcome.held;
    if (outcome.contended) {
      // The cursor stays before this event; the next run finds the other run's starts finished, or
      // takes over their claims once they are older than the lock TTL.
      --pending.read;
      pending.contended = true;
      break;
    }
    pending.cursor = row.event_id;
  }
  SS_CO_CHECK(co_await commit(deferred));
  report = pending;
  co_return Unit{};
}

Task<Result<json>> retry_quarantined(Context& ctx, const std::string& consumer,
                                     const std::string& event_id) {
  SS_CO_TRY(std::optional<QuarantineRow> quarantined,
            co_await Quarantine::find(consumer, event_id));
  if (!quarantined) {
    co_return Error{ErrorCode::not_found,
                    "event " + event_id + " is not quarantined for " + consumer};
  }
  SS_CO_TRY(std::optional<EventRow> row, co_await EventStore::at(quarantined->seq));
  if (!row) co_return Error{ErrorCode::not_found, "no event " + event_id};
  if (consumer != kWorkflowRunner) {
    co_return Error{ErrorCode::conflict, "only workflow_runner quarantines events"};
  }
  SS_CO_TRY(std::string holder, co_await ctx.new_ulid());
  SS_CO_TRY(FanoutContext fc,
            co_await load_fanout_context(ctx, consumer, row->seq - 1, row->seq, holder, ""));
  std::vector<D1Statement> nothing_deferred;
  EventOutcome outcome = co_await fan_out(ctx, consumer, *row, fc, nothing_deferred);
  if (outcome.error) co_return std::move(*outcome.error);
  std::string now = format_rfc3339(ctx.now_ms());
  if (outcome.failure.empty() && outcome.held == 0) {
    outcome.statements.push_back(Quarantine::resolve_statement(consumer, row->seq, now));
  } else {
    std::string reason = outcome.failure.empty() ? kHeldReason : outcome.failure;
    outcome.statements.push_back(
        Quarantine::put_statement(consumer, row->seq, event_id, reason, now));
  }
  SS_CO_CHECK(co_await commit(outcome.statements));
  co_return json{{"consumer", consumer},
                 {"event_id", event_id},
                 {"resolved", outcome.failure.empty() && outcome.held == 0},
                 {"started", outcome.started},
                 {"duplicates", outcome.duplicates},
                 {"reason", outcome.failure.empty() ? json(nullptr) : json(outcome.failure)}};
}

Task<Result<json>> release_held(Context& ctx) {
  SS_CO_TRY(std::vector<QuarantineRow> rows, co_await Quarantine::list(kWorkflowRunner, false));
  int released = 0;
  int still_held = 0;
  for (const QuarantineRow& row : rows) {
    if (row.reason != kHeldReason) continue;
    if (released + still_held >= kMaxReleasePerCall) break;
    SS_CO_TRY(json result, co_await retry_quarantined(ctx, kWorkflowRunner, row.event_id));
    if (result["resolved"] == true) {
      ++released;
    } else {
      ++still_held;
    }
  }
  co_return json{{"released", released}, {"still_held", still_held}};
}

}  // namespace ss::events
