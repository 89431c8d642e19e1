#pragma once
// retention: events recorded before now - days lose their payload to a summary + tombstone event
// (one tombstone per tenant, one summary row per day, tenant and type), 500 at a time.

#include "shared/app.h"

namespace ss::events {

inline constexpr int kRetentionBatch = 500;

Task<Result<json>> apply_retention(Context& ctx, int days);

}  // namespace ss::events
