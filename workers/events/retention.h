#pragma once
// retention: events recorded before now - days lose their payload to a summary + tombstone event
// (one tombstone per tenant, one summary row per day, tenant and type), 500 at a time.

#include "shared/app.h"

namespace ss::events {

inline constexpr int kRetentionBatch = 500;
// The hourly cron runs batches until it catches up, at most RETENTION_BATCHES_PER_RUN of them
// (default 20: 10,000 events an hour, 240,000 a day; each batch is about 2 + tenants D1 calls, so
// the run stays far below Workers' subrequest limit). POST /admin/events/retention runs one.
inline constexpr std::int64_t kDefaultRetentionBatchesPerRun = 20;
inline constexpr std::int64_t kMaxRetentionBatchesPerRun = 200;

Task<Result<json>> apply_retention(Context& ctx, int days);

}  // namespace ss::events
