-- Each finished (tenant, UTC day) of daily_totals is announced once to the event ledger as
-- `analytics.day_summarized` by the hourly job (workers/analytics/retention.cpp): summarized_at is
-- set when the event is on the ledger's queue. The partial index holds only the rows still to
-- announce (today's, and any day the job has not reached), so the hourly lookup never scans history.
ALTER TABLE daily_totals ADD COLUMN summarized_at TEXT;
-- Days that ended long before this migration are history, not news: never announced.
UPDATE daily_totals SET summarized_at = 'before-0003' WHERE day < date('now', '-7 days');
CREATE INDEX IF NOT EXISTS daily_totals_unsummarized
  ON daily_totals (day, tenant_id) WHERE summarized_at IS NULL;
