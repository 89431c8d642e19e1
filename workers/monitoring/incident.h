#pragma once
// The incident state machine and the alert messages, pure (time and ids are parameters), so every
// transition is a unit test: 3 consecutive failures open an incident (unless a maintenance window
// is on), the first success outside a window resolves it, and each transition yields the alerts to
// send — one PagerDuty Events API v2 event and/or one Slack incoming-webhook message per channel.

#include "shared/error.h"
#include "workers/monitoring/monitor.h"

#include <string>
#include <vector>

namespace ss::monitoring {

inline constexpr int kFailuresToOpen = 3;

struct MonitorState {
  int consecutive_failures = 0;
  bool incident_open = false;
};

enum class Transition { none, open, resolve };

struct Step {
  MonitorState next;
  Transition transition = Transition::none;
};

// A failure in a maintenance window still counts (so an outage that outlasts the window alerts at
// its next failure), but never opens an incident while the window is on; a success in a window
// does not resolve an open incident (its resolve is an alert too): the first success after the
// window does.
Step step(const MonitorState& state, bool probe_ok, bool in_maintenance);

// Everything an alert message says, decided when the incident changes.
struct AlertContext {
  std::string tenant_id;
  std::string monitor_id;
  std::string url;
  std::string incident_id;
  std::string reason;     // of the probe that opened the incident
  std::string opened_at;  // RFC 3339
  std::string source;     // PagerDuty "source": the wrangler name of this worker
};

// Stable per incident: trigger and resolve (and every retry of either) carry the same key, so
// PagerDuty folds them into one incident.
std::string dedup_key(const std::string& tenant_id, const std::string& monitor_id,
                      const std::string& incident_id);

struct AlertRequest {
  std::string channel;  // pagerduty | slack
  std::string action;   // trigger | resolve
  std::string url;
  json body;
};

// The alerts of one transition for the monitor's channels (none for Transition::none).
std::vector<AlertRequest> alerts_for(Transition t, const MonitorSpec& spec, const AlertContext& c,
                                     const std::string& pagerduty_events_url);

}  // namespace ss::monitoring
