#pragma once
// Every SQL statement of the ledger (migrations/events/), as named constants in store.cpp behind
// the typed functions below. Handlers, drainers and consumers never build SQL: they call these, and
// get rows back as structs decoded once (a row of the wrong shape is a corrupt_row error).
//
// Functions named *_statement return a D1Statement to be committed in a batch with others (a
// drain's commit: dedupe, run log, quarantine, cursor and lock renewal travel together).

#include "shared/effects.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ss::events {

inline constexpr const char* kDb = "EVENTS_DB";

// Bulk statements carry their rows as one JSON array parameter read back with json_each, so a drain
// batch of 500 events × 8 starts is a handful of statements instead of thousands (each statement's
// SQL text crosses the boundary once). At most this many rows per statement: D1 caps a bound value
// at 2 MB, and a row here is well under 1 KB.
inline constexpr std::size_t kBulkRows = 250;

// ---- events -------------------------------------------------------------------------------------

// One row of `events`. The payload stays JSON text: a consumer that cannot parse it quarantines
// the event rather than failing the whole read.
// One row of a read page: an event's position, and its view as JSON text — byte for byte
// dump_json(EventRow::view()), written by SQLite (kEventView in store.cpp) — unless the host held
// the views back (EventPage::held), which it splices into the response unseen by the core.
struct EventPageRow {
  std::int64_t seq = 0;
  std::string event_id;
  std::optional<std::string> view;
  static EventPageRow decode(RowReader& r);
};

struct EventPage {
  // The last two when the host held the views, else every row read (each with its view).
  std::vector<EventPageRow> rows;
  std::size_t count =
      0;  // the number of rows read: the page's events, and one more if a page follows
  std::int64_t held = 0;  // the host's handle of the views, 0 when they came in the rows
};

struct EventRow {
  std::int64_t seq = 0;  // the ledger's insertion order (the drain cursor), never the producer's
  std::string event_id;  // identity and dedupe key, unique per tenant
  std::optional<std::string> tenant_id;
  std::string event_type;
  std::string entity_type;
  std::string entity_id;
  std::string payload_json;
  std::optional<std::string> idempotency_key;
  std::optional<std::string> caused_by;
  std::optional<std::string> workflow_run_id;
  std::optional<std::string> source_system;
  std::string occurred_at;
  std::string recorded_at;
  std::optional<std::int64_t> sequence_no;

  std::string tenant_key() const { return tenant_id.value_or(""); }
  // The API view (payload parsed back to JSON; an unreadable payload shows as {}).
  json view() const;
  static EventRow decode(RowReader& r);
  // Every column but payload_json (a timeline page may leave it out).
  static EventRow decode_without_payload(RowReader& r);
};

// The events at some seqs, as a release pass of held starts reads them at once: the rows that
// decode, and why each one that does not (by its seq) is unreadable. A seq in neither is gone.
struct EventsAt {
  std::vector<EventRow> rows;  // in seq order
  std::map<std::int64_t, std::string> unreadable;
};

// What an INSERT of a new event binds; nullopt fields are stored as NULL.
struct EventInsert {
  std::string event_id;
  std::optional<std::string> tenant_id;
  std::string event_type;
  std::string entity_type;
  std::string entity_id;
  std::string payload_json;
  std::optional<std::string> idempotency_key;
  std::optional<std::string> caused_by;
  std::optional<std::string> workflow_run_id;
  std::optional<std::string> source_system;
  std::string occurred_at;
  std::string recorded_at;
  std::optional<std::int64_t> sequence_no;
};

// GET /api/events: every filter optional ("" / nullopt = no filter).
struct EventFilter {
  std::optional<std::string> tenant_id;  // nullopt: every tenant
  // An event-type glob (`*`, `?`), matched by SQLite's GLOB: case-sensitive, with the semantics of
  // a subscription's glob_match; "" for any type.
  std::string type_glob;
  std::string entity_type;
  std::string entity_id;
  std::string after;  // event_id cursor, exclusive (in the listing's order)
  std::optional<std::int64_t>
      after_seq;              // the cursor's insertion position, when the cursor names it
  bool newest_first = false;  // order=desc: by insertion sequence, newest first
  int limit = 100;
};

// Retention's view of an old event.
struct AgedEvent {
  std::int64_t seq = 0;
  std::string event_id;
  std::optional<std::string> tenant_id;
  std::string event_type;
  std::string recorded_at;
  static AgedEvent decode(RowReader& r);
};

// What an emit reads in its first round trip: the schema of its type and the tenant's event already
// holding its idempotency key (kEmitLookup: one statement, one row always).
struct EmitLookup {
  std::optional<std::string> schema_json;        // the JSON Schema registered for the type
  std::optional<std::string> existing_event_id;  // the tenant's event holding the idempotency key
  static EmitLookup decode(RowReader& r);
};

// An emit's first round trip: whether the event was written, and what was read after the attempt.
struct EmitAttempt {
  bool inserted = false;
  EmitLookup lookup;
};

class EventStore {
 public:
  // One D1 batch (one round trip): the event inserted unless a JSON Schema is registered for its
  // type (or a constraint — event_id, idempotency — ignores it), then kEmitLookup's row, read after
  // the attempt (`existing_event_id` is the new event itself when it was inserted with a key).
  static Task<Result<EmitAttempt>> insert_unless_schema(const EventInsert& event,
                                                        const std::string& tenant_key);
  // true when the row was written; false when a constraint (event_id, idempotency) ignored it.
  static Task<Result<bool>> insert(const EventInsert& event);
  // The same INSERT OR IGNORE for many events, to commit in a batch (the ledger's own events: no
  // schema check), inserted in the order given (their seq follows it).
  static std::vector<D1Statement> insert_statements(const std::vector<EventInsert>& events);
  // After an ignored insert: the tenant's event holding that (tenant, idempotency key), else the
  // one holding that (tenant, event_id). Another tenant's events are never looked at.
  static Task<Result<std::optional<std::string>>> find_existing(
      const std::string& event_id, const std::string& tenant_key,
      const std::optional<std::string>& idempotency_key);
  static Task<Result<std::optional<EventRow>>> at(std::int64_t seq);
  // The events at these seqs in one query; a row that does not decode is reported, not fatal.
  static Task<Result<EventsAt>> at_seqs(const std::vector<std::int64_t>& seqs);
  // The first insertion of an event_id (in any tenant), for replay; nullopt when unknown.
  static Task<Result<std::optional<std::int64_t>>> first_seq_of(const std::string& event_id);
  // The event_id just before `seq` in insertion order ("" when none), for replay's cursor.
  static Task<Result<std::string>> event_id_before(std::int64_t seq);
  // A read page: each event's position and its view as JSON text, written by SQLite
  // (EventPageRow), the views held back by the host when it holds columns (docs/abi.md).
  static Task<Result<EventPage>> read_page(const EventFilter& filter);
  // A drain batch: the events inserted after `cursor_seq`, in insertion order.
  static Task<Result<std::vector<EventRow>>> after_cursor(std::int64_t cursor_seq, int limit);
  // Retention: the oldest events recorded before `cutoff_id` whose payload is still there.
  // Unredacted events recorded before `recorded_before` (RFC 3339), insertion order, at most
  // `limit`.
  static Task<Result<std::vector<AgedEvent>>> aged(const std::string& recorded_before, int limit);
  static D1Statement redact_statement(const std::vector<std::int64_t>& seqs,
                                      const std::string& now);
};

// ---- drain state: cursors, locks, kill switches -------------------------------------------------

// Where a consumer stands: the last seq it has fully processed, and that event's id (what drain
// reports show; "" before the first event).
struct Cursor {
  std::int64_t seq = 0;
  std::string event_id;
  static Cursor decode(RowReader& r);
};

// Who opens a drain batch: the consumer, its lock, the run holding it and the kill switches that
// stop it.
struct DrainOpeningKey {
  std::string consumer;
  std::string lock;
  std::string holder;
  std::vector<std::string> switches;
};

// What opening a drain batch read, in the same D1 batch as its lock statement.
struct DrainOpening {
  bool killed = false;      // one of the switches is on (the run holds no lock)
  bool holds_lock = false;  // this run holds the consumer's lock
  Cursor cursor;
  std::vector<EventRow> rows;  // the batch after the cursor; empty unless holding and not killed
};

class DrainState {
 public:
  // The one D1 batch that opens a drain run: take the lock unless a switch is on, then the reads of
  // DrainOpening (up to `limit` events).
  static std::vector<D1Statement> open_statements(const DrainOpeningKey& key, std::int64_t now_ms,
                                                  std::int64_t ttl_ms, int limit);
  // The statements that open a run's next batch at the end of the previous batch's commit: let the
  // lock go if a switch is on, renew it otherwise, then the same reads.
  static std::vector<D1Statement> continue_statements(const DrainOpeningKey& key,
                                                      std::int64_t expires_at_ms, int limit);
  // Decodes the reads of either list: the last two results of its D1 batch.
  static Result<DrainOpening> opening_of(const std::vector<D1Result>& results);
  static D1Statement release_statement(const std::string& lock, const std::string& holder);
  // Takes the named lock for `holder` unless a live one exists; true when taken.
  static Task<Result<bool>> claim(const std::string& lock, const std::string& holder,
                                  std::int64_t now_ms, std::int64_t ttl_ms);
  static Task<Status> release(const std::string& lock, const std::string& holder);
  static D1Statement renew_statement(const std::string& lock, const std::string& holder,
                                     std::int64_t expires_at_ms);
  static D1Statement advance_statement(const std::string& consumer, const Cursor& cursor,
                                       const std::string& now, int read);
  // The same only while `holder` holds `lock`: what a run commits with its batch, so a run that
  // outlived its lock cannot overwrite a cursor a replay (or the next run) has moved.
  static D1Statement advance_held_statement(const std::string& consumer, const Cursor& cursor,
                                            const std::string& now, int read,
                                            const std::string& lock, const std::string& holder);
  // true when any of the named kill switches is on.
  static Task<Result<bool>> any_switch_on(const std::vector<std::string>& names);
  // The name of one of the named kill switches that is on; nullopt when none is.
  static Task<Result<std::optional<std::string>>> switch_on(const std::vector<std::string>& names);
};

// ---- workflow_runner: dedupe claims, run log, quarantine ----------------------------------------

struct QuarantineRow {
  std::string consumer;
  std::int64_t seq = 0;
  std::string event_id;
  std::string reason;
  std::int64_t attempts = 0;
  std::string quarantined_at;
  std::optional<std::string> resolved_at;
  std::optional<std::string> retry_at;   // the automatic retry's time (null: none, by hand only)
  std::optional<std::string> tenant_id;  // its event's (null: platform-wide, or the event is gone)
  json view() const;
  static QuarantineRow decode(RowReader& r);
};

// One start of a workflow for an event, named by its dedupe key.
struct StartRef {
  std::int64_t seq = 0;
  std::string key;
  std::string event_id;
};

// One line of workflow_run_log.
struct RunLogEntry {
  std::string run_id;
  std::string workflow_type;
  std::string event_id;
  std::string subscription_id;
  bool started = false;
  int http_status = 0;  // 0: no answer
};

class Dedupe {
 public:
  // Starts already confirmed for the events with seq in (after, last]: (seq, dedupe key) pairs.
  // Rows name their event by seq: an event_id alone may be another tenant's event too.
  static Task<Result<std::vector<std::pair<std::int64_t, std::string>>>> started_keys(
      const std::string& consumer, std::int64_t after, std::int64_t last);
  // The same for the events at these seqs (a release pass's held events), in one query.
  static Task<Result<std::vector<std::pair<std::int64_t, std::string>>>> started_keys_of(
      const std::string& consumer, const std::vector<std::int64_t>& seqs);
  // Claims starts for `holder`, taking over claims made at or before `stale_before_ms`. Each
  // statement returns the (seq, dedupe_key) rows of the claims that landed (keys_of()).
  static std::vector<D1Statement> claim_statements(const std::string& consumer,
                                                   const std::vector<StartRef>& starts,
                                                   const std::string& now,
                                                   const std::string& holder, std::int64_t now_ms,
                                                   std::int64_t stale_before_ms);
  // The claims of events with seq in [first, last] that another run still holds (not started):
  // rows (seq, dedupe_key), read in the claims' batch, after them.
  static D1Statement others_claims_statement(const std::string& consumer, std::int64_t first,
                                             std::int64_t last, const std::string& holder);
  static Result<std::vector<std::pair<std::int64_t, std::string>>> keys_of(const D1Result& r);
  static std::vector<D1Statement> started_statements(const std::string& consumer,
                                                     const std::string& holder,
                                                     const std::vector<StartRef>& starts);
  // Releases claims this run holds and did not start (a failed start, or one not attempted).
  static std::vector<D1Statement> unclaim_statements(const std::string& consumer,
                                                     const std::string& holder,
                                                     const std::vector<StartRef>& starts);
  static std::vector<D1Statement> run_log_statements(const std::string& consumer,
                                                     const std::vector<RunLogEntry>& entries,
                                                     const std::string& now);
};

// A quarantined workflow start whose failure may pass is tried again by the */2 cron, 2, 4, 8, 16
// and 32 minutes apart: six attempts in all (docs/runbook-events.md "Retries of failed starts").
inline constexpr int kMaxStartAttempts = 6;
// The quarantine reason of an event whose start kill:high_risk_ops holds (workflow_runner.h).
inline constexpr const char* kHeldReason = "held: kill:high_risk_ops";

class Quarantine {
 public:
  // `passing`: the failure may pass (a target's 5xx, 408 or 429, a timeout, a network error): the
  // row gets a time for an automatic retry while its attempts are fewer than kMaxStartAttempts.
  static D1Statement put_statement(const std::string& consumer, std::int64_t seq,
                                   const std::string& event_id, const std::string& reason,
                                   const std::string& now, bool passing = false);
  // Open rows whose automatic retry is due at `now`, the earliest first, at most `limit`.
  static Task<Result<std::vector<QuarantineRow>>> due_retries(const std::string& consumer,
                                                              const std::string& now, int limit);
  static D1Statement resolve_statement(const std::string& consumer, std::int64_t seq,
                                       const std::string& now);
  // Resolves the open rows of these events (no statement needed when `seqs` is empty).
  static D1Statement resolve_many_statement(const std::string& consumer,
                                            const std::vector<std::int64_t>& seqs,
                                            const std::string& now);
  // The consumer's quarantine row for that event_id (an open one first, when two tenants' events
  // share the id), or the one of that seq (the operator's `id.seq`).
  static Task<Result<std::optional<QuarantineRow>>> find(const std::string& consumer,
                                                         const std::string& event_id,
                                                         std::optional<std::int64_t> seq);
  // consumer "" = every consumer; `all` includes resolved rows.
  // A page of at most `limit` rows after (after_seq, after_consumer), oldest first.
  static Task<Result<std::vector<QuarantineRow>>> list(const std::string& consumer, bool all,
                                                       std::int64_t after_seq,
                                                       const std::string& after_consumer,
                                                       std::int64_t limit);
  // The consumer's open rows quarantined with exactly `reason`, oldest first, at most `limit`.
  static Task<Result<std::vector<QuarantineRow>>> open_with_reason(const std::string& consumer,
                                                                   const std::string& reason,
                                                                   int limit);
};

// ---- configuration: subscriptions, workflow definitions, schemas, kill switches -----------------

struct SubscriptionRow {
  std::string subscription_id;
  std::string event_type_glob;
  std::string workflow_type;
  std::optional<std::string> filter_expr;
  std::optional<std::string> input_mapper;  // JSON text
  bool enabled = false;
  std::string created_at;
  json view() const;
  static SubscriptionRow decode(RowReader& r);
};

struct WorkflowRow {
  std::string workflow_type;
  std::string target_json;
  std::string updated_at;
  std::int64_t risk_level = 0;  // 0-5; kill:high_risk_ops holds starts at kHighRiskLevel and above
  json view() const;
  static WorkflowRow decode(RowReader& r);
};

struct SchemaRow {
  std::string event_type;
  std::string schema_json;
  std::string updated_at;
  json view() const;
  static SchemaRow decode(RowReader& r);
};

struct KillSwitchRow {
  std::string name;
  bool enabled = false;
  std::string updated_at;
  json view() const;
  static KillSwitchRow decode(RowReader& r);
};

class ConfigStore {
 public:
  static Task<Status> insert_subscription(const SubscriptionRow& row);
  static Task<Result<std::vector<SubscriptionRow>>> subscriptions();
  static Task<Result<std::vector<SubscriptionRow>>> enabled_subscriptions();
  static Task<Result<std::optional<SubscriptionRow>>> subscription(const std::string& id);
  static Task<Result<bool>> delete_subscription(const std::string& id);  // false: no such row
  // PATCH: every column but the id and created_at; false when there is no such row.
  static Task<Result<bool>> update_subscription(const SubscriptionRow& row);

  // true when the type was new.
  static Task<Result<bool>> upsert_workflow(const std::string& type, const std::string& target_json,
                                            std::int64_t risk_level, const std::string& now);
  static Task<Result<std::vector<WorkflowRow>>> workflows();
  static Task<Result<std::optional<WorkflowRow>>> workflow(const std::string& type);
  static Task<Result<bool>> delete_workflow(const std::string& type);

  // true: this write registered the schema (none before), false: it replaced one.
  static Task<Result<bool>> upsert_schema(const std::string& type, const std::string& schema_json,
                                          const std::string& now);
  static Task<Result<std::vector<SchemaRow>>> schemas();
  static Task<Result<bool>> delete_schema(const std::string& type);

  static Task<Result<bool>> delete_kill_switch(const std::string& name);  // false: no such row
  static Task<Status> put_kill_switch(const std::string& name, bool enabled,
                                      const std::string& now);
  static Task<Result<std::vector<KillSwitchRow>>> kill_switches();
};

// ---- aggregates: timelines, rates, retention summaries, health counts ---------------------------

struct TimelineRow {
  std::int64_t event_count = 0;
  std::string first_event_id;
  std::string last_event_id;
  std::string last_event_type;
  std::string last_occurred_at;
  json view() const;
  static TimelineRow decode(RowReader& r);
};

// One line of an entity's timeline (entity_timeline_entries, migration 0007): every column of the
// event but its payload, plus a display title. `indexed` rows come from the materialized list (up
// to timeline_indexer's cursor); the others were read live from `events` (the tail after the
// cursor), and their title is "" until the reader fills it (timeline_indexer.h).
struct TimelineEntry {
  EventRow event;  // payload_json empty when the read did not ask for payloads
  bool with_payload = false;
  std::string title;
  bool indexed = false;
  // The keys of EventRow::view() (payload only when read), plus title and indexed, and seq for the
  // operator (with_seq): seq is the ledger-wide insertion order, and gaps between a tenant's own
  // seqs would count the other tenants' events.
  json view(bool with_seq) const;
  static TimelineEntry decode(RowReader& r);
};

// One page of an entity's timeline: one tenant's (tenant_id set) or every tenant's (nullopt).
struct TimelineFilter {
  std::optional<std::string> tenant_id;
  std::string entity_type;
  std::string entity_id;
  std::string after;  // event_id of the previous page's last entry, exclusive; "" from the start
  std::optional<std::int64_t> after_seq;  // its insertion position ("<event_id>.<seq>" cursors)
  bool newest_first = false;
  bool with_payload = true;
  bool with_seq = false;  // the operator's pages show each event's seq (TimelineEntry::view)
  int limit = 500;
};

// A page of an entity's timeline, and whether its `after` named an event of that timeline.
struct TimelinePage {
  std::vector<TimelineEntry> entries;
  // false: `after` (with its seq, when it carried one) is not an event of this entity as the reader
  // sees it (this tenant's, or any tenant's for the operator without ?tenant=); `entries` is empty.
  bool after_known = true;
};

// One consumer's line of the health snapshot; the ledger-wide counts repeat on every line.
struct ConsumerHealthRow {
  std::string consumer;
  std::string cursor;                        // event_id at the cursor ("" before the first)
  std::optional<std::string> oldest_unread;  // recorded_at of the first event after the cursor
  std::int64_t capped = 0;                   // events.fanout_capped records
  std::int64_t quarantined = 0;              // open quarantine rows
  bool killed = false;                       // a kill switch stops this consumer on purpose
  static ConsumerHealthRow decode(RowReader& r);
};

class AggregateStore {
 public:
  // Counts each event into its entity's summary unless the summary already holds a newer event
  // (bulk statements, applied in the order given).
  static std::vector<D1Statement> timeline_statements(const std::vector<EventRow>& events);
  static Task<Result<std::optional<TimelineRow>>> timeline(const std::string& tenant_key,
                                                           const std::string& entity_type,
                                                           const std::string& entity_id);
  // One materialized entry per event (titles[i] is events[i]'s), INSERT OR IGNORE on the event's
  // (entity, tenant, seq): a replayed batch adds nothing. Bulk statements, to commit with the
  // cursor.
  static std::vector<D1Statement> timeline_entry_statements(const std::vector<EventRow>& events,
                                                            const std::vector<std::string>& titles);
  // A page of the entity's timeline in insertion order (seq): the materialized entries up to
  // timeline_indexer's cursor and, after it, the events not yet indexed, read live from `events`
  // in the same query (so a page is never older than the ledger and never holds an event twice).
  // An `after` that is not an event of this entity (for this tenant), or whose seq is not that
  // event's, is an empty page with after_known false: the check rides in the page's D1 batch.
  static Task<Result<TimelinePage>> timeline_page(const TimelineFilter& filter);
  // Counts one event into its type's window unless the window already counted a later seq.
  static D1Statement rate_statement(const std::string& event_type, std::int64_t window_start_ms,
                                    std::int64_t seq, const std::string& event_id);
  static D1Statement retention_summary_statement(const std::string& day,
                                                 const std::string& tenant_key,
                                                 const std::string& event_type, std::int64_t count,
                                                 const std::string& first_id,
                                                 const std::string& last_id,
                                                 const std::string& tombstone_id);
  // Everything /health reports, in one D1 query: per consumer its cursor and oldest unread
  // event, plus cap records and open quarantine rows.
  static Task<Result<std::vector<ConsumerHealthRow>>> health(
      const std::vector<std::string>& consumers);
};

// ---- anomaly_detector, reflexion_analyzer, customer_health_watcher ---------------------------

// A rate window ready to be judged: its count and the sum of the type's windows before it.
struct RateCandidate {
  std::string event_type;
  std::int64_t window_start_ms = 0;
  std::int64_t event_count = 0;
  std::int64_t trailing = 0;  // events in the baseline span before the window
  std::string last_event_id;  // the last event counted into the window
  static RateCandidate decode(RowReader& r);
};

struct SignalRow {
  std::string rule;
  std::string tenant_key;
  std::string subject;
  std::int64_t window_start_ms = 0;
  std::int64_t window_end_ms = 0;
  std::int64_t event_count = 0;
  std::string first_event_id;
  std::string last_event_id;
  static SignalRow decode(RowReader& r);
};

class AnomalyStore {
 public:
  // Windows starting in [from_ms, until_ms) with at least min_count events, each with the sum of
  // its type's windows in the baseline_span_ms before it; oldest first, at most `limit`.
  static Task<Result<std::vector<RateCandidate>>> rate_candidates(std::int64_t from_ms,
                                                                  std::int64_t until_ms,
                                                                  std::int64_t baseline_span_ms,
                                                                  std::int64_t min_count,
                                                                  std::int64_t limit);
  static D1Statement signal_statement(const std::string& rule, const std::string& tenant_key,
                                      const std::string& subject, std::int64_t window_start_ms,
                                      std::int64_t window_end_ms, std::int64_t seq,
                                      const std::string& event_id);
  // Signal windows that ended in (from_end_ms, until_end_ms] with a count at or over their rule's
  // threshold (`thresholds`: {"rule": n}); the earliest ended first, at most `limit`.
  static Task<Result<std::vector<SignalRow>>> ended_signals(std::int64_t from_end_ms,
                                                            std::int64_t until_end_ms,
                                                            const json& thresholds,
                                                            std::int64_t limit);
  static Task<Result<std::int64_t>> judged_until(const std::string& consumer);
  static D1Statement judged_statement(const std::string& consumer, std::int64_t until_ms);
};

struct ReflexionRow {
  std::string subject_kind;
  std::string subject;
  std::string error_class;
  std::int64_t failure_count = 0;
  std::string first_seen_at;
  std::string last_seen_at;
  std::optional<std::string> last_error;
  std::string example_event_ids;  // JSON array text
  std::string tenants;            // JSON array text
  json view() const;
  static ReflexionRow decode(RowReader& r);
};

class ReflexionStore {
 public:
  static D1Statement record_statement(const std::string& subject_kind, const std::string& subject,
                                      const std::string& error_class, const std::string& error,
                                      const std::string& event_id, const std::string& tenant_key,
                                      const std::string& recorded_at, std::int64_t seq);
  // subject "" = every subject; most failures first.
  static Task<Result<std::vector<ReflexionRow>>> list(const std::string& subject, int limit);
};

struct TenantHealthRow {
  std::string tenant_id;
  std::int64_t score = 100;
  std::string band = "healthy";
  std::string signals_json = "{}";
  std::int64_t last_seq = 0;
  std::optional<std::string> last_event_at;
  std::optional<std::string> band_changed_at;
  std::string updated_at;
  static TenantHealthRow decode(RowReader& r);
};

class HealthStore {
 public:
  // The rows of these tenants (those that have one).
  static Task<Result<std::vector<TenantHealthRow>>> rows(const std::vector<std::string>& tenants);
  static Task<Result<std::optional<TenantHealthRow>>> find(const std::string& tenant_id);
  // Writes the row unless a run already wrote a later seq.
  static D1Statement upsert_statement(const TenantHealthRow& row);
};

// ---- operator alerts: the outbox ----------------------------------------------------------------

struct AlertRow {
  std::string alert_key;
  std::string kind;
  std::string summary;
  std::string details_json;
  std::string created_at;
  std::int64_t attempts = 0;
  std::optional<std::string> pagerduty_sent_at;
  std::optional<std::string> slack_sent_at;
  std::optional<std::string> last_error;
  json view() const;
  static AlertRow decode(RowReader& r);
};

class AlertStore {
 public:
  // Inserted once per key: a second call with the same key changes nothing.
  static D1Statement enqueue_statement(const std::string& key, const std::string& kind,
                                       const std::string& summary, const json& details,
                                       const std::string& now);
  // The alert, unless `cap` alerts of its kind were created since `since`; when that keeps it out,
  // the one alert `cap_key` (kind "<kind>_alerts_capped") instead, once. One batch, in order.
  static std::vector<D1Statement> enqueue_capped_statements(
      const std::string& key, const std::string& kind, const std::string& summary,
      const json& details, const std::string& now, const std::string& since, int cap,
      const std::string& cap_key, const std::string& cap_summary, const json& cap_details);
  // Rows with a configured channel not yet sent, fewer than max_attempts tries, oldest first.
  static Task<Result<std::vector<AlertRow>>> pending(bool pagerduty, bool slack, int max_attempts,
                                                     int limit);
  static D1Statement attempt_statement(const std::string& key, bool pagerduty_sent, bool slack_sent,
                                       const std::string& error, const std::string& now);
  static Task<Result<std::vector<AlertRow>>> recent(int limit);
  // consumer_stalled alerts that no "resolved:<key>" row answers yet, oldest first.
  static Task<Result<std::vector<AlertRow>>> open_stalls(int limit);
  // How many consumer_stalled rows `key` (a consumer and cursor) has: its first episode and the
  // later ones ("<key>#<n>").
  static Task<Result<std::int64_t>> stall_episodes(const std::string& key);
};

// Commits statements in one D1 batch (all or nothing).
Task<Status> commit(const std::vector<D1Statement>& statements);

}  // namespace ss::events
