#include "workers/events/customer_health_watcher.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "workers/events/ledger.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace ss::events {

namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

double number_or(const json& j, const char* key) { return get_number(j, key).value_or(0.0); }

}  // namespace

void HealthSignals::decay_to(std::int64_t at_ms) {
  if (decayed_at_ms == 0 || at_ms <= decayed_at_ms) {
    decayed_at_ms = std::max(decayed_at_ms, at_ms);
    return;
  }
  double factor = std::pow(0.5, static_cast<double>(at_ms - decayed_at_ms) / kHealthHalfLifeMs);
  for (double* c : {&leads_received, &leads_delivered, &delivery_failures, &spam_absorbed,
                    &probe_failures, &incidents_opened, &workflow_failures, &traffic, &activity}) {
    *c *= factor;
  }
  decayed_at_ms = at_ms;
}

bool HealthSignals::apply(const std::string& type) {
  if (type == "lead.received") {
    leads_received += 1;
  } else if (type == "lead.delivered") {
    leads_delivered += 1;
  } else if (type == "lead.delivery_failed") {
    delivery_failures += 1;
  } else if (type == "lead.spam_absorbed") {
    spam_absorbed += 1;
  } else if (type == "monitor.probe_failed") {
    probe_failures += 1;
  } else if (type == "monitor.incident_opened") {
    incidents_opened += 1;
    open_incidents += 1;
  } else if (type == "monitor.incident_resolved") {
    open_incidents = std::max<std::int64_t>(0, open_incidents - 1);
  } else if (type == "workflow.run_failed") {
    workflow_failures += 1;
  } else if (starts_with(type, "analytics.")) {
    traffic += 1;
  } else if (is_ledger_event_type(type) || starts_with(type, "workflow.")) {  // not behaviour
    return false;
  } else {
    activity += 1;  // ar.*, email.*, order.*, cms.*: the tenant is alive, no judgement
  }
  return true;
}

std::int64_t HealthSignals::score() const {
  static constexpr double kDeliveryWeight = 50;
  static constexpr std::int64_t kPerOpenIncident = 20, kMaxOpenIncidents = 40;
  static constexpr double kPerIncidentOpened = 5, kMaxIncidentsOpened = 20;
  static constexpr double kPerWorkflowFailure = 2, kMaxWorkflowFailures = 10;
  double penalty = 0;
  double deliveries = leads_delivered + delivery_failures;
  if (deliveries > 0.01) penalty += kDeliveryWeight * delivery_failures / deliveries;
  penalty += static_cast<double>(std::min(kMaxOpenIncidents, kPerOpenIncident * open_incidents));
  penalty += std::min(kMaxIncidentsOpened, kPerIncidentOpened * incidents_opened);
  penalty += std::min(kMaxWorkflowFailures, kPerWorkflowFailure * workflow_failures);
  return std::clamp<std::int64_t>(100 - std::llround(penalty), 0, 100);
}

json HealthSignals::to_json() const {
  auto r = [](double v) { return std::round(v * 1000) / 1000; };
  return json_object({{"leads_received", r(leads_received)},
                      {"leads_delivered", r(leads_delivered)},
                      {"delivery_failures", r(delivery_failures)},
                      {"spam_absorbed", r(spam_absorbed)},
                      {"probe_failures", r(probe_failures)},
                      {"incidents_opened", r(incidents_opened)},
                      {"open_incidents", open_incidents},
                      {"workflow_failures", r(workflow_failures)},
                      {"traffic", r(traffic)},
                      {"activity", r(activity)},
                      {"decayed_at_ms", decayed_at_ms}});
}

HealthSignals HealthSignals::from_json(const json& j) {
  HealthSignals s;
  s.leads_received = number_or(j, "leads_received");
  s.leads_delivered = number_or(j, "leads_delivered");
  s.delivery_failures = number_or(j, "delivery_failures");
  s.spam_absorbed = number_or(j, "spam_absorbed");
  s.probe_failures = number_or(j, "probe_failures");
  s.incidents_opened = number_or(j, "incidents_opened");
  s.workflow_failures = number_or(j, "workflow_failures");
  s.traffic = number_or(j, "traffic");
  s.activity = number_or(j, "activity");
  s.open_incidents = int_or(j, "open_incidents", 0);
  s.decayed_at_ms = int_or(j, "decayed_at_ms", 0);
  return s;
}

std::string band_of(std::int64_t score) {
  if (score >= kHealthyFrom) return "healthy";
  if (score >= kWatchFrom) return "watch";
  return "at_risk";
}

json health_view(const std::string& tenant_id, const std::optional<TenantHealthRow>& row) {
  if (!row) {
    return json_object({{"tenant_id", tenant_id},
                        {"score", 100},
                        {"band", "healthy"},
                        {"signals", HealthSignals{}.to_json()},
                        {"last_event_at", nullptr},
                        {"band_changed_at", nullptr},
                        {"updated_at", nullptr}});
  }
  auto signals = parse_json(row->signals_json);
  return json{{"tenant_id", tenant_id},
              {"score", row->score},
              {"band", row->band},
              {"signals", signals ? *signals : json::object()},
              // Events' recorded_at, stored fixed width: shown as the events themselves show it.
              {"last_event_at",
               row->last_event_at ? json(shown_rfc3339(*row->last_event_at)) : json(nullptr)},
              {"band_changed_at",
               row->band_changed_at ? json(shown_rfc3339(*row->band_changed_at)) : json(nullptr)},
              {"updated_at", row->updated_at}};
}

Task<Status> run_health_batch(Context& ctx, DrainReport& report,
                              const std::vector<EventRow>& rows) {
  // The tenants this batch touches, and their rows as they stand.
  std::vector<std::string> tenants;
  for (const EventRow& row : rows) {
    if (row.tenant_id && std::find(tenants.begin(), tenants.end(), *row.tenant_id) == tenants.end())
      tenants.push_back(*row.tenant_id);
  }
  std::map<std::string, TenantHealthRow> state;
  std::map<std::string, HealthSignals> signals;
  if (!tenants.empty()) {
    SS_CO_TRY(std::vector<TenantHealthRow> existing, co_await HealthStore::rows(tenants));
    for (TenantHealthRow& h : existing) {
      auto parsed = parse_json(h.signals_json);
      signals[h.tenant_id] = HealthSignals::from_json(parsed ? *parsed : json::object());
      state[h.tenant_id] = std::move(h);
    }
  }
  std::string now = format_rfc3339(ctx.now_ms());
  struct Change {
    std::string tenant, from, to;
    std::int64_t score = 0;
    std::string event_id;
    json signals;
  };
  std::vector<Change> changes;
  std::map<std::string, bool> touched;
  for (const EventRow& row : rows) {
    if (!row.tenant_id) continue;
    const std::string& tenant = *row.tenant_id;
    TenantHealthRow& h = state[tenant];
    if (h.tenant_id.empty()) {
      h.tenant_id = tenant;
      h.updated_at = now;
    }
    if (row.seq <= h.last_seq) continue;  // already counted (replay)
    HealthSignals& s = signals[tenant];
    std::int64_t at = parse_rfc3339(row.recorded_at).value_or(ctx.now_ms());
    s.decay_to(at);
    h.last_seq = row.seq;
    touched[tenant] = true;
    if (!s.apply(row.event_type)) continue;
    h.last_event_at = row.recorded_at;
    std::int64_t score = s.score();
    std::string band = band_of(score);
    if (band != h.band) {
      changes.push_back({tenant, h.band, band, score, row.event_id, s.to_json()});
      h.band = band;
      h.band_changed_at = row.recorded_at;
    }
    h.score = score;
  }
  // The band changes are appended before the rows are committed: if this run dies in between, the
  // next one computes the same changes and their idempotency keys make them land once.
  for (const Change& c : changes) {
    NewEvent event;
    event.event_type = "tenant.health_changed";
    event.entity_type = "tenant";
    event.entity_id = c.tenant;
    event.tenant_id = c.tenant;
    event.payload = {{"from", c.from},
                     {"to", c.to},
                     {"score", c.score},
                     {"signals", c.signals},
                     {"trigger_event_id", c.event_id}};
    event.caused_by = "event:" + c.event_id;
    // Keyed by the trigger event's id (unique per tenant), not its seq: the tenant reads this event
    // and its key, and the ledger-wide seq is not the tenant's to see (docs/runbook-events.md).
    event.idempotency_key = std::string(kKeyHealthChanged) + c.tenant + ":" + c.event_id;
    event.source_system = "siteswarm-events-service";
    SS_CO_TRY(Appended appended, co_await append_event(ctx, std::move(event)));
    if (!appended.duplicate) ++report.health_changes;
  }
  std::vector<D1Statement> statements;
  for (auto& [tenant, h] : state) {
    if (!touched[tenant]) continue;
    h.signals_json = dump_json(signals[tenant].to_json());
    h.updated_at = now;
    statements.push_back(HealthStore::upsert_statement(h));
  }
  SS_CO_RETURN_AWAIT(commit_with_cursor(ctx, report, rows, std::move(statements)));
}

}  // namespace ss::events
