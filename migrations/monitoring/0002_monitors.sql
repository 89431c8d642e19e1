-- Monitors, their probe history (raw results for a few days, daily rollups for months), incidents
-- and the alert outbox. Every table is keyed by tenant_id first: no query reaches across tenants.

-- One row per monitor. spec_json is the validated definition (workers/monitoring/monitor.h);
-- the other columns are the probe state machine, updated only by the probe that holds the claim.
CREATE TABLE IF NOT EXISTS monitors (
  tenant_id TEXT NOT NULL,
  monitor_id TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  source TEXT NOT NULL DEFAULT 'api',          -- 'api' (PUT /admin/monitors) or 'config' (manifest)
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  probe_tick INTEGER NOT NULL DEFAULT 0,       -- last cron tick (epoch ms / 300000) claimed
  probing_until INTEGER NOT NULL DEFAULT 0,    -- claim lease (epoch ms); 0 = no probe running
  last_probe_json TEXT,                        -- {"at","ok","status","latencyMs","reason"}
  incident_id TEXT,                            -- the open incident, if any
  PRIMARY KEY (tenant_id, monitor_id)
);
CREATE INDEX IF NOT EXISTS monitors_enabled ON monitors (enabled, tenant_id, monitor_id);

-- Raw probe results, pruned after PROBE_RETENTION_DAYS (docs/monitoring.md).
CREATE TABLE IF NOT EXISTS probes (
  tenant_id TEXT NOT NULL,
  monitor_id TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  ok INTEGER NOT NULL,
  status INTEGER,
  latency_ms INTEGER,
  reason TEXT,
  maintenance INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS probes_by_monitor ON probes (tenant_id, monitor_id, at_ms);
CREATE INDEX IF NOT EXISTS probes_by_time ON probes (at_ms);

-- Daily rollups (UTC days), updated with every probe; kept ROLLUP_RETENTION_DAYS (>= 90).
-- hist_json counts latencies per bucket of kLatencyBuckets (workers/monitoring/probe.h).
CREATE TABLE IF NOT EXISTS probe_days (
  tenant_id TEXT NOT NULL,
  monitor_id TEXT NOT NULL,
  day TEXT NOT NULL,                           -- YYYY-MM-DD
  checks INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,         -- failed probes outside maintenance windows
  hist_json TEXT NOT NULL,
  PRIMARY KEY (tenant_id, monitor_id, day)
);

CREATE TABLE IF NOT EXISTS incidents (
  incident_id TEXT PRIMARY KEY NOT NULL,
  tenant_id TEXT NOT NULL,
  monitor_id TEXT NOT NULL,
  opened_at TEXT NOT NULL,
  resolved_at TEXT,
  reason TEXT NOT NULL,
  dedup_key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS incidents_by_monitor ON incidents (tenant_id, monitor_id, opened_at);

-- The alert outbox: written in the same batch as the incident change, so no alert is lost; each
-- row is claimed before it is sent (state 'sending' with a lease), so none is sent twice.
CREATE TABLE IF NOT EXISTS alerts (
  alert_id TEXT PRIMARY KEY NOT NULL,
  tenant_id TEXT NOT NULL,
  monitor_id TEXT NOT NULL,
  incident_id TEXT NOT NULL,
  channel TEXT NOT NULL,                       -- 'pagerduty' | 'slack'
  action TEXT NOT NULL,                        -- 'trigger' | 'resolve'
  request_json TEXT NOT NULL,                  -- {"url","body"} built when the incident changed
  state TEXT NOT NULL DEFAULT 'pending',       -- pending | sending | sent | dead
  attempts INTEGER NOT NULL DEFAULT 0,
  lease_until INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (incident_id, channel, action)
);
CREATE INDEX IF NOT EXISTS alerts_by_state ON alerts (state, updated_at);
CREATE INDEX IF NOT EXISTS alerts_by_monitor ON alerts (tenant_id, monitor_id, created_at);
