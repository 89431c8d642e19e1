-- The cms content of each tenant: hours (with the content version) in cms_state, date-range and
-- emergency overrides, announcements, and one cms_versions row per committed change (who changed
-- what). Every row carries tenant_id and every query binds it. A tenant without a cms_state row has
-- never been edited: its content is the manifest snapshot from its config (version 0).
CREATE TABLE IF NOT EXISTS cms_state (
  tenant_id TEXT PRIMARY KEY NOT NULL,
  version INTEGER NOT NULL,
  timezone TEXT NOT NULL,
  weekly_json TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS cms_overrides (
  tenant_id TEXT NOT NULL,
  id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('dates', 'closed_now')),
  from_date TEXT,
  to_date TEXT,
  closed INTEGER NOT NULL DEFAULT 0,
  hours_json TEXT,
  starts_at INTEGER,
  until INTEGER,
  message TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

CREATE TABLE IF NOT EXISTS cms_announcements (
  tenant_id TEXT NOT NULL,
  id TEXT NOT NULL,
  text TEXT NOT NULL,
  level TEXT NOT NULL CHECK (level IN ('info', 'warning', 'emergency')),
  starts_at INTEGER,
  ends_at INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

-- The primary key makes versions a compare-and-set: two writers that both read version n both try
-- to insert n + 1, and the second one's whole batch rolls back.
CREATE TABLE IF NOT EXISTS cms_versions (
  tenant_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  changed_at TEXT NOT NULL,
  actor TEXT NOT NULL,
  change TEXT NOT NULL,
  detail_json TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (tenant_id, version)
);
