// HTTP and queue entry points of the ledger's write and read paths.
#include "workers/events/api.h"

#include "shared/field_error.h"

#include "shared/json_util.h"
#include "shared/tenant.h"
#include "shared/text.h"
#include "workers/events/ledger.h"

#include <algorithm>

namespace ss::events {

namespace {

struct Caller {
  bool is_operator = false;
  std::optional<std::string> tenant_id;
};

// The operator (Authorization: Bearer <PLATFORM_ADMIN_TOKEN>) or an authenticated tenant.
Task<Result<Caller>> identify_caller(Context& ctx, const Request& req) {
  if (!bearer_token(req).empty()) {
    Status op = authenticate_operator(ctx, req);
    if (op.ok()) co_return Caller{true, std::nullopt};
  }
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant(ctx, req));
  co_return Caller{false, tenant.id};
}

Task<Result<Response>> post_event(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Caller caller, co_await identify_caller(ctx, req));
  SS_CO_CHECK(require_json_body(req, kMaxEventBody));
  SS_CO_CHECK(require_identity_coding(req));  // a compressed body is not malformed JSON
  SS_CO_TRY(json body, parse_json_object(req.body));
  // A misspelt key ("idempotencyKey") is refused by name rather than read as the field's absence
  // (no dedupe, no link): checked first, since it is often why a required field is "missing". An
  // event's view (GET /api/events) passes, with the keys it adds unread.
  static constexpr std::string_view kFields[] = {
      "event_type",      "entity_ref",    "payload",     "idempotency_key", "event_id", "caused_by",
      "workflow_run_id", "source_system", "occurred_at", "sequence_no",     "tenant_id"};
  static constexpr std::string_view kViewFields[] = {"entity_type", "entity_id", "recorded_at"};
  if (Status known = check_known_keys(body, kFields, "", kViewFields); !known) {
    Error e = std::move(known).error();
    e.code = ErrorCode::invalid_event;
    co_return e;
  }
  SS_CO_TRY(NewEvent event, parse_new_event(body));
  if (!event.event_id.empty()) SS_CO_CHECK(check_producer_event_id(event.event_id, ctx.now_ms()));
  if (caller.is_operator) {
    const json* t = find_field(body, "tenant_id");
    if (t != nullptr && !t->is_null()) {
      if (!t->is_string() || !is_valid_tenant_id(t->get<std::string>())) {
        co_return invalid_field("tenant_id", "not a tenant id", ErrorCode::invalid_event);
      }
      event.tenant_id = t->get<std::string>();
    }
  } else {
    if (is_ledger_event_type(event.event_type)) {
      co_return invalid_field("event_type",
                              "events.*, anomaly.* and tenant.health* are the ledger's own records",
                              ErrorCode::invalid_event);
    }
    event.tenant_id = caller.tenant_id;  // stamped from the authenticated context, never the body
  }
  SS_CO_TRY(Appended appended, co_await append_event(ctx, std::move(event)));
  if (appended.duplicate) {
    co_return Response::json_body(
        200, json_object({{"event_id", appended.event_id}, {"duplicate", true}}));
  }
  co_return Response::json_body(201, json_object({{"event_id", appended.event_id}}));
}

Task<Result<Response>> get_events(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Caller caller, co_await identify_caller(ctx, req));
  SS_CO_TRY(ReadQuery query, parse_read_query(req));
  if (caller.is_operator) {
    std::string tenant = req.query_param("tenant");
    if (!tenant.empty()) {
      if (!is_valid_tenant_id(tenant)) {
        co_return invalid_field("tenant", "not a tenant id");
      }
      query.tenant_id = tenant;
    }
  } else {
    // A tenant's `next` is the bare event_id. A "<event_id>.<seq>" cursor (the operator's, across
    // tenants) is a position in the ledger-wide insertion order: from a tenant, paging from guessed
    // seqs would tell where its events sit among every tenant's, i.e. count the others' events.
    if (query.after_seq) {
      co_return invalid_field("after", "must be an event_id (ULID): a tenant's page's next");
    }
    query.tenant_id = caller.tenant_id;
  }
  SS_CO_RETURN_AWAIT(read_events_response(query));
}

int backoff_seconds(int attempts) {
  static constexpr int kMaxBackoffSeconds = 300;
  int shift = std::clamp(attempts, 1, 8);
  return std::min(kMaxBackoffSeconds, 5 << (shift - 1));
}

}  // namespace

void add_api_routes(App& app) {
  app.router.add("POST", "/api/events", post_event).add("GET", "/api/events", get_events);
}

namespace {
// One message: append it, and say whether to ack it or retry it.
Task<std::optional<int>> ingest_one(Context& ctx, QueueMessage m) {
  auto event = parse_new_event(m.body);
  if (!event) {
    // Retrying cannot fix a malformed message; keep the evidence in the log and move on.
    ctx.log("events queue: dropping malformed message " + m.id + ": " + event.error().message);
    co_return std::nullopt;
  }
  // The producer's tenant, as stamped by emit_event(); absent or null is a platform-wide event. Any
  // other value is malformed like a bad field above: it must never become a platform-wide event.
  if (const json* t = find_field(m.body, "tenant_id"); t != nullptr && !t->is_null()) {
    if (!t->is_string() || !is_valid_tenant_id(t->get<std::string>())) {
      ctx.log("events queue: dropping malformed message " + m.id + ": tenant_id: not a tenant id");
      co_return std::nullopt;
    }
    event->tenant_id = t->get<std::string>();
  }
  auto appended = co_await append_event(ctx, std::move(event).value());
  if (appended) co_return std::nullopt;
  const Error& why = appended.error();
  if (why.status() < 500) {
    // Refused, not failed (a payload that breaks the type's registered schema): no retry can change
    // that, so the message is dropped with the reason in the log, like a malformed one.
    ctx.log("events queue: dropping refused message " + m.id + ": " + why.message);
    co_return std::nullopt;
  }
  ctx.log("events queue: retrying message " + m.id + " (attempt " + std::to_string(m.attempts) +
          "): " + why.message);
  co_return backoff_seconds(m.attempts);
}
}  // namespace

Task<QueueOutcome> ingest_batch(Context& ctx, std::vector<QueueMessage> batch) {
  // The messages of a batch are appended concurrently; event_id and idempotency constraints keep
  // duplicates (in the batch or across deliveries) to one row.
  std::vector<std::string> ids;
  std::vector<Task<std::optional<int>>> work;
  for (QueueMessage& m : batch) {
    ids.push_back(m.id);
    work.push_back(ingest_one(ctx, std::move(m)));
  }
  std::vector<std::optional<int>> results = co_await when_all(std::move(work));
  QueueOutcome outcome;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (results[i]) {
      outcome.retry.emplace_back(ids[i], *results[i]);
    } else {
      outcome.ack.push_back(ids[i]);
    }
  }
  co_return outcome;
}

}  // namespace ss::events
