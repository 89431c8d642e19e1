#pragma once
// The incident state machine and the alert messages, pure (time and ids are parameters), so every
// transition is a unit test: 3 consecutive failures open an incident (unless a maintenance window
// is on), the first success outside a window resolves it, and each transition yields the alerts to
// send — one PagerDuty Events API v2 event and/or one Slack incoming-webhook message per channel.

#include "shared/error.h"
#include "workers/monitoring/monitor.h"

#include <string>
#include <string_view>
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

// The triggers of a new incident, one per channel the monitor has. Its resolves are made by
// resolves_for, from what these triggers went to.
std::vector<AlertRequest> triggers_for(const MonitorSpec& spec, const AlertContext& c,
                                       const std::string& pagerduty_events_url);

// Slack's incoming-webhook host. SLACK_API_URL, when set, stands in for it (local stubs).
inline constexpr std::string_view kSlackWebhookHost = "hooks.slack.com";
// Where a Slack webhook is posted: an https:// URL on hooks.slack.com (no user-info, the default
// port) goes to `base` (the SLACK_API_URL var, trailing slashes ignored) with the same path and
// query; any other URL, or every URL when `base` is empty, goes as given. The guard then judges
// the result, the URL actually fetched.
std::string slack_webhook_target(const std::string& url, std::string_view base);

// Why an open incident ends: its monitor recovered, or nobody watches it any more — the monitor was
// deleted (by the API or by a manifest that no longer declares it) or disabled, its tenant was
// disabled, or it was deleted and made again under the same id (the new monitor starts without it).
enum class Closure { recovered, monitor_deleted, monitor_disabled, tenant_disabled, superseded };
std::string_view closure_name(Closure why);
// The SQL spelling of the same names (MonitorStore::orphaned_incidents); recovered otherwise.
Closure closure_from(std::string_view name);

// A trigger alert as it was recorded in the outbox: its channel and request ({"url","body"}).
struct SentTrigger {
  std::string channel;
  json request;
};

// The resolves of an incident: one per trigger it sent, to that trigger's endpoint — PagerDuty with
// the trigger's routing key and the incident's dedup_key, Slack to the trigger's webhook — whatever
// the monitor's channels are now (re-keyed, removed, or the monitor gone), so every page that was
// opened is closed and nobody is told of an incident they were never told of.
std::vector<AlertRequest> resolves_for(const std::vector<SentTrigger>& triggers,
                                       const AlertContext& c, Closure why);

}  // namespace ss::monitoring
