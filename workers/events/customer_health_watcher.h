#pragma once
// customer_health_watcher (every 5 minutes): a health score per tenant, recomputed incrementally
// from the tenant's events, read by operators at GET /admin/tenants/{id}/health.
//
// Each tenant row holds decayed counters (half-life kHealthHalfLifeMs, on the ledger's clock): leads
// received, delivered and failed, spam absorbed, probe failures, incidents opened, workflow run
// failures, analytics traffic and other activity; plus the monitors with an open incident (a state,
// not decayed: +1 on monitor.incident_opened, -1 on monitor.incident_resolved). The score starts at
// 100 and loses:
//   up to 50 for the share of failed lead deliveries,
//   20 per open incident (at most 40),
//   5 per (decayed) incident opened recently (at most 20: flapping),
//   2 per (decayed) workflow run failure (at most 10).
// Bands: healthy >= 80, watch >= 50, at_risk below. A band change appends tenant.health_changed
// (entity tenant:<id>, the tenant's event) with the old and new band, the score and the signals.
// Replay-safe: a row only takes events with a higher seq than the one it holds.

#include "workers/events/cursor.h"

namespace ss::events {

inline constexpr std::int64_t kHealthHalfLifeMs = 7LL * 24 * 60 * 60 * 1000;
inline constexpr std::int64_t kHealthyFrom = 80;
inline constexpr std::int64_t kWatchFrom = 50;

struct HealthSignals {
  double leads_received = 0;
  double leads_delivered = 0;
  double delivery_failures = 0;
  double spam_absorbed = 0;
  double probe_failures = 0;
  double incidents_opened = 0;
  double workflow_failures = 0;
  double traffic = 0;
  double activity = 0;
  std::int64_t open_incidents = 0;
  std::int64_t decayed_at_ms = 0;  // when the counters were last decayed

  // Decays every counter to `at_ms` (never backwards).
  void decay_to(std::int64_t at_ms);
  // Counts one event; false when the event says nothing about health.
  bool apply(const std::string& event_type);
  std::int64_t score() const;
  json to_json() const;
  static HealthSignals from_json(const json& j);
};

std::string band_of(std::int64_t score);

Task<Status> run_health_batch(Context& ctx, DrainReport& report, const std::vector<EventRow>& rows);

// GET /admin/tenants/{id}/health's body for a tenant's row (or none yet: a healthy 100).
json health_view(const std::string& tenant_id, const std::optional<TenantHealthRow>& row);

}  // namespace ss::events
