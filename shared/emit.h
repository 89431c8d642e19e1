#pragma once
// emit_event(): how any platform worker writes to the event ledger.
//
// The ULID is made here, at the producer, and the event travels through the ledger's queue
// (EVENTS_QUEUE → siteswarm-events), so a producer never waits on the ledger's D1 and never loses
// an event when the ledger is slow or down: the queue retries, and the ledger dedupes by event_id,
// which makes at-least-once delivery exactly-once in the stream.

#include "shared/runtime.h"

#include <string>

namespace ss {

inline constexpr const char* kEventsQueueBinding = "EVENTS_QUEUE";

struct EventDraft {
  std::string event_type;  // dotted lower case: lead.received
  std::string entity_ref;  // type:id, e.g. lead:01J…
  json payload = json::object();
  std::string tenant_id;             // the tenant whose request caused it ("" = platform-wide)
  std::string idempotency_key = {};  // "= {}": left out of an aggregate initializer on purpose
  std::string caused_by = {};
  std::string workflow_run_id = {};
};

// The queue message body (also accepted by POST /api/events from the operator).
json event_message(const EventDraft& draft, const std::string& event_id, const std::string& source,
                   std::int64_t now_ms);

// Returns the new event's id once the queue has accepted it. An empty caused_by / workflow_run_id
// is filled from the workflow run the request belongs to (Context::provenance()), if any.
Task<Result<std::string>> emit_event(Context& ctx, EventDraft draft);

// emit_event() without the send: the queue message of a new event (its id drawn now), for a caller
// that sends it itself, e.g. after the answer with wait_until_sent() (shared/app.h).
Task<Result<json>> new_event_message(Context& ctx, EventDraft draft);

}  // namespace ss
