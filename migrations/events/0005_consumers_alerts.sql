-- Issue 11: the drainers reflexion_analyzer and customer_health_watcher, the
-- anomaly detector's judged-window cursor and sequence signals, the operator alert outbox, and a risk
-- level on workflow definitions (held by kill:high_risk_ops).

-- anomaly_detector judges every completed window once: windows that start before judged_until_ms
-- have been judged. Windows are measured on the ledger's clock (recorded_at), never the producer's.
ALTER TABLE event_drain_state ADD COLUMN judged_until_ms INTEGER NOT NULL DEFAULT 0;

-- Rate windows are keyed by recorded_at from now on; last_seq guards against counting an event twice
-- under replay (the old last_event_id guard compared producer-minted ids).
ALTER TABLE event_type_rates ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;

-- anomaly_detector's "unusual sequences": per rule and subject (a tenant, a monitor), the count of
-- matching events in the rule's own window. Judged once the window has ended.
CREATE TABLE IF NOT EXISTS anomaly_signals (
  rule TEXT NOT NULL,                          -- delivery_failure_burst | monitor_flapping
  tenant_key TEXT NOT NULL,                    -- COALESCE(tenant_id, '')
  subject TEXT NOT NULL,                       -- entity_ref the rule counts per
  window_start_ms INTEGER NOT NULL,
  window_end_ms INTEGER NOT NULL,
  event_count INTEGER NOT NULL DEFAULT 0,
  first_event_id TEXT NOT NULL,
  last_event_id TEXT NOT NULL,
  last_seq INTEGER NOT NULL,
  PRIMARY KEY (rule, tenant_key, subject, window_start_ms)
);
CREATE INDEX IF NOT EXISTS anomaly_signals_by_end ON anomaly_signals (window_end_ms);

-- reflexion_analyzer: failure patterns per workflow type (workflow.run_failed) or rejection event type
-- (lead.delivery_failed, lead.spam_absorbed, hitl.rejected, monitor.probe_failed), per error class.
CREATE TABLE IF NOT EXISTS reflexion_log (
  subject_kind TEXT NOT NULL,                  -- workflow_type | event_type
  subject TEXT NOT NULL,
  error_class TEXT NOT NULL,
  failure_count INTEGER NOT NULL DEFAULT 0,
  first_seen_at TEXT NOT NULL,                 -- recorded_at of the first failure counted
  last_seen_at TEXT NOT NULL,
  last_error TEXT,                             -- the latest error text (500 characters at most)
  example_event_ids TEXT NOT NULL DEFAULT '[]',-- JSON array: the first 5 events of the pattern
  tenants TEXT NOT NULL DEFAULT '[]',          -- JSON array: up to 20 tenant ids seen
  last_seq INTEGER NOT NULL,                   -- replay guard: events at or below are counted
  PRIMARY KEY (subject_kind, subject, error_class)
);

-- customer_health_watcher: one row per tenant, advanced incrementally (decayed counters in C++).
CREATE TABLE IF NOT EXISTS tenant_health (
  tenant_id TEXT PRIMARY KEY NOT NULL,
  score INTEGER NOT NULL,
  band TEXT NOT NULL,                          -- healthy | watch | at_risk
  signals_json TEXT NOT NULL,                  -- decayed counters and open incidents
  last_seq INTEGER NOT NULL,                   -- replay guard
  last_event_at TEXT,
  band_changed_at TEXT,
  updated_at TEXT NOT NULL
);

-- Operator alerts (PagerDuty Events v2 and/or Slack): an outbox. A row is inserted once per alert key
-- (INSERT OR IGNORE), so a cap hit re-read under replay, or a stall seen by every cron run, is one
-- alert; each channel is marked sent when it accepted, and retried on the next run until it does.
CREATE TABLE IF NOT EXISTS events_alerts (
  alert_key TEXT PRIMARY KEY NOT NULL,         -- e.g. fanout_capped:<subscription>:<hour>
  kind TEXT NOT NULL,                          -- fanout_capped | consumer_stalled | quarantine_growing | anomaly
  summary TEXT NOT NULL,
  details_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  pagerduty_sent_at TEXT,
  slack_sent_at TEXT,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS events_alerts_unsent ON events_alerts (pagerduty_sent_at, slack_sent_at);

-- kill:high_risk_ops holds starts of workflow types with risk_level >= 4 (workflow_runner.h kHighRiskLevel).
ALTER TABLE workflow_definitions ADD COLUMN risk_level INTEGER NOT NULL DEFAULT 0;

-- timeline_indexer follows the insertion order like every drainer: its replay guard is the sequence,
-- so an event that arrives late with an older event_id is still counted (the event_id guard skipped
-- it).
ALTER TABLE entity_timelines ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
