#pragma once
// The queue between the beacon and D1. The beacon sends one small message per hit; the consumer
// aggregates a whole message batch in memory and writes it with ONE D1 batch (at most four
// statements, whatever the batch size), so D1 load follows the number of batches, not of pageviews.

#include "shared/app.h"
#include "workers/analytics/store.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ss::analytics {

inline constexpr int kRollupRetrySeconds = 30;

// What one queue message says about one hit. "v" (the visitor hash) is absent for DNT/GPC and bots.
//   {"t": tenant, "d": "YYYY-MM-DD", "f": true (filtered bot hit) | absent, "v": "…",
//    "m": {"path": "/", "referrer": "(direct)", "country": "US", …}}
struct Hit {
  std::string tenant;
  std::string day;
  bool filtered = false;
  std::string visitor;                      // "" when none
  std::map<std::string, std::string> dims;  // dim → key
  json to_message() const;
  static std::optional<Hit> from_message(const json& body);  // nullopt: malformed
};

// The dimension names a hit may carry (and /v1/stats may group by, besides "day").
const std::vector<std::string>& dimension_names();

// Aggregates hits into rows for AnalyticsStore::apply.
RollupBatch aggregate(const std::vector<Hit>& hits);

// The queue handler: aggregate, one D1 batch, ack all; a failed batch is retried as a whole
// (malformed messages are acked and dropped, with a log line).
Task<QueueOutcome> consume_batch(Context& ctx, AnalyticsStore store,
                                 std::vector<QueueMessage> batch);

}  // namespace ss::analytics
