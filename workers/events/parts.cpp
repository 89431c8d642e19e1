// The ledger as three deployed workers (docs/architecture.md "The ledger's three workers"), each
// linking only its share of this library, so each fits the 128 KiB gz budget:
//   - siteswarm-events-service (make_events_entry_app): the public worker. The data path, the
//     queue consumer, every cron, the four analysers, retention and alerts; the config routes go
//     on to the config worker, workflow_runner's drains and retries to the runner worker.
//   - siteswarm-events-runner (make_events_runner_app): workflow_runner: its drain, held starts,
//     quarantine retries, the workflow starts on the other platform workers.
//   - siteswarm-events-config (make_events_config_app): subscriptions, workflows, schemas, kill
//     switches, the operator reads and /__test/programs.
// The three share one D1 database and the FLAGS namespace, and reach each other over Service
// Bindings with the operator token. The native harness runs make_events_app(): the same code,
// every part in one module.
#include "shared/app.h"
#include "shared/effects.h"
#include "shared/json_util.h"
#include "shared/text.h"
#include "workers/events/admin.h"
#include "workers/events/api.h"
#include "workers/events/drain.h"
#include "workers/events/test_programs.h"

namespace ss {

namespace events {
namespace {

inline constexpr const char* kRunnerBinding = "EVENTS_RUNNER";
inline constexpr const char* kConfigBinding = "EVENTS_CONFIG";

// What a part answered, as the Error it stands for: its own code and message when it sent one.
Error part_error(const char* binding, const FetchReply& reply) {
  auto body = parse_json_object(reply.body);
  if (body) {
    const json* error = find_field(*body, "error");
    std::string code = error ? string_or(*error, "code", "") : "";
#define SS_X(name, status)                                           \
  if (code == #name) {                                               \
    Error out{ErrorCode::name, string_or(*error, "message", "")};    \
    for (auto& [key, value] : error->items()) {                      \
      if (key != "code" && key != "message") out.extra[key] = value; \
    }                                                                \
    return out;                                                      \
  }
    SS_ERROR_CODES(SS_X)
#undef SS_X
  }
  return Error{ErrorCode::dependency_unavailable,
               std::string(binding) + " answered " + std::to_string(reply.status)};
}

// POST <path> on a part with the operator token; its JSON answer. No timeout of its own: the part
// runs under its own platform limits, and the caller's (a Cron Trigger's, an operator's connection)
// bound the wait, as when the work ran in one worker. A part that does not answer, or refuses the
// token, is 503 dependency_unavailable (the detail is logged); its other errors are its own.
Task<Result<json>> call_part(Context& ctx, const char* binding, std::string path) {
  HttpCall call;
  call.method = "POST";
  call.url = "https://" + ascii_lower(binding) + ".internal" + path;
  call.headers["authorization"] = "Bearer " + ctx.env("PLATFORM_ADMIN_TOKEN");
  call.headers["content-type"] = "application/json";
  call.body = "{}";
  call.timeout_ms = 0;
  auto reply = co_await service_call(binding, call);
  if (!reply) {
    ctx.log(std::string(binding) + " did not answer: " + reply.error().message);
    co_return Error{ErrorCode::dependency_unavailable, std::string(binding) + " did not answer"};
  }
  if (reply->status == 401 || reply->status == 403) {
    co_return Error{ErrorCode::dependency_unavailable,
                    std::string(binding) +
                        " refused the operator token: PLATFORM_ADMIN_TOKEN must be the same on "
                        "the ledger's three workers"};
  }
  if (!reply->ok()) co_return part_error(binding, *reply);
  auto body = parse_json(reply->body);
  if (!body) {
    co_return Error{ErrorCode::dependency_unavailable, std::string(binding) + " answered no JSON"};
  }
  co_return std::move(body).value();
}

// The entry worker: workflow_runner's drains run in the runner worker, the analysers' here.
Task<Result<json>> drain_in_entry(Context& ctx, const std::string& consumer, std::int64_t batches) {
  if (consumer == kWorkflowRunner) {
    SS_CO_TRY(json answer, co_await call_part(ctx, kRunnerBinding,
                                              "/admin/events/drain?consumer=" + consumer +
                                                  "&batches=" + std::to_string(batches)));
    const json* consumers = find_field(answer, "consumers");
    const json* report = consumers ? find_field(*consumers, consumer) : nullptr;
    if (!report) co_return Error{ErrorCode::dependency_unavailable, "the runner sent no report"};
    co_return *report;
  }
  SS_CO_RETURN_AWAIT(drain_report(ctx, consumer, batches, &run_analyser_batch));
}

// The */2 cron's runner part, as many batches as this worker's DRAIN_BATCHES_PER_RUN says: the
// entry's crons are configured in one place.
Task<Result<json>> runner_cron_in_runner(Context& ctx) {
  return call_part(
      ctx, kRunnerBinding,
      "/admin/events/runner-cron?batches=" + std::to_string(drain_batches_per_run(ctx)));
}

Task<Result<json>> release_in_runner(Context& ctx) {
  return call_part(ctx, kRunnerBinding, "/admin/events/release");
}

Task<Result<json>> retention_in_config(Context& ctx) {
  return call_part(ctx, kConfigBinding, "/admin/events/retention-run");
}

Task<Result<json>> alerts_in_config(Context& ctx) {
  return call_part(ctx, kConfigBinding, kAlertsDeliverPath);
}

Task<Result<json>> drain_in_runner(Context& ctx, const std::string& consumer,
                                   std::int64_t batches) {
  return drain_report(ctx, consumer, batches, &run_runner_batch);
}

// The request as received, handed on to a part: the host sends it and answers with the part's
// response as it streams (docs/abi.md "Handing a request on"), so nothing caps or times out what
// a part answers an operator.
Task<Result<Response>> forward(Context&, const Request& req, const char* binding) {
  // The host read at most its cap of the body (MAX_BODY_BYTES, bindings/effects/http.js): it
  // cannot hand on what it did not read.
  if (req.body_too_large) {
    co_return Error{ErrorCode::payload_too_large,
                    "the body is larger than the 1048576 bytes a request may carry"};
  }
  Response out = Response::empty(200);
  out.set_header("x-ss-hand-on", binding);
  co_return out;
}

Handler forward_to(const char* binding) {
  return [binding](Context& ctx, const Request& req, const Params&) {
    return forward(ctx, req, binding);
  };
}

App ledger_app(const char* service) {
  App app;
  app.service = service;
  app.db_binding = "EVENTS_DB";
  return app;
}

}  // namespace
}  // namespace events

App make_events_entry_app() {
  events::LedgerWiring wiring;
  wiring.drain = &events::drain_in_entry;
  wiring.runner_cron = &events::runner_cron_in_runner;
  wiring.retention = &events::retention_in_config;
  wiring.alerts = &events::alerts_in_config;
  App app = events::ledger_app("siteswarm-events-service");
  app.diagnostic_services = {events::kRunnerBinding, events::kConfigBinding};
  events::add_health_route(app);  // first: it takes /health from the platform routes
  add_platform_routes(app);
  events::add_api_routes(app);
  events::add_timeline_route(app);
  events::add_drain_route(app, wiring);
  events::add_replay_route(app);
  const Handler to_config = events::forward_to(events::kConfigBinding);
  events::forward_admin_config_routes(app, to_config);
  app.router.add("POST", events::kRetentionPath, to_config)
      .add("POST", events::kAlertsDeliverPath, to_config)
      .add("POST", "/__test/programs", to_config);
  app.router.add("POST", events::kQuarantineRetryPath, events::forward_to(events::kRunnerBinding));
  app.scheduled = [wiring](Context& ctx, const std::string& cron) {
    return events::run_cron(ctx, cron, wiring);
  };
  app.queue = [](Context& ctx, const std::string&, std::vector<QueueMessage> batch) {
    return events::ingest_batch(ctx, std::move(batch));
  };
  return app;
}

App make_events_runner_app() {
  events::LedgerWiring wiring;
  wiring.drain = &events::drain_in_runner;
  wiring.runner_only = true;
  App app = events::ledger_app("siteswarm-events-runner");
  add_platform_routes(app);
  events::add_drain_route(app, wiring);
  events::add_quarantine_retry_route(app);
  events::add_runner_routes(app);
  return app;
}

App make_events_config_app() {
  events::LedgerWiring wiring;
  wiring.release = &events::release_in_runner;
  App app = events::ledger_app("siteswarm-events-config");
  add_platform_routes(app);
  events::add_admin_config_routes(app, wiring);
  events::add_upkeep_routes(app);
  events::add_test_program_routes(app);
  return app;
}

}  // namespace ss
