#include "workers/analytics/retention.h"

#include "workers/analytics/visitor.h"

namespace ss::analytics {

Task<Status> run_maintenance(Context& ctx, AnalyticsStore store, std::int64_t now) {
  SS_CO_CHECK(co_await rotate_salts(ctx, store, now));
  // Rows of day D go when D+2 begins, like D's salt.
  SS_CO_CHECK(co_await store.purge_visitor_state_before(utc_day(now, -1)));
  const std::int64_t keep = ctx.env_int("ANALYTICS_RETENTION_DAYS", kDefaultRollupRetentionDays,
                                        kMinRollupRetentionDays, kMaxRollupRetentionDays);
  SS_CO_CHECK(co_await store.purge_rollups_before(utc_day(now, -static_cast<int>(keep) + 1)));
  co_return Unit{};
}

}  // namespace ss::analytics
