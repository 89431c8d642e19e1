#pragma once
// What the hourly cron keeps and deletes (docs/analytics.md, "Retention"):
//   - salts: drawn for today and tomorrow; a salt is deleted once its day is two days old;
//   - per-visitor rows (visitor_days, visitor_dims): deleted with their day's salt, 48 hours after
//     the day began;
//   - rollups (daily_totals, daily_dims): kept ANALYTICS_RETENTION_DAYS days (default 730).

#include "shared/runtime.h"
#include "workers/analytics/store.h"

namespace ss::analytics {

inline constexpr std::int64_t kDefaultRollupRetentionDays = 730;
inline constexpr std::int64_t kMinRollupRetentionDays = 2;
inline constexpr std::int64_t kMaxRollupRetentionDays = 3650;

// `now_ms`: the instant the job runs for (taken before any effect; the host moves ctx's clock).
Task<Status> run_maintenance(Context& ctx, AnalyticsStore store, std::int64_t now_ms);

}  // namespace ss::analytics
