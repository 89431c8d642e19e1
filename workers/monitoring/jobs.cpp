#include "workers/monitoring/jobs.h"

#include "shared/effects.h"
#include "shared/emit.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/url_guard.h"
#include "workers/monitoring/incident.h"
#include "workers/monitoring/probe.h"
#include "workers/monitoring/status_page.h"
#include "workers/monitoring/store.h"

#include <algorithm>

namespace ss::monitoring {

namespace {

json probe_job(std::int64_t tick, const std::vector<MonitorKey>& keys) {
  json monitors = json::array();
  for (const auto& k : keys) monitors.push_back(json::array({k.tenant_id, k.monitor_id}));
  return json_object({{"type", "probe"}, {"tick", tick}, {"monitors", monitors}});
}

json alert_job(const std::string& alert_id) {
  return json_object({{"type", "alert"}, {"alertId", alert_id}});
}

// Pages through every enabled monitor and enqueues them, kMaxQueueBatch messages per call.
Task<Result<std::int64_t>> enqueue_probes(Context& ctx, std::int64_t tick) {
  MonitorStore store;
  MonitorKey after{"", ""};
  std::int64_t total = 0;
  std::vector<json> messages;
  for (;;) {
    SS_CO_TRY(std::vector<MonitorKey> page, co_await store.enabled_page(after, kCronPageSize));
    for (std::size_t i = 0; i < page.size(); i += kMonitorsPerJob) {
      std::vector<MonitorKey> chunk(
          page.begin() + static_cast<std::ptrdiff_t>(i),
          page.begin() + static_cast<std::ptrdiff_t>(
                             std::min(page.size(), i + static_cast<std::size_t>(kMonitorsPerJob))));
      messages.push_back(probe_job(tick, chunk));
    }
    total += static_cast<std::int64_t>(page.size());
    bool last_page = page.size() < static_cast<std::size_t>(kCronPageSize);
    if (!page.empty()) after = page.back();
    while (messages.size() >= kMaxQueueBatch || (last_page && !messages.empty())) {
      std::size_t n = std::min(messages.size(), kMaxQueueBatch);
      std::vector<json> batch(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(n));
      messages.erase(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(n));
      SS_CO_CHECK(co_await queue_send_batch(kJobsQueueBinding, std::move(batch)));
    }
    if (last_page) break;
  }
  co_return total;
}

Task<Status> requeue_stale_alerts(Context& ctx) {
  MonitorStore store;
  std::string before = format_rfc3339_ms(ctx.now_ms() - kStaleAlertMs);
  SS_CO_TRY(std::vector<AlertRow> stale, co_await store.stale_alerts(before, 100));
  if (stale.empty()) co_return Unit{};
  std::vector<json> jobs;
  for (const auto& a : stale) jobs.push_back(alert_job(a.alert_id));
  ctx.log("re-enqueueing " + std::to_string(jobs.size()) + " stale alerts");
  SS_CO_CHECK(co_await queue_send_batch(kJobsQueueBinding, std::move(jobs)));
  co_return Unit{};
}

Task<Result<std::vector<SentTrigger>>> sent_triggers(const MonitorStore& store,
                                                     const std::string& tenant,
                                                     const std::string& incident_id) {
  SS_CO_TRY(std::vector<AlertRow> rows, co_await store.triggers_of(tenant, incident_id));
  std::vector<SentTrigger> sent;
  sent.reserve(rows.size());
  for (AlertRow& r : rows) {
    // A trigger that gave up (dead) never reached anyone: nothing to close there.
    if (r.state != "dead") sent.push_back({std::move(r.channel), std::move(r.request)});
  }
  co_return sent;
}

Task<Result<std::vector<std::pair<std::string, AlertRequest>>>> with_alert_ids(
    Context& ctx, std::vector<AlertRequest> alerts) {
  std::vector<std::pair<std::string, AlertRequest>> out;
  for (AlertRequest& a : alerts) {
    SS_CO_TRY(std::string alert_id, co_await ctx.new_ulid());
    out.emplace_back(std::move(alert_id), std::move(a));
  }
  co_return out;
}

// After the commit: the outbox rows exist, so a lost queue message only delays an alert (the cron
// re-enqueues stale ones).
Task<Unit> enqueue_alerts(Context& ctx,
                          const std::vector<std::pair<std::string, AlertRequest>>& alerts) {
  if (alerts.empty()) co_return Unit{};
  std::vector<json> jobs;
  for (const auto& [alert_id, a] : alerts) jobs.push_back(alert_job(alert_id));
  Status sent = co_await queue_send_batch(kJobsQueueBinding, std::move(jobs));
  if (!sent) ctx.log("alert jobs not enqueued (the cron will): " + sent.error().message);
  co_return Unit{};
}

Task<Status> prune_history(Context& ctx) {
  std::int64_t raw_days = ctx.env_int("PROBE_RETENTION_DAYS", kDefaultProbeRetentionDays, 2, 90);
  std::int64_t rollup_days = ctx.env_int("ROLLUP_RETENTION_DAYS", kDefaultRollupRetentionDays,
                                         kMinRollupRetentionDays, 3650);
  std::string before_day = format_rfc3339(ctx.now_ms() - rollup_days * kMsPerDay).substr(0, 10);
  SS_CO_TRY(std::int64_t n, co_await MonitorStore().prune(ctx.now_ms() - raw_days * kMsPerDay,
                                                          before_day, kPruneBatch));
  if (n > 0) ctx.log("pruned " + std::to_string(n) + " probe rows");
  co_return Unit{};
}

Task<Status> emit(Context& ctx, const std::string& type, const std::string& tenant,
                  const std::string& monitor_id, json payload) {
  EventDraft e;
  e.event_type = type;
  e.entity_ref = "monitor:" + monitor_id;
  e.tenant_id = tenant;
  e.payload = std::move(payload);
  auto r = co_await emit_event(ctx, std::move(e));
  if (!r) ctx.log(type + " not emitted: " + r.error().message);
  co_return Unit{};
}

// Whether an alert goes out now: not when moot (why) — a trigger whose incident is resolved, a
// resolve whose trigger on the same channel never went out — and not yet (wait) when that trigger
// is being sent right now. A resolve is only made once its incident is resolved, so a trigger still
// pending then is moot itself and never goes out: its resolve is moot too, whichever job runs first.
struct AlertVerdict {
  std::optional<std::string> moot;
  bool wait = false;
};
Task<Result<AlertVerdict>> judge_alert(const MonitorStore& store, const AlertRow& a) {
  if (a.action == "trigger") {
    SS_CO_TRY(std::optional<IncidentRow> incident,
              co_await store.incident(a.tenant_id, a.incident_id));
    if (incident && incident->resolved_at) {
      co_return AlertVerdict{"the incident was resolved before its trigger went out"};
    }
    co_return AlertVerdict{};
  }
  SS_CO_TRY(std::vector<AlertRow> triggers, co_await store.triggers_of(a.tenant_id, a.incident_id));
  for (const AlertRow& t : triggers) {
    if (t.channel != a.channel) continue;
    if (t.state == "sent") co_return AlertVerdict{};
    if (t.state == "sending") co_return AlertVerdict{std::nullopt, true};
  }
  co_return AlertVerdict{"its trigger never went out"};
}

// An alert that will not go out: dead, with why, and a log line — unless another copy of its job
// holds a claim on it (it is being sent right now): that sender's outcome stands.
Task<Status> give_up_alert(Context& ctx, const MonitorStore& store, const AlertRow& a,
                           const std::string& why, const std::string& now) {
  SS_CO_TRY(bool given_up,
            co_await store.give_up_alert(a.alert_id, "not sent: " + why, ctx.now_ms(), now));
  if (!given_up) {
    ctx.log("alert " + a.alert_id + " (" + a.channel + " " + a.action + ") moot (" + why +
            ") but being sent by another job; left to it");
    co_return Unit{};
  }
  ctx.log("alert " + a.alert_id + " (" + a.channel + " " + a.action + ") not sent: " + why);
  co_return Unit{};
}

// The pause after failed attempt `attempt`: base, 2×, 4×… capped at an hour (seconds).
std::int64_t alert_backoff(std::int64_t base, int attempt) {
  return std::min<std::int64_t>(base << std::min(std::max(attempt, 1) - 1, 10), 3600);
}

// Sends one alert from the outbox: claim, POST, record. The returned delay (seconds) asks the queue
// to retry; nullopt acks the message.
Task<Result<std::optional<int>>> deliver_alert(Context& ctx, const std::string& alert_id) {
  MonitorStore store;
  SS_CO_TRY(std::optional<AlertRow> row, co_await store.alert(alert_id));
  if (!row || row->state == "sent" || row->state == "dead") co_return std::optional<int>{};
  std::string now = format_rfc3339_ms(ctx.now_ms());
  // Out of order is worse than not at all: a trigger still waiting (its endpoint was down) when its
  // incident is resolved would open a page after the resolve that closes it, and a resolve whose
  // trigger never went out tells of an incident nobody heard of. Either is given up.
  SS_CO_TRY(AlertVerdict verdict, co_await judge_alert(store, *row));
  std::int64_t base = ctx.env_int("ALERT_BACKOFF_SECONDS", 30, 0, 3600);
  // Waiting on a trigger being sent: a few seconds at least, even with no backoff configured, so the
  // queue's retries are not spent at once.
  if (verdict.wait) co_return std::optional<int>{static_cast<int>(std::max<std::int64_t>(base, 5))};
  if (verdict.moot) {
    SS_CO_CHECK(co_await give_up_alert(ctx, store, *row, *verdict.moot, now));
    co_return std::optional<int>{};
  }
  // An attempt failed less than its backoff ago: this job is not the retry the queue holds back
  // for that long (a redelivered copy, the cron's re-enqueue): it comes back when the backoff is
  // over rather than spend the next attempt now.
  if (row->state == "pending" && row->attempts > 0) {
    std::optional<std::int64_t> failed_at = parse_rfc3339(row->updated_at);
    std::int64_t due = failed_at ? *failed_at + alert_backoff(base, row->attempts) * 1000 : 0;
    if (ctx.now_ms() < due) {
      co_return std::optional<int>{static_cast<int>((due - ctx.now_ms() + 999) / 1000)};
    }
  }
  // The claim's lease stands for the claim: only while the alert still holds it is the outcome
  // of this attempt written (a sender that outlived its lease is no longer the alert's).
  const std::int64_t lease_until = ctx.now_ms() + kAlertLeaseMs;
  SS_CO_TRY(bool claimed, co_await store.claim_alert(alert_id, ctx.now_ms(), lease_until, now));
  if (!claimed) {
    // Someone else is sending it (if they die, the lease lapses and the cron re-enqueues it) — or,
    // for a trigger, its incident was resolved since it was judged (kClaimAlert): given up now, as
    // its resolve has given itself up.
    if (row->action == "trigger") {
      SS_CO_TRY(AlertVerdict again, co_await judge_alert(store, *row));
      if (again.moot) SS_CO_CHECK(co_await give_up_alert(ctx, store, *row, *again.moot, now));
    }
    co_return std::optional<int>{};
  }
  int attempt = row->attempts + 1;

  std::string url = string_or(row->request, "url", "");
  std::string error;
  // The Slack URL is the tenant's: checked again right before the call (the guard may be stricter
  // now than when the monitor was saved). PagerDuty's is the deployment's own configuration.
  // SLACK_API_URL stands in for hooks.slack.com (local stubs): the guard judges the URL fetched.
  if (row->channel == "slack") {
    auto checked = check_outbound_url(slack_webhook_target(url, ctx.env("SLACK_API_URL")),
                                      ctx.allow_local_outbound());
    if (!checked)
      error = "refused: " + checked.error().message;
    else
      url = checked->href;
  }
  if (error.empty()) {
    HttpCall call;
    call.method = "POST";
    call.url = url;
    call.headers["content-type"] = "application/json";
    const json* body = find_field(row->request, "body");
    call.body = dump_json(body ? *body : json::object());
    auto reply = co_await fetch(call);
    if (!reply)
      error = reply.error().message;
    else if (!reply->ok())
      error = "HTTP " + std::to_string(reply->status);
  }
  now = format_rfc3339_ms(ctx.now_ms());
  if (error.empty()) {
    SS_CO_TRY(bool mine, co_await store.alert_sent(alert_id, lease_until, now));
    ctx.log("alert " + alert_id + " (" + row->channel + " " + row->action + ") sent" +
            (mine ? "" : " after its claim lapsed (another job holds it now)"));
    co_return std::optional<int>{};
  }
  bool dead = attempt >= kMaxAlertAttempts;
  SS_CO_TRY(bool mine, co_await store.alert_failed(alert_id, error, dead, lease_until, now));
  if (!mine) {
    // The claim lapsed mid-send and another job holds the alert now: its outcome is the alert's.
    ctx.log("alert " + alert_id + " attempt failed after its claim lapsed: " + error);
    co_return std::optional<int>{};
  }
  ctx.log("alert " + alert_id + " attempt " + std::to_string(attempt) + " failed: " + error +
          (dead ? " (dead)" : ""));
  if (dead) co_return std::optional<int>{};
  co_return std::optional<int>{static_cast<int>(alert_backoff(base, attempt))};
}

Task<Status> probe_keys(Context& ctx, std::int64_t tick, std::vector<MonitorKey> keys) {
  for (std::size_t i = 0; i < keys.size(); i += kProbeConcurrency) {
    std::vector<Task<Result<bool>>> group;
    for (std::size_t j = i; j < std::min(keys.size(), i + kProbeConcurrency); ++j) {
      group.push_back(probe_monitor(ctx, keys[j].tenant_id, keys[j].monitor_id, tick));
    }
    std::vector<Result<bool>> results = co_await when_all(std::move(group));
    for (std::size_t j = 0; j < results.size(); ++j) {
      if (!results[j]) {
        ctx.log("probe of " + keys[i + j].tenant_id + "/" + keys[i + j].monitor_id +
                " failed: " + results[j].error().message);
      }
    }
  }
  co_return Unit{};
}

}  // namespace

Task<Result<bool>> probe_monitor(Context& ctx, const std::string& tenant, const std::string& id,
                                 std::int64_t tick) {
  MonitorStore store;
  MonitorKey key{tenant, id};
  SS_CO_TRY(bool claimed,
            co_await store.claim_probe(key, tick, ctx.now_ms(), ctx.now_ms() + kProbeLeaseMs));
  if (!claimed) co_return false;
  SS_CO_TRY(std::optional<MonitorRow> row, co_await store.find(tenant, id));
  if (!row) co_return false;
  bool allow_local = ctx.allow_local_outbound();
  auto spec = parse_monitor(row->spec, allow_local);
  if (!spec && string_or(spec.error().extra, "field", "") == "alertChannels.slack.webhookUrl") {
    // Only the Slack webhook fails the guard now: the site is still probed and its other channels
    // paged (the webhook would be refused at delivery anyway).
    ctx.log("monitor " + tenant + "/" + id + ": Slack webhook refused: " + spec.error().message);
    json without = row->spec;
    without["alertChannels"].erase("slack");
    spec = parse_monitor(without, allow_local);
  }
  if (!spec) {
    // Stored before the rules got stricter: nothing is fetched; the monitor fails as blocked.
    ctx.log("monitor " + tenant + "/" + id + " no longer valid: " + spec.error().message);
  }
  ProbeObservation seen;
  if (spec) {
    seen = co_await observe(*spec, allow_local);
  } else {
    seen.outcome = ProbeObservation::Outcome::ssrf_blocked;
  }
  MonitorSpec effective = spec ? *spec : MonitorSpec{};
  ProbeResult result = evaluate(effective, seen);
  std::int64_t at = ctx.now_ms();
  bool maintenance = effective.in_maintenance(at);

  MonitorState state{row->consecutive_failures, row->incident_id.has_value()};
  Step st = step(state, result.ok, maintenance);
  ProbeCommit commit;
  commit.key = key;
  commit.tick = tick;
  commit.at_ms = at;
  commit.result = result;
  commit.maintenance = maintenance;
  commit.next = st.next;
  commit.incident_id = row->incident_id;
  commit.read_incident_id = row->incident_id;

  AlertContext ac;
  ac.tenant_id = tenant;
  ac.monitor_id = id;
  ac.url = effective.url;
  ac.source = ctx.app().service;
  ac.reason = result.reason;
  ac.opened_at = format_rfc3339(at);
  if (st.transition == Transition::open) {
    SS_CO_TRY(std::string incident_id, co_await ctx.new_ulid());
    IncidentRow inc;
    inc.incident_id = incident_id;
    inc.tenant_id = tenant;
    inc.monitor_id = id;
    inc.opened_at = format_rfc3339(at);
    inc.reason = result.reason;
    inc.dedup_key = dedup_key(tenant, id, incident_id);
    commit.opened = inc;
    commit.incident_id = incident_id;
    ac.incident_id = incident_id;
  } else if (st.transition == Transition::resolve) {
    commit.resolved_id = row->incident_id;
    commit.incident_id = std::nullopt;
    ac.incident_id = *row->incident_id;
  }
  std::vector<AlertRequest> alerts;
  if (st.transition == Transition::open) {
    std::string pagerduty_url = ctx.env("PAGERDUTY_EVENTS_URL");
    if (pagerduty_url.empty()) pagerduty_url = "https://events.pagerduty.com/v2/enqueue";
    alerts = triggers_for(effective, ac, pagerduty_url);
  } else if (st.transition == Transition::resolve) {
    // Where the triggers went, whatever the channels are now.
    SS_CO_TRY(std::vector<SentTrigger> sent, co_await sent_triggers(store, tenant, ac.incident_id));
    alerts = resolves_for(sent, ac, Closure::recovered);
  }
  SS_CO_TRY(commit.alerts, co_await with_alert_ids(ctx, std::move(alerts)));
  Result<bool> committed = co_await store.commit_probe(commit);
  if (!committed) {
    Status released = co_await store.release_probe(key, tick);
    if (!released) ctx.log("release of " + tenant + "/" + id + " failed");
    co_return std::move(committed).error();
  }
  if (st.transition != Transition::none && !*committed) {
    // Resolve: a sweep closed the incident while this probe ran (its monitor disabled meanwhile):
    // its resolves and event went out with it. Open: the monitor was disabled, deleted or made anew
    // while this probe ran: nobody watches it, so no incident was opened and nobody is paged.
    st.transition = Transition::none;
    commit.alerts.clear();
  }

  // What the status page shows changed: up ↔ down (or a first probe), an incident opened or closed.
  const bool was_ok =
      row->last_probe.is_object() && get_bool(row->last_probe, "ok").value_or(false);
  if (!row->last_probe.is_object() || was_ok != result.ok || st.transition != Transition::none) {
    co_await forget_status(ctx, tenant);
  }

  co_await enqueue_alerts(ctx, commit.alerts);
  json payload =
      json_object({{"monitorId", id}, {"url", effective.url}, {"probe", result.to_json(at)}});
  if (!result.ok) SS_CO_CHECK(co_await emit(ctx, "monitor.probe_failed", tenant, id, payload));
  if (st.transition == Transition::open) {
    payload["incidentId"] = ac.incident_id;
    payload["maintenance"] = maintenance;
    SS_CO_CHECK(co_await emit(ctx, "monitor.incident_opened", tenant, id, payload));
  } else if (st.transition == Transition::resolve) {
    payload["incidentId"] = ac.incident_id;
    SS_CO_CHECK(co_await emit(ctx, "monitor.incident_resolved", tenant, id, payload));
  }
  co_return true;
}

namespace {
// Closes one orphaned incident: true when this call closed it (false: a concurrent one did).
Task<Result<bool>> close_orphan(Context& ctx, const MonitorStore& store,
                                const OrphanedIncident& o) {
  const IncidentRow& i = o.incident;
  AlertContext ac;
  ac.tenant_id = i.tenant_id;
  ac.monitor_id = i.monitor_id;
  ac.incident_id = i.incident_id;
  ac.reason = i.reason;
  ac.opened_at = i.opened_at;
  ac.source = ctx.app().service;
  SS_CO_TRY(std::vector<SentTrigger> sent,
            co_await sent_triggers(store, i.tenant_id, i.incident_id));
  IncidentClose close;
  close.key = {i.tenant_id, i.monitor_id};
  close.incident_id = i.incident_id;
  close.at_ms = ctx.now_ms();
  SS_CO_TRY(close.alerts, co_await with_alert_ids(ctx, resolves_for(sent, ac, o.closure)));
  SS_CO_TRY(bool mine, co_await store.close_incident(close));
  if (!mine) co_return false;
  const std::string why(closure_name(o.closure));
  ctx.log("incident " + i.incident_id + " of " + i.tenant_id + "/" + i.monitor_id + " closed (" +
          why + ")");
  co_await enqueue_alerts(ctx, close.alerts);
  json payload =
      json_object({{"monitorId", i.monitor_id}, {"incidentId", i.incident_id}, {"closedBy", why}});
  SS_CO_CHECK(co_await emit(ctx, "monitor.incident_resolved", i.tenant_id, i.monitor_id,
                            std::move(payload)));
  co_return true;
}
}  // namespace

Task<Unit> close_orphaned_incidents(Context& ctx, const std::string& tenant) {
  MonitorStore store;
  auto orphans = co_await store.orphaned_incidents(tenant, kOrphanBatch);
  if (!orphans) {
    ctx.log("closing orphaned incidents failed: " + orphans.error().message);
    co_return Unit{};
  }
  std::vector<std::string> tenants;  // whose status pages show a closed incident
  for (const OrphanedIncident& o : *orphans) {
    // One that fails (its trigger rows unreadable, D1 gone for a moment) does not hold up the others;
    // the next sweep tries it again.
    Result<bool> done = co_await close_orphan(ctx, store, o);
    if (!done) {
      ctx.log("incident " + o.incident.incident_id + " not closed: " + done.error().message);
      continue;
    }
    if (*done && std::find(tenants.begin(), tenants.end(), o.incident.tenant_id) == tenants.end()) {
      tenants.push_back(o.incident.tenant_id);
    }
  }
  for (const std::string& t : tenants) co_await forget_status(ctx, t);
  co_return Unit{};
}

Task<Status> run_cron(Context& ctx, const std::string& cron) {
  // Each firing is a tick of its own, keyed by its scheduled time (epoch ms; the run's start when the
  // host sends none): firings minutes apart, or seconds apart when an operator triggers them by
  // hand, each probe; a firing delivered twice probes once, and a probe still running holds its
  // monitor against the next tick (the lease).
  const json* input = ctx.scheduled_input();
  std::int64_t tick = input ? int_or(*input, "scheduledTime", ctx.now_ms()) : ctx.now_ms();
  SS_CO_RETURN_AWAIT(run_tick(ctx, tick, cron));
}

Task<Status> run_tick(Context& ctx, std::int64_t tick, const std::string& cron) {
  auto enqueued = co_await enqueue_probes(ctx, tick);
  if (enqueued)
    ctx.log("tick " + std::to_string(tick) + ": " + std::to_string(*enqueued) +
            " monitors enqueued (" + cron + ")");
  // The other chores run even when enqueueing failed; the first error is reported.
  co_await close_orphaned_incidents(ctx, "");
  Status forgotten = co_await MonitorStore().forget_disabled_tenant_failures();
  if (!forgotten) ctx.log("failure counts of disabled tenants kept: " + forgotten.error().message);
  Status alerts = co_await requeue_stale_alerts(ctx);
  Status pruned = co_await prune_history(ctx);
  if (!enqueued) co_return std::move(enqueued).error();
  if (!alerts) co_return alerts;
  co_return pruned;
}

Task<QueueOutcome> consume(Context& ctx, std::vector<QueueMessage> batch) {
  QueueOutcome outcome;
  for (QueueMessage& m : batch) {
    std::string type = string_or(m.body, "type", "");
    if (type == "probe") {
      std::int64_t tick = int_or(m.body, "tick", 0);
      std::vector<MonitorKey> keys;
      if (const json* list = find_field(m.body, "monitors"); list && list->is_array()) {
        for (const json& k : *list) {
          if (k.is_array() && k.size() == 2 && k[0].is_string() && k[1].is_string()) {
            keys.push_back({k[0].get<std::string>(), k[1].get<std::string>()});
          }
        }
      }
      // Claims make redelivery harmless, and a failed probe waits for the next tick: always ack.
      Status s = co_await probe_keys(ctx, tick, std::move(keys));
      if (!s) ctx.log("probe job failed: " + s.error().message);
      outcome.ack.push_back(m.id);
    } else if (type == "alert") {
      auto r = co_await deliver_alert(ctx, string_or(m.body, "alertId", ""));
      if (!r) {
        ctx.log("alert job failed: " + r.error().message);
        outcome.retry.emplace_back(m.id, 30);
      } else if (r->has_value()) {
        outcome.retry.emplace_back(m.id, **r);
      } else {
        outcome.ack.push_back(m.id);
      }
    } else {
      ctx.log("unknown job type '" + type + "' dropped");
      outcome.ack.push_back(m.id);
    }
  }
  co_return outcome;
}

namespace {

// POST /__test/tick {"tick": n} (a test route: SITESWARM_TEST_HOOKS=1 only): the cron as if fired at n × 5 minutes
// (epoch ms n × kTickMs), so workerd tests can run several ticks at chosen times.
Task<Result<Response>> test_tick(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(json body, parse_json_object(req.body));
  auto tick = get_int(body, "tick");
  // Five-minute buckets since 1970, up to the year 9999.
  if (!tick || *tick < 0 || *tick > 100'000'000)
    co_return Error{ErrorCode::invalid_request, "tick must be an integer 0–100000000"};
  SS_CO_CHECK(co_await run_tick(ctx, *tick * kTickMs, "test"));
  co_return Response::json_body(200, json_object({{"ok", true}, {"tick", *tick}}));
}

}  // namespace

void add_test_routes(App& app) { app.router.add("POST", "/__test/tick", test_tick); }

}  // namespace ss::monitoring
