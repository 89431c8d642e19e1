#pragma once
// The ledger's write and read paths: validating a new event, appending it exactly once (by event_id
// and by idempotency key), and reading the stream back with globs, entity filters and a ULID
// cursor.

#include "shared/effects.h"
#include "shared/http.h"
#include "workers/events/store.h"

#include <optional>
#include <string>

namespace ss::events {

inline constexpr std::size_t kMaxPayloadBytes = 64 * 1024;
inline constexpr std::size_t kMaxEventBody = kMaxPayloadBytes + 16 * 1024;
inline constexpr std::size_t kMaxEventTypeLength = 128;
// A read's `type` filter with a wildcard: D1's limit on a GLOB pattern (bytes).
inline constexpr std::size_t kMaxTypeGlobPattern = 50;
inline constexpr std::size_t kMaxRefLength = 200;
inline constexpr int kDefaultReadLimit = 100;
inline constexpr int kMaxReadLimit = 500;
// How far ahead of the ledger's clock a producer's event_id may be (clock skew between producers
// and the ledger). The drain order never depends on it: drainers follow the ledger's own insertion
// sequence.
inline constexpr std::int64_t kMaxEventIdSkewMs = 5 * 60 * 1000;

// The idempotency keys the ledger mints for its own records, per tenant like every key, start with
// one of these prefixes (docs/runbook-events.md "Reserved idempotency keys"). A producer's key with
// such a prefix is refused (400 invalid_event naming idempotency_key; a queued one is dropped as
// malformed), so no producer can take a key first and have the ledger's own record ignored as its
// duplicate. The formats are the ones already stored: rows written before the check keep
// deduplicating. A new kind of internal record takes a prefix from this list or adds one here.
inline constexpr std::string_view kKeyRunStarted = "workflow.run_started:";
inline constexpr std::string_view kKeyRunFailed = "workflow.run_failed:";
inline constexpr std::string_view kKeyRunCompleted = "workflow.run_completed:";
inline constexpr std::string_view kKeyHealthChanged = "tenant.health_changed:";
inline constexpr std::string_view kKeyAnomaly = "anomaly:";
inline constexpr std::string_view kKeyFanoutCapped = "fanout_capped:";
inline constexpr std::string_view kKeyRetention = "retention:";
inline constexpr std::string_view kKeyLedger = "ledger:";  // for records still to come
inline constexpr std::string_view kReservedKeyPrefixes[] = {
    kKeyRunStarted, kKeyRunFailed,    kKeyRunCompleted, kKeyHealthChanged,
    kKeyAnomaly,    kKeyFanoutCapped, kKeyRetention,    kKeyLedger};
bool is_reserved_idempotency_key(std::string_view key);

// The types of the ledger's own records that its consumers treat as the ledger's word, not traffic:
// retention never redacts `events.tombstoned`, the detectors skip `anomaly.*`, `events.*` and
// `tenant.health*`. A tenant's `POST /api/events` of such a type is refused (400 invalid_event
// naming event_type): a tenant, or the public through a site that opens emit, could otherwise keep
// a payload past retention as a "tombstone" or forge the ledger's findings. The operator may post
// them (docs/runbook-events.md: a tombstone for a wrong event). `workflow.run_*` stay open: a
// workflow that finishes later reports its own run.
inline constexpr std::string_view kLedgerTypePrefixes[] = {"events.", "anomaly.", "tenant.health"};
bool is_ledger_event_type(std::string_view type);

struct NewEvent {
  std::string event_id;  // empty: the ledger makes one
  std::optional<std::string> tenant_id;
  std::string event_type;
  std::string entity_type;
  std::string entity_id;
  json payload = json::object();
  std::string idempotency_key;
  std::string caused_by;
  std::string workflow_run_id;
  std::string source_system;
  std::string occurred_at;  // RFC 3339; empty: now
  std::optional<std::int64_t> sequence_no;
};

struct Appended {
  std::string event_id;
  bool duplicate = false;
};

bool is_event_type(std::string_view s);
// Validates a POST /api/events body or a queue message; errors are 400 invalid_event naming the
// field, or 413 for an oversize payload. The tenant is set by the caller, never read from the body
// here.
Result<NewEvent> parse_new_event(const json& body);

// POST /api/events only: a producer's event_id must be a ULID whose timestamp is at most
// kMaxEventIdSkewMs ahead of now, else 400 invalid_event naming event_id. The queue path does not
// check it: a message delayed or retried there is accepted whatever its id says, never dropped.
Status check_producer_event_id(const std::string& event_id, std::int64_t now_ms);

// Appends once: a repeated idempotency key or event_id (both per tenant) returns the first event
// instead; another tenant's event with the same event_id is a different event. A payload that
// breaks the JSON Schema registered for its type is 422 schema_violation.
Task<Result<Appended>> append_event(Context& ctx, NewEvent event);

struct ReadQuery {
  std::optional<std::string> tenant_id;  // nullopt: every tenant (operator only)
  std::string type_glob;
  std::string entity_type;
  std::string entity_id;
  std::string after;                      // the last event_id of the previous page
  std::optional<std::int64_t> after_seq;  // its insertion position ("<event_id>.<seq>" cursors)
  bool newest_first = false;  // order=desc: newest first by the ledger's insertion sequence
  int limit = kDefaultReadLimit;
};
// An `after` parameter: an event_id, or the "<event_id>.<seq>" a page read across tenants (the
// operator without tenant=) answers as `next`: event_ids are unique per tenant only, so across
// tenants the id alone may name two positions. False when it is neither.
bool parse_after(std::string after, std::string& id, std::optional<std::int64_t>& seq);
Result<ReadQuery> parse_read_query(const Request& req);
// GET /api/events's answer, {"events":[…],"next":…}: each event's view written by SQLite, and
// spliced into the body by the host when it held the views (docs/abi.md "Held columns"), here
// when it sent them along; the core never parses a payload into a tree and dumps it again.
Task<Result<Response>> read_events_response(const ReadQuery& query);

}  // namespace ss::events
