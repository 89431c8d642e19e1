#pragma once
// The public side of the analytics worker: GET /script.js (the tracker) and POST /beacon.
//
// The beacon's request path never writes D1: it authenticates the tenant (from the tenant context
// set by the site's route delegation — never from the body), classifies the user agent, makes the
// visitor hash, then writes one Analytics Engine point and sends one queue message, concurrently,
// and answers 202 with an empty body.

#include "shared/app.h"
#include "workers/analytics/visitor.h"

#include <memory>

namespace ss::analytics {

inline constexpr std::string_view kAnalyticsDb = "ANALYTICS_DB";
inline constexpr std::string_view kPageviewsDataset = "PAGEVIEWS";      // Analytics Engine
inline constexpr std::string_view kPageviewsQueue = "PAGEVIEWS_QUEUE";  // producer binding

// Per-instance state of the worker (today's salt).
struct InstanceState {
  SaltCache salts;
};

void add_intake_routes(App& app, std::shared_ptr<InstanceState> state);

// With SITESWARM_TEST_HOOKS=1 only: X-SiteSwarm-Test-Now (ms since the epoch) sets the run's clock,
// so workerd tests can cross midnight. Ignored otherwise.
void apply_test_clock(Context& ctx, const Request& req);

}  // namespace ss::analytics
