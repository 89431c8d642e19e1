-- Drain by insertion order (issue 14, item 1). Producers mint event_id (a ULID), so its order is the
-- producer's clock, not the ledger's: a far-future id moved every cursor past all later events, and
-- an id minted early but ingested late (queue retries) landed behind cursors already past it. The
-- ledger now numbers every event itself at insert (`seq`, monotonic, never reused); every drainer's
-- cursor, replay and lag use it. event_id stays the identity and dedupe key, unique per tenant.
--
-- D1 migrations are plain SQLite: a table is rebuilt by create new, copy in insertion order (rowid),
-- drop, rename; indexes are created again on the new table.

CREATE TABLE events_v2 (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,       -- the ledger's insertion order: the drain cursor
  event_id TEXT NOT NULL,                      -- ULID minted by the producer or the ledger; unique per tenant
  tenant_id TEXT,                              -- NULL for platform-wide events
  event_type TEXT NOT NULL,                    -- dotted lower case, e.g. price.changed
  entity_type TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  payload_json TEXT NOT NULL DEFAULT '{}',
  idempotency_key TEXT,
  caused_by TEXT,
  workflow_run_id TEXT,
  source_system TEXT,
  occurred_at TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  sequence_no INTEGER,                         -- the producer's own sequence, if it sends one
  redacted_at TEXT                             -- set by retention when the payload became a summary
);
INSERT INTO events_v2 (event_id, tenant_id, event_type, entity_type, entity_id, payload_json,
                       idempotency_key, caused_by, workflow_run_id, source_system, occurred_at,
                       recorded_at, sequence_no, redacted_at)
  SELECT event_id, tenant_id, event_type, entity_type, entity_id, payload_json, idempotency_key,
         caused_by, workflow_run_id, source_system, occurred_at, recorded_at, sequence_no, redacted_at
  FROM events ORDER BY rowid;
DROP TABLE events;
ALTER TABLE events_v2 RENAME TO events;

-- Identity: one event per (tenant, event_id); another tenant's event with the same id is a different event.
CREATE UNIQUE INDEX events_identity ON events (COALESCE(tenant_id, ''), event_id);
-- Emit-time dedupe: one event per (tenant, idempotency key).
CREATE UNIQUE INDEX events_idempotency
  ON events (COALESCE(tenant_id, ''), idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX events_by_event_id ON events (event_id);
CREATE INDEX events_by_type ON events (event_type, seq);
CREATE INDEX events_by_entity ON events (entity_type, entity_id, event_id);
CREATE INDEX events_by_tenant ON events (tenant_id, event_id);

-- Cursors become sequences: cursor_seq is the last seq a consumer has fully processed. `cursor` keeps
-- the event_id of that event (what drain reports show). An existing ULID cursor maps to the last seq
-- before the first event it had not passed: nothing is skipped, and what is read twice is absorbed by
-- dedupe (workflow starts) and the aggregates' guards.
ALTER TABLE event_drain_state ADD COLUMN cursor_seq INTEGER NOT NULL DEFAULT 0;
UPDATE event_drain_state SET cursor_seq = COALESCE(
  (SELECT MIN(seq) - 1 FROM events WHERE event_id > event_drain_state.cursor),
  (SELECT COALESCE(MAX(seq), 0) FROM events));

-- Workflow-start dedupe and quarantine rows name their event by seq (event_id alone is ambiguous
-- across tenants): a (consumer, event, workflow) start is recorded once per event, per tenant.
CREATE TABLE event_consumer_dedupe_v2 (
  consumer TEXT NOT NULL,
  seq INTEGER NOT NULL,                        -- events.seq
  dedupe_key TEXT NOT NULL,                    -- <consumer>:<event_id>:<workflow_type> (the Idempotency-Key)
  event_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'started',      -- claimed | started
  holder TEXT,
  claimed_at_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (consumer, seq, dedupe_key)
);
INSERT INTO event_consumer_dedupe_v2 (consumer, seq, dedupe_key, event_id, created_at, status, holder,
                                      claimed_at_ms)
  SELECT d.consumer, e.seq, d.dedupe_key, d.event_id, d.created_at, d.status, d.holder, d.claimed_at_ms
  FROM event_consumer_dedupe d JOIN events e ON e.event_id = d.event_id ORDER BY d.rowid;
DROP TABLE event_consumer_dedupe;
ALTER TABLE event_consumer_dedupe_v2 RENAME TO event_consumer_dedupe;

CREATE TABLE events_quarantine_v2 (
  consumer TEXT NOT NULL,
  seq INTEGER NOT NULL,                        -- events.seq
  event_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 1,
  quarantined_at TEXT NOT NULL,
  resolved_at TEXT,
  PRIMARY KEY (consumer, seq)
);
INSERT INTO events_quarantine_v2 (consumer, seq, event_id, reason, attempts, quarantined_at, resolved_at)
  SELECT q.consumer, e.seq, q.event_id, q.reason, q.attempts, q.quarantined_at, q.resolved_at
  FROM events_quarantine q JOIN events e ON e.event_id = q.event_id ORDER BY q.rowid;
DROP TABLE events_quarantine;
ALTER TABLE events_quarantine_v2 RENAME TO events_quarantine;
CREATE INDEX events_quarantine_by_event ON events_quarantine (consumer, event_id);
