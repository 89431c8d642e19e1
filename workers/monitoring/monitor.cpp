#include "workers/monitoring/monitor.h"

#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/text.h"
#include "shared/url_guard.h"
#include "workers/monitoring/probe.h"
#include "workers/monitoring/selector.h"

#include <algorithm>
#include <set>
#include <utility>

namespace ss::monitoring {

namespace {

// Returns the error of a Status from a function returning Result<…>.
#define MONITOR_CHECK(expr)                                             \
  do {                                                                  \
    Status monitor_check_ = (expr);                                     \
    if (!monitor_check_.ok()) return std::move(monitor_check_).error(); \
  } while (0)

Error field_error(const std::string& field, const std::string& message) {
  Error e{ErrorCode::invalid_request, field + " " + message};
  return name_field(e, field);
}

Result<int> int_field(const json& body, const char* name, int fallback, int min, int max) {
  const json* v = find_field(body, name);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_number_integer() || v->get<std::int64_t>() < min || v->get<std::int64_t>() > max) {
    return field_error(
        name, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return static_cast<int>(v->get<std::int64_t>());
}

Status parse_expect_status(const json& body, MonitorSpec& spec) {
  const json* v = find_field(body, "expectStatus");
  if (v == nullptr || v->is_null()) return Unit{};
  if (v->is_number_integer()) {
    json list = json::array({*v});
    return parse_expect_status(json_object({{"expectStatus", list}}), spec);
  }
  if (!v->is_array() || v->empty() || v->size() > kMaxExpectStatus) {
    return field_error("expectStatus", "must be a list of 1 to " +
                                           std::to_string(kMaxExpectStatus) + " HTTP statuses");
  }
  spec.expect_status.clear();
  for (const json& s : *v) {
    if (!s.is_number_integer() || s.get<std::int64_t>() < 100 || s.get<std::int64_t>() > 599) {
      return field_error("expectStatus", "must hold HTTP statuses (100–599)");
    }
    spec.expect_status.push_back(static_cast<int>(s.get<std::int64_t>()));
  }
  return Unit{};
}

Status parse_must_contain(const json& body, MonitorSpec& spec) {
  const json* v = find_field(body, "mustContain");
  if (v == nullptr || v->is_null()) return Unit{};
  if (v->is_string()) {
    json list = json::array({*v});
    return parse_must_contain(json_object({{"mustContain", list}}), spec);
  }
  if (!v->is_array() || v->size() > kMaxSelectors) {
    return field_error("mustContain",
                       "must be a list of at most " + std::to_string(kMaxSelectors) + " selectors");
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& s = (*v)[i];
    std::string field = "mustContain[" + std::to_string(i) + "]";
    if (!s.is_string()) return field_error(field, "must be a CSS selector string");
    std::string selector = s.get<std::string>();
    // Surrounding whitespace is not part of the selector (it would show in the reason).
    auto first = selector.find_first_not_of(kCssWhitespace);
    auto last = selector.find_last_not_of(kCssWhitespace);
    selector = first == std::string::npos ? "" : selector.substr(first, last - first + 1);
    if (std::string why = selector_error(selector); !why.empty()) {
      return field_error(field, "is not a supported CSS selector: it " + why);
    }
    spec.must_contain.push_back(std::move(selector));
  }
  if (!spec.must_contain.empty() && spec.method == "HEAD") {
    return field_error("mustContain", "needs method GET (a HEAD response has no body)");
  }
  return Unit{};
}

Status parse_alert_channels(const json& body, MonitorSpec& spec, bool allow_local) {
  const json* v = find_field(body, "alertChannels");
  if (v == nullptr || v->is_null()) return Unit{};
  if (!v->is_object()) return field_error("alertChannels", "must be an object");
  for (const auto& [key, value] : v->items()) {
    if (key != "pagerduty" && key != "slack") {
      return field_error("alertChannels." + key, "is not a channel (pagerduty, slack)");
    }
  }
  // A view read back and written again carries the placeholders the redacted views show ("…" and
  // the key's last characters; "(hidden)"): said as such, not as a malformed key.
  constexpr std::string_view kPlaceholder =
      "is the placeholder a view shows in place of the secret: send the secret itself";
  auto placeholder = [](const std::optional<std::string>& s) {
    return s && (*s == "(hidden)" || s->rfind("…", 0) == 0);
  };
  if (const json* pd = find_field(*v, "pagerduty"); pd && !pd->is_null()) {
    auto key = get_string(*pd, "routingKey");
    if (placeholder(key)) {
      return field_error("alertChannels.pagerduty.routingKey", std::string(kPlaceholder));
    }
    if (!key || key->empty() || key->size() > kMaxRoutingKeyLength ||
        !CharClass(kAlnum).chars("-_").all_of(*key)) {
      return field_error("alertChannels.pagerduty.routingKey",
                         "must be a PagerDuty integration key (letters, digits, - and _)");
    }
    spec.pagerduty_routing_key = *key;
  }
  if (const json* slack = find_field(*v, "slack"); slack && !slack->is_null()) {
    auto url = get_string(*slack, "webhookUrl");
    if (placeholder(url)) {
      return field_error("alertChannels.slack.webhookUrl", std::string(kPlaceholder));
    }
    if (!url) {
      return field_error("alertChannels.slack.webhookUrl", "must be an https:// webhook URL");
    }
    auto checked = check_outbound_url(*url, allow_local);
    if (!checked) {
      Error e =
          field_error("alertChannels.slack.webhookUrl", "is refused: " + checked.error().message);
      e.with("reason", refusal_reason(checked.error()));
      return e;
    }
    spec.slack_webhook_url = checked->href;
  }
  return Unit{};
}

Status parse_window_list(const json* v, const std::string& key,
                         std::vector<MaintenanceWindow>& out) {
  if (v == nullptr || v->is_null()) return Unit{};
  if (!v->is_array() || v->size() > kMaxWindows) {
    return field_error(
        key, "must be a list of at most " + std::to_string(kMaxWindows) + " {start, end} windows");
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    std::string field = key + "[" + std::to_string(i) + "]";
    const json& w = (*v)[i];
    if (!w.is_object()) return field_error(field, "must be an object {start, end}");
    MaintenanceWindow window;
    auto start = get_string(w, "start");
    auto start_ms = start ? parse_rfc3339(*start) : std::nullopt;
    if (!start_ms) return field_error(field + ".start", "must be an RFC 3339 date-time");
    auto end = get_string(w, "end");
    auto end_ms = end ? parse_rfc3339(*end) : std::nullopt;
    if (!end_ms) return field_error(field + ".end", "must be an RFC 3339 date-time");
    if (*end_ms <= *start_ms) return field_error(field + ".end", "must be after start");
    // Kept and answered in UTC ("…Z", as every time the platform shows), whatever offset was sent.
    window.start = shown_rfc3339(format_rfc3339_ms(*start_ms));
    window.end = shown_rfc3339(format_rfc3339_ms(*end_ms));
    window.start_ms = *start_ms;
    window.end_ms = *end_ms;
    out.push_back(std::move(window));
  }
  return Unit{};
}

Status parse_windows(const json& body, MonitorSpec& spec) {
  // "maintenance" or "maintenanceWindows" (the contract's words; the API answers both): errors name
  // the key that was sent. Both at once must agree — the same instants, whatever offsets each
  // wrote them in and in whatever order (a monitor's answer sent back as it came, or edited in one place).
  const json* v = find_field(body, "maintenance");
  const json* alias = find_field(body, "maintenanceWindows");
  if (Status s = parse_window_list(v, "maintenance", spec.maintenance); !s) return s;
  if (alias == nullptr) return Unit{};
  std::vector<MaintenanceWindow> other;
  if (Status s = parse_window_list(alias, "maintenanceWindows", other); !s) return s;
  if (v == nullptr) {
    spec.maintenance = std::move(other);
    return Unit{};
  }
  // The same windows in any order.
  auto instants = [](const std::vector<MaintenanceWindow>& windows) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const auto& w : windows) out.emplace_back(w.start_ms, w.end_ms);
    std::sort(out.begin(), out.end());
    return out;
  };
  bool same = instants(other) == instants(spec.maintenance);
  if (!same) {
    return field_error("maintenanceWindows", "differs from maintenance: send one of the two");
  }
  return Unit{};
}

}  // namespace

Error& name_field(Error& e, const std::string& field) {
  return ss::name_field(e, field, e.message);
}

bool MonitorSpec::in_maintenance(std::int64_t now_ms) const {
  for (const auto& w : maintenance) {
    if (now_ms >= w.start_ms && now_ms < w.end_ms) return true;
  }
  return false;
}

bool MonitorSpec::expects(int status) const {
  for (int s : expect_status) {
    if (s == status) return true;
  }
  return false;
}

bool is_valid_monitor_id(std::string_view id) {
  static constexpr CharClass kTail = CharClass(kAlnum).chars("._-");
  return !id.empty() && id.size() <= kMaxMonitorIdLength && kAlnum.contains(id[0]) &&
         kTail.all_of(id.substr(1));
}

namespace {

bool is_health_path(std::string_view path) {
  static constexpr CharClass kPathChars = CharClass(kLowerAlnum).chars("/_-");
  return (path == "/health" || path.rfind("/health/", 0) == 0) && path.size() <= 64 &&
         kPathChars.all_of(path) && path.find("//") == std::string_view::npos;
}

// {"service","path"} instead of a URL; "url" may only repeat the stored display form.
Status parse_service_target(const json& body, MonitorSpec& spec) {
  auto service = get_string(body, "service");
  static constexpr CharClass kServiceTail = CharClass(kLowerAlnum).chars("-");
  if (!service || service->empty() || service->size() > kMaxServiceNameLength ||
      !kLowerAlnum.contains((*service)[0]) || !kServiceTail.all_of(*service)) {
    return field_error("service", "must name a platform worker (e.g. \"events\")");
  }
  std::string path = string_or(body, "path", "/health");
  if (!is_health_path(path)) {
    return field_error("path", "must be /health or /health/… (only the public health routes)");
  }
  spec.service = *service;
  spec.path = path;
  spec.url = std::string(kServiceScheme) + spec.service + spec.path;
  if (auto url = get_string(body, "url"); url && *url != spec.url) {
    return field_error("url", "is not used with service (give one or the other)");
  }
  return Unit{};
}

}  // namespace

std::vector<std::string> probe_services(std::string_view configured) {
  std::vector<std::string> out;
  std::string current;
  for (char c : std::string(configured) + ",") {
    if (c == ',' || c == ' ') {
      if (!current.empty()) out.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  return out;
}

std::string service_binding_of(std::string_view service) {
  std::string out;
  for (char c : service)
    out += c == '-' ? '_' : static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return out + "_SERVICE";
}

Status check_service_available(const MonitorSpec& spec, std::string_view configured) {
  if (spec.service.empty()) return Unit{};
  for (const auto& s : probe_services(configured)) {
    if (s == spec.service) return Unit{};
  }
  return field_error("service", "is not a service this deployment lets monitors probe (" +
                                    std::string(configured.empty() ? "none" : configured) + ")");
}

Result<MonitorSpec> parse_monitor(const json& body, bool allow_local) {
  if (!body.is_object()) return Error{ErrorCode::invalid_request, "a monitor is a JSON object"};
  MonitorSpec spec;
  if (const json* service = find_field(body, "service"); service && !service->is_null()) {
    MONITOR_CHECK(parse_service_target(body, spec));
  } else {
    auto url = get_string(body, "url");
    if (!url) return field_error("url", "is required (an http:// or https:// URL)");
    auto checked = check_probe_url(*url, allow_local);
    if (!checked) {
      Error e = field_error("url", "is refused: " + checked.error().message);
      e.with("reason", refusal_reason(checked.error()));
      return e;
    }
    spec.url = checked->href;
  }

  if (const json* m = find_field(body, "method"); m && !m->is_null()) {
    std::string method = m->is_string() ? m->get<std::string>() : "";
    if (method != "GET" && method != "HEAD") return field_error("method", "must be GET or HEAD");
    spec.method = method;
  }
  MONITOR_CHECK(parse_expect_status(body, spec));
  auto max_latency = int_field(body, "maxLatencyMs", kDefaultMaxLatencyMs, 1, kMaxMaxLatencyMs);
  if (!max_latency) return std::move(max_latency).error();
  spec.max_latency_ms = *max_latency;
  auto timeout = int_field(body, "timeoutMs", kDefaultTimeoutMs, kMinTimeoutMs, kMaxTimeoutMs);
  if (!timeout) return std::move(timeout).error();
  spec.timeout_ms = *timeout;
  MONITOR_CHECK(parse_must_contain(body, spec));
  if (!spec.service.empty() && !spec.must_contain.empty()) {
    return field_error("mustContain",
                       "is not checked on a service target (health routes answer JSON)");
  }
  if (const json* e = find_field(body, "enabled"); e && !e->is_null()) {
    if (!e->is_boolean()) return field_error("enabled", "must be true or false");
    spec.enabled = e->get<bool>();
  }
  MONITOR_CHECK(parse_alert_channels(body, spec, allow_local));
  MONITOR_CHECK(parse_windows(body, spec));
  return spec;
}

Status check_monitor_keys(const json& body, const std::string& prefix) {
  MONITOR_CHECK(
      check_known_keys(body,
                       {"url", "service", "path", "method", "expectStatus", "maxLatencyMs",
                        "timeoutMs", "mustContain", "enabled", "alertChannels", "maintenance",
                        "maintenanceWindows", "id", "source", "createdAt", "updatedAt"},
                       prefix));
  if (const json* channels = find_field(body, "alertChannels")) {
    struct Channel {
      const char* name;
      std::string_view field;
    };
    for (const Channel& channel :
         {Channel{"pagerduty", "routingKey"}, Channel{"slack", "webhookUrl"}}) {
      const json* c = find_field(*channels, channel.name);
      if (c == nullptr) continue;
      MONITOR_CHECK(
          check_known_keys(*c, {channel.field}, prefix + "alertChannels." + channel.name + "."));
    }
  }
  for (const char* key : {"maintenance", "maintenanceWindows"}) {
    const json* windows = find_field(body, key);
    if (windows == nullptr || !windows->is_array()) continue;
    for (std::size_t i = 0; i < windows->size(); ++i) {
      MONITOR_CHECK(check_known_keys((*windows)[i], {"start", "end"},
                                     prefix + key + "[" + std::to_string(i) + "]."));
    }
  }
  return Unit{};
}

json monitor_json(const MonitorSpec& spec, bool redact) {
  json channels = json::object();
  if (spec.pagerduty_routing_key) {
    channels["pagerduty"] = {
        {"routingKey", redact ? std::string("…") + spec.pagerduty_routing_key->substr(
                                                       spec.pagerduty_routing_key->size() -
                                                       std::min<std::size_t>(
                                                           4, spec.pagerduty_routing_key->size()))
                              : *spec.pagerduty_routing_key}};
  }
  if (spec.slack_webhook_url) {
    channels["slack"] = {
        {"webhookUrl", redact ? std::string("(hidden)") : *spec.slack_webhook_url}};
  }
  json windows = json::array();
  for (const auto& w : spec.maintenance) windows.push_back({{"start", w.start}, {"end", w.end}});
  // Built by json_object and moved in. (`json out{{…}}`, list-initialising the named variable, trapped
  // with "memory access out of bounds" in the clang-14 wasm32 build, though native ASan was clean.)
  json out = json_object({{"url", spec.url},
                          {"method", spec.method},
                          {"expectStatus", spec.expect_status},
                          {"maxLatencyMs", spec.max_latency_ms},
                          {"timeoutMs", spec.timeout_ms},
                          {"mustContain", spec.must_contain},
                          {"enabled", spec.enabled},
                          {"alertChannels", channels},
                          {"maintenance", windows}});
  if (!spec.service.empty()) {
    out["service"] = spec.service;
    out["path"] = spec.path;
  }
  return out;
}

Result<std::vector<DeclaredMonitor>> parse_declared_monitors(const json& config, bool allow_local) {
  std::vector<DeclaredMonitor> out;
  const json* list = find_field(config, "monitors");
  if (list == nullptr || list->is_null()) return out;
  if (!list->is_array() || list->size() > kMaxMonitorsPerTenant) {
    return field_error("monitors", "must be a list of at most " +
                                       std::to_string(kMaxMonitorsPerTenant) + " monitors");
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < list->size(); ++i) {
    std::string prefix = "monitors[" + std::to_string(i) + "]";
    auto id = get_string((*list)[i], "id");
    if (!id || !is_valid_monitor_id(*id)) {
      return field_error(prefix + ".id", "must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    }
    if (!seen.insert(*id).second) return field_error(prefix + ".id", "is declared twice");
    auto spec = parse_monitor((*list)[i], allow_local);
    if (!spec) {
      Error e = std::move(spec).error();
      std::string field = prefix + "." + string_or(e.extra, "field", "");
      e.message = prefix + "." + e.message;
      name_field(e, field);
      return e;
    }
    out.push_back({*id, std::move(spec).value()});
  }
  return out;
}

}  // namespace ss::monitoring
