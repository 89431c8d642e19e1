#pragma once
// The monitoring worker's HTTP surface for tenants: the monitor admin API (tenant admin token) and
// GET /v1/monitors (tenant token); the manifest's monitors arrive through the tenant config.

#include "shared/app.h"

namespace ss::monitoring {

void add_monitor_routes(App& app);

// PUT /admin/tenants/{id} config: {"monitors":[{"id", …monitor fields}]}.
Status validate_tenant_config(const Context& ctx, const json& config);
Task<Status> sync_tenant_monitors(Context& ctx, const std::string& tenant_id, const json& config);
// The operator's view of a tenant config: channel secrets masked.
json redact_tenant_config(json config);

// The contract's view of every monitor of a tenant ({"monitors":[…]}), shared with the status page.
Task<Result<json>> monitors_overview(Context& ctx, const std::string& tenant_id, bool include_urls);

}  // namespace ss::monitoring
