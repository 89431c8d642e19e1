#pragma once
// The tenant admin API of the leads service and its retention job.

#include "shared/app.h"

namespace ss::leads {

void add_admin_routes(App& app);
// Daily: removes each tenant's leads older than its retentionDays, and expired rate-limit windows.
Task<Status> enforce_retention(Context& ctx);

}  // namespace ss::leads
