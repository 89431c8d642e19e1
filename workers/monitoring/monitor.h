#pragma once
// A monitor as a tenant declares it (PUT /admin/monitors/{id} or the manifest's
// config.monitoring.monitors): the validated definition and its JSON forms. Validation is pure —
// the outbound-URL guard decides, with the deployment's allow_local flag, which URLs may be probed.

#include "shared/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss::monitoring {

inline constexpr int kDefaultMaxLatencyMs = 500;
inline constexpr int kMaxMaxLatencyMs = 60'000;
inline constexpr int kDefaultTimeoutMs = 10'000;
inline constexpr int kMinTimeoutMs = 100;
inline constexpr int kMaxTimeoutMs = 30'000;
inline constexpr std::size_t kMaxSelectors = 20;
inline constexpr std::size_t kMaxExpectStatus = 20;
inline constexpr std::size_t kMaxWindows = 50;
inline constexpr std::size_t kMaxMonitorIdLength = 64;
inline constexpr std::size_t kMaxMonitorsPerTenant = 500;
inline constexpr std::size_t kMaxRoutingKeyLength = 128;

struct MaintenanceWindow {
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
  std::string start;  // as given (RFC 3339)
  std::string end;
};

// A monitor may watch a platform worker through the monitoring worker's service binding instead of
// a URL: {"service":"events","path":"/health/consumers"}. Only the public health routes can be
// probed that way (a binding skips the network and its edge, so nothing else of a worker is offered
// to tenants through it); which services are bound is the deployment's MONITOR_SERVICES var.
inline constexpr std::size_t kMaxServiceNameLength = 32;
inline constexpr std::string_view kServiceScheme = "service://";

struct MonitorSpec {
  std::string url;  // the guard's normalised href; service://<service><path> for a service target
  std::string service;  // a platform worker's key (e.g. "events"), or "" for a URL monitor
  std::string path;     // with service: "/health" or "/health/…"
  std::string method = "GET";
  std::vector<int> expect_status{200};
  int max_latency_ms = kDefaultMaxLatencyMs;
  int timeout_ms = kDefaultTimeoutMs;
  std::vector<std::string> must_contain;
  bool enabled = true;
  std::optional<std::string> pagerduty_routing_key;
  std::optional<std::string> slack_webhook_url;
  std::vector<MaintenanceWindow> maintenance;

  bool in_maintenance(std::int64_t now_ms) const;
  bool expects(int status) const;
  bool has_alert_channel() const { return pagerduty_routing_key || slack_webhook_url; }
};

// Names the bad field of a validation error: "field" and the contract's "fields" ({field: message}).
Error& name_field(Error& e, const std::string& field);

// [A-Za-z0-9][A-Za-z0-9._-]{0,63}
bool is_valid_monitor_id(std::string_view id);

// Validates a monitor body. Errors are 400 invalid_request with "field" naming the first bad field
// (e.g. "url", "mustContain[1]", "maintenance[0].end") and, for refused URLs, the guard's "reason".
Result<MonitorSpec> parse_monitor(const json& body, bool allow_local);
// On write only (PUT /admin/monitors/{id}, a provisioned config): every key of a monitor body, of
// its alert channels and of its windows is a known field (400 naming "<prefix><key>"), so a
// misspelt one ("alertChannel") is refused instead of leaving the monitor without alerts. The
// fields the admin view adds (id, source, createdAt, updatedAt) pass, so a view can be sent back.
Status check_monitor_keys(const json& body, const std::string& prefix);

// The services this deployment lets monitors probe (MONITOR_SERVICES: "events,leads,…"), and the
// binding each is reached through ("events" → EVENTS_SERVICE).
std::vector<std::string> probe_services(std::string_view configured);
std::string service_binding_of(std::string_view service);
// 400 naming "service" when a service monitor names one this deployment does not bind.
Status check_service_available(const MonitorSpec& spec, std::string_view configured);

// The definition as stored (and as the admin API shows it, with secrets masked when redact).
json monitor_json(const MonitorSpec& spec, bool redact);

// The manifest's monitors: [{"id": "...", ...monitor fields}], ids unique.
struct DeclaredMonitor {
  std::string id;
  MonitorSpec spec;
};
Result<std::vector<DeclaredMonitor>> parse_declared_monitors(const json& config, bool allow_local);

}  // namespace ss::monitoring
