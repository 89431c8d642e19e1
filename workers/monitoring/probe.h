#pragma once
// One probe of one monitor: the redirect walk (every hop through the outbound-URL guard, at most
// kMaxRedirects), then a verdict. The verdict is pure — evaluate() turns what the host observed
// (status, host-measured latency, which mustContain selectors HTMLRewriter matched) into ok or a
// reason — so every failure reason is a unit test; run_probe() is the thin effectful walk.

#include "shared/effects.h"
#include "shared/url_guard.h"
#include "workers/monitoring/monitor.h"

#include <array>
#include <optional>
#include <set>
#include <string>

namespace ss::monitoring {

inline constexpr int kMaxRedirects = 5;

// Latency histogram bucket upper bounds (ms) for the daily rollups; the last bucket is open.
inline constexpr std::array<int, 16> kLatencyBuckets{25,  50,  75,   100,  150,  200,  300,  400,
                                                     500, 750, 1000, 1500, 2000, 3000, 5000, 10000};
inline constexpr std::size_t kHistogramSize = kLatencyBuckets.size() + 1;
std::size_t latency_bucket(std::int64_t latency_ms);
// The bucket bound below which `fraction` of the counted latencies fall (nullopt when empty); the
// open bucket reports the last bound.
std::optional<int> histogram_percentile(const std::vector<std::int64_t>& counts, double fraction);

// What the host saw at the end of the redirect walk.
struct ProbeObservation {
  enum class Outcome { response, timeout, network_error, ssrf_blocked };
  Outcome outcome = Outcome::response;
  int status = 0;
  std::int64_t latency_ms = 0;              // summed over the hops, measured by the host
  std::set<std::string> selectors_matched;  // of the monitor's mustContain
};

struct ProbeResult {
  bool ok = false;
  std::optional<int> status;  // null when no response arrived
  std::int64_t latency_ms = 0;
  std::string reason;  // "" when ok; status_mismatch, too_slow, selector_missing:<s>, timeout,
                       // network_error, ssrf_blocked
  json to_json(std::int64_t at_ms) const;  // {"at","ok","status","latencyMs","reason"}
};

// The order of checks decides the reason when several fail: no response first, then the status,
// then the latency, then the first missing selector in declared order.
ProbeResult evaluate(const MonitorSpec& spec, const ProbeObservation& seen);

// The guard for probe targets: the same host rules as every outbound call, but plain http:// is
// allowed (a monitored site need not have TLS; nothing secret is sent to it).
Result<OutboundUrl> check_probe_url(std::string_view url, bool allow_local);

// Resolves a Location header against the URL that answered it (absolute, scheme-relative,
// absolute-path and relative-path forms) as browsers do for http(s): a backslash is a slash, the
// page's own scheme without "//" is relative ("http:next"), spaces and controls are trimmed or
// percent-encoded; "" when it cannot be resolved.
std::string resolve_location(const std::string& base, const std::string& location);

bool is_redirect(int status);

// Runs the probe: fetch with redirect: manual (hop by hop, each guarded), selectors streamed
// through HTMLRewriter by the host. Never fails: every failure is an observation.
Task<ProbeObservation> observe(const MonitorSpec& spec, bool allow_local);

}  // namespace ss::monitoring
