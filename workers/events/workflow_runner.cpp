#include "workers/events/workflow_runner.h"

#include "shared/effects.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/text.h"
#include "shared/url_guard.h"
#include "workers/events/alerts.h"
#include "workers/events/ledger.h"
#include "workers/events/reflexion_analyzer.h"
#include "workers/events/work_budget.h"

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
  // The failure may pass: the target answered 5xx, 408 or 429, or did not answer (timeout, network
  // error). Such an event's quarantine is retried automatically (kMaxStartAttempts).
  bool passing = false;
};

struct FanoutContext {
  std::vector<Subscription> subs;
  std::map<std::string, WorkflowTarget> workflows;
  // Dedupe keys already started for this consumer, per event (seq).
  std::map<std::int64_t, std::set<std::string>> done_keys;
  std::string holder;           // this run's id: the owner of the claims it makes
  std::string lock;             // the drain lock to renew with the commit ("" for retries)
  bool hold_high_risk = false;  // kill:high_risk_ops is on: risk_level >= 4 starts are held
};

// How far an event got in this run.
enum class Progress {
  pending,    // not reached (a batch that stopped earlier): its claims, if any, are released
  done,       // every start sent (or a duplicate): the cursor may pass it
  contended,  // another run holds a live claim on one of its starts: the cursor stops before it
  partial,    // the claims' deadline came before all its starts were sent: the cursor stops
};

// One event of a batch: its plan, then what its claims and starts came to.
struct EventWork {
  const EventRow* row = nullptr;
  json event;                        // the API view: what filters, mappers and targets see
  json payload;                      // parsed; a non-object payload makes the event poison
  std::string event_text;            // `event` written once, on its first start ("": not yet)
  std::string payload_text;          // `payload` likewise, for the starts without a mapper
  std::vector<FanoutDecision> todo;  // starts to claim, in subscription order
  std::vector<bool> mine;            // per todo: this run's claim landed
  std::vector<std::optional<StartOutcome>> results;  // per todo: nullopt = not sent
  int duplicates = 0;
  int held = 0;  // starts held by kill:high_risk_ops (released when it is off)
  bool capped = false;
  std::size_t matched = 0;           // subscriptions matched (a cap hit's record)
  std::vector<std::string> dropped;  // subscriptions dropped over the cap
  std::string failure;               // non-empty: the event is poison for this consumer
  bool passing = false;              // every failed start of it may pass: retried automatically
  std::uint64_t work = 0;            // work units of its plan and starts (work_budget.h)
  Progress progress = Progress::pending;
  int started() const {
    int n = 0;
    for (const auto& r : results) n += r && r->started ? 1 : 0;
    return n;
  }
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

// One POST to the workflow's target; a 2xx answer counts as started.
// `event_text` and `input_text` are the event's view and the start's input, written as JSON (the
// event's once for all its starts).
Task<StartOutcome> start_workflow(Context& ctx, const std::string& key, const json& event,
                                  const std::string& event_text, std::string input_text,
                                  const Subscription* sub, const WorkflowTarget* target,
                                  std::string run_id) {
  StartOutcome out;
  out.run_id = std::move(run_id);
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
  // {"event","input","workflow_run_id","workflow_type"}: the keys in the order dump_json writes them.
  std::string& body = call.body;
  body.reserve(event_text.size() + input_text.size() + out.run_id.size() +
               sub->workflow_type.size() + 64);
  body += R"({"event":)";
  body += event_text;
  body += R"(,"input":)";
  body += input_text;
  body += R"(,"workflow_run_id":)";
  append_json_string(body, out.run_id);
  body += R"(,"workflow_type":)";
  append_json_string(body, sub->workflow_type);
  body += '}';
  Result<FetchReply> reply = Error{ErrorCode::internal, "unreachable"};
  if (!target->service.empty()) {
    // Over a service binding the start carries the tenant whose event caused it (the binding is
    // reachable only from the platform; there is no tenant token to send: the ledger keeps hashes).
    const json* tenant = find_field(event, "tenant_id");
    if (tenant != nullptr && tenant->is_string()) {
      call.headers["x-siteswarm-tenant-id"] = tenant->get<std::string>();
    }
    call.url = "https://" + ascii_lower(target->service) + ".internal" + target->path;
    // "A 2xx answer counts as started": a target whose body then never finishes has still been
    // given the start (its body only says whether the run also completed).
    reply = co_await service_call_head_answers(target->service, call);
  } else {
    // Judged again right before the call: the definition may predate the guard's rules, or have
    // been saved with ALLOW_LOCAL_OUTBOUND on.
    auto url = check_outbound_url(target->webhook, ctx.allow_local_outbound());
    if (!url) {
      out.error = "webhook URL refused: " + url.error().message;
      co_return out;
    }
    call.url = url->href;
    reply = co_await fetch_head_answers(call);
  }
  if (!reply) {
    out.error = reply.error().message;
    // A timeout, a network error, or (a service target) the worker throwing or its connection lost;
    // not a binding that is missing, nor a URL the guard refused (set above), which would fail again.
    const std::string& cause = reply.error().cause;
    out.passing = cause == "timeout" || cause == "network_error" || cause == "service_error";
    co_return out;
  }
  out.http_status = reply->status;
  out.started = reply->ok();
  if (!out.started) out.error = "target answered " + std::to_string(out.http_status);
  out.passing = out.http_status >= 500 || out.http_status == 408 || out.http_status == 429;
  // A target that ran the workflow synchronously says so: {"status":"completed"}.
  if (out.started) {
    auto answer = parse_json(reply->body);
    out.completed = answer && string_or(*answer, "status", "") == "completed";
  }
  co_return out;
}

// Appends the events.fanout_capped record of a cap hit (once per consumer and event) and raises
// the operator alert: one per subscription that broke the cap (the first one dropped) and hour.
// Never for a cap record itself.
Task<Unit> record_cap(Context& ctx, const std::string& consumer, const EventRow& row,
                      std::size_t matched, const std::vector<std::string>& dropped_ids,
                      const std::vector<Subscription>& subs) {
  if (row.event_type == "events.fanout_capped") co_return Unit{};
  NewEvent cap;
  cap.event_type = "events.fanout_capped";
  cap.entity_type = "event";
  cap.entity_id = row.event_id;
  cap.tenant_id = row.tenant_id;
  json dropped = json::array();
  for (const std::string& id : dropped_ids) dropped.push_back(id);
  cap.payload = {{"event_id", row.event_id},    {"event_type", row.event_type},
                 {"consumer", consumer},        {"matched", matched},
                 {"started_limit", kMaxFanout}, {"dropped_subscriptions", dropped}};
  cap.idempotency_key = std::string(kKeyFanoutCapped) + consumer + ":" + row.event_id;
  cap.source_system = "siteswarm-events-service";
  auto appended = co_await append_event(ctx, std::move(cap));
  if (!appended) ctx.log("fanout cap record failed: " + appended.error().message);

  json patterns = json::array();
  for (const std::string& id : dropped_ids) {
    for (const Subscription& s : subs) {
      if (s.id == id) {
        patterns.push_back({{"subscription_id", id},
                            {"event_type_glob", s.glob},
                            {"workflow_type", s.workflow_type}});
      }
    }
  }
  AlertDraft alert;
  alert.key = "fanout_capped:" + dropped_ids.front() + ":" +
              std::to_string(ctx.now_ms() / kCapAlertPeriodMs);
  alert.kind = "fanout_capped";
  alert.summary = "event " + row.event_type + " " + row.event_id + " matched " +
                  std::to_string(matched) + " subscriptions; " +
                  std::to_string(dropped_ids.size()) + " dropped over the cap of " +
                  std::to_string(kMaxFanout) + " workflows";
  alert.details = {{"event_id", row.event_id},
                   {"event_type", row.event_type},
                   {"tenant_id", row.tenant_id ? json(*row.tenant_id) : json(nullptr)},
                   {"consumer", consumer},
                   {"matched", matched},
                   {"started_limit", kMaxFanout},
                   {"dropped_patterns", patterns},
                   {"cap_record_event_id", appended ? json(appended->event_id) : json(nullptr)}};
  Status raised = co_await raise_alert(ctx, alert);
  if (!raised) ctx.log("fanout cap alert not recorded: " + raised.error().message);
  co_return Unit{};
}

// The runner's own producer events: workflow.run_started (and workflow.run_completed when the
// target ran it synchronously) or workflow.run_failed, written in the same commit as the start's
// dedupe row. Their caused_by is the event that triggered the run. A run triggered by a
// workflow.run_* event records none: a subscription on workflow.* (or *) would otherwise feed itself
// forever. WORKFLOW_RUN_EVENTS=0 switches them off (the fan-out tests do, to count only starts).
std::vector<std::string> run_event_types(const Context& ctx, const EventRow& row,
                                         const StartOutcome& r) {
  if (row.event_type.rfind("workflow.run_", 0) == 0 || r.run_id.empty()) return {};
  if (ctx.env("WORKFLOW_RUN_EVENTS") == "0") return {};  // switched off by configuration
  if (!r.started) return {"workflow.run_failed"};
  if (r.completed) return {"workflow.run_started", "workflow.run_completed"};
  return {"workflow.run_started"};
}

EventInsert run_event(const EventRow& row, const FanoutDecision& d, const StartOutcome& r,
                      const std::string& type, std::string id, const std::string& now) {
  json payload = json_object({{"workflow_type", d.subscription->workflow_type},
                              {"workflow_run_id", r.run_id},
                              {"subscription_id", d.subscription->id},
                              {"trigger_event_id", row.event_id},
                              {"trigger_event_type", row.event_type},
                              {"idempotency_key", d.key}});
  if (r.http_status != 0) payload["http_status"] = r.http_status;
  if (!r.started) {
    payload["error"] = r.error;
    payload["error_class"] = error_class_of("workflow.run_failed", {{"error", r.error}});
  }
  EventInsert e;
  e.event_id = std::move(id);
  e.tenant_id = row.tenant_id;
  e.event_type = type;
  e.entity_type = "workflow_run";
  e.entity_id = r.run_id;
  e.payload_json = dump_json(payload);
  // Started once per dedupe key; a failure or completion once per run. "<type>:" is one of the
  // prefixes producers may not use (kReservedKeyPrefixes, ledger.h).
  e.idempotency_key = type == "workflow.run_started" ? type + ":" + d.key : type + ":" + r.run_id;
  e.caused_by = "event:" + row.event_id;
  e.workflow_run_id = r.run_id;
  e.source_system = "siteswarm-events-service";
  e.occurred_at = now;
  e.recorded_at = now;
  return e;
}

// The plan for one event, without effects: match, cap, dedupe against the starts already made,
// and set aside starts that kill:high_risk_ops holds. `meter` counts the work of the plan and of
// the starts it leaves to make; once it is over its limit the plan stops and must not be used.
EventWork plan_event(const std::string& consumer, const EventRow& row, const FanoutContext& fc,
                     WorkMeter& meter) {
  EventWork w;
  w.row = &row;
  const std::uint64_t before = meter.used;
  const std::uint64_t payload_bytes = row.payload_json.size();
  meter.add(payload_bytes);  // parsed here, viewed by filters
  auto payload = parse_json(row.payload_json);
  if (!payload || !payload->is_object()) {
    w.failure = "payload is not a JSON object";
    w.work = meter.used - before;
    return w;
  }
  w.payload = std::move(payload).value();
  w.event = row.view();
  static const std::set<std::string> kNone;
  auto done = fc.done_keys.find(row.seq);
  FanoutPlan plan = plan_fanout(consumer, w.event, fc.subs,
                                done == fc.done_keys.end() ? kNone : done->second, &meter);
  if (plan.over_budget) {
    w.work = meter.used - before;
    return w;
  }
  w.duplicates = plan.duplicates;
  w.capped = plan.capped();
  w.matched = plan.matched;
  w.dropped = std::move(plan.dropped);
  for (FanoutDecision& d : plan.start) {
    auto wf = fc.workflows.find(d.subscription->workflow_type);
    bool high_risk = wf != fc.workflows.end() && wf->second.risk_level >= kHighRiskLevel;
    if (fc.hold_high_risk && high_risk) {
      ++w.held;  // not claimed, not started: the event is parked until the switch is off
    } else {
      // A start carries the event and its input, serialised into the request body.
      meter.add(payload_bytes + kEventEnvelopeWork);
      meter.add(d.subscription->mapper ? d.subscription->mapper->cost(w.event) : payload_bytes);
      w.todo.push_back(std::move(d));
    }
  }
  w.work = meter.used - before;
  return w;
}

// An event whose own work is over the whole budget (it was the first of its run): it is
// quarantined without any start, so it cannot stop the consumer run after run.
void refuse_over_budget(EventWork& w, std::uint64_t budget) {
  w.todo.clear();
  w.held = 0;
  w.duplicates = 0;
  w.capped = false;
  w.matched = 0;
  w.dropped.clear();
  w.failure = "over the drain work budget: needs more than " + std::to_string(budget) +
              " work units (DRAIN_WORK_BUDGET); narrow the subscriptions' filters or mappers, "
              "or raise the budget, then retry";
}

// Subrequests an event costs: its starts, and a cap record (3) + alert (1).
int event_cost(const EventWork& w) { return static_cast<int>(w.todo.size()) + (w.capped ? 4 : 0); }

// The starts of one chunk, sent by kMaxConcurrentStarts workers that each take the next one; none
// is sent once the chunk's claims are older than kClaimFreshMs.
struct StartItem {
  EventWork* work = nullptr;
  std::size_t index = 0;  // into work->todo
  std::string run_id;
};

struct StartQueue {
  std::vector<StartItem> items;
  std::size_t next = 0;
  std::int64_t deadline_ms = 0;
  bool expired = false;
};

Task<Unit> start_worker(Context& ctx, StartQueue& q, const FanoutContext& fc) {
  while (q.next < q.items.size()) {
    if (ctx.now_ms() > q.deadline_ms) {
      q.expired = true;
      break;
    }
    StartItem& item = q.items[q.next++];
    EventWork& w = *item.work;
    const FanoutDecision& d = w.todo[item.index];
    const Subscription* s = d.subscription;
    auto wf = fc.workflows.find(s->workflow_type);
    const WorkflowTarget* target = wf == fc.workflows.end() ? nullptr : &wf->second;
    if (w.event_text.empty()) w.event_text = dump_json(w.event);
    std::string input;
    if (s->mapper) {
      input = dump_json(s->mapper->apply(w.event));
    } else {
      if (w.payload_text.empty()) w.payload_text = dump_json(w.payload);
      input = w.payload_text;
    }
    StartOutcome outcome = co_await start_workflow(ctx, d.key, w.event, w.event_text,
                                                   std::move(input), s, target, item.run_id);
    w.results[item.index] = std::move(outcome);
  }
  co_return Unit{};
}

StartRef ref_of(const EventWork& w, std::size_t i) {
  return StartRef{w.row->seq, w.todo[i].key, w.row->event_id};
}

// What a chunk's claims and starts leave to commit, and whether the batch must stop after it.
struct ChunkResult {
  std::vector<D1Statement> statements;  // dedupe marks and releases, run log, run events
  bool stop = false;                    // contended or past the deadline: no later chunk runs
  // The rows each statement of `carry` changed, when it went along with this chunk's claims (empty
  // when it did not: a chunk without claims leaves `carry` for the next D1 batch).
  std::vector<std::int64_t> carried_changes;
};

// Claims every start of works[first, last) in one D1 batch (which also carries `carry`, the previous
// chunk's commit), sends the starts that this run's claims won, and prepares the rows to commit.
// Claim before start: nothing is sent before its claim has landed in D1.
Task<Result<ChunkResult>> run_chunk(Context& ctx, const std::string& consumer,
                                    std::vector<EventWork>& works, std::size_t first,
                                    std::size_t last, const FanoutContext& fc,
                                    std::vector<D1Statement>& carry) {
  ChunkResult out;
  std::vector<StartRef> claims;
  for (std::size_t k = first; k < last; ++k) {
    EventWork& w = works[k];
    w.mine.assign(w.todo.size(), false);
    w.results.assign(w.todo.size(), std::nullopt);
    for (std::size_t i = 0; i < w.todo.size(); ++i) claims.push_back(ref_of(w, i));
  }
  std::set<std::pair<std::int64_t, std::string>> landed;
  std::set<std::pair<std::int64_t, std::string>> others;
  std::int64_t claimed_at = ctx.now_ms();
  if (!claims.empty()) {
    std::vector<D1Statement> batch = std::move(carry);
    carry.clear();
    std::size_t offset = batch.size();
    std::vector<D1Statement> claim =
        Dedupe::claim_statements(consumer, claims, format_rfc3339(claimed_at), fc.holder,
                                 claimed_at, claimed_at - kLockTtlMs);
    std::size_t claim_count = claim.size();
    for (D1Statement& c : claim) batch.push_back(std::move(c));
    // Read after the claims, in the same transaction: the claims another run still holds.
    batch.push_back(Dedupe::others_claims_statement(consumer, works[first].row->seq,
                                                    works[last - 1].row->seq, fc.holder));
    SS_CO_TRY(std::vector<D1Result> results, co_await D1(kDb).batch(batch));
    SS_CO_CHECK(check_batch_answered(results, batch.size()));
    out.carried_changes.reserve(offset);
    for (std::size_t i = 0; i < offset; ++i) out.carried_changes.push_back(results[i].meta.changes);
    for (std::size_t i = 0; i < claim_count; ++i) {
      SS_CO_TRY(auto keys, Dedupe::keys_of(results[offset + i]));
      for (auto& k : keys) landed.insert(std::move(k));
    }
    SS_CO_TRY(auto held, Dedupe::keys_of(results.back()));
    for (auto& k : held) others.insert(std::move(k));
  }

  // Walk the chunk in order: a start another run still holds stops the batch at that event (its
  // own won starts are still sent); the claims won on later events are released unsent.
  StartQueue queue;
  queue.deadline_ms = claimed_at + kClaimFreshMs;
  std::vector<StartRef> release;
  bool stopped = false;
  for (std::size_t k = first; k < last; ++k) {
    EventWork& w = works[k];
    bool contended = false;
    for (std::size_t i = 0; i < w.todo.size(); ++i) {
      auto key = std::make_pair(w.row->seq, w.todo[i].key);
      w.mine[i] = landed.count(key) != 0;
      if (stopped && w.mine[i]) release.push_back(ref_of(w, i));
      if (stopped || w.mine[i]) continue;
      // Started by another run, or still being started by one: in the second case this run must
      // not move the cursor past the event, or a run that died holding the claim would lose it.
      ++w.duplicates;
      if (others.count(key) != 0) contended = true;
    }
    if (stopped) continue;
    for (std::size_t i = 0; i < w.todo.size(); ++i) {
      if (w.mine[i]) queue.items.push_back(StartItem{&w, i, ""});
    }
    w.progress = contended ? Progress::contended : Progress::done;
    if (contended) stopped = true;
  }

  if (!queue.items.empty()) {
    SS_CO_TRY(std::vector<std::string> ids, co_await ctx.new_ulids(queue.items.size()));
    for (std::size_t i = 0; i < ids.size(); ++i) queue.items[i].run_id = "run_" + ids[i];
    std::vector<Task<Unit>> workers;
    std::size_t n = std::min(kMaxConcurrentStarts, queue.items.size());
    for (std::size_t i = 0; i < n; ++i) workers.push_back(start_worker(ctx, queue, fc));
    std::vector<Unit> finished = co_await when_all(std::move(workers));
    (void)finished;
  }
  if (queue.expired) {
    // The starts not sent in time: their claims are released, and the cursor stops before the
    // first event that has one (the next run claims them afresh).
    stopped = true;
    bool past = false;
    for (std::size_t k = first; k < last; ++k) {
      EventWork& w = works[k];
      if (w.progress == Progress::pending) continue;
      for (std::size_t i = 0; i < w.todo.size(); ++i) {
        if (!w.mine[i] || w.results[i]) continue;
        release.push_back(ref_of(w, i));
        past = true;
        if (w.progress == Progress::done) w.progress = Progress::partial;
      }
      if (past && w.progress == Progress::done) w.progress = Progress::partial;
    }
  }

  std::vector<StartRef> started;
  std::vector<RunLogEntry> log;
  std::vector<std::pair<const EventWork*, std::size_t>> sent;
  std::size_t event_count = 0;
  for (std::size_t k = first; k < last; ++k) {
    EventWork& w = works[k];
    for (std::size_t i = 0; i < w.todo.size(); ++i) {
      if (!w.results[i]) continue;
      const StartOutcome& r = *w.results[i];
      const FanoutDecision& d = w.todo[i];
      if (r.started) {
        started.push_back(ref_of(w, i));
      } else {
        release.push_back(ref_of(w, i));
        // The event is retried automatically only if every failure of it may pass.
        w.passing = (w.failure.empty() || w.passing) && r.passing;
        if (w.failure.empty()) w.failure = d.subscription->workflow_type + ": " + r.error;
      }
      log.push_back(RunLogEntry{r.run_id, d.subscription->workflow_type, w.row->event_id,
                                d.subscription->id, r.started, r.http_status});
      sent.emplace_back(&w, i);
      event_count += run_event_types(ctx, *w.row, r).size();
    }
  }
  std::string now = format_rfc3339(ctx.now_ms());
  std::vector<EventInsert> run_events;
  if (event_count > 0) {
    auto ids = co_await ctx.new_ulids(event_count);
    if (!ids) {
      ctx.log("workflow run events not recorded: " + ids.error().message);
    } else {
      // The ledger's own stamp: whole seconds, fixed width (ledger.cpp records emits the same way).
      std::string at = format_rfc3339_stamp(ctx.now_ms());
      std::size_t next = 0;
      for (const auto& [w, i] : sent) {
        const StartOutcome& r = *w->results[i];
        for (const std::string& type : run_event_types(ctx, *w->row, r)) {
          run_events.push_back(run_event(*w->row, w->todo[i], r, type, (*ids)[next++], at));
        }
      }
    }
  }
  auto append = [&out](std::vector<D1Statement> more) {
    for (D1Statement& m : more) out.statements.push_back(std::move(m));
  };
  append(EventStore::insert_statements(run_events));
  append(Dedupe::started_statements(consumer, fc.holder, started));
  append(Dedupe::unclaim_statements(consumer, fc.holder, release));
  append(Dedupe::run_log_statements(consumer, log, now));
  out.stop = stopped;
  co_return out;
}

// Everything fan-out needs for the events with seq in (after, last], read concurrently, with
// kill:high_risk_ops.
Task<Result<FanoutContext>> load_fanout_context(Context& ctx, const std::string& consumer,
                                                std::int64_t after, std::int64_t last,
                                                std::string holder, std::string lock) {
  FanoutContext fc;
  fc.holder = std::move(holder);
  fc.lock = std::move(lock);
  std::vector<std::string> high_risk_switch = {kHighRiskSwitch};
  auto [subs, workflows, keys, hold] = co_await when_all(
      load_subscriptions(ctx), load_workflows(), Dedupe::started_keys(consumer, after, last),
      DrainState::any_switch_on(high_risk_switch));
  if (!subs) co_return std::move(subs).error();
  if (!workflows) co_return std::move(workflows).error();
  if (!keys) co_return std::move(keys).error();
  if (!hold) co_return std::move(hold).error();
  fc.subs = std::move(subs).value();
  fc.workflows = std::move(workflows).value();
  for (auto& [seq, key] : *keys) fc.done_keys[seq].insert(std::move(key));
  fc.hold_high_risk = *hold;
  co_return fc;
}

// A cursor advance waiting in `carry`: its statement's index there and the event it moves to.
struct CarriedAdvance {
  std::size_t index = 0;
  std::string event_id;
};

// Adds works[first, end) to the report and their quarantine rows, the resolution of the earlier
// quarantine rows of the events now fully started (a replay or a later run succeeded: one statement
// for the chunk), the cursor past the last event done and the lock renewal to `carry`. `stopped` is
// set at the first event the cursor must not pass (contended, partial or never reached); nothing
// after it counts. Returns where in `carry` the cursor's advance is, when it adds one.
std::optional<CarriedAdvance> settle(Context& ctx, const std::string& consumer,
                                     const std::vector<EventWork>& works, std::size_t first,
                                     std::size_t end, const FanoutContext& fc, DrainReport& pending,
                                     std::vector<D1Statement>& carry, bool& stopped) {
  std::string now = format_rfc3339(ctx.now_ms());
  std::optional<Cursor> advanced;
  int read = 0;
  std::vector<std::int64_t> succeeded;  // every start done (or none to do), none held
  for (std::size_t k = first; k < end && !stopped; ++k) {
    const EventWork& w = works[k];
    if (w.progress == Progress::pending) {
      stopped = true;
      break;
    }
    pending.started += w.started();
    pending.held += w.held;
    if (w.progress == Progress::partial) {
      pending.budget_exhausted = true;  // stopped early: the next run continues at the cursor
      stopped = true;
      break;
    }
    pending.duplicates += w.duplicates;
    pending.capped += w.capped ? 1 : 0;
    if (!w.failure.empty()) {
      carry.push_back(Quarantine::put_statement(consumer, w.row->seq, w.row->event_id, w.failure,
                                                now, w.passing));
      ++pending.quarantined;
    } else if (w.held > 0) {
      carry.push_back(
          Quarantine::put_statement(consumer, w.row->seq, w.row->event_id, kHeldReason, now));
    }
    if (w.progress == Progress::contended) {
      // The cursor stays before this event; the next run finds the other run's starts finished,
      // or takes over their claims once they are older than the lock TTL.
      pending.contended = true;
      stopped = true;
      break;
    }
    if (w.failure.empty() && w.held == 0) succeeded.push_back(w.row->seq);
    ++read;
    pending.cursor = w.row->event_id;
    advanced = Cursor{w.row->seq, w.row->event_id};
  }
  pending.read += read;
  if (!succeeded.empty()) {
    carry.push_back(Quarantine::resolve_many_statement(consumer, succeeded, now));
  }
  std::optional<CarriedAdvance> out;
  if (advanced) {
    out = CarriedAdvance{carry.size(), advanced->event_id};
    carry.push_back(
        DrainState::advance_held_statement(consumer, *advanced, now, read, fc.lock, fc.holder));
  }
  carry.push_back(DrainState::renew_statement(fc.lock, fc.holder, ctx.now_ms() + kLockTtlMs));
  return out;
}

// The kill switches that stop every start of workflow_runner (its drain reads the same two,
// drain.cpp): kill:fanout and kill:workflow_runner.
std::vector<std::string> runner_stops() {
  return {"kill:fanout", "kill:" + std::string(kWorkflowRunner)};
}

std::uint64_t work_budget(const Context& ctx) {
  return static_cast<std::uint64_t>(ctx.env_int("DRAIN_WORK_BUDGET", kDefaultDrainWorkBudget,
                                                kMinDrainWorkBudget, kMaxDrainWorkBudget));
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
  // Plan the batch and cut it into chunks of at most kMaxChunkStarts starts, stopping before an
  // event could overrun the platform's subrequest limit (the next run continues at the cursor).
  // Both budgets are the run's: a run of several batches goes on from what the earlier ones spent
  // (and from what the invocation spent before the run: the */2 cron's release pass,
  // InvocationSpend), and only the run's first event goes whatever it costs.
  DrainRun* run = report.run;
  const bool first_of_run = run == nullptr || run->batch_index == 0;
  int budget = subrequest_budget(ctx);
  int used = (run == nullptr ? 0 : run->subrequests_used) + kDrainFixedSubrequests;
  std::vector<EventWork> works;
  std::vector<std::size_t> chunk_ends;  // works[chunk_ends[i-1], chunk_ends[i]) is chunk i
  std::size_t chunk_starts = 0;
  auto chunk_limit = static_cast<std::size_t>(
      ctx.env_int("DRAIN_CHUNK_STARTS", static_cast<std::int64_t>(kMaxChunkStarts), 1,
                  static_cast<std::int64_t>(kMaxChunkStarts)));
  // The work budget (work_budget.h) stops the batch before the first event it cannot afford; an
  // event that is over the whole budget on its own (the first of a run) is quarantined instead,
  // and the run ends with it.
  const std::uint64_t work_limit = work_budget(ctx);
  std::uint64_t work_taken = run == nullptr ? 0 : run->work_used;  // by the events this run handles
  for (const EventRow& row : rows) {
    WorkMeter meter;
    meter.limit = work_taken < work_limit ? work_limit - work_taken : 0;
    // The run's first event has the whole budget, whatever the invocation spent before the run:
    // only an event over the whole budget on its own is refused.
    if (works.empty() && first_of_run) meter.limit = work_limit;
    EventWork w = plan_event(consumer, row, fc, meter);
    report.work_units += meter.used;  // counted whether or not the event is taken
    bool alone_over_budget = false;
    if (meter.over()) {
      report.budget_exhausted = true;
      report.work_budget_exhausted = true;
      if (!works.empty() || !first_of_run) {
        ctx.log("workflow_runner: work budget spent (" + std::to_string(work_taken) + " of " +
                std::to_string(work_limit) + " units) before event " + row.event_id +
                "; the next run starts there");
        break;
      }
      ctx.log("workflow_runner: event " + row.event_id + " alone is over the work budget of " +
              std::to_string(work_limit) + " units: quarantined");
      refuse_over_budget(w, work_limit);
      alone_over_budget = true;
    }
    bool new_chunk = works.empty() || chunk_starts + w.todo.size() > chunk_limit;
    int cost = event_cost(w) + (new_chunk ? 1 : 0);  // a chunk is one claims batch
    // The run's first event always goes: a run that could never take one would stall the consumer.
    if ((!works.empty() || !first_of_run) && used + cost + kDrainClosingSubrequests > budget) {
      report.budget_exhausted = true;
      break;
    }
    used += cost;
    if (new_chunk && !works.empty()) {
      chunk_ends.push_back(works.size());
      chunk_starts = 0;
    }
    chunk_starts += w.todo.size();
    work_taken += w.work;
    works.push_back(std::move(w));
    if (alone_over_budget) break;  // its evaluation spent this run's budget
  }
  if (!works.empty()) chunk_ends.push_back(works.size());
  for (EventWork& w : works) {
    if (w.capped) co_await record_cap(ctx, consumer, *w.row, w.matched, w.dropped, fc.subs);
  }

  // Each chunk's commit (its dedupe marks, run log, quarantine rows, the cursor past it and the
  // lock renewal) rides along with the next chunk's claims; the last one goes alone.
  std::vector<D1Statement> carry;
  DrainReport pending = report;
  bool stopped = false;
  std::size_t first = 0;
  std::optional<CarriedAdvance> advance;  // the latest cursor advance waiting in `carry`
  for (std::size_t end : chunk_ends) {
    SS_CO_TRY(ChunkResult chunk, co_await run_chunk(ctx, consumer, works, first, end, fc, carry));
    if (advance && advance->index < chunk.carried_changes.size()) {
      // The previous chunk's commit went with these claims. Its cursor moved only if the run still
      // held the lock (kAdvanceCursorHeld): should the run lose the lock before its last commit,
      // this is where it stopped (DrainRun::chunk_cursor).
      if (chunk.carried_changes[advance->index] > 0 && run != nullptr) {
        run->chunk_cursor = advance->event_id;
      }
      advance.reset();
    }
    for (D1Statement& s : chunk.statements) carry.push_back(std::move(s));
    if (auto added = settle(ctx, consumer, works, first, end, fc, pending, carry, stopped)) {
      advance = std::move(added);
    }
    first = end;
    if (chunk.stop || stopped) break;
  }
  if (run != nullptr) {
    run->work_used = work_taken;
    run->subrequests_used = used;
  }
  // The last commit carries the run's tail: the lock's release, or the next batch's opening.
  SS_CO_CHECK(co_await commit_batch(ctx, pending, std::move(carry)));
  report = pending;
  co_return Unit{};
}

Task<Result<json>> retry_quarantined(Context& ctx, const std::string& consumer,
                                     const std::string& event_id, std::optional<std::int64_t> seq) {
  // The switches that stop workflow_runner's drain stop its retries too, read with the row: a
  // retry while one is on is refused and changes nothing (a stop turned on during the retry lets
  // it finish, as a drain's batch in hand).
  const std::vector<std::string> stops = runner_stops();
  auto [found, stop] =
      co_await when_all(Quarantine::find(consumer, event_id, seq), DrainState::switch_on(stops));
  if (!found) co_return std::move(found).error();
  if (!stop) co_return std::move(stop).error();
  const std::optional<QuarantineRow>& quarantined = *found;
  if (!quarantined) {
    co_return Error{ErrorCode::not_found,
                    "event " + event_id + " is not quarantined for " + consumer};
  }
  // A resolved row has nothing left to retry: running its fan-out again would start the workflows of
  // subscriptions made since, out of order (a replay is the tool for that).
  if (quarantined->resolved_at) {
    co_return Error{ErrorCode::conflict, "event " + event_id + " was resolved for " + consumer +
                                             " at " + *quarantined->resolved_at +
                                             "; nothing to retry (a replay re-reads events)"}
        .with("resolved_at", *quarantined->resolved_at);
  }
  if (*stop) {
    co_return Error{ErrorCode::conflict,
                    **stop + " is on: " + std::string(kWorkflowRunner) +
                        " starts nothing while it is, retries included; the event stays "
                        "quarantined (retry it once the switch is off)"}
        .with("kill_switch", **stop);
  }
  SS_CO_TRY(std::optional<EventRow> row, co_await EventStore::at(quarantined->seq));
  if (!row) co_return Error{ErrorCode::not_found, "no event " + event_id};
  if (consumer != kWorkflowRunner) {
    co_return Error{ErrorCode::conflict, "only workflow_runner quarantines events"};
  }
  SS_CO_TRY(std::string holder, co_await ctx.new_ulid());
  SS_CO_TRY(FanoutContext fc,
            co_await load_fanout_context(ctx, consumer, row->seq - 1, row->seq, holder, ""));
  std::vector<EventWork> works;
  // A retry gets the budget of a whole run for its one event: over it, the event stays quarantined.
  WorkMeter meter;
  meter.limit = work_budget(ctx);
  works.push_back(plan_event(consumer, *row, fc, meter));
  EventWork& w = works.front();
  if (meter.over()) refuse_over_budget(w, meter.limit);
  if (w.capped) co_await record_cap(ctx, consumer, *w.row, w.matched, w.dropped, fc.subs);
  std::vector<D1Statement> statements;
  if (w.failure.empty()) {
    SS_CO_TRY(ChunkResult chunk, co_await run_chunk(ctx, consumer, works, 0, 1, fc, statements));
    for (D1Statement& s : chunk.statements) statements.push_back(std::move(s));
    if (w.progress == Progress::partial && w.failure.empty()) {
      w.failure = "the claims expired before every start was sent";
    }
  }
  // Another run (a retry or drain, or one that died) still holds a claim on one of its starts: that
  // start may never have gone out, and the cursor is past the event, so it must not be called
  // resolved. Its row is left as it is (that run may be resolving it right now); a retry after that
  // run, or once its claim is older than the lock TTL (then taken over), settles it.
  bool contended = w.progress == Progress::contended && w.failure.empty();
  if (contended) {
    w.failure = "a start is still claimed by another run; retry after it finishes or in " +
                std::to_string(kLockTtlMs / 60'000) + " minutes";
  }
  std::string now = format_rfc3339(ctx.now_ms());
  bool resolved = w.failure.empty() && w.held == 0;
  if (resolved) {
    statements.push_back(Quarantine::resolve_statement(consumer, row->seq, now));
  } else if (!contended) {
    std::string reason = w.failure.empty() ? kHeldReason : w.failure;
    statements.push_back(Quarantine::put_statement(consumer, row->seq, event_id, reason, now,
                                                   !w.failure.empty() && w.passing));
  }
  SS_CO_CHECK(co_await commit(statements));
  co_return json_object({{"consumer", consumer},
                         {"event_id", event_id},
                         {"seq", row->seq},  // which row, when two tenants' events share the id
                         {"tenant_id", row->tenant_id ? json(*row->tenant_id) : json(nullptr)},
                         {"resolved", resolved},
                         {"started", w.started()},
                         {"duplicates", w.duplicates},
                         // Why it is still open: a start failed, or the kill switch holds one.
                         {"reason", !w.failure.empty() ? json(w.failure)
                                    : w.held > 0       ? json(kHeldReason)
                                                       : json(nullptr)}});
}

namespace {

// What a release pass did with its held events.
struct ReleaseTally {
  int released = 0;     // every start sent (or already sent): the row is resolved
  int quarantined = 0;  // poison, a start failed, or the event is gone: the row has that reason now
  bool work_budget_exhausted = false;  // the pass's work budget stopped it before its last event
  bool budget_exhausted = false;       // DRAIN_SUBREQUEST_BUDGET stopped it before its last event
};

// A release pass's D1 calls: the held rows with the switches (2, at once), then the fan-out
// context (4, at once), one claims batch and one commit.
constexpr int kReleaseReadSubrequests = 2;
constexpr int kReleaseContextSubrequests = 4;
constexpr int kReleaseClaimsAndCommit = 2;

// Every held start of a pass would fit one claims batch (the pass is never cut into chunks).
static_assert(static_cast<std::size_t>(kMaxReleasePerCall) * kMaxFanout <= kMaxChunkStarts);

// One release pass over `held` (kill:high_risk_ops and the stops are off): the fan-out context is
// read once for the pass — subscriptions, workflows, the events and their started keys, in four
// concurrent queries — then every start is claimed in one D1 batch, sent, and committed with the
// rows' new state in one more, whatever the number of events (the drain that follows in the */2
// cron's invocation shares D1's 1,000 queries). One event never fails the pass: an event that is
// gone or unreadable is quarantined with that reason (retrying it is then the operator's call), a
// poison one as a drain would; one whose starts another run still claims, or whose claims expired
// before every start was sent, stays held for the next pass (dedupe guards what went out).
// The pass has one work budget (DRAIN_WORK_BUDGET), as a drain run does: it stops before the first
// held event it cannot afford, and that event and the ones after it stay held for the next pass.
// Only the pass's first event goes whatever it costs: alone over the whole budget, it is
// quarantined with the drain's reason (it would stop every pass) and the pass ends there.
// `first_goes`: the pass's first event goes whatever the invocation spent before it (the release of
// held starts, which nothing else would ever send); without it (the automatic retries, which can
// wait for the next tick) an event goes only within what is left of both budgets.
Task<Result<ReleaseTally>> release_pass(Context& ctx, const std::vector<QuarantineRow>& held,
                                        InvocationSpend& spent, bool first_goes) {
  const std::string consumer = kWorkflowRunner;
  std::vector<std::int64_t> seqs;
  seqs.reserve(held.size());
  for (const QuarantineRow& row : held) seqs.push_back(row.seq);
  SS_CO_TRY(std::string holder, co_await ctx.new_ulid());
  spent.subrequests += kReleaseContextSubrequests;
  auto [subs, workflows, keys, events] =
      co_await when_all(load_subscriptions(ctx), load_workflows(),
                        Dedupe::started_keys_of(consumer, seqs), EventStore::at_seqs(seqs));
  if (!subs) co_return std::move(subs).error();
  if (!workflows) co_return std::move(workflows).error();
  if (!keys) co_return std::move(keys).error();
  if (!events) co_return std::move(events).error();
  FanoutContext fc;
  fc.holder = std::move(holder);
  fc.subs = std::move(subs).value();
  fc.workflows = std::move(workflows).value();
  for (auto& [seq, key] : *keys) fc.done_keys[seq].insert(std::move(key));
  std::map<std::int64_t, const EventRow*> by_seq;
  for (const EventRow& e : events->rows) by_seq[e.seq] = &e;

  ReleaseTally tally;
  std::string now = format_rfc3339(ctx.now_ms());
  std::vector<D1Statement> statements;
  std::vector<EventWork> works;
  works.reserve(held.size());  // run_chunk keeps pointers into it
  const std::uint64_t budget = work_budget(ctx);
  // The work of what the invocation spent before the pass, then of the events this pass takes (the
  // drain loop's shape: a caller that spent before the pass leaves it the rest of the budget).
  std::uint64_t taken = spent.work;
  // Subrequests, as a drain batch counts them: what the invocation spent before the pass's events,
  // plus its claims batch and its commit, plus one per start. The pass stops before the first held
  // event whose starts would pass DRAIN_SUBREQUEST_BUDGET (its first event goes whatever it costs).
  const int subrequests = subrequest_budget(ctx);
  int used = spent.subrequests + kReleaseClaimsAndCommit;
  for (const QuarantineRow& row : held) {
    auto found = by_seq.find(row.seq);
    if (found == by_seq.end()) {
      auto why = events->unreadable.find(row.seq);
      std::string reason =
          "held event unreadable or gone from the ledger: " +
          (why == events->unreadable.end() ? "no event at seq " + std::to_string(row.seq)
                                           : why->second);
      ctx.log("release of " + row.event_id + " skipped: " + reason);
      statements.push_back(Quarantine::put_statement(consumer, row.seq, row.event_id, reason, now));
      ++tally.quarantined;
      continue;
    }
    // What the events before it left of the pass's budget (the drain loop's shape). Its cap, if
    // any, was recorded when the drain held it.
    WorkMeter meter;
    meter.limit = taken < budget ? budget - taken : 0;
    // The pass's first event has the whole budget, whatever the invocation spent before the pass:
    // only an event over the whole budget on its own is refused.
    if (works.empty() && first_goes) meter.limit = budget;
    EventWork w = plan_event(consumer, *found->second, fc, meter);
    spent.work += meter.used;  // spent whether or not the event is taken
    if (meter.over()) {
      tally.work_budget_exhausted = true;
      if (!works.empty() || !first_goes) {
        ctx.log("release: work budget spent (" + std::to_string(taken) + " of " +
                std::to_string(budget) + " units) before held event " + row.event_id +
                "; the next pass starts there");
        break;
      }
      ctx.log("release: held event " + row.event_id + " alone is over the work budget of " +
              std::to_string(budget) + " units: quarantined");
      refuse_over_budget(w, budget);
      works.push_back(std::move(w));
      break;  // its evaluation spent the pass's budget
    }
    const int cost = static_cast<int>(w.todo.size());
    if ((!works.empty() || !first_goes) && used + cost > subrequests) {
      tally.budget_exhausted = true;
      ctx.log("release: subrequest budget spent (" + std::to_string(used) + " of " +
              std::to_string(subrequests) + ") before held event " + row.event_id +
              "; the next pass starts there");
      break;
    }
    used += cost;
    taken += w.work;
    works.push_back(std::move(w));
  }
  // Counted before they are made: a pass that fails after its claims still spent them.
  spent.subrequests = used;
  if (!works.empty()) {
    SS_CO_TRY(ChunkResult chunk,
              co_await run_chunk(ctx, consumer, works, 0, works.size(), fc, statements));
    for (D1Statement& s : chunk.statements) statements.push_back(std::move(s));
    // The starts took their time: a retry's backoff counts from when they answered.
    now = format_rfc3339(ctx.now_ms());
  }
  std::vector<std::int64_t> resolved;
  for (const EventWork& w : works) {
    if (!w.failure.empty()) {
      ctx.log("release of " + w.row->event_id + " quarantined: " + w.failure);
      statements.push_back(Quarantine::put_statement(consumer, w.row->seq, w.row->event_id,
                                                     w.failure, now, w.passing));
      ++tally.quarantined;
    } else if (w.progress == Progress::done) {
      resolved.push_back(w.row->seq);
      ++tally.released;
    }
    // Otherwise (contended, partial, or not reached after one that was): still held.
  }
  if (!resolved.empty()) {
    statements.push_back(Quarantine::resolve_many_statement(consumer, resolved, now));
  }
  if (!statements.empty()) SS_CO_CHECK(co_await commit(statements));
  co_return tally;
}

}  // namespace

namespace {
// The held rows (kill:high_risk_ops), or the rows whose automatic retry is due.
enum class PassRows { held, due_retries };

Task<Result<json>> quarantine_pass(Context& ctx, InvocationSpend* spent, PassRows which) {
  InvocationSpend own;
  InvocationSpend& spend = spent != nullptr ? *spent : own;
  // Only the rows of the pass are read: a page of every open row (Quarantine::list, 500 by seq)
  // could be all other failures, and the events behind them would never be taken. The switches are
  // read once per pass, with them: kill:fanout or kill:workflow_runner stops every start, and
  // kill:high_risk_ops would hold each again.
  std::vector<std::string> stops = runner_stops();
  stops.push_back(kHighRiskSwitch);
  spend.subrequests += kReleaseReadSubrequests;
  // Named: a coroutine's reference parameters must outlive it (g++ ends the temporaries of a
  // conditional's branches early).
  const std::string consumer = kWorkflowRunner;
  const std::string held_reason = kHeldReason;
  const std::string now = format_rfc3339(ctx.now_ms());
  Task<Result<std::vector<QuarantineRow>>> rows_of_pass =
      which == PassRows::held
          ? Quarantine::open_with_reason(consumer, held_reason, kMaxReleasePerCall)
          : Quarantine::due_retries(consumer, now, kMaxReleasePerCall);
  auto [found, stopped] =
      co_await when_all(std::move(rows_of_pass), DrainState::any_switch_on(stops));
  if (!found) co_return std::move(found).error();
  if (!stopped) co_return std::move(stopped).error();
  const std::vector<QuarantineRow>& rows = *found;
  ReleaseTally tally;
  if (!*stopped && !rows.empty()) {
    // Otherwise the held events stay parked, and the */2 cron releases them once every switch is off.
    SS_CO_TRY(tally, co_await release_pass(ctx, rows, spend, which == PassRows::held));
  }
  json out = json_object(
      {{"released", tally.released},
       {"still_held", static_cast<int>(rows.size()) - tally.released - tally.quarantined},
       {"quarantined", tally.quarantined}});
  // Only then, as on a drain report: the pass stopped at its work budget (the rest stay held).
  if (tally.work_budget_exhausted) out["work_budget_exhausted"] = true;
  if (tally.budget_exhausted) out["budget_exhausted"] = true;
  co_return out;
}
}  // namespace

Task<Result<json>> release_held(Context& ctx, InvocationSpend* spent) {
  return quarantine_pass(ctx, spent, PassRows::held);
}

Task<Result<json>> retry_due(Context& ctx, InvocationSpend* spent) {
  return quarantine_pass(ctx, spent, PassRows::due_retries);
}

}  // namespace ss::events
