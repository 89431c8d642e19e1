#include "workers/monitoring/incident.h"
#include "shared/json_util.h"
#include "shared/text.h"
#include "shared/url_guard.h"

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

// PagerDuty's Events API v2 takes a summary of at most 1024 characters; a monitored URL may be 2048.
inline constexpr std::size_t kMaxPagerDutySummary = 1024;

std::vector<AlertRequest> triggers_for(const MonitorSpec& spec, const AlertContext& c,
                                       const std::string& pagerduty_events_url) {
  std::vector<AlertRequest> out;
  std::string key = dedup_key(c.tenant_id, c.monitor_id, c.incident_id);
  if (spec.pagerduty_routing_key) {
    json body{{"routing_key", *spec.pagerduty_routing_key},
              {"event_action", "trigger"},
              {"dedup_key", key},
              {"payload",
               {{"summary", utf8_prefix("[" + c.tenant_id + "] " + c.monitor_id + " is down (" +
                                            c.reason + "): " + c.url,
                                        kMaxPagerDutySummary)},
                {"source", c.source},
                {"severity", "critical"},
                {"timestamp", c.opened_at},
                {"component", c.monitor_id},
                {"group", c.tenant_id},
                {"class", c.reason},
                {"custom_details",
                 {{"url", c.url}, {"reason", c.reason}, {"incident", c.incident_id}}}}}};
    out.push_back({"pagerduty", "trigger", pagerduty_events_url, std::move(body)});
  }
  if (spec.slack_webhook_url) {
    std::string text = ":red_circle: *" + slack_escaped(c.monitor_id) + "* is down (" +
                       slack_escaped(c.reason) + ") — " + slack_escaped(c.url) + " [" +
                       c.tenant_id + ", incident " + c.incident_id + "]";
    out.push_back({"slack", "trigger", *spec.slack_webhook_url, json_object({{"text", text}})});
  }
  return out;
}

std::string_view closure_name(Closure why) {
  switch (why) {
    case Closure::recovered:
      return "recovered";
    case Closure::monitor_deleted:
      return "monitor_deleted";
    case Closure::monitor_disabled:
      return "monitor_disabled";
    case Closure::tenant_disabled:
      return "tenant_disabled";
    case Closure::superseded:
      return "superseded";
  }
  return "recovered";
}

Closure closure_from(std::string_view name) {
  for (Closure c : {Closure::monitor_deleted, Closure::monitor_disabled, Closure::tenant_disabled,
                    Closure::superseded}) {
    if (closure_name(c) == name) return c;
  }
  return Closure::recovered;
}

namespace {
std::string retired_text(const AlertContext& c, Closure why) {
  const std::string closed = " [" + c.tenant_id + ", incident " + c.incident_id + " closed]";
  if (why == Closure::superseded) {
    // The monitor was deleted and made again under its id: the new one starts without it.
    return ":white_circle: *" + slack_escaped(c.monitor_id) +
           "*: this incident was closed, the monitor was made anew; a new incident opens if it is "
           "still down" +
           closed;
  }
  std::string what = why == Closure::monitor_disabled  ? "the monitor was disabled"
                     : why == Closure::tenant_disabled ? "the site was disabled"
                                                       : "the monitor was deleted";
  return ":white_circle: *" + slack_escaped(c.monitor_id) + "* is no longer monitored (" + what +
         ")" + closed;
}
}  // namespace

std::vector<AlertRequest> resolves_for(const std::vector<SentTrigger>& triggers,
                                       const AlertContext& c, Closure why) {
  std::vector<AlertRequest> out;
  const std::string key = dedup_key(c.tenant_id, c.monitor_id, c.incident_id);
  for (const SentTrigger& t : triggers) {
    std::string url = string_or(t.request, "url", "");
    if (url.empty()) continue;
    if (t.channel == "pagerduty") {
      const json* body = find_field(t.request, "body");
      std::string routing_key = body ? string_or(*body, "routing_key", "") : "";
      if (routing_key.empty()) continue;
      json resolve{{"routing_key", routing_key}, {"event_action", "resolve"}, {"dedup_key", key}};
      out.push_back({"pagerduty", "resolve", std::move(url), std::move(resolve)});
    } else if (t.channel == "slack") {
      std::string text = why == Closure::recovered
                             ? ":large_green_circle: *" + slack_escaped(c.monitor_id) +
                                   "* is back up — " + slack_escaped(c.url) + " [" + c.tenant_id +
                                   ", incident " + c.incident_id + " resolved]"
                             : retired_text(c, why);
      out.push_back({"slack", "resolve", std::move(url), json_object({{"text", text}})});
    }
  }
  return out;
}

std::string slack_webhook_target(const std::string& url, std::string_view base) {
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  if (base.empty()) return url;
  auto parsed = parse_http_url(url);
  // Only what the guard would pass as Slack's (https, no user-info, the default port) stands in.
  if (!parsed || parsed->scheme != "https" || parsed->has_userinfo || parsed->port) return url;
  std::string_view host = parsed->host;
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);  // hooks.slack.com. is the same
  if (host != kSlackWebhookHost) return url;
  return std::string(base) + parsed->rest;
}

}  // namespace ss::monitoring
