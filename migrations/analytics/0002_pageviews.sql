-- Pageview rollups and the short-lived per-visitor state behind unique visitors and bounce rate.
-- Written only by the queue consumer (never on the beacon's request path); see docs/analytics.md.

-- Daily random salts for the visitor hash: one per UTC day, drawn before the day starts, deleted
-- 48 hours after the day began. Never leaves the worker.
CREATE TABLE IF NOT EXISTS salts (
  day TEXT PRIMARY KEY NOT NULL,  -- YYYY-MM-DD (UTC)
  salt_hex TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- Per tenant and UTC day: everything the totals of /v1/stats need. Kept for ANALYTICS_RETENTION_DAYS.
CREATE TABLE IF NOT EXISTS daily_totals (
  tenant_id TEXT NOT NULL,
  day TEXT NOT NULL,
  pageviews INTEGER NOT NULL DEFAULT 0,
  visitors INTEGER NOT NULL DEFAULT 0,  -- distinct visitor hashes that day
  bounces INTEGER NOT NULL DEFAULT 0,   -- visitors with exactly one pageview that day
  filtered INTEGER NOT NULL DEFAULT 0,  -- bot hits, not counted as pageviews
  PRIMARY KEY (tenant_id, day)
) WITHOUT ROWID;

-- Per tenant, UTC day and dimension value (dim: path, referrer, country, colo, device, browser,
-- utm_source, utm_medium, utm_campaign). Kept for ANALYTICS_RETENTION_DAYS.
CREATE TABLE IF NOT EXISTS daily_dims (
  tenant_id TEXT NOT NULL,
  day TEXT NOT NULL,
  dim TEXT NOT NULL,
  key TEXT NOT NULL,
  pageviews INTEGER NOT NULL DEFAULT 0,
  visitors INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, dim, day, key)  -- serves both the consumer's upserts and /v1/stats
) WITHOUT ROWID;

-- Raw per-visitor state (a salted hash, never an IP or user agent), deleted 48 hours after its day
-- began: how many pageviews a visitor hash made that day (bounce = exactly one) ...
CREATE TABLE IF NOT EXISTS visitor_days (
  tenant_id TEXT NOT NULL,
  day TEXT NOT NULL,
  visitor_hash TEXT NOT NULL,
  pageviews INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, day, visitor_hash)
) WITHOUT ROWID;

-- ... and which dimension values it was seen with (unique visitors per page, referrer, …).
CREATE TABLE IF NOT EXISTS visitor_dims (
  tenant_id TEXT NOT NULL,
  day TEXT NOT NULL,
  dim TEXT NOT NULL,
  key TEXT NOT NULL,
  visitor_hash TEXT NOT NULL,
  PRIMARY KEY (tenant_id, day, dim, key, visitor_hash)
) WITHOUT ROWID;

-- The rollup counters follow the per-visitor rows, so one multi-row statement per batch keeps
-- visitors and bounces exact without reading anything back. The rollup rows exist already: the
-- consumer upserts daily_totals / daily_dims earlier in the same D1 batch.
CREATE TRIGGER IF NOT EXISTS visitor_days_new AFTER INSERT ON visitor_days
BEGIN
  UPDATE daily_totals
     SET visitors = visitors + 1, bounces = bounces + (NEW.pageviews = 1)
   WHERE tenant_id = NEW.tenant_id AND day = NEW.day;
END;

CREATE TRIGGER IF NOT EXISTS visitor_days_more AFTER UPDATE OF pageviews ON visitor_days
BEGIN
  UPDATE daily_totals
     SET bounces = bounces - (OLD.pageviews = 1) + (NEW.pageviews = 1)
   WHERE tenant_id = NEW.tenant_id AND day = NEW.day;
END;

CREATE TRIGGER IF NOT EXISTS visitor_dims_new AFTER INSERT ON visitor_dims
BEGIN
  UPDATE daily_dims SET visitors = visitors + 1
   WHERE tenant_id = NEW.tenant_id AND day = NEW.day AND dim = NEW.dim AND key = NEW.key;
END;
