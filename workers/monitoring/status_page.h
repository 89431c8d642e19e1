#pragma once
// Public status pages: GET /status/{tenantId} (HTML, no JavaScript, readable on a phone) and
// GET /status/{tenantId}.json (the same data). The data is cached in KV for kStatusCacheSeconds,
// so a traffic spike on a status page reads D1 once a minute, not once per view.

#include "shared/app.h"

#include <string>

namespace ss::monitoring {

inline constexpr const char* kCacheBinding = "MONITORING_CACHE";
inline constexpr int kStatusCacheSeconds = 60;  // KV's minimum TTL
inline constexpr int kStatusDays = 90;
inline constexpr int kStatusIncidents = 20;

void add_status_routes(App& app);

// Drops the tenant's cached status data, so the next view is built from D1: after a monitor is
// added, changed or removed, and after a probe that changes what the page shows (up ↔ down, an
// incident opened or resolved). Not after every probe: KV takes one write per second per key. KV
// trouble is logged, never an error.
Task<Unit> forget_status(Context& ctx, const std::string& tenant);

// The page for the status data (pure, for tests): every value HTML-escaped.
std::string render_status_html(const json& status);

}  // namespace ss::monitoring
