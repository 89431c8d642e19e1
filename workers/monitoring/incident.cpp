#include "workers/monitoring/incident.h"
#include "shared/json_util.h"

namespace ss::monitoring {

Step step(const MonitorState& state, bool probe_ok, bool in_maintenance) {
  Step s;
  s.next = state;
  if (probe_ok) {
    s.next.consecutive_failures = 0;
    // Inside a window no alert fires, a resolve included: the incident stays open until the first
    // success after the window, which resolves it and sends the resolve then.
    if (state.incident_open && !in_maintenance) {
      s.next.incident_open = false;
      s.transition = Transition::resolve;
    }
    return s;
  }
  s.next.consecutive_failures = state.consecutive_failures + 1;
  if (!state.incident_open && s.next.consecutive_failures >= kFailuresToOpen && !in_maintenance) {
    s.next.incident_open = true;
    s.transition = Transition::open;
  }
  return s;
}

std::string dedup_key(const std::string& tenant_id, const std::string& monitor_id,
                      const std::string& incident_id) {
  return "siteswarm/" + tenant_id + "/" + monitor_id + "/" + incident_id;
}

std::vector<AlertRequest> alerts_for(Transition t, const MonitorSpec& spec, const AlertContext& c,
                                     const std::string& pagerduty_events_url) {
  std::vector<AlertRequest> out;
  if (t == Transition::none) return out;
  bool open = t == Transition::open;
  std::string action = open ? "trigger" : "resolve";
  std::string key = dedup_key(c.tenant_id, c.monitor_id, c.incident_id);
  if (spec.pagerduty_routing_key) {
    json body{
        {"routing_key", *spec.pagerduty_routing_key}, {"event_action", action}, {"dedup_key", key}};
    if (open) {
      body["payload"] = {
          {"summary",
           "[" + c.tenant_id + "] " + c.monitor_id + " is down (" + c.reason + "): " + c.url},
          {"source", c.source},
          {"severity", "critical"},
          {"timestamp", c.opened_at},
          {"component", c.monitor_id},
          {"group", c.tenant_id},
          {"class", c.reason},
          {"custom_details", {{"url", c.url}, {"reason", c.reason}, {"incident", c.incident_id}}}};
    }
    out.push_back({"pagerduty", action, pagerduty_events_url, std::move(body)});
  }
  if (spec.slack_webhook_url) {
    std::string text = open ? ":red_circle: *" + c.monitor_id + "* is down (" + c.reason + ") — " +
                                  c.url + " [" + c.tenant_id + ", incident " + c.incident_id + "]"
                            : ":large_green_circle: *" + c.monitor_id + "* is back up — " + c.url +
                                  " [" + c.tenant_id + ", incident " + c.incident_id + " resolved]";
    out.push_back({"slack", action, *spec.slack_webhook_url, json_object({{"text", text}})});
  }
  return out;
}

}  // namespace ss::monitoring
