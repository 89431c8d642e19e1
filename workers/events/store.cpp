#include "workers/events/store.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"

namespace ss::events {

namespace {

// ---- events

// What an emit must know, read in its first round trip right after kInsertEventUnlessSchema: the
// JSON Schema registered for the type (NULL: none) and the tenant's event holding the idempotency
// key (NULL: none, and always NULL when ?3 is NULL, an emit without a key). One row, always.
constexpr std::string_view kEmitLookup = R"sql(
SELECT (SELECT schema_json FROM events_schema WHERE event_type = ?1) AS schema_json,
       (SELECT event_id FROM events
        WHERE COALESCE(tenant_id, '') = ?2 AND idempotency_key = ?3) AS event_id
)sql";

constexpr std::string_view kInsertEvent = R"sql(
INSERT OR IGNORE INTO events (event_id, tenant_id, event_type, entity_type, entity_id,
                              payload_json, idempotency_key, caused_by, workflow_run_id,
                              source_system, occurred_at, recorded_at, sequence_no)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
)sql";

// An emit's first round trip writes the event at once when no JSON Schema is registered for its type
// (the common case: nothing to validate first); with a schema it writes nothing, and the emit
// validates, then inserts (kInsertEvent). The same INSERT OR IGNORE otherwise, and a duplicate (the
// tenant's key or event_id already there: two seeks of the unique indexes) is not even attempted:
// an ignored insert still writes, since it draws the next seq of the AUTOINCREMENT key.
constexpr std::string_view kInsertEventUnlessSchema = R"sql(
INSERT OR IGNORE INTO events (event_id, tenant_id, event_type, entity_type, entity_id,
                              payload_json, idempotency_key, caused_by, workflow_run_id,
                              source_system, occurred_at, recorded_at, sequence_no)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
WHERE NOT EXISTS (SELECT 1 FROM events_schema WHERE event_type = ?3)
  AND NOT EXISTS (SELECT 1 FROM events
                  WHERE COALESCE(tenant_id, '') = COALESCE(?2, '') AND idempotency_key = ?7)
  AND NOT EXISTS (SELECT 1 FROM events
                  WHERE COALESCE(tenant_id, '') = COALESCE(?2, '') AND event_id = ?1)
)sql";

// ?1 is a JSON array of rows [event_id, tenant_id, event_type, entity_type, entity_id,
// payload_json, idempotency_key, caused_by, workflow_run_id, source_system, occurred_at,
// recorded_at, sequence_no]; json_each walks it in order, so the rows' seq follow it.
constexpr std::string_view kInsertEvents = R"sql(
INSERT OR IGNORE INTO events (event_id, tenant_id, event_type, entity_type, entity_id,
                              payload_json, idempotency_key, caused_by, workflow_run_id,
                              source_system, occurred_at, recorded_at, sequence_no)
SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6,
       value ->> 7, value ->> 8, value ->> 9, value ->> 10, value ->> 11, value ->> 12
FROM json_each(?1)
)sql";

// Only the caller's tenant: another tenant's event with the same id is a different event.
// Ascending on (event_id = ?1): a row holding the idempotency key comes before one that only
// holds the event_id.
constexpr std::string_view kFindExisting = R"sql(
SELECT event_id FROM events
WHERE COALESCE(tenant_id, '') = ?2 AND (event_id = ?1 OR idempotency_key = ?3)
ORDER BY event_id = ?1 LIMIT 1
)sql";

constexpr std::string_view kEventAt = R"sql(
SELECT * FROM events WHERE seq = ?1
)sql";

// ?1 is a JSON array of seqs.
constexpr std::string_view kEventsAtSeqs = R"sql(
SELECT * FROM events WHERE seq IN (SELECT value FROM json_each(?1)) ORDER BY seq
)sql";

constexpr std::string_view kFirstSeqOf = R"sql(
SELECT seq FROM events WHERE event_id = ?1 ORDER BY seq LIMIT 1
)sql";

constexpr std::string_view kEventIdBefore = R"sql(
SELECT event_id FROM events WHERE seq < ?1 ORDER BY seq DESC LIMIT 1
)sql";

// A page's events as the API shows them, written by SQLite: exactly dump_json(EventRow::view())
// — the keys in that object's (sorted) order, times stored with ".000" milliseconds shown without
// them (shown_rfc3339), the stored payload spliced as it is (json() of text written by dump_json
// renders it unchanged: numbers and escapes are kept as written), one that is not JSON shown as {}.
// SQLite escapes text values as dump_json does (\" \\ \b \f \n \r \t, other controls \u00xx,
// everything else as it is). The native tests compare the two byte for byte.
constexpr std::string_view kEventView = R"sql(
SELECT seq, event_id, json_object(
  'caused_by', caused_by,
  'entity_id', entity_id,
  'entity_ref', entity_type || ':' || entity_id,
  'entity_type', entity_type,
  'event_id', event_id,
  'event_type', event_type,
  'idempotency_key', idempotency_key,
  'occurred_at', CASE WHEN length(occurred_at) = 24 AND substr(occurred_at, 20) = '.000Z'
    THEN substr(occurred_at, 1, 19) || 'Z' ELSE occurred_at END,
  'payload', CASE WHEN json_valid(payload_json) THEN json(payload_json) ELSE json_object() END,
  'recorded_at', CASE WHEN length(recorded_at) = 24 AND substr(recorded_at, 20) = '.000Z'
    THEN substr(recorded_at, 1, 19) || 'Z' ELSE recorded_at END,
  'sequence_no', sequence_no,
  'source_system', source_system,
  'tenant_id', tenant_id,
  'workflow_run_id', workflow_run_id) AS view
FROM events)sql";

// Every filter is optional: an empty (or NULL tenant) parameter disables it. Both orders follow the
// ledger's insertion order (seq), never event_id: producers mint event_ids and can be late, so a
// reader paging with `after` by id order would never see an event whose id sorts before its cursor.
// The cursor is a position: ?7 (a seq, from a "<event_id>.<seq>" cursor) when given, else the first
// insertion visible to the caller of the event_id ?1 (the previous page's last event). An event_id
// the ledger does not hold (a client's own "since" ULID) starts before the first insertion of any
// event_id after it (every such event is on the following pages, some events with smaller ids
// too), and past the end when there is none. Written as a seq bound (CASE, not OR) so that SQLite
// reads a rowid range from the cursor instead of the whole table. `@tenant@` is the cursor's
// tenant clause (TenantClauses, below).
constexpr std::string_view kReadAscBound = R"sql(
WHERE seq > CASE
    WHEN ?7 IS NOT NULL THEN ?7
    WHEN ?1 = '' THEN 0
    ELSE COALESCE(
      (SELECT MIN(c.seq) FROM events c
       WHERE c.event_id = ?1 AND @tenant@),
      (SELECT MIN(c.seq) - 1 FROM events c
       WHERE c.event_id > ?1 AND @tenant@),
      (SELECT MAX(m.seq) FROM events m))
  END
)sql";

// A page's tenant clauses, for its cursor's lookups (`@tenant@` in the bounds) and for the page:
// every tenant (the operator without ?tenant=: no clause, ?2 is NULL and unread, and the page
// walks the seq range), or one, as equalities (not `?2 IS NULL OR …`) so that SQLite seeks its
// indexes — the cursor's event in events_identity (COALESCE(tenant_id, ''), event_id), the page in
// events_by_tenant_seq (tenant_id, seq) from the cursor on — and a small tenant's page reads its
// own events, not every other tenant's event after its cursor (?2 is then a tenant id, never NULL
// or '').
struct TenantClauses {
  std::string_view cursor;
  std::string_view page;
};
constexpr TenantClauses kAnyTenant{"1", ""};
constexpr TenantClauses kOneTenant{"COALESCE(c.tenant_id, '') = ?2", "  AND tenant_id = ?2\n"};

// The page's other filters, each optional.
// A type without a wildcard is compared as it is: D1 refuses a GLOB pattern over 50 bytes, and an
// event type may have 128 (a filter with a wildcard is refused over 50 before it gets here; SQLite's
// CASE evaluates only the branch it takes).
constexpr std::string_view kReadFilters =
    R"sql(  AND (?3 = '' OR CASE WHEN instr(?3, '*') + instr(?3, '?') = 0
    THEN event_type = ?3 ELSE event_type GLOB ?3 END)
  AND (?4 = '' OR entity_type = ?4)
  AND (?5 = '' OR entity_id = ?5)
)sql";

// order=desc: newest first, the same cursor as a bound from above. An unknown event_id is an empty
// page (there is no "before" a client's own ULID to start from).
constexpr std::string_view kReadDescBound = R"sql(
WHERE seq < CASE
    WHEN ?7 IS NOT NULL THEN ?7
    WHEN ?1 = '' THEN 9223372036854775807
    ELSE COALESCE(
      (SELECT MIN(c.seq) FROM events c
       WHERE c.event_id = ?1 AND @tenant@),
      0)
  END
)sql";

// Insertion order, never event_id order: producers mint event_ids, and can be late or wrong.
constexpr std::string_view kEventsAfterCursor = R"sql(
SELECT * FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2
)sql";

// Retention ages events by the ledger's own clock (recorded_at), never by the producer's event_id:
// among the oldest kRetentionBatch unredacted events in insertion order (the partial index
// events_unredacted, migration 0006), those recorded before the cutoff. Reading a bounded prefix
// keeps an hourly run's cost at one batch of rows, however large the ledger; recorded_at follows
// seq up to clock skew between isolates, and an event skew leaves behind is taken by a later run.
constexpr std::string_view kAgedEvents = R"sql(
SELECT seq, event_id, tenant_id, event_type, recorded_at FROM (
  SELECT seq, event_id, tenant_id, event_type, recorded_at FROM events
  WHERE redacted_at IS NULL AND event_type != 'events.tombstoned'
  ORDER BY seq LIMIT ?2
)
WHERE recorded_at < ?1 ORDER BY seq
)sql";

constexpr std::string_view kRedactEvents = R"sql(
UPDATE events SET payload_json = '{"_redacted":true}', redacted_at = ?2
WHERE seq IN (SELECT value FROM json_each(?1)) AND redacted_at IS NULL
  AND event_type != 'events.tombstoned'
)sql";

// ---- drain state

constexpr std::string_view kClaimLock = R"sql(
INSERT INTO cron_locks (name, holder, expires_at_ms) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
WHERE cron_locks.expires_at_ms <= ?4
)sql";

constexpr std::string_view kReleaseLock = R"sql(
DELETE FROM cron_locks WHERE name = ?1 AND holder = ?2
)sql";

constexpr std::string_view kRenewLock = R"sql(
UPDATE cron_locks SET expires_at_ms = ?3 WHERE name = ?1 AND holder = ?2
)sql";

constexpr std::string_view kAdvanceCursor = R"sql(
INSERT INTO event_drain_state (consumer, cursor_seq, cursor, last_run_at, events_read)
VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (consumer) DO UPDATE SET cursor_seq = excluded.cursor_seq, cursor = excluded.cursor,
                                     last_run_at = excluded.last_run_at,
                                     events_read = events_read + excluded.events_read
)sql";

// The same from a run that holds the consumer's lock (?6 name, ?7 holder), in that run's commit: a
// run whose lock expired and was taken since (by a replay, or another run) moves nothing, so a
// replayed cursor is never overwritten by a run that outlived its lock.
constexpr std::string_view kAdvanceCursorHeld = R"sql(
INSERT INTO event_drain_state (consumer, cursor_seq, cursor, last_run_at, events_read)
SELECT ?1, ?2, ?3, ?4, ?5
WHERE EXISTS (SELECT 1 FROM cron_locks WHERE name = ?6 AND holder = ?7)
ON CONFLICT (consumer) DO UPDATE SET cursor_seq = excluded.cursor_seq, cursor = excluded.cursor,
                                     last_run_at = excluded.last_run_at,
                                     events_read = events_read + excluded.events_read
)sql";

// A drain run's batches (drain.cpp). The first takes the lock unless one of the consumer's kill
// switches (?5, a JSON array of names) is on: a stopped consumer holds nothing.
constexpr std::string_view kClaimDrainLock = R"sql(
INSERT INTO cron_locks (name, holder, expires_at_ms)
SELECT ?1, ?2, ?3
WHERE NOT EXISTS (SELECT 1 FROM kill_switches
                  WHERE enabled = 1 AND name IN (SELECT value FROM json_each(?5)))
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
WHERE cron_locks.expires_at_ms <= ?4
)sql";

// A later batch opens inside the previous batch's commit: a switch turned on since lets the lock go
// there and then (the run stops), otherwise kRenewLock moves its expiry.
constexpr std::string_view kReleaseDrainLockIfKilled = R"sql(
DELETE FROM cron_locks WHERE name = ?1 AND holder = ?2
  AND EXISTS (SELECT 1 FROM kill_switches
              WHERE enabled = 1 AND name IN (SELECT value FROM json_each(?3)))
)sql";

// What either opening reads after its lock statement, in the same transaction: ?1 consumer, ?2
// lock, ?3 holder, ?4 the switches. One row.
constexpr std::string_view kDrainOpeningState = R"sql(
SELECT EXISTS (SELECT 1 FROM kill_switches
               WHERE enabled = 1 AND name IN (SELECT value FROM json_each(?4))) AS killed,
       EXISTS (SELECT 1 FROM cron_locks WHERE name = ?2 AND holder = ?3) AS holds_lock,
       COALESCE((SELECT cursor_seq FROM event_drain_state WHERE consumer = ?1), 0) AS cursor_seq,
       COALESCE((SELECT cursor FROM event_drain_state WHERE consumer = ?1), '') AS cursor
)sql";

// The batch after the cursor, read only by the lock's holder while no switch is on (a run that
// finds the lock taken or a switch on reads no events). The cursor is read here, after whatever the
// same D1 batch committed before it.
constexpr std::string_view kDrainOpeningEvents = R"sql(
SELECT * FROM events
WHERE seq > COALESCE((SELECT cursor_seq FROM event_drain_state WHERE consumer = ?1), 0)
  AND EXISTS (SELECT 1 FROM cron_locks WHERE name = ?2 AND holder = ?3)
  AND NOT EXISTS (SELECT 1 FROM kill_switches
                  WHERE enabled = 1 AND name IN (SELECT value FROM json_each(?4)))
ORDER BY seq LIMIT ?5
)sql";

// ?1 is a JSON array of switch names.
constexpr std::string_view kAnySwitchOn = R"sql(
SELECT name FROM kill_switches
WHERE enabled = 1 AND name IN (SELECT value FROM json_each(?1)) LIMIT 1
)sql";

// ---- dedupe, run log, quarantine

constexpr std::string_view kStartedKeys = R"sql(
SELECT seq, dedupe_key FROM event_consumer_dedupe
WHERE consumer = ?1 AND seq > ?2 AND seq <= ?3 AND status = 'started'
)sql";

// ?2 is a JSON array of seqs: one probe of the primary key (consumer, seq, dedupe_key) per seq.
constexpr std::string_view kStartedKeysOf = R"sql(
SELECT seq, dedupe_key FROM event_consumer_dedupe
WHERE consumer = ?1 AND seq IN (SELECT value FROM json_each(?2)) AND status = 'started'
)sql";

// ?5 is a JSON array of [seq, dedupe_key, event_id]. A claim lands when the start is new, or when
// the claim on it is older than ?4 (its run died); RETURNING lists exactly the claims that landed
// (an upsert whose WHERE is false modifies no row and returns none). `WHERE true` keeps SQLite's
// parser from reading ON CONFLICT as a join constraint of the SELECT.
constexpr std::string_view kClaimStarts = R"sql(
INSERT INTO event_consumer_dedupe (consumer, seq, dedupe_key, event_id, created_at, status, holder,
                                   claimed_at_ms)
SELECT ?1, value ->> 0, value ->> 1, value ->> 2, ?2, 'claimed', ?3, ?6 FROM json_each(?5) WHERE true
ON CONFLICT (consumer, seq, dedupe_key) DO UPDATE SET holder = excluded.holder,
                                                      claimed_at_ms = excluded.claimed_at_ms
WHERE event_consumer_dedupe.status = 'claimed' AND event_consumer_dedupe.claimed_at_ms <= ?4
RETURNING seq, dedupe_key
)sql";

constexpr std::string_view kOthersClaims = R"sql(
SELECT seq, dedupe_key FROM event_consumer_dedupe
WHERE consumer = ?1 AND seq >= ?2 AND seq <= ?3 AND status = 'claimed' AND holder != ?4
)sql";

// ?3 is a JSON array of [seq, dedupe_key]: SQLite looks each row up by (consumer, seq) through
// the primary key (an UPDATE … FROM json_each would scan the consumer's rows instead).
constexpr std::string_view kMarkStarted = R"sql(
UPDATE event_consumer_dedupe SET status = 'started'
WHERE consumer = ?1 AND holder = ?2
  AND (seq, dedupe_key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?3))
)sql";

constexpr std::string_view kUnclaim = R"sql(
DELETE FROM event_consumer_dedupe
WHERE consumer = ?1 AND holder = ?2 AND status = 'claimed'
  AND (seq, dedupe_key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?3))
)sql";

// ?3 is a JSON array of [run_id, workflow_type, event_id, subscription_id, status, http_status].
constexpr std::string_view kLogRuns = R"sql(
INSERT OR IGNORE INTO workflow_run_log (workflow_run_id, consumer, workflow_type, event_id,
                                        subscription_id, status, http_status, started_at)
SELECT value ->> 0, ?1, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, ?2
FROM json_each(?3)
)sql";

// ?6 = 1: the failure passes (migration 0009): a retry is due 2 minutes after the first attempt,
// then after twice as long each time, while fewer than ?7 attempts have been made. A row opened
// again after it was resolved, or after it was a held start (?8, the held reason), counts from 1.
// (In DO UPDATE every column names the row as it was: SQLite assigns them all at once.)
constexpr std::string_view kQuarantine = R"sql(
INSERT INTO events_quarantine (consumer, seq, event_id, reason, attempts, quarantined_at, retry_at)
VALUES (?1, ?5, ?2, ?3, 1, ?4,
        CASE WHEN ?6 = 1 AND ?7 > 1 THEN strftime('%Y-%m-%dT%H:%M:%SZ', ?4, '+2 minutes') END)
ON CONFLICT (consumer, seq) DO UPDATE SET reason = excluded.reason,
  attempts = CASE WHEN resolved_at IS NOT NULL OR reason = ?8 THEN 1 ELSE attempts + 1 END,
  resolved_at = NULL,
  retry_at = CASE WHEN resolved_at IS NOT NULL OR reason = ?8
                  THEN CASE WHEN ?6 = 1 AND ?7 > 1
                            THEN strftime('%Y-%m-%dT%H:%M:%SZ', ?4, '+2 minutes') END
                  WHEN ?6 = 1 AND attempts + 1 < ?7
                  THEN strftime('%Y-%m-%dT%H:%M:%SZ', ?4, '+' || (2 << min(attempts, 20)) || ' minutes')
             END
)sql";

// The open rows whose automatic retry is due, the earliest first.
constexpr std::string_view kDueRetries = R"sql(
SELECT q.*, e.tenant_id FROM events_quarantine q LEFT JOIN events e ON e.seq = q.seq
WHERE q.consumer = ?1 AND q.resolved_at IS NULL AND q.retry_at IS NOT NULL AND q.retry_at <= ?2
ORDER BY q.retry_at, q.seq LIMIT ?3
)sql";

constexpr std::string_view kResolveQuarantine = R"sql(
UPDATE events_quarantine SET resolved_at = ?3 WHERE consumer = ?1 AND seq = ?2
)sql";

// ?2 is a JSON array of seqs: the events a drain just handled with every start done. Their open
// rows (a replay or a later run succeeded where an earlier one quarantined) are resolved, each
// looked up through the primary key (consumer, seq).
constexpr std::string_view kResolveQuarantineSeqs = R"sql(
UPDATE events_quarantine SET resolved_at = ?3
WHERE consumer = ?1 AND resolved_at IS NULL AND seq IN (SELECT value FROM json_each(?2))
)sql";

// A row's event's tenant beside it (events.seq is the events' key): two tenants' events may share an
// event_id, and the operator tells their rows apart by tenant and seq. ?3: one seq (the operator's
// `id.seq`), or NULL for the open row first.
constexpr std::string_view kFindQuarantine = R"sql(
SELECT q.*, e.tenant_id FROM events_quarantine q LEFT JOIN events e ON e.seq = q.seq
WHERE q.consumer = ?1 AND q.event_id = ?2 AND (?3 IS NULL OR q.seq = ?3)
ORDER BY q.resolved_at IS NOT NULL, q.seq LIMIT 1
)sql";

// A page of the list, oldest first, after (?3 seq, ?4 consumer): rows are one per (consumer, seq).
constexpr std::string_view kListQuarantine = R"sql(
SELECT q.*, e.tenant_id FROM events_quarantine q LEFT JOIN events e ON e.seq = q.seq
WHERE (?1 = '' OR q.consumer = ?1) AND (?2 = 1 OR q.resolved_at IS NULL)
  AND (q.seq > ?3 OR (q.seq = ?3 AND q.consumer > ?4))
ORDER BY q.seq, q.consumer LIMIT ?5
)sql";

// The consumer's open rows with one reason (the starts kill:high_risk_ops holds), oldest first: the
// rows quarantined for other reasons never crowd them out of a page.
constexpr std::string_view kOpenQuarantineWithReason = R"sql(
SELECT * FROM events_quarantine
WHERE consumer = ?1 AND resolved_at IS NULL AND reason = ?2
ORDER BY seq LIMIT ?3
)sql";

// ---- configuration

constexpr std::string_view kInsertSubscription = R"sql(
INSERT INTO event_subscriptions (subscription_id, event_type_glob, workflow_type, filter_expr,
                                 input_mapper, enabled, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
)sql";

constexpr std::string_view kSubscriptions = R"sql(
SELECT * FROM event_subscriptions ORDER BY subscription_id
)sql";

constexpr std::string_view kEnabledSubscriptions = R"sql(
SELECT * FROM event_subscriptions WHERE enabled = 1 ORDER BY subscription_id
)sql";

constexpr std::string_view kFindSubscription = R"sql(
SELECT * FROM event_subscriptions WHERE subscription_id = ?1
)sql";

constexpr std::string_view kUpdateSubscription = R"sql(
UPDATE event_subscriptions SET event_type_glob = ?2, workflow_type = ?3, filter_expr = ?4,
                               input_mapper = ?5, enabled = ?6
WHERE subscription_id = ?1
)sql";

constexpr std::string_view kDeleteSubscription = R"sql(
DELETE FROM event_subscriptions WHERE subscription_id = ?1
)sql";

// Before kUpsertWorkflow in one batch (create_then_upsert): its `changes` say whether this write
// created the definition.
constexpr std::string_view kCreateWorkflow = R"sql(
INSERT INTO workflow_definitions (workflow_type, target_json, updated_at, risk_level)
VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (workflow_type) DO NOTHING
)sql";

constexpr std::string_view kUpsertWorkflow = R"sql(
INSERT INTO workflow_definitions (workflow_type, target_json, updated_at, risk_level)
VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (workflow_type) DO UPDATE SET target_json = excluded.target_json,
                                          updated_at = excluded.updated_at,
                                          risk_level = excluded.risk_level
)sql";

constexpr std::string_view kWorkflows = R"sql(
SELECT * FROM workflow_definitions ORDER BY workflow_type
)sql";

constexpr std::string_view kFindWorkflow = R"sql(
SELECT * FROM workflow_definitions WHERE workflow_type = ?1
)sql";

constexpr std::string_view kDeleteWorkflow = R"sql(
DELETE FROM workflow_definitions WHERE workflow_type = ?1
)sql";

// Before kUpsertSchema in one batch (create_then_upsert), as kCreateWorkflow.
constexpr std::string_view kCreateSchema = R"sql(
INSERT INTO events_schema (event_type, schema_json, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (event_type) DO NOTHING
)sql";

constexpr std::string_view kUpsertSchema = R"sql(
INSERT INTO events_schema (event_type, schema_json, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (event_type) DO UPDATE SET schema_json = excluded.schema_json,
                                       updated_at = excluded.updated_at
)sql";

constexpr std::string_view kSchemas = R"sql(
SELECT * FROM events_schema ORDER BY event_type
)sql";

constexpr std::string_view kDeleteKillSwitch = R"sql(
DELETE FROM kill_switches WHERE name = ?1
)sql";

constexpr std::string_view kDeleteSchema = R"sql(
DELETE FROM events_schema WHERE event_type = ?1
)sql";

constexpr std::string_view kPutKillSwitch = R"sql(
INSERT INTO kill_switches (name, enabled, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at
)sql";

constexpr std::string_view kKillSwitches = R"sql(
SELECT * FROM kill_switches ORDER BY name
)sql";

// ---- aggregates

// Guarded by the insertion sequence (a replayed event is not counted twice; a late event with an
// older event_id still is).
// Guarded by the insertion sequence (a replayed event is not counted twice; a late event with an
// older event_id still is). ?1 is a JSON array of [tenant_key, entity_type, entity_id, event_id,
// event_type, occurred_at, seq], applied row by row in order.
constexpr std::string_view kTimelineUpsert = R"sql(
INSERT INTO entity_timelines (tenant_key, entity_type, entity_id, event_count, first_event_id,
                              last_event_id, last_event_type, last_occurred_at, last_seq)
SELECT value ->> 0, value ->> 1, value ->> 2, 1, value ->> 3, value ->> 3, value ->> 4,
       value ->> 5, value ->> 6
FROM json_each(?1) WHERE true
ON CONFLICT (tenant_key, entity_type, entity_id) DO UPDATE SET
  event_count = event_count + 1, last_event_id = excluded.last_event_id,
  last_event_type = excluded.last_event_type, last_occurred_at = excluded.last_occurred_at,
  last_seq = excluded.last_seq
WHERE excluded.last_seq > entity_timelines.last_seq
)sql";

constexpr std::string_view kFindTimeline = R"sql(
SELECT * FROM entity_timelines WHERE tenant_key = ?1 AND entity_type = ?2 AND entity_id = ?3
)sql";

// ?1 is a JSON array of rows [entity_type, entity_id, tenant_key, seq, event_id, event_type, title,
// occurred_at, recorded_at, caused_by, workflow_run_id, source_system, idempotency_key,
// sequence_no]. The primary key (entity, tenant, seq) makes a replayed event a no-op.
constexpr std::string_view kTimelineEntries = R"sql(
INSERT OR IGNORE INTO entity_timeline_entries (entity_type, entity_id, tenant_key, seq, event_id,
                                               event_type, title, occurred_at, recorded_at,
                                               caused_by, workflow_run_id, source_system,
                                               idempotency_key, sequence_no)
SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6,
       value ->> 7, value ->> 8, value ->> 9, value ->> 10, value ->> 11, value ->> 12, value ->> 13
FROM json_each(?1)
)sql";

// A page of an entity's timeline: ?1 tenant, ?2 entity_type, ?3 entity_id, ?4 the `after` event_id
// ('' from the start), ?5 the page size, ?6 1 to read payloads, ?7 the `after` event's seq or NULL
// (an operator's page across tenants, where two tenants' events of one entity may share an id). The
// indexer's cursor splits the ledger: entries at or before it come from the materialized list,
// events after it from `events` (its entity index), both in the one query so the split and the
// entries agree (the indexer commits its entries and its cursor in one batch). Each side is limited
// before the merge, so a page reads at most twice its size. The `after` event maps to its first
// insertion in this entity (and tenant), or to the one at ?7; an unknown one is NULL, and the page
// is empty. Four variants: one tenant (the key's
// tenant column is an equality, so the page is a range scan in seq order) or every tenant (the
// operator without ?tenant=; that entity's entries are sorted), oldest or newest first.
constexpr std::string_view kTimelinePageTenantAsc = R"sql(
WITH pos AS (
  SELECT COALESCE((SELECT cursor_seq FROM event_drain_state WHERE consumer = 'timeline_indexer'), 0)
           AS indexed_seq,
         CASE WHEN ?4 = '' THEN 0 ELSE
           (SELECT MIN(c.seq) FROM events c
            WHERE c.event_id = ?4 AND COALESCE(c.tenant_id, '') = ?1 AND c.entity_type = ?2 AND c.entity_id = ?3
              AND (?7 IS NULL OR c.seq = ?7))
         END AS bound_seq
)
SELECT * FROM (
  SELECT * FROM (
    SELECT t.seq, t.event_id, NULLIF(t.tenant_key, '') AS tenant_id, t.event_type, t.entity_type,
           t.entity_id, t.title, t.occurred_at, t.recorded_at, t.caused_by, t.workflow_run_id,
           t.source_system, t.idempotency_key, t.sequence_no,
           CASE WHEN ?6 THEN (SELECT p.payload_json FROM events p WHERE p.seq = t.seq) END
             AS payload_json,
           1 AS is_indexed
    FROM entity_timeline_entries t, pos
    WHERE t.entity_type = ?2 AND t.entity_id = ?3 AND t.tenant_key = ?1
      AND t.seq > pos.bound_seq AND t.seq <= pos.indexed_seq
    ORDER BY t.seq LIMIT ?5)
  UNION ALL
  SELECT * FROM (
    SELECT e.seq, e.event_id, e.tenant_id, e.event_type, e.entity_type, e.entity_id, '' AS title,
           e.occurred_at, e.recorded_at, e.caused_by, e.workflow_run_id, e.source_system,
           e.idempotency_key, e.sequence_no, CASE WHEN ?6 THEN e.payload_json END AS payload_json,
           0 AS is_indexed
    FROM events e, pos
    WHERE e.entity_type = ?2 AND e.entity_id = ?3 AND e.tenant_id = ?1
      AND e.seq > pos.bound_seq AND e.seq > pos.indexed_seq
    ORDER BY e.seq LIMIT ?5)
)
ORDER BY seq LIMIT ?5
)sql";

constexpr std::string_view kTimelinePageTenantDesc = R"sql(
WITH pos AS (
  SELECT COALESCE((SELECT cursor_seq FROM event_drain_state WHERE consumer = 'timeline_indexer'), 0)
           AS indexed_seq,
         CASE WHEN ?4 = '' THEN 9223372036854775807 ELSE
           (SELECT MIN(c.seq) FROM events c
            WHERE c.event_id = ?4 AND COALESCE(c.tenant_id, '') = ?1 AND c.entity_type = ?2 AND c.entity_id = ?3
              AND (?7 IS NULL OR c.seq = ?7))
         END AS bound_seq
)
SELECT * FROM (
  SELECT * FROM (
    SELECT t.seq, t.event_id, NULLIF(t.tenant_key, '') AS tenant_id, t.event_type, t.entity_type,
           t.entity_id, t.title, t.occurred_at, t.recorded_at, t.caused_by, t.workflow_run_id,
           t.source_system, t.idempotency_key, t.sequence_no,
           CASE WHEN ?6 THEN (SELECT p.payload_json FROM events p WHERE p.seq = t.seq) END
             AS payload_json,
           1 AS is_indexed
    FROM entity_timeline_entries t, pos
    WHERE t.entity_type = ?2 AND t.entity_id = ?3 AND t.tenant_key = ?1
      AND t.seq < pos.bound_seq AND t.seq <= pos.indexed_seq
    ORDER BY t.seq DESC LIMIT ?5)
  UNION ALL
  SELECT * FROM (
    SELECT e.seq, e.event_id, e.tenant_id, e.event_type, e.entity_type, e.entity_id, '' AS title,
           e.occurred_at, e.recorded_at, e.caused_by, e.workflow_run_id, e.source_system,
           e.idempotency_key, e.sequence_no, CASE WHEN ?6 THEN e.payload_json END AS payload_json,
           0 AS is_indexed
    FROM events e, pos
    WHERE e.entity_type = ?2 AND e.entity_id = ?3 AND e.tenant_id = ?1
      AND e.seq < pos.bound_seq AND e.seq > pos.indexed_seq
    ORDER BY e.seq DESC LIMIT ?5)
)
ORDER BY seq DESC LIMIT ?5
)sql";

constexpr std::string_view kTimelinePageAllAsc = R"sql(
WITH pos AS (
  SELECT COALESCE((SELECT cursor_seq FROM event_drain_state WHERE consumer = 'timeline_indexer'), 0)
           AS indexed_seq,
         CASE WHEN ?4 = '' THEN 0 ELSE
           (SELECT MIN(c.seq) FROM events c
            WHERE c.event_id = ?4 AND ?1 IS NULL AND c.entity_type = ?2 AND c.entity_id = ?3
              AND (?7 IS NULL OR c.seq = ?7))
         END AS bound_seq
)
SELECT * FROM (
  SELECT * FROM (
    SELECT t.seq, t.event_id, NULLIF(t.tenant_key, '') AS tenant_id, t.event_type, t.entity_type,
           t.entity_id, t.title, t.occurred_at, t.recorded_at, t.caused_by, t.workflow_run_id,
           t.source_system, t.idempotency_key, t.sequence_no,
           CASE WHEN ?6 THEN (SELECT p.payload_json FROM events p WHERE p.seq = t.seq) END
             AS payload_json,
           1 AS is_indexed
    FROM entity_timeline_entries t, pos
    WHERE t.entity_type = ?2 AND t.entity_id = ?3 AND ?1 IS NULL
      AND t.seq > pos.bound_seq AND t.seq <= pos.indexed_seq
    ORDER BY t.seq LIMIT ?5)
  UNION ALL
  SELECT * FROM (
    SELECT e.seq, e.event_id, e.tenant_id, e.event_type, e.entity_type, e.entity_id, '' AS title,
           e.occurred_at, e.recorded_at, e.caused_by, e.workflow_run_id, e.source_system,
           e.idempotency_key, e.sequence_no, CASE WHEN ?6 THEN e.payload_json END AS payload_json,
           0 AS is_indexed
    FROM events e, pos
    WHERE e.entity_type = ?2 AND e.entity_id = ?3 AND ?1 IS NULL
      AND e.seq > pos.bound_seq AND e.seq > pos.indexed_seq
    ORDER BY e.seq LIMIT ?5)
)
ORDER BY seq LIMIT ?5
)sql";

constexpr std::string_view kTimelinePageAllDesc = R"sql(
WITH pos AS (
  SELECT COALESCE((SELECT cursor_seq FROM event_drain_state WHERE consumer = 'timeline_indexer'), 0)
           AS indexed_seq,
         CASE WHEN ?4 = '' THEN 9223372036854775807 ELSE
           (SELECT MIN(c.seq) FROM events c
            WHERE c.event_id = ?4 AND ?1 IS NULL AND c.entity_type = ?2 AND c.entity_id = ?3
              AND (?7 IS NULL OR c.seq = ?7))
         END AS bound_seq
)
SELECT * FROM (
  SELECT * FROM (
    SELECT t.seq, t.event_id, NULLIF(t.tenant_key, '') AS tenant_id, t.event_type, t.entity_type,
           t.entity_id, t.title, t.occurred_at, t.recorded_at, t.caused_by, t.workflow_run_id,
           t.source_system, t.idempotency_key, t.sequence_no,
           CASE WHEN ?6 THEN (SELECT p.payload_json FROM events p WHERE p.seq = t.seq) END
             AS payload_json,
           1 AS is_indexed
    FROM entity_timeline_entries t, pos
    WHERE t.entity_type = ?2 AND t.entity_id = ?3 AND ?1 IS NULL
      AND t.seq < pos.bound_seq AND t.seq <= pos.indexed_seq
    ORDER BY t.seq DESC LIMIT ?5)
  UNION ALL
  SELECT * FROM (
    SELECT e.seq, e.event_id, e.tenant_id, e.event_type, e.entity_type, e.entity_id, '' AS title,
           e.occurred_at, e.recorded_at, e.caused_by, e.workflow_run_id, e.source_system,
           e.idempotency_key, e.sequence_no, CASE WHEN ?6 THEN e.payload_json END AS payload_json,
           0 AS is_indexed
    FROM events e, pos
    WHERE e.entity_type = ?2 AND e.entity_id = ?3 AND ?1 IS NULL
      AND e.seq < pos.bound_seq AND e.seq > pos.indexed_seq
    ORDER BY e.seq DESC LIMIT ?5)
)
ORDER BY seq DESC LIMIT ?5
)sql";

// The event a timeline's `after` names, as the page's bound reads it (kTimelinePage*): ?1 tenant
// (NULL: every tenant, the operator without ?tenant=), ?2 entity_type, ?3 entity_id, ?4 the
// event_id, ?5 its seq or NULL. One row, whose seq is NULL when the cursor names no event of this
// entity for this reader (an unknown id, another tenant's or another entity's event, a seq that is
// not that event's).
constexpr std::string_view kTimelineAfterSeq = R"sql(
SELECT MIN(c.seq) AS seq FROM events c
WHERE c.event_id = ?4 AND (?1 IS NULL OR COALESCE(c.tenant_id, '') = ?1)
  AND c.entity_type = ?2 AND c.entity_id = ?3 AND (?5 IS NULL OR c.seq = ?5)
)sql";

// Guarded by the insertion sequence: a replayed event (seq at or below last_seq) is not counted
// again.
constexpr std::string_view kRateUpsert = R"sql(
INSERT INTO event_type_rates (event_type, window_start_ms, event_count, last_event_id, last_seq)
VALUES (?1, ?2, 1, ?3, ?4)
ON CONFLICT (event_type, window_start_ms) DO UPDATE SET event_count = event_count + 1,
                                                        last_event_id = excluded.last_event_id,
                                                        last_seq = excluded.last_seq
WHERE excluded.last_seq > event_type_rates.last_seq
)sql";

constexpr std::string_view kRetentionSummary = R"sql(
INSERT INTO events_retention_summaries (day, tenant_key, event_type, event_count, first_event_id,
                                        last_event_id, tombstone_event_id)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (day, tenant_key, event_type) DO UPDATE SET
  event_count = event_count + excluded.event_count, last_event_id = excluded.last_event_id,
  tombstone_event_id = excluded.tombstone_event_id
)sql";

// ?1 is a JSON array of consumer names. The two counts are uncorrelated subqueries: SQLite
// evaluates each once for the whole statement.
constexpr std::string_view kHealth = R"sql(
WITH c (consumer) AS (SELECT value FROM json_each(?1))
SELECT c.consumer AS consumer, COALESCE(d.cursor, '') AS cursor,
       (SELECT e.recorded_at FROM events e WHERE e.seq > COALESCE(d.cursor_seq, 0)
        ORDER BY e.seq LIMIT 1) AS oldest_unread,
       (SELECT COUNT(*) FROM events WHERE event_type = 'events.fanout_capped') AS capped,
       (SELECT COUNT(*) FROM events_quarantine WHERE resolved_at IS NULL) AS quarantined,
       (SELECT COUNT(*) FROM kill_switches k
        WHERE k.enabled = 1 AND (k.name = 'kill:' || c.consumer
                                 OR (c.consumer = 'workflow_runner' AND k.name = 'kill:fanout')))
         AS killed
FROM c LEFT JOIN event_drain_state d ON d.consumer = c.consumer
)sql";

// ---- anomaly_detector

constexpr std::string_view kRateCandidates = R"sql(
SELECT r.event_type AS event_type, r.window_start_ms AS window_start_ms,
       r.event_count AS event_count, r.last_event_id AS last_event_id,
       (SELECT COALESCE(SUM(b.event_count), 0) FROM event_type_rates b
        WHERE b.event_type = r.event_type AND b.window_start_ms >= r.window_start_ms - ?3
          AND b.window_start_ms < r.window_start_ms) AS trailing
FROM event_type_rates r
WHERE r.window_start_ms >= ?1 AND r.window_start_ms < ?2 AND r.event_count >= ?4
ORDER BY r.window_start_ms, r.event_type LIMIT ?5
)sql";

constexpr std::string_view kSignalUpsert = R"sql(
INSERT INTO anomaly_signals (rule, tenant_key, subject, window_start_ms, window_end_ms, event_count,
                             first_event_id, last_event_id, last_seq)
VALUES (?1, ?2, ?3, ?4, ?5, 1, ?7, ?7, ?6)
ON CONFLICT (rule, tenant_key, subject, window_start_ms) DO UPDATE SET
  event_count = event_count + 1, last_event_id = excluded.last_event_id,
  last_seq = excluded.last_seq
WHERE excluded.last_seq > anomaly_signals.last_seq
)sql";

// Only the rows at or over their rule's threshold (?3: {"rule": threshold}): one row per tenant or
// monitor that saw a single matching event must not crowd a burst out of the page.
constexpr std::string_view kEndedSignals = R"sql(
SELECT s.* FROM anomaly_signals s
WHERE s.window_end_ms > ?1 AND s.window_end_ms <= ?2
  AND s.event_count >= COALESCE((SELECT t.value FROM json_each(?3) t WHERE t.key = s.rule), 1)
ORDER BY s.window_end_ms, s.rule, s.subject LIMIT ?4
)sql";

constexpr std::string_view kJudgedUntil = R"sql(
SELECT judged_until_ms AS n FROM event_drain_state WHERE consumer = ?1
)sql";

constexpr std::string_view kSetJudgedUntil = R"sql(
INSERT INTO event_drain_state (consumer, judged_until_ms) VALUES (?1, ?2)
ON CONFLICT (consumer) DO UPDATE SET judged_until_ms = excluded.judged_until_ms
)sql";

// ---- reflexion_analyzer: examples keep the first 5 events of a pattern, tenants up to 20.

constexpr std::string_view kReflexionUpsert = R"sql(
INSERT INTO reflexion_log (subject_kind, subject, error_class, failure_count, first_seen_at,
                           last_seen_at, last_error, example_event_ids, tenants, last_seq)
VALUES (?1, ?2, ?3, 1, ?7, ?7, ?4, json_array(?5),
        CASE WHEN ?6 = '' THEN '[]' ELSE json_array(?6) END, ?8)
ON CONFLICT (subject_kind, subject, error_class) DO UPDATE SET
  failure_count = failure_count + 1, last_seen_at = excluded.last_seen_at,
  last_error = excluded.last_error, last_seq = excluded.last_seq,
  example_event_ids = CASE WHEN json_array_length(reflexion_log.example_event_ids) < 5
                           THEN json_insert(reflexion_log.example_event_ids, '$[#]', ?5)
                           ELSE reflexion_log.example_event_ids END,
  tenants = CASE WHEN ?6 = '' OR json_array_length(reflexion_log.tenants) >= 20
                   OR EXISTS (SELECT 1 FROM json_each(reflexion_log.tenants) WHERE value = ?6)
                 THEN reflexion_log.tenants
                 ELSE json_insert(reflexion_log.tenants, '$[#]', ?6) END
WHERE excluded.last_seq > reflexion_log.last_seq
)sql";

constexpr std::string_view kReflexionList = R"sql(
SELECT * FROM reflexion_log WHERE (?1 = '' OR subject = ?1)
ORDER BY failure_count DESC, last_seen_at DESC LIMIT ?2
)sql";

// ---- customer_health_watcher

constexpr std::string_view kHealthRows = R"sql(
SELECT * FROM tenant_health WHERE tenant_id IN (SELECT value FROM json_each(?1))
)sql";

constexpr std::string_view kHealthFind = R"sql(
SELECT * FROM tenant_health WHERE tenant_id = ?1
)sql";

constexpr std::string_view kHealthUpsert = R"sql(
INSERT INTO tenant_health (tenant_id, score, band, signals_json, last_seq, last_event_at,
                           band_changed_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (tenant_id) DO UPDATE SET score = excluded.score, band = excluded.band,
  signals_json = excluded.signals_json, last_seq = excluded.last_seq,
  last_event_at = excluded.last_event_at, band_changed_at = excluded.band_changed_at,
  updated_at = excluded.updated_at
WHERE excluded.last_seq > tenant_health.last_seq
)sql";

// ---- alerts outbox

constexpr std::string_view kAlertEnqueue = R"sql(
INSERT OR IGNORE INTO events_alerts (alert_key, kind, summary, details_json, created_at)
VALUES (?1, ?2, ?3, ?4, ?5)
)sql";

// An alert of a kind with an hourly cap: inserted while fewer than ?7 alerts of its kind were
// created since ?6 (the hour's start), else not at all.
constexpr std::string_view kAlertEnqueueCapped = R"sql(
INSERT OR IGNORE INTO events_alerts (alert_key, kind, summary, details_json, created_at)
SELECT ?1, ?2, ?3, ?4, ?5
WHERE (SELECT COUNT(*) FROM events_alerts WHERE kind = ?2 AND created_at >= ?6) < ?7
)sql";

// The hour's one "capped" alert (?1 its key, ?2 its kind), when the alert ?8 of kind ?9 was not
// inserted (kAlertEnqueueCapped, same batch) because the cap ?7 was reached since ?6.
constexpr std::string_view kAlertCapHit = R"sql(
INSERT OR IGNORE INTO events_alerts (alert_key, kind, summary, details_json, created_at)
SELECT ?1, ?2, ?3, ?4, ?5
WHERE NOT EXISTS (SELECT 1 FROM events_alerts WHERE alert_key = ?8)
  AND (SELECT COUNT(*) FROM events_alerts WHERE kind = ?9 AND created_at >= ?6) >= ?7
)sql";

constexpr std::string_view kAlertsPending = R"sql(
SELECT * FROM events_alerts
WHERE attempts < ?3 AND ((?1 = 1 AND pagerduty_sent_at IS NULL) OR (?2 = 1 AND slack_sent_at IS NULL))
ORDER BY created_at, alert_key LIMIT ?4
)sql";

constexpr std::string_view kAlertAttempt = R"sql(
UPDATE events_alerts SET attempts = attempts + 1,
  pagerduty_sent_at = CASE WHEN ?2 = 1 THEN COALESCE(pagerduty_sent_at, ?5) ELSE pagerduty_sent_at END,
  slack_sent_at = CASE WHEN ?3 = 1 THEN COALESCE(slack_sent_at, ?5) ELSE slack_sent_at END,
  last_error = NULLIF(?4, '')
WHERE alert_key = ?1
)sql";

constexpr std::string_view kAlertsRecent = R"sql(
SELECT * FROM events_alerts ORDER BY created_at DESC, alert_key LIMIT ?1
)sql";

constexpr std::string_view kAlertsOpenStalls = R"sql(
SELECT * FROM events_alerts AS a
WHERE a.kind = 'consumer_stalled'
  AND NOT EXISTS (SELECT 1 FROM events_alerts AS r WHERE r.alert_key = 'resolved:' || a.alert_key)
ORDER BY a.created_at, a.alert_key LIMIT ?1
)sql";

// How many stall alerts a consumer and cursor had: the row of the first episode ("<key>") and of
// each later one ("<key>#<n>"). Read only when a stall has no open row.
constexpr std::string_view kAlertsStallEpisodes = R"sql(
SELECT COUNT(*) AS episodes FROM events_alerts
WHERE kind = 'consumer_stalled' AND (alert_key = ?1 OR substr(alert_key, 1, length(?1) + 1) = ?1 || '#')
)sql";

json text_or_null(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

struct CountRow {
  std::int64_t n = 0;
  static CountRow decode(RowReader& r) { return CountRow{r.integer("n")}; }
};

struct EventIdRow {
  std::string event_id;
  static EventIdRow decode(RowReader& r) { return EventIdRow{r.text("event_id")}; }
};

struct KeyRow {
  std::int64_t seq = 0;
  std::string dedupe_key;
  static KeyRow decode(RowReader& r) { return KeyRow{r.integer("seq"), r.text("dedupe_key")}; }
};

struct SeqRow {
  std::int64_t seq = 0;
  static SeqRow decode(RowReader& r) { return SeqRow{r.integer("seq")}; }
};

D1 db() { return D1(kDb); }

// Splits `rows` into bulk statements of at most kBulkRows rows each: `params(chunk)` gives the
// statement's parameters for one chunk (a JSON array of rows).
template <class Params>
std::vector<D1Statement> bulk(std::string_view sql, json rows, Params params) {
  std::vector<D1Statement> out;
  for (std::size_t at = 0; at < rows.size(); at += kBulkRows) {
    json chunk = json::array();
    std::size_t end = std::min(rows.size(), at + kBulkRows);
    for (std::size_t i = at; i < end; ++i) chunk.push_back(std::move(rows[i]));
    out.push_back(D1Statement{std::string(sql), params(dump_json(chunk))});
  }
  return out;
}

Task<Result<std::optional<std::string>>> first_event_id(std::string_view sql, json params) {
  SS_CO_TRY(D1Result r, co_await db().first(sql, std::move(params)));
  SS_CO_TRY(std::optional<EventIdRow> row, r.first_as<EventIdRow>());
  if (!row) co_return std::optional<std::string>{};
  co_return std::optional<std::string>{std::move(row->event_id)};
}

// Typed reads await db().all/first and decode in the calling coroutine: a helper coroutine
// template per Row type (all_rows<Row>, first_row<Row>) cost a coroutine body each, about 1 KB of
// wasm per Row type (docs/performance.md "Size").

Task<Status> execute(std::string_view sql, json params) {
  SS_CO_TRY(D1Result ignored, co_await db().run(sql, std::move(params)));
  co_return Unit{};
}

Task<Result<std::int64_t>> changes(std::string_view sql, json params) {
  SS_CO_TRY(D1Result r, co_await db().run(sql, std::move(params)));
  co_return r.meta.changes;
}

// An insert-or-nothing, then the upsert, in one batch: true when the insert created the row (a read
// before the write would tell concurrent creators all "created").
Task<Result<bool>> create_then_upsert(std::string_view create, std::string_view upsert,
                                      const json& params) {
  std::vector<D1Statement> batch{{std::string(create), params}, {std::string(upsert), params}};
  SS_CO_TRY(std::vector<D1Result> r, co_await db().batch(batch));
  co_return !r.empty() && r[0].meta.changes > 0;
}

}  // namespace

// ---- rows

EventRow EventRow::decode_without_payload(RowReader& r) {
  EventRow e;
  e.seq = r.integer("seq");
  e.event_id = r.text("event_id");
  e.tenant_id = r.nullable_text("tenant_id");
  e.event_type = r.text("event_type");
  e.entity_type = r.text("entity_type");
  e.entity_id = r.text("entity_id");
  e.idempotency_key = r.nullable_text("idempotency_key");
  e.caused_by = r.nullable_text("caused_by");
  e.workflow_run_id = r.nullable_text("workflow_run_id");
  e.source_system = r.nullable_text("source_system");
  e.occurred_at = r.text("occurred_at");
  e.recorded_at = r.text("recorded_at");
  e.sequence_no = r.nullable_integer("sequence_no");
  return e;
}

EventRow EventRow::decode(RowReader& r) {
  EventRow e = decode_without_payload(r);
  e.payload_json = r.text("payload_json");
  return e;
}

namespace {
// Times are stored with milliseconds (fixed width: stored times compare as strings); shown without
// them when they are ".000" (shown_rfc3339), so a producer's occurred_at "2026-05-25T14:23:11Z"
// reads back as sent and the ledger's own stamps (whole seconds) as the contract writes times. A
// read page's views say the same in SQL (kEventView).
json time_json(const std::string& t) { return shown_rfc3339(t); }
}  // namespace

json EventRow::view() const {
  auto payload = parse_json(payload_json);
  return json_object({{"event_id", event_id},
                      {"tenant_id", text_or_null(tenant_id)},
                      {"event_type", event_type},
                      {"entity_type", entity_type},
                      {"entity_id", entity_id},
                      {"entity_ref", entity_type + ":" + entity_id},
                      {"payload", payload ? *payload : json::object()},
                      {"idempotency_key", text_or_null(idempotency_key)},
                      {"caused_by", text_or_null(caused_by)},
                      {"workflow_run_id", text_or_null(workflow_run_id)},
                      {"source_system", text_or_null(source_system)},
                      {"occurred_at", time_json(occurred_at)},
                      {"recorded_at", time_json(recorded_at)},
                      {"sequence_no", sequence_no ? json(*sequence_no) : json(nullptr)}});
}

EventPageRow EventPageRow::decode(RowReader& r) {
  EventPageRow row;
  row.seq = r.integer("seq");
  row.event_id = r.text("event_id");
  if (r.has("view")) row.view = r.text("view");  // absent when the host held the views
  return row;
}

Cursor Cursor::decode(RowReader& r) {
  Cursor c;
  c.seq = r.integer("cursor_seq");
  c.event_id = r.text("cursor");
  return c;
}

AgedEvent AgedEvent::decode(RowReader& r) {
  AgedEvent e;
  e.seq = r.integer("seq");
  e.event_id = r.text("event_id");
  e.tenant_id = r.nullable_text("tenant_id");
  e.event_type = r.text("event_type");
  e.recorded_at = r.text("recorded_at");
  return e;
}

QuarantineRow QuarantineRow::decode(RowReader& r) {
  QuarantineRow q;
  q.consumer = r.text("consumer");
  q.seq = r.integer("seq");
  q.event_id = r.text("event_id");
  q.reason = r.text("reason");
  q.attempts = r.integer("attempts");
  q.quarantined_at = r.text("quarantined_at");
  q.resolved_at = r.nullable_text("resolved_at");
  if (r.has("retry_at")) q.retry_at = r.nullable_text("retry_at");
  if (r.has("tenant_id")) q.tenant_id = r.nullable_text("tenant_id");
  return q;
}

json QuarantineRow::view() const {
  return json_object({{"consumer", consumer},
                      {"event_id", event_id},
                      {"seq", seq},
                      {"tenant_id", text_or_null(tenant_id)},
                      {"reason", reason},
                      {"attempts", attempts},
                      {"quarantined_at", quarantined_at},
                      {"retry_at", resolved_at ? json(nullptr) : text_or_null(retry_at)},
                      {"resolved_at", text_or_null(resolved_at)}});
}

SubscriptionRow SubscriptionRow::decode(RowReader& r) {
  SubscriptionRow s;
  s.subscription_id = r.text("subscription_id");
  s.event_type_glob = r.text("event_type_glob");
  s.workflow_type = r.text("workflow_type");
  s.filter_expr = r.nullable_text("filter_expr");
  s.input_mapper = r.nullable_text("input_mapper");
  s.enabled = r.flag("enabled");
  s.created_at = r.text("created_at");
  return s;
}

json SubscriptionRow::view() const {
  auto mapper = input_mapper ? parse_json(*input_mapper) : Result<json>(json(nullptr));
  return json_object({{"id", subscription_id},
                      {"event_type_glob", event_type_glob},
                      {"workflow_type", workflow_type},
                      {"filter_expr", text_or_null(filter_expr)},
                      {"input_mapper", mapper ? *mapper : json(nullptr)},
                      {"enabled", enabled},
                      {"created_at", created_at}});
}

WorkflowRow WorkflowRow::decode(RowReader& r) {
  return WorkflowRow{r.text("workflow_type"), r.text("target_json"), r.text("updated_at"),
                     r.integer("risk_level")};
}

json WorkflowRow::view() const {
  auto target = parse_json(target_json);
  return json_object({{"workflow_type", workflow_type},
                      {"target", target ? *target : json::object()},
                      {"risk_level", risk_level},
                      {"updated_at", updated_at}});
}

SchemaRow SchemaRow::decode(RowReader& r) {
  return SchemaRow{r.text("event_type"), r.text("schema_json"), r.text("updated_at")};
}

json SchemaRow::view() const {
  auto schema = parse_json(schema_json);
  return json_object({{"event_type", event_type},
                      {"schema", schema ? *schema : json::object()},
                      {"updated_at", updated_at}});
}

KillSwitchRow KillSwitchRow::decode(RowReader& r) {
  KillSwitchRow k;
  k.name = r.text("name");
  k.enabled = r.flag("enabled");
  k.updated_at = r.text("updated_at");
  return k;
}

json KillSwitchRow::view() const {
  return json_object({{"name", name}, {"enabled", enabled}, {"updated_at", updated_at}});
}

TimelineRow TimelineRow::decode(RowReader& r) {
  TimelineRow t;
  t.event_count = r.integer("event_count");
  t.first_event_id = r.text("first_event_id");
  t.last_event_id = r.text("last_event_id");
  t.last_event_type = r.text("last_event_type");
  t.last_occurred_at = r.text("last_occurred_at");
  return t;
}

json TimelineRow::view() const {
  return json_object({{"event_count", event_count},
                      {"first_event_id", first_event_id},
                      {"last_event_id", last_event_id},
                      {"last_event_type", last_event_type},
                      {"last_occurred_at", shown_rfc3339(last_occurred_at)}});
}

TimelineEntry TimelineEntry::decode(RowReader& r) {
  TimelineEntry t;
  t.event = EventRow::decode_without_payload(r);
  std::optional<std::string> payload = r.nullable_text("payload_json");
  t.with_payload = payload.has_value();
  t.event.payload_json = std::move(payload).value_or("");
  t.title = r.text("title");
  t.indexed = r.flag("is_indexed");
  return t;
}

json TimelineEntry::view(bool with_seq) const {
  json out = event.view();
  if (!with_payload) out.erase("payload");
  if (with_seq) out["seq"] = event.seq;
  out["title"] = title;
  out["indexed"] = indexed;
  return out;
}

RateCandidate RateCandidate::decode(RowReader& r) {
  RateCandidate c;
  c.event_type = r.text("event_type");
  c.window_start_ms = r.integer("window_start_ms");
  c.event_count = r.integer("event_count");
  c.trailing = r.integer("trailing");
  c.last_event_id = r.text("last_event_id");
  return c;
}

SignalRow SignalRow::decode(RowReader& r) {
  SignalRow s;
  s.rule = r.text("rule");
  s.tenant_key = r.text("tenant_key");
  s.subject = r.text("subject");
  s.window_start_ms = r.integer("window_start_ms");
  s.window_end_ms = r.integer("window_end_ms");
  s.event_count = r.integer("event_count");
  s.first_event_id = r.text("first_event_id");
  s.last_event_id = r.text("last_event_id");
  return s;
}

ReflexionRow ReflexionRow::decode(RowReader& r) {
  ReflexionRow x;
  x.subject_kind = r.text("subject_kind");
  x.subject = r.text("subject");
  x.error_class = r.text("error_class");
  x.failure_count = r.integer("failure_count");
  x.first_seen_at = r.text("first_seen_at");
  x.last_seen_at = r.text("last_seen_at");
  x.last_error = r.nullable_text("last_error");
  x.example_event_ids = r.text("example_event_ids");
  x.tenants = r.text("tenants");
  return x;
}

json ReflexionRow::view() const {
  auto examples = parse_json(example_event_ids);
  auto seen = parse_json(tenants);
  return json_object({{"subject_kind", subject_kind},
                      {"subject", subject},
                      {"error_class", error_class},
                      {"count", failure_count},
                      {"first_seen_at", shown_rfc3339(first_seen_at)},  // events' recorded_at
                      {"last_seen_at", shown_rfc3339(last_seen_at)},
                      {"last_error", text_or_null(last_error)},
                      {"example_event_ids", examples ? *examples : json::array()},
                      {"tenants", seen ? *seen : json::array()}});
}

TenantHealthRow TenantHealthRow::decode(RowReader& r) {
  TenantHealthRow h;
  h.tenant_id = r.text("tenant_id");
  h.score = r.integer("score");
  h.band = r.text("band");
  h.signals_json = r.text("signals_json");
  h.last_seq = r.integer("last_seq");
  h.last_event_at = r.nullable_text("last_event_at");
  h.band_changed_at = r.nullable_text("band_changed_at");
  h.updated_at = r.text("updated_at");
  return h;
}

AlertRow AlertRow::decode(RowReader& r) {
  AlertRow a;
  a.alert_key = r.text("alert_key");
  a.kind = r.text("kind");
  a.summary = r.text("summary");
  a.details_json = r.text("details_json");
  a.created_at = r.text("created_at");
  a.attempts = r.integer("attempts");
  a.pagerduty_sent_at = r.nullable_text("pagerduty_sent_at");
  a.slack_sent_at = r.nullable_text("slack_sent_at");
  a.last_error = r.nullable_text("last_error");
  return a;
}

// Times are stored with milliseconds (the outbox's order) and shown to the second, as the contract
// writes times.
json AlertRow::view() const {
  auto details = parse_json(details_json);
  return json_object({{"alert_key", alert_key},
                      {"kind", kind},
                      {"summary", summary},
                      {"details", details ? *details : json::object()},
                      {"created_at", shown_rfc3339_second(created_at)},
                      {"attempts", attempts},
                      {"pagerduty_sent_at", optional_time(pagerduty_sent_at)},
                      {"slack_sent_at", optional_time(slack_sent_at)},
                      {"last_error", text_or_null(last_error)}});
}

ConsumerHealthRow ConsumerHealthRow::decode(RowReader& r) {
  ConsumerHealthRow h;
  h.consumer = r.text("consumer");
  h.cursor = r.text("cursor");
  h.oldest_unread = r.nullable_text("oldest_unread");
  h.capped = r.integer("capped");
  h.quarantined = r.integer("quarantined");
  h.killed = r.integer("killed") > 0;
  return h;
}

// ---- EventStore

EmitLookup EmitLookup::decode(RowReader& r) {
  EmitLookup out;
  out.schema_json = r.nullable_text("schema_json");
  out.existing_event_id = r.nullable_text("event_id");
  return out;
}

namespace {
json insert_params(const EventInsert& e) {
  return json::array({e.event_id, text_or_null(e.tenant_id), e.event_type, e.entity_type,
                      e.entity_id, e.payload_json, text_or_null(e.idempotency_key),
                      text_or_null(e.caused_by), text_or_null(e.workflow_run_id),
                      text_or_null(e.source_system), e.occurred_at, e.recorded_at,
                      e.sequence_no ? json(*e.sequence_no) : json(nullptr)});
}
}  // namespace

std::vector<D1Statement> EventStore::insert_statements(const std::vector<EventInsert>& events) {
  json rows = json::array();
  for (const EventInsert& e : events) rows.push_back(insert_params(e));
  return bulk(kInsertEvents, std::move(rows),
              [](std::string list) { return json::array({std::move(list)}); });
}

Task<Result<EmitAttempt>> EventStore::insert_unless_schema(const EventInsert& e,
                                                           const std::string& tenant_key) {
  std::vector<D1Statement> batch{
      {std::string(kInsertEventUnlessSchema), insert_params(e)},
      {std::string(kEmitLookup),
       json::array({e.event_type, tenant_key, text_or_null(e.idempotency_key)})}};
  SS_CO_TRY(std::vector<D1Result> results, co_await db().batch(batch));
  SS_CO_CHECK(check_batch_answered(results, batch.size()));
  Result<std::optional<EmitLookup>> row = results[1].first_as<EmitLookup>();
  if (!row) co_return std::move(row).error();
  if (!*row) co_return Error{ErrorCode::internal, "emit lookup: no row"};
  co_return EmitAttempt{results[0].meta.changes == 1, std::move(**row)};
}

Task<Result<bool>> EventStore::insert(const EventInsert& e) {
  SS_CO_TRY(std::int64_t n, co_await changes(kInsertEvent, insert_params(e)));
  co_return n == 1;
}

Task<Result<std::optional<std::string>>> EventStore::find_existing(
    const std::string& event_id, const std::string& tenant_key,
    const std::optional<std::string>& idempotency_key) {
  json params = json::array({event_id, tenant_key, text_or_null(idempotency_key)});
  SS_CO_RETURN_AWAIT(first_event_id(kFindExisting, params));
}

Task<Result<std::optional<EventRow>>> EventStore::at(std::int64_t seq) {
  json params = json::array({seq});
  SS_CO_TRY(D1Result fetched, co_await db().first(kEventAt, params));
  co_return fetched.first_as<EventRow>();
}

Task<Result<EventsAt>> EventStore::at_seqs(const std::vector<std::int64_t>& seqs) {
  json params = json::array({dump_json(json(seqs))});
  SS_CO_TRY(D1Result fetched, co_await db().all(kEventsAtSeqs, params));
  EventsAt out;
  for (const json& r : fetched.rows) {
    RowReader reader(fetched.columns, r);
    EventRow e = EventRow::decode(reader);
    if (reader.status().ok()) {
      out.rows.push_back(std::move(e));
    } else {
      out.unreadable[e.seq] = reader.status().error().message;
    }
  }
  co_return out;
}

Task<Result<std::optional<std::int64_t>>> EventStore::first_seq_of(const std::string& event_id) {
  json params = json::array({event_id});
  SS_CO_TRY(D1Result fetched, co_await db().first(kFirstSeqOf, params));
  SS_CO_TRY(std::optional<SeqRow> row, fetched.first_as<SeqRow>());
  if (!row) co_return std::optional<std::int64_t>{};
  co_return std::optional<std::int64_t>{row->seq};
}

Task<Result<std::string>> EventStore::event_id_before(std::int64_t seq) {
  json params = json::array({seq});
  SS_CO_TRY(std::optional<std::string> id, co_await first_event_id(kEventIdBefore, params));
  co_return id.value_or("");
}

namespace {
// A page read's statement: the views, the cursor's bound, the tenant clause, the other filters.
std::string read_sql(std::string_view bound, const TenantClauses& tenant, bool newest_first) {
  std::string sql(kEventView);
  constexpr std::string_view kMarker = "@tenant@";
  for (std::size_t at = bound.find(kMarker); at != std::string_view::npos;
       at = bound.find(kMarker)) {
    sql.append(bound.substr(0, at)).append(tenant.cursor);
    bound.remove_prefix(at + kMarker.size());
  }
  sql.append(bound).append(tenant.page).append(kReadFilters);
  sql.append(newest_first ? "ORDER BY seq DESC LIMIT ?6\n" : "ORDER BY seq LIMIT ?6\n");
  return sql;
}
}  // namespace

Task<Result<EventPage>> EventStore::read_page(const EventFilter& f) {
  static const std::string kPages[2][2] = {
      {read_sql(kReadAscBound, kAnyTenant, false), read_sql(kReadAscBound, kOneTenant, false)},
      {read_sql(kReadDescBound, kAnyTenant, true), read_sql(kReadDescBound, kOneTenant, true)}};
  // One row past the page: whether another page follows (the page's cursor is null otherwise,
  // also when it is full). That row's view is not held.
  json params =
      json::array({f.after, text_or_null(f.tenant_id), f.type_glob, f.entity_type, f.entity_id,
                   f.limit + 1, f.after_seq ? json(*f.after_seq) : json(nullptr)});
  // The views are what the response shows and nothing the core decides on: held by the host and
  // spliced into the body there, they never cross into wasm (docs/abi.md "Held columns"). Of the
  // rest, the page's cursor needs only its last row, the one before the extra row.
  SS_CO_TRY(D1Result fetched,
            co_await db().all_holding(kPages[f.newest_first][f.tenant_id.has_value()],
                                      std::move(params), "view", 2, f.limit));
  EventPage page;
  page.held = fetched.held;
  page.count = fetched.count;
  SS_CO_TRY(page.rows, std::move(fetched).as<EventPageRow>());
  co_return page;
}

Task<Result<std::vector<EventRow>>> EventStore::after_cursor(std::int64_t cursor_seq, int limit) {
  json params = json::array({cursor_seq, limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kEventsAfterCursor, params));
  co_return std::move(fetched).as<EventRow>();
}

Task<Result<std::vector<AgedEvent>>> EventStore::aged(const std::string& recorded_before,
                                                      int limit) {
  json params = json::array({recorded_before, limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kAgedEvents, params));
  co_return fetched.as<AgedEvent>();
}

D1Statement EventStore::redact_statement(const std::vector<std::int64_t>& seqs,
                                         const std::string& now) {
  return D1Statement{std::string(kRedactEvents), json::array({dump_json(json(seqs)), now})};
}

// ---- DrainState

Task<Result<bool>> DrainState::claim(const std::string& lock, const std::string& holder,
                                     std::int64_t now_ms, std::int64_t ttl_ms) {
  json params = json::array({lock, holder, now_ms + ttl_ms, now_ms});
  SS_CO_TRY(std::int64_t n, co_await changes(kClaimLock, params));
  co_return n > 0;
}

Task<Status> DrainState::release(const std::string& lock, const std::string& holder) {
  json params = json::array({lock, holder});
  SS_CO_RETURN_AWAIT(execute(kReleaseLock, params));
}

D1Statement DrainState::renew_statement(const std::string& lock, const std::string& holder,
                                        std::int64_t expires_at_ms) {
  return D1Statement{std::string(kRenewLock), json::array({lock, holder, expires_at_ms})};
}

D1Statement DrainState::advance_statement(const std::string& consumer, const Cursor& cursor,
                                          const std::string& now, int read) {
  return D1Statement{std::string(kAdvanceCursor),
                     json::array({consumer, cursor.seq, cursor.event_id, now, read})};
}

D1Statement DrainState::advance_held_statement(const std::string& consumer, const Cursor& cursor,
                                               const std::string& now, int read,
                                               const std::string& lock, const std::string& holder) {
  return D1Statement{std::string(kAdvanceCursorHeld),
                     json::array({consumer, cursor.seq, cursor.event_id, now, read, lock, holder})};
}

namespace {

struct DrainStateRow {
  bool killed = false;
  bool holds_lock = false;
  Cursor cursor;
  static DrainStateRow decode(RowReader& r) {
    DrainStateRow row;
    row.killed = r.flag("killed");
    row.holds_lock = r.flag("holds_lock");
    row.cursor = Cursor::decode(r);
    return row;
  }
};

void push_opening_reads(std::vector<D1Statement>& out, const std::string& consumer,
                        const std::string& lock, const std::string& holder,
                        const std::string& switches, int limit) {
  out.push_back(D1Statement{std::string(kDrainOpeningState),
                            json::array({consumer, lock, holder, switches})});
  out.push_back(D1Statement{std::string(kDrainOpeningEvents),
                            json::array({consumer, lock, holder, switches, limit})});
}

std::string switch_list(const std::vector<std::string>& names) {
  json list = json::array();
  for (const auto& n : names) list.push_back(n);
  return dump_json(list);
}

}  // namespace

std::vector<D1Statement> DrainState::open_statements(const DrainOpeningKey& key,
                                                     std::int64_t now_ms, std::int64_t ttl_ms,
                                                     int limit) {
  std::string switches = switch_list(key.switches);
  std::vector<D1Statement> out;
  out.push_back(
      D1Statement{std::string(kClaimDrainLock),
                  json::array({key.lock, key.holder, now_ms + ttl_ms, now_ms, switches})});
  push_opening_reads(out, key.consumer, key.lock, key.holder, switches, limit);
  return out;
}

std::vector<D1Statement> DrainState::continue_statements(const DrainOpeningKey& key,
                                                         std::int64_t expires_at_ms, int limit) {
  std::string switches = switch_list(key.switches);
  std::vector<D1Statement> out;
  out.push_back(D1Statement{std::string(kReleaseDrainLockIfKilled),
                            json::array({key.lock, key.holder, switches})});
  out.push_back(renew_statement(key.lock, key.holder, expires_at_ms));
  push_opening_reads(out, key.consumer, key.lock, key.holder, switches, limit);
  return out;
}

D1Statement DrainState::release_statement(const std::string& lock, const std::string& holder) {
  return D1Statement{std::string(kReleaseLock), json::array({lock, holder})};
}

Result<DrainOpening> DrainState::opening_of(const std::vector<D1Result>& results) {
  if (results.size() < 2) {
    return Error{ErrorCode::internal, "d1.batch answered the wrong number of results"};
  }
  const D1Result& state = results[results.size() - 2];
  Result<std::optional<DrainStateRow>> row = state.first_as<DrainStateRow>();
  if (!row) return std::move(row).error();
  if (!*row) return Error{ErrorCode::internal, "the drain state read answered no row"};
  Result<std::vector<EventRow>> rows = results.back().as<EventRow>();
  if (!rows) return std::move(rows).error();
  DrainOpening out;
  out.killed = (*row)->killed;
  out.holds_lock = (*row)->holds_lock;
  out.cursor = std::move((*row)->cursor);
  out.rows = std::move(rows).value();
  return out;
}

Task<Result<bool>> DrainState::any_switch_on(const std::vector<std::string>& names) {
  json list = json::array();
  for (const auto& n : names) list.push_back(n);
  json params = json::array({dump_json(list)});
  SS_CO_TRY(D1Result r, co_await db().first(kAnySwitchOn, params));
  co_return !r.empty();
}

Task<Result<std::optional<std::string>>> DrainState::switch_on(
    const std::vector<std::string>& names) {
  json list = json::array();
  for (const auto& n : names) list.push_back(n);
  json params = json::array({dump_json(list)});
  SS_CO_TRY(D1Result r, co_await db().first(kAnySwitchOn, params));
  std::optional<json> row = r.first();
  if (!row) co_return std::optional<std::string>();
  co_return std::optional<std::string>(string_or(*row, "name", ""));
}

// ---- Dedupe

Task<Result<std::vector<std::pair<std::int64_t, std::string>>>> Dedupe::started_keys(
    const std::string& consumer, std::int64_t after, std::int64_t last) {
  json params = json::array({consumer, after, last});
  SS_CO_TRY(D1Result fetched, co_await db().all(kStartedKeys, params));
  SS_CO_TRY(std::vector<KeyRow> rows, fetched.as<KeyRow>());
  std::vector<std::pair<std::int64_t, std::string>> keys;
  keys.reserve(rows.size());
  for (KeyRow& k : rows) keys.emplace_back(k.seq, std::move(k.dedupe_key));
  co_return keys;
}

Task<Result<std::vector<std::pair<std::int64_t, std::string>>>> Dedupe::started_keys_of(
    const std::string& consumer, const std::vector<std::int64_t>& seqs) {
  json params = json::array({consumer, dump_json(json(seqs))});
  SS_CO_TRY(D1Result fetched, co_await db().all(kStartedKeysOf, params));
  SS_CO_TRY(auto keys, keys_of(fetched));
  co_return keys;
}

std::vector<D1Statement> Dedupe::claim_statements(const std::string& consumer,
                                                  const std::vector<StartRef>& starts,
                                                  const std::string& now, const std::string& holder,
                                                  std::int64_t now_ms,
                                                  std::int64_t stale_before_ms) {
  json rows = json::array();
  for (const StartRef& s : starts) rows.push_back(json::array({s.seq, s.key, s.event_id}));
  return bulk(kClaimStarts, std::move(rows), [&](std::string list) {
    return json::array({consumer, now, holder, stale_before_ms, std::move(list), now_ms});
  });
}

D1Statement Dedupe::others_claims_statement(const std::string& consumer, std::int64_t first,
                                            std::int64_t last, const std::string& holder) {
  return D1Statement{std::string(kOthersClaims), json::array({consumer, first, last, holder})};
}

Result<std::vector<std::pair<std::int64_t, std::string>>> Dedupe::keys_of(const D1Result& r) {
  auto rows = r.as<KeyRow>();
  if (!rows) return std::move(rows).error();
  std::vector<std::pair<std::int64_t, std::string>> keys;
  keys.reserve(rows->size());
  for (KeyRow& k : *rows) keys.emplace_back(k.seq, std::move(k.dedupe_key));
  return keys;
}

namespace {
json key_rows(const std::vector<StartRef>& starts) {
  json rows = json::array();
  for (const StartRef& s : starts) rows.push_back(json::array({s.seq, s.key}));
  return rows;
}
}  // namespace

std::vector<D1Statement> Dedupe::started_statements(const std::string& consumer,
                                                    const std::string& holder,
                                                    const std::vector<StartRef>& starts) {
  return bulk(kMarkStarted, key_rows(starts), [&](std::string list) {
    return json::array({consumer, holder, std::move(list)});
  });
}

std::vector<D1Statement> Dedupe::unclaim_statements(const std::string& consumer,
                                                    const std::string& holder,
                                                    const std::vector<StartRef>& starts) {
  return bulk(kUnclaim, key_rows(starts), [&](std::string list) {
    return json::array({consumer, holder, std::move(list)});
  });
}

std::vector<D1Statement> Dedupe::run_log_statements(const std::string& consumer,
                                                    const std::vector<RunLogEntry>& entries,
                                                    const std::string& now) {
  json rows = json::array();
  for (const RunLogEntry& e : entries) {
    rows.push_back(json::array({e.run_id, e.workflow_type, e.event_id, e.subscription_id,
                                e.started ? "started" : "failed",
                                e.http_status ? json(e.http_status) : json(nullptr)}));
  }
  return bulk(kLogRuns, std::move(rows), [&](std::string list) {
    return json::array({consumer, now, std::move(list)});
  });
}

// ---- Quarantine

D1Statement Quarantine::put_statement(const std::string& consumer, std::int64_t seq,
                                      const std::string& event_id, const std::string& reason,
                                      const std::string& now, bool passing) {
  static constexpr std::size_t kMaxReason = 500;
  return D1Statement{std::string(kQuarantine),
                     json::array({consumer, event_id, reason.substr(0, kMaxReason), now, seq,
                                  passing ? 1 : 0, kMaxStartAttempts, kHeldReason})};
}

Task<Result<std::vector<QuarantineRow>>> Quarantine::due_retries(const std::string& consumer,
                                                                 const std::string& now,
                                                                 int limit) {
  json params = json::array({consumer, now, limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kDueRetries, params));
  co_return fetched.as<QuarantineRow>();
}

D1Statement Quarantine::resolve_statement(const std::string& consumer, std::int64_t seq,
                                          const std::string& now) {
  return D1Statement{std::string(kResolveQuarantine), json::array({consumer, seq, now})};
}

D1Statement Quarantine::resolve_many_statement(const std::string& consumer,
                                               const std::vector<std::int64_t>& seqs,
                                               const std::string& now) {
  return D1Statement{std::string(kResolveQuarantineSeqs),
                     json::array({consumer, dump_json(json(seqs)), now})};
}

Task<Result<std::optional<QuarantineRow>>> Quarantine::find(const std::string& consumer,
                                                            const std::string& event_id,
                                                            std::optional<std::int64_t> seq) {
  json params = json::array({consumer, event_id, seq ? json(*seq) : json(nullptr)});
  SS_CO_TRY(D1Result fetched, co_await db().first(kFindQuarantine, params));
  co_return fetched.first_as<QuarantineRow>();
}

Task<Result<std::vector<QuarantineRow>>> Quarantine::list(const std::string& consumer, bool all,
                                                          std::int64_t after_seq,
                                                          const std::string& after_consumer,
                                                          std::int64_t limit) {
  json params = json::array({consumer, all ? 1 : 0, after_seq, after_consumer, limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kListQuarantine, params));
  co_return fetched.as<QuarantineRow>();
}

Task<Result<std::vector<QuarantineRow>>> Quarantine::open_with_reason(const std::string& consumer,
                                                                      const std::string& reason,
                                                                      int limit) {
  json params = json::array({consumer, reason, limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kOpenQuarantineWithReason, params));
  co_return fetched.as<QuarantineRow>();
}

// ---- ConfigStore

Task<Status> ConfigStore::insert_subscription(const SubscriptionRow& s) {
  json params = json::array({s.subscription_id, s.event_type_glob, s.workflow_type,
                             text_or_null(s.filter_expr), text_or_null(s.input_mapper),
                             s.enabled ? 1 : 0, s.created_at});
  SS_CO_RETURN_AWAIT(execute(kInsertSubscription, params));
}

Task<Result<std::vector<SubscriptionRow>>> ConfigStore::subscriptions() {
  SS_CO_TRY(D1Result fetched, co_await db().all(kSubscriptions));
  co_return fetched.as<SubscriptionRow>();
}

Task<Result<std::vector<SubscriptionRow>>> ConfigStore::enabled_subscriptions() {
  SS_CO_TRY(D1Result fetched, co_await db().all(kEnabledSubscriptions));
  co_return fetched.as<SubscriptionRow>();
}

Task<Result<std::optional<SubscriptionRow>>> ConfigStore::subscription(const std::string& id) {
  json params = json::array({id});
  SS_CO_TRY(D1Result fetched, co_await db().first(kFindSubscription, params));
  co_return fetched.first_as<SubscriptionRow>();
}

Task<Result<bool>> ConfigStore::update_subscription(const SubscriptionRow& s) {
  json params =
      json::array({s.subscription_id, s.event_type_glob, s.workflow_type,
                   text_or_null(s.filter_expr), text_or_null(s.input_mapper), s.enabled ? 1 : 0});
  SS_CO_TRY(std::int64_t n, co_await changes(kUpdateSubscription, params));
  co_return n > 0;
}

Task<Result<bool>> ConfigStore::delete_subscription(const std::string& id) {
  json params = json::array({id});
  SS_CO_TRY(std::int64_t n, co_await changes(kDeleteSubscription, params));
  co_return n > 0;
}

Task<Result<bool>> ConfigStore::upsert_workflow(const std::string& type,
                                                const std::string& target_json,
                                                std::int64_t risk_level, const std::string& now) {
  json params = json::array({type, target_json, now, risk_level});
  SS_CO_RETURN_AWAIT(create_then_upsert(kCreateWorkflow, kUpsertWorkflow, params));
}

Task<Result<std::vector<WorkflowRow>>> ConfigStore::workflows() {
  SS_CO_TRY(D1Result fetched, co_await db().all(kWorkflows));
  co_return fetched.as<WorkflowRow>();
}

Task<Result<std::optional<WorkflowRow>>> ConfigStore::workflow(const std::string& type) {
  json params = json::array({type});
  SS_CO_TRY(D1Result fetched, co_await db().first(kFindWorkflow, params));
  co_return fetched.first_as<WorkflowRow>();
}

Task<Result<bool>> ConfigStore::delete_workflow(const std::string& type) {
  json params = json::array({type});
  SS_CO_TRY(std::int64_t n, co_await changes(kDeleteWorkflow, params));
  co_return n > 0;
}

Task<Result<bool>> ConfigStore::upsert_schema(const std::string& type,
                                              const std::string& schema_json,
                                              const std::string& now) {
  json params = json::array({type, schema_json, now});
  SS_CO_RETURN_AWAIT(create_then_upsert(kCreateSchema, kUpsertSchema, params));
}

Task<Result<std::vector<SchemaRow>>> ConfigStore::schemas() {
  SS_CO_TRY(D1Result fetched, co_await db().all(kSchemas));
  co_return fetched.as<SchemaRow>();
}

Task<Result<bool>> ConfigStore::delete_schema(const std::string& type) {
  json params = json::array({type});
  SS_CO_TRY(std::int64_t n, co_await changes(kDeleteSchema, params));
  co_return n > 0;
}

Task<Status> ConfigStore::put_kill_switch(const std::string& name, bool enabled,
                                          const std::string& now) {
  json params = json::array({name, enabled ? 1 : 0, now});
  SS_CO_RETURN_AWAIT(execute(kPutKillSwitch, params));
}

Task<Result<bool>> ConfigStore::delete_kill_switch(const std::string& name) {
  json params = json::array({name});
  SS_CO_TRY(std::int64_t n, co_await changes(kDeleteKillSwitch, params));
  co_return n > 0;
}

Task<Result<std::vector<KillSwitchRow>>> ConfigStore::kill_switches() {
  SS_CO_TRY(D1Result fetched, co_await db().all(kKillSwitches));
  co_return fetched.as<KillSwitchRow>();
}

// ---- AggregateStore

std::vector<D1Statement> AggregateStore::timeline_statements(const std::vector<EventRow>& events) {
  json rows = json::array();
  for (const EventRow& e : events) {
    rows.push_back(json::array({e.tenant_key(), e.entity_type, e.entity_id, e.event_id,
                                e.event_type, e.occurred_at, e.seq}));
  }
  return bulk(kTimelineUpsert, std::move(rows),
              [](std::string list) { return json::array({std::move(list)}); });
}

Task<Result<std::optional<TimelineRow>>> AggregateStore::timeline(const std::string& tenant_key,
                                                                  const std::string& entity_type,
                                                                  const std::string& entity_id) {
  json params = json::array({tenant_key, entity_type, entity_id});
  SS_CO_TRY(D1Result fetched, co_await db().first(kFindTimeline, params));
  co_return fetched.first_as<TimelineRow>();
}

std::vector<D1Statement> AggregateStore::timeline_entry_statements(
    const std::vector<EventRow>& events, const std::vector<std::string>& titles) {
  json rows = json::array();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const EventRow& e = events[i];
    rows.push_back(json::array(
        {e.entity_type, e.entity_id, e.tenant_key(), e.seq, e.event_id, e.event_type,
         i < titles.size() ? titles[i] : e.event_type, e.occurred_at, e.recorded_at,
         text_or_null(e.caused_by), text_or_null(e.workflow_run_id), text_or_null(e.source_system),
         text_or_null(e.idempotency_key), e.sequence_no ? json(*e.sequence_no) : json(nullptr)}));
  }
  return bulk(kTimelineEntries, std::move(rows),
              [](std::string list) { return json::array({std::move(list)}); });
}

Task<Result<TimelinePage>> AggregateStore::timeline_page(const TimelineFilter& f) {
  std::string_view sql = f.tenant_id
                             ? (f.newest_first ? kTimelinePageTenantDesc : kTimelinePageTenantAsc)
                             : (f.newest_first ? kTimelinePageAllDesc : kTimelinePageAllAsc);
  json after_seq = f.after_seq ? json(*f.after_seq) : json(nullptr);
  // One entry past the page: whether another page follows (read_timeline drops it).
  json params = json::array({text_or_null(f.tenant_id), f.entity_type, f.entity_id, f.after,
                             f.limit + 1, f.with_payload ? 1 : 0, after_seq});
  TimelinePage page;
  if (f.after.empty()) {
    SS_CO_TRY(D1Result fetched, co_await db().all(sql, params));
    SS_CO_TRY(page.entries, fetched.as<TimelineEntry>());
    co_return page;
  }
  // With a cursor, the page and the cursor's check in one D1 batch (one round trip): a page that
  // comes back empty is either the end of the list or a cursor naming nothing here, and only the
  // check tells which.
  std::vector<D1Statement> batch = {
      D1Statement{
          std::string(kTimelineAfterSeq),
          json::array({text_or_null(f.tenant_id), f.entity_type, f.entity_id, f.after, after_seq})},
      D1Statement{std::string(sql), std::move(params)}};
  SS_CO_TRY(std::vector<D1Result> results, co_await db().batch(batch));
  SS_CO_CHECK(check_batch_answered(results, batch.size()));
  std::optional<json> bound = results[0].first();
  const json* seq = bound ? find_field(*bound, "seq") : nullptr;
  page.after_known = seq != nullptr && seq->is_number_integer();
  if (!page.after_known) co_return page;
  SS_CO_TRY(page.entries, results[1].as<TimelineEntry>());
  co_return page;
}

D1Statement AggregateStore::rate_statement(const std::string& event_type,
                                           std::int64_t window_start_ms, std::int64_t seq,
                                           const std::string& event_id) {
  return D1Statement{std::string(kRateUpsert),
                     json::array({event_type, window_start_ms, event_id, seq})};
}

D1Statement AggregateStore::retention_summary_statement(
    const std::string& day, const std::string& tenant_key, const std::string& event_type,
    std::int64_t count, const std::string& first_id, const std::string& last_id,
    const std::string& tombstone_id) {
  return D1Statement{
      std::string(kRetentionSummary),
      json::array({day, tenant_key, event_type, count, first_id, last_id, tombstone_id})};
}

Task<Result<std::vector<ConsumerHealthRow>>> AggregateStore::health(
    const std::vector<std::string>& consumers) {
  json names = json::array();
  for (const auto& c : consumers) names.push_back(c);
  json params = json::array({dump_json(names)});
  SS_CO_TRY(D1Result fetched, co_await db().all(kHealth, params));
  co_return fetched.as<ConsumerHealthRow>();
}

// ---- AnomalyStore

Task<Result<std::vector<RateCandidate>>> AnomalyStore::rate_candidates(
    std::int64_t from_ms, std::int64_t until_ms, std::int64_t baseline_span_ms,
    std::int64_t min_count, std::int64_t limit) {
  json params = json::array({from_ms, until_ms, baseline_span_ms, min_count, limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kRateCandidates, params));
  co_return fetched.as<RateCandidate>();
}

D1Statement AnomalyStore::signal_statement(const std::string& rule, const std::string& tenant_key,
                                           const std::string& subject, std::int64_t window_start_ms,
                                           std::int64_t window_end_ms, std::int64_t seq,
                                           const std::string& event_id) {
  return D1Statement{
      std::string(kSignalUpsert),
      json::array({rule, tenant_key, subject, window_start_ms, window_end_ms, seq, event_id})};
}

Task<Result<std::vector<SignalRow>>> AnomalyStore::ended_signals(std::int64_t from_end_ms,
                                                                 std::int64_t until_end_ms,
                                                                 const json& thresholds,
                                                                 std::int64_t limit) {
  json params = json::array({from_end_ms, until_end_ms, dump_json(thresholds), limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kEndedSignals, params));
  co_return fetched.as<SignalRow>();
}

Task<Result<std::int64_t>> AnomalyStore::judged_until(const std::string& consumer) {
  json params = json::array({consumer});
  SS_CO_TRY(D1Result fetched, co_await db().first(kJudgedUntil, params));
  SS_CO_TRY(std::optional<CountRow> row, fetched.first_as<CountRow>());
  co_return row ? row->n : 0;
}

D1Statement AnomalyStore::judged_statement(const std::string& consumer, std::int64_t until_ms) {
  return D1Statement{std::string(kSetJudgedUntil), json::array({consumer, until_ms})};
}

// ---- ReflexionStore

D1Statement ReflexionStore::record_statement(const std::string& subject_kind,
                                             const std::string& subject,
                                             const std::string& error_class,
                                             const std::string& error, const std::string& event_id,
                                             const std::string& tenant_key,
                                             const std::string& recorded_at, std::int64_t seq) {
  static constexpr std::size_t kMaxError = 500;
  return D1Statement{std::string(kReflexionUpsert),
                     json::array({subject_kind, subject, error_class,
                                  error.empty() ? json(nullptr) : json(error.substr(0, kMaxError)),
                                  event_id, tenant_key, recorded_at, seq})};
}

Task<Result<std::vector<ReflexionRow>>> ReflexionStore::list(const std::string& subject,
                                                             int limit) {
  json params = json::array({subject, limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kReflexionList, params));
  co_return fetched.as<ReflexionRow>();
}

// ---- HealthStore

Task<Result<std::vector<TenantHealthRow>>> HealthStore::rows(
    const std::vector<std::string>& tenants) {
  json list = json::array();
  for (const auto& t : tenants) list.push_back(t);
  json params = json::array({dump_json(list)});
  SS_CO_TRY(D1Result fetched, co_await db().all(kHealthRows, params));
  co_return fetched.as<TenantHealthRow>();
}

Task<Result<std::optional<TenantHealthRow>>> HealthStore::find(const std::string& tenant_id) {
  json params = json::array({tenant_id});
  SS_CO_TRY(D1Result fetched, co_await db().first(kHealthFind, params));
  co_return fetched.first_as<TenantHealthRow>();
}

D1Statement HealthStore::upsert_statement(const TenantHealthRow& h) {
  return D1Statement{
      std::string(kHealthUpsert),
      json::array({h.tenant_id, h.score, h.band, h.signals_json, h.last_seq,
                   text_or_null(h.last_event_at), text_or_null(h.band_changed_at), h.updated_at})};
}

// ---- AlertStore

D1Statement AlertStore::enqueue_statement(const std::string& key, const std::string& kind,
                                          const std::string& summary, const json& details,
                                          const std::string& now) {
  return D1Statement{std::string(kAlertEnqueue),
                     json::array({key, kind, summary, dump_json(details), now})};
}

std::vector<D1Statement> AlertStore::enqueue_capped_statements(
    const std::string& key, const std::string& kind, const std::string& summary,
    const json& details, const std::string& now, const std::string& since, int cap,
    const std::string& cap_key, const std::string& cap_summary, const json& cap_details) {
  return {D1Statement{std::string(kAlertEnqueueCapped),
                      json::array({key, kind, summary, dump_json(details), now, since, cap})},
          D1Statement{std::string(kAlertCapHit),
                      json::array({cap_key, kind + "_alerts_capped", cap_summary,
                                   dump_json(cap_details), now, since, cap, key, kind})}};
}

Task<Result<std::vector<AlertRow>>> AlertStore::pending(bool pagerduty, bool slack,
                                                        int max_attempts, int limit) {
  json params = json::array({pagerduty ? 1 : 0, slack ? 1 : 0, max_attempts, limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kAlertsPending, params));
  co_return fetched.as<AlertRow>();
}

D1Statement AlertStore::attempt_statement(const std::string& key, bool pagerduty_sent,
                                          bool slack_sent, const std::string& error,
                                          const std::string& now) {
  static constexpr std::size_t kMaxError = 500;
  return D1Statement{std::string(kAlertAttempt),
                     json::array({key, pagerduty_sent ? 1 : 0, slack_sent ? 1 : 0,
                                  error.substr(0, kMaxError), now})};
}

Task<Result<std::vector<AlertRow>>> AlertStore::recent(int limit) {
  json params = json::array({limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kAlertsRecent, params));
  co_return fetched.as<AlertRow>();
}

Task<Result<std::vector<AlertRow>>> AlertStore::open_stalls(int limit) {
  json params = json::array({limit});
  SS_CO_TRY(D1Result fetched, co_await db().all(kAlertsOpenStalls, params));
  co_return fetched.as<AlertRow>();
}

Task<Result<std::int64_t>> AlertStore::stall_episodes(const std::string& key) {
  json params = json::array({key});
  SS_CO_TRY(D1Result fetched, co_await db().all(kAlertsStallEpisodes, params));
  std::int64_t episodes = 0;
  if (std::optional<json> row = fetched.first()) episodes = int_or(*row, "episodes", 0);
  co_return episodes;
}

Task<Status> commit(const std::vector<D1Statement>& statements) {
  if (statements.empty()) co_return Unit{};
  SS_CO_TRY(std::vector<D1Result> ignored, co_await db().batch(statements));
  co_return Unit{};
}

}  // namespace ss::events
