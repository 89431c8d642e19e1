-- The event ledger: an append-only, ULID-keyed stream plus everything its consumers need.
-- No endpoint updates or deletes a row of `events`; retention replaces payloads by writing a summary
-- and a tombstone event instead (see docs/runbook-events.md).

CREATE TABLE IF NOT EXISTS events (
  event_id TEXT PRIMARY KEY NOT NULL,          -- ULID: sorts by time
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
  sequence_no INTEGER,
  redacted_at TEXT                             -- set by retention when the payload became a summary
);
-- Emit-time dedupe: one event per (tenant, idempotency key).
CREATE UNIQUE INDEX IF NOT EXISTS events_idempotency
  ON events (COALESCE(tenant_id, ''), idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_type ON events (event_type, event_id);
CREATE INDEX IF NOT EXISTS events_by_entity ON events (entity_type, entity_id, event_id);
CREATE INDEX IF NOT EXISTS events_by_tenant ON events (tenant_id, event_id);

CREATE TABLE IF NOT EXISTS event_subscriptions (
  subscription_id TEXT PRIMARY KEY NOT NULL,
  event_type_glob TEXT NOT NULL,
  workflow_type TEXT NOT NULL,
  filter_expr TEXT,
  input_mapper TEXT,                           -- JSON object: {"vendor_id":"$.entity_id"}
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS event_subscriptions_enabled ON event_subscriptions (enabled, subscription_id);

CREATE TABLE IF NOT EXISTS workflow_definitions (
  workflow_type TEXT PRIMARY KEY NOT NULL,
  target_json TEXT NOT NULL,                   -- {"service":"BINDING","path":"/…"} or {"webhook":"https://…"}
  updated_at TEXT NOT NULL
);

-- One cursor per consumer: the last event_id it has fully processed.
CREATE TABLE IF NOT EXISTS event_drain_state (
  consumer TEXT PRIMARY KEY NOT NULL,
  cursor TEXT NOT NULL DEFAULT '',
  last_run_at TEXT,
  last_event_at TEXT,
  events_read INTEGER NOT NULL DEFAULT 0
);

-- Per-consumer exactly-once effects: a (consumer, event, workflow) start is recorded once.
CREATE TABLE IF NOT EXISTS event_consumer_dedupe (
  consumer TEXT NOT NULL,
  dedupe_key TEXT NOT NULL,
  event_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (consumer, dedupe_key)
);

CREATE TABLE IF NOT EXISTS events_quarantine (
  consumer TEXT NOT NULL,
  event_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 1,
  quarantined_at TEXT NOT NULL,
  resolved_at TEXT,
  PRIMARY KEY (consumer, event_id)
);

CREATE TABLE IF NOT EXISTS workflow_run_log (
  workflow_run_id TEXT PRIMARY KEY NOT NULL,
  consumer TEXT NOT NULL,
  workflow_type TEXT NOT NULL,
  event_id TEXT NOT NULL,
  subscription_id TEXT NOT NULL,
  status TEXT NOT NULL,                        -- started | failed
  http_status INTEGER,
  started_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS workflow_run_log_by_event ON workflow_run_log (event_id);

CREATE TABLE IF NOT EXISTS cron_locks (
  name TEXT PRIMARY KEY NOT NULL,
  holder TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS kill_switches (
  name TEXT PRIMARY KEY NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL
);

-- JSON Schemas per event type; a payload that breaks its schema is refused with 422.
CREATE TABLE IF NOT EXISTS events_schema (
  event_type TEXT PRIMARY KEY NOT NULL,
  schema_json TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- timeline_indexer: one summary row per entity, advanced only by events newer than last_event_id, so
-- a replayed window never double-counts.
CREATE TABLE IF NOT EXISTS entity_timelines (
  tenant_key TEXT NOT NULL,                    -- COALESCE(tenant_id, '')
  entity_type TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  event_count INTEGER NOT NULL DEFAULT 0,
  first_event_id TEXT NOT NULL,
  last_event_id TEXT NOT NULL,
  last_event_type TEXT NOT NULL,
  last_occurred_at TEXT NOT NULL,
  PRIMARY KEY (tenant_key, entity_type, entity_id)
);

-- anomaly_detector: events per type per 15-minute window (window_start in ms), for rate baselines.
CREATE TABLE IF NOT EXISTS event_type_rates (
  event_type TEXT NOT NULL,
  window_start_ms INTEGER NOT NULL,
  event_count INTEGER NOT NULL DEFAULT 0,
  last_event_id TEXT NOT NULL,
  PRIMARY KEY (event_type, window_start_ms)
);

-- retention: what a redacted day held, kept after its payloads are gone.
CREATE TABLE IF NOT EXISTS events_retention_summaries (
  day TEXT NOT NULL,                           -- YYYY-MM-DD (recorded_at)
  tenant_key TEXT NOT NULL,
  event_type TEXT NOT NULL,
  event_count INTEGER NOT NULL,
  first_event_id TEXT NOT NULL,
  last_event_id TEXT NOT NULL,
  tombstone_event_id TEXT NOT NULL,
  PRIMARY KEY (day, tenant_key, event_type)
);
