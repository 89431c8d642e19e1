#include "workers/events/anomaly_detector.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "workers/events/alerts.h"
#include "workers/events/ledger.h"

#include <algorithm>

namespace ss::events {

namespace {

std::int64_t window_of(std::int64_t at_ms, std::int64_t size) { return at_ms - at_ms % size; }

std::int64_t recorded_ms(Context& ctx, const EventRow& row) {
  return parse_rfc3339(row.recorded_at).value_or(ctx.now_ms());
}

struct Anomaly {
  std::optional<std::string> tenant_id;
  std::string entity_type;
  std::string entity_id;
  std::string rule;
  std::string subject;
  std::int64_t window_start_ms = 0;
  std::int64_t window_end_ms = 0;
  json evidence;
};

// An anomaly's key (its event's idempotency key and its operator alert's) and its alert's summary
// name the tenant as well as the subject: tenants choose their own entity refs (two tenants may
// both have a monitor "home", or an entity "tenant:x"), and a key without the tenant let one
// tenant's alert swallow the other's. The subject with its tenant, unless it is that tenant itself:
// "tenant:<id>:monitor:home", "tenant:<id>" (a burst of the tenant's delivery failures).
std::string tenant_subject(const Anomaly& a) {
  if (!a.tenant_id) return a.subject;
  std::string tenant = "tenant:" + *a.tenant_id;
  return a.subject == tenant ? a.subject : tenant + ":" + a.subject;
}

// The statements that raise an anomaly's operator alert (report_anomaly commits them), at most
// ANOMALY_ALERTS_PER_HOUR of them in a clock hour: the ledger's emit is open to every tenant (and,
// through a site that delegates it, to the public), and anyone who can post can make anomalies — 20
// events of a made-up type, 3 incidents of a made-up monitor — so without a cap they could page the
// operator without end. Past the cap an anomaly is its anomaly.detected event only, and the hour's
// one `anomaly_alerts_capped` alert says so.
std::vector<D1Statement> anomaly_alert_statements(Context& ctx, const AlertDraft& alert) {
  const int cap = static_cast<int>(
      ctx.env_int("ANOMALY_ALERTS_PER_HOUR", kDefaultAnomalyAlertsPerHour, 1, 100000));
  const std::int64_t hour = window_of(ctx.now_ms(), kCapAlertPeriodMs);
  json details = alert.details;
  details["severity"] = alert.severity;
  json cap_details = json_object({{"severity", "warning"},
                                  {"cap", cap},
                                  {"hour_start", format_rfc3339(hour)},
                                  {"first_left_out", alert.key},
                                  {"evidence", "GET /api/events?type=anomaly.*"}});
  std::string cap_summary = "more than " + std::to_string(cap) +
                            " anomaly alerts in the hour starting " + format_rfc3339(hour) +
                            ": the rest are anomaly.detected events only";
  return AlertStore::enqueue_capped_statements(
      alert.key, alert.kind, alert.summary, details, format_rfc3339_ms(ctx.now_ms()),
      format_rfc3339_ms(hour), cap, "anomaly_alerts_capped:" + std::to_string(hour), cap_summary,
      cap_details);
}

// Appends anomaly.detected (once per rule, tenant, subject and window) and raises its operator
// alert.
Task<Result<bool>> report_anomaly(Context& ctx, Anomaly a) {
  std::string key = std::string(kKeyAnomaly) + a.rule + ":" + tenant_subject(a) + ":" +
                    std::to_string(a.window_start_ms);
  NewEvent event;
  event.event_type = "anomaly.detected";
  event.entity_type = a.entity_type;
  event.entity_id = a.entity_id;
  event.tenant_id = a.tenant_id;
  event.payload = a.evidence;
  event.payload["rule"] = a.rule;
  event.payload["window_start"] = format_rfc3339(a.window_start_ms);
  event.payload["window_end"] = format_rfc3339(a.window_end_ms);
  event.idempotency_key = key;
  event.source_system = "siteswarm-events-service";
  SS_CO_TRY(Appended appended, co_await append_event(ctx, std::move(event)));
  AlertDraft alert;
  alert.key = key;
  alert.kind = "anomaly";
  alert.severity = "warning";
  alert.summary = "anomaly " + a.rule + " on " + tenant_subject(a) + " in the window starting " +
                  format_rfc3339(a.window_start_ms);
  alert.details = a.evidence;
  alert.details["rule"] = a.rule;
  alert.details["anomaly_event_id"] = appended.event_id;
  if (a.tenant_id) alert.details["tenant_id"] = *a.tenant_id;
  std::vector<D1Statement> statements = anomaly_alert_statements(ctx, alert);
  SS_CO_CHECK(co_await commit(statements));
  if (!appended.duplicate) ctx.log("anomaly.detected: " + key);
  co_return !appended.duplicate;
}

const SequenceRule* rule_named(const std::string& name) {
  for (const SequenceRule& r : sequence_rules()) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

}  // namespace

const std::vector<SequenceRule>& sequence_rules() {
  static const std::vector<SequenceRule> kRules = {
      {"delivery_failure_burst", "lead.delivery_failed", false, 15 * 60 * 1000, 5},
      {"monitor_flapping", "monitor.incident_opened", true, 6 * 60 * 60 * 1000, 3},
  };
  return kRules;
}

Task<Status> run_anomaly_batch(Context& ctx, DrainReport& report, const std::vector<EventRow>& rows,
                               bool full_batch) {
  const std::string& consumer = report.consumer;
  if (!rows.empty()) {
    std::vector<D1Statement> statements;
    for (const EventRow& row : rows) {
      // The ledger's own records (alerts, cap hits, tombstones, health changes) are not traffic.
      if (is_ledger_event_type(row.event_type)) continue;
      std::int64_t at = recorded_ms(ctx, row);
      statements.push_back(AggregateStore::rate_statement(
          row.event_type, window_of(at, kRateWindowMs), row.seq, row.event_id));
      for (const SequenceRule& rule : sequence_rules()) {
        if (row.event_type != rule.event_type) continue;
        std::string subject =
            rule.per_entity ? row.entity_type + ":" + row.entity_id : "tenant:" + row.tenant_key();
        std::int64_t start = window_of(at, rule.window_ms);
        statements.push_back(AnomalyStore::signal_statement(rule.name, row.tenant_key(), subject,
                                                            start, start + rule.window_ms, row.seq,
                                                            row.event_id));
      }
    }
    // Not the batch's last commit: the judging below commits after it (and carries the run's tail).
    SS_CO_CHECK(
        co_await commit_with_cursor(ctx, report, rows, std::move(statements), /*last=*/false));
  }

  // Which windows are complete: those before the window "now" is in, and — when more events may be
  // waiting — before the window of the last event read.
  std::int64_t judge_until = window_of(ctx.now_ms(), kRateWindowMs);
  if (full_batch && !rows.empty()) {
    judge_until = std::min(judge_until, window_of(recorded_ms(ctx, rows.back()), kRateWindowMs));
  }
  SS_CO_TRY(std::int64_t judged_from, co_await AnomalyStore::judged_until(consumer));
  if (judged_from == 0) judged_from = judge_until - kFirstJudgeLookbackMs;
  if (judge_until <= judged_from) co_return Unit{};

  const std::int64_t limit = ctx.env_int("ANOMALY_JUDGE_ROWS", kDefaultJudgeRows, 1, kMaxJudgeRows);
  json thresholds = json::object();
  for (const SequenceRule& rule : sequence_rules()) thresholds[rule.name] = rule.threshold;
  SS_CO_TRY(
      std::vector<RateCandidate> rates,
      co_await AnomalyStore::rate_candidates(
          judged_from, judge_until, kBaselineWindows * kRateWindowMs, kMinAnomalyCount, limit));
  SS_CO_TRY(std::vector<SignalRow> signals,
            co_await AnomalyStore::ended_signals(judged_from, judge_until, thresholds, limit));
  // A full list may have left out the rest of its last window: judge up to that window only (its
  // `cut`). When that window is the first one read, the page holds nothing else: that window is
  // read again whole (up to kWholeWindowRows candidates) and judged, and the next run goes on after
  // it (`past`), so a page never leaves a candidate of a window it moved past.
  struct Cut {
    std::int64_t cut;
    std::int64_t past;
  };
  std::vector<Cut> cuts;
  if (static_cast<std::int64_t>(rates.size()) == limit) {
    cuts.push_back({rates.back().window_start_ms, rates.back().window_start_ms + kRateWindowMs});
  }
  if (static_cast<std::int64_t>(signals.size()) == limit) {
    cuts.push_back({signals.back().window_end_ms - 1, signals.back().window_end_ms});
  }
  std::int64_t judged_to = judge_until;
  bool first_window_full = false;
  for (const Cut& c : cuts) {
    first_window_full = first_window_full || c.cut <= judged_from;
    judged_to = std::min(judged_to, c.cut > judged_from ? c.cut : c.past);
  }
  if (first_window_full) {
    SS_CO_TRY(rates, co_await AnomalyStore::rate_candidates(judged_from, judged_to,
                                                            kBaselineWindows * kRateWindowMs,
                                                            kMinAnomalyCount, kWholeWindowRows));
    SS_CO_TRY(signals, co_await AnomalyStore::ended_signals(judged_from, judged_to, thresholds,
                                                            kWholeWindowRows));
    if (static_cast<std::int64_t>(rates.size()) == kWholeWindowRows ||
        static_cast<std::int64_t>(signals.size()) == kWholeWindowRows) {
      ctx.log("anomaly_detector: more than " + std::to_string(kWholeWindowRows) +
              " candidates in one window; the rest of that window is not judged");
    }
  }
  std::int64_t windows = (judged_to - judged_from) / kRateWindowMs;
  report.windows_judged = static_cast<int>(std::min<std::int64_t>(windows, kBaselineWindows));

  for (const RateCandidate& c : rates) {
    double baseline = static_cast<double>(c.trailing) / kBaselineWindows;
    if (static_cast<double>(c.event_count) <= kAnomalyFactor * baseline) continue;
    Anomaly a;
    a.entity_type = "event_type";
    a.entity_id = c.event_type;
    a.rule = "rate";
    a.subject = c.event_type;
    a.window_start_ms = c.window_start_ms;
    a.window_end_ms = c.window_start_ms + kRateWindowMs;
    a.evidence = {{"event_type", c.event_type},
                  {"count", c.event_count},
                  {"baseline_per_window", baseline},
                  {"baseline_windows", kBaselineWindows},
                  {"factor", kAnomalyFactor},
                  {"min_count", kMinAnomalyCount},
                  {"window_minutes", kRateWindowMs / 60000},
                  {"last_event_id", c.last_event_id}};
    SS_CO_TRY(bool fresh, co_await report_anomaly(ctx, std::move(a)));
    report.anomalies += fresh ? 1 : 0;
  }
  for (const SignalRow& s : signals) {
    const SequenceRule* rule = rule_named(s.rule);
    if (rule == nullptr || s.event_count < rule->threshold) continue;
    Anomaly a;
    if (!s.tenant_key.empty()) a.tenant_id = s.tenant_key;
    auto colon = s.subject.find(':');
    a.entity_type = s.subject.substr(0, colon);
    a.entity_id = colon == std::string::npos ? s.subject : s.subject.substr(colon + 1);
    a.rule = s.rule;
    a.subject = s.subject;
    a.window_start_ms = s.window_start_ms;
    a.window_end_ms = s.window_end_ms;
    a.evidence = {{"event_type", rule->event_type},
                  {"subject", s.subject},
                  {"count", s.event_count},
                  {"threshold", rule->threshold},
                  {"window_minutes", rule->window_ms / 60000},
                  {"first_event_id", s.first_event_id},
                  {"last_event_id", s.last_event_id}};
    SS_CO_TRY(bool fresh, co_await report_anomaly(ctx, std::move(a)));
    report.anomalies += fresh ? 1 : 0;
  }
  std::vector<D1Statement> judged = {AnomalyStore::judged_statement(consumer, judged_to)};
  SS_CO_CHECK(co_await commit_batch(ctx, report, std::move(judged)));
  co_return Unit{};
}

}  // namespace ss::events
