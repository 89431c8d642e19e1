-- Automatic retries of quarantined workflow starts (docs/runbook-events.md, "Retries of failed
-- starts"). A start that failed for a reason that passes — its target answered 5xx, 408 or 429, or
-- did not answer (a timeout, a network error) — quarantines its event with a time to try again, and
-- the */2 cron retries the rows that are due, backing off (2, 4, 8, 16, 32 minutes) up to six
-- attempts in all. NULL: no automatic retry (a failure that would fail again, a held start, or the
-- last attempt spent): the operator retries by hand, as before. Rows written before this migration
-- have NULL: nothing changes for them.
ALTER TABLE events_quarantine ADD COLUMN retry_at TEXT;
CREATE INDEX IF NOT EXISTS events_quarantine_due ON events_quarantine (consumer, retry_at)
  WHERE resolved_at IS NULL AND retry_at IS NOT NULL;
