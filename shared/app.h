#pragma once
// What a worker is, as far as the hosts care: a name, a router and optional cron, queue and RPC
// handlers. Each worker builds one App (make_<name>_app()) with the platform routes every service
// shares.

#include "shared/http.h"
#include "shared/runtime.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ss {

inline constexpr const char* kPlatformVersion = "0.1.0";

struct QueueMessage {
  std::string id;
  json body;
  int attempts = 1;
  std::int64_t timestamp = 0;
};

// What happens to each message of a batch: acked, or retried after a delay.
struct QueueOutcome {
  std::vector<std::string> ack;
  std::vector<std::pair<std::string, int>> retry;  // id, delay seconds
};

struct App {
  std::string service;  // wrangler name, e.g. "siteswarm-leads-service"
  std::string version = kPlatformVersion;
  std::string db_binding;                        // the worker's own D1 (holds its tenants table)
  std::optional<std::string> kv_binding;         // checked by /admin/diagnostics when present
  std::vector<std::string> diagnostic_services;  // service bindings /admin/diagnostics calls
  // Validates the worker-specific part of a tenant's config on PUT /admin/tenants/{id}.
  std::function<Status(const Context& ctx, const json& config)> validate_tenant_config;
  // Runs after PUT /admin/tenants/{id} stored a validated config (e.g. monitoring creates the
  // manifest's monitors); a failure answers the PUT with that error (the tenant row stays saved, so
  // the push can simply be repeated).
  std::function<Task<Status>(Context& ctx, const std::string& tenant_id, const json& config)>
      apply_tenant_config;
  // Runs after DELETE /admin/tenants/{id} disabled the tenant: drops what the worker keeps outside
  // the tenant row that could still authenticate it while D1 is unreachable (cms: the KV document
  // with its token hash, this isolate's copy). A failure answers the DELETE with that error (the row
  // stays disabled, so the DELETE can simply be repeated).
  std::function<Task<Status>(Context& ctx, const std::string& tenant_id)> forget_tenant;
  // Hides the secrets a worker keeps inside tenant config (e.g. webhook signing keys) in GET views.
  std::function<json(json config)> redact_tenant_config;

  // Extra fields for GET /health (e.g. the ledger's consumer lag); merged into
  // {"ok","service","version"}.
  std::function<Task<json>(Context&)> health_details;

  Router router;
  std::function<Task<Status>(Context&, const std::string& cron)> scheduled;
  std::function<Task<QueueOutcome>(Context&, const std::string& queue, std::vector<QueueMessage>)>
      queue;
  std::function<Task<Result<json>>(Context&, const std::string& method, const json& args)> rpc;
};

// /health, /v1/tenant, /admin/tenants/{id}, /admin/diagnostics and the test-only /__test/trap.
void add_platform_routes(App& app);

// A fetch output message from a handler's Response (docs/abi.md "Output messages").
json fetch_output(Response r);

// The answer a fetch handler gives if every effect it awaits next succeeds: the runtime hands it to
// the host beside them, and the host may end the run with it without resuming the core (docs/abi.md
// "Answers known in advance"; Context::expect_output). The handler must then return exactly `r`.
void expect_answer(Context& ctx, Response r);

// Entry point used by the runtime: routes one input message to the right handler.
Task<json> handle_message(Context& ctx, json message);

}  // namespace ss
