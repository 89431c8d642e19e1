-- Leads (docs/contract.md "leads-service"): one row per accepted submission of a tenant that stores
-- submissions.
-- Every query is scoped by tenant_id. No IP address or user agent is stored.
CREATE TABLE IF NOT EXISTS leads (
  id TEXT PRIMARY KEY NOT NULL,                -- ULID, also the public leadId
  tenant_id TEXT NOT NULL,
  payload JSON NOT NULL,                       -- the validated fields
  turnstile_verified INTEGER NOT NULL,         -- 0 when siteverify was unreachable (kept, flagged)
  created_at DATETIME DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS idx_leads_tenant ON leads (tenant_id, created_at DESC);
CREATE INDEX IF NOT EXISTS idx_leads_tenant_id ON leads (tenant_id, id DESC);

-- Idempotency-Key replays within 24 h return the first leadId (also for tenants that store nothing).
CREATE TABLE IF NOT EXISTS lead_idempotency (
  tenant_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  lead_id TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, idempotency_key)
);

-- Fixed-window rate limit per tenant + client network (IPv4 /32, IPv6 /64; a hash, never the IP).
-- The window starts at a bucket's first hit and ends at expires_at_ms; the next hit after that
-- starts a new one.
CREATE TABLE IF NOT EXISTS rate_limit_windows (
  bucket TEXT PRIMARY KEY NOT NULL,            -- tenant|first 32 hex of sha256("leads-rate:" + network)
  hits INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL
);

-- One delivery per (lead, channel), and per recipient for SMS; its attempts are recorded one by one.
CREATE TABLE IF NOT EXISTS lead_deliveries (
  id TEXT PRIMARY KEY NOT NULL,                -- ULID
  tenant_id TEXT NOT NULL,
  lead_id TEXT NOT NULL,
  channel TEXT NOT NULL,                       -- email | sms | webhook
  provider TEXT NOT NULL,                      -- resend | sendgrid | twilio:<E.164 recipient> | webhook
  status TEXT NOT NULL,                        -- pending | delivered | dead | cancelled (lead erased)
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  delivered_at TEXT
);
CREATE INDEX IF NOT EXISTS idx_deliveries_lead ON lead_deliveries (tenant_id, lead_id);
CREATE INDEX IF NOT EXISTS idx_deliveries_status ON lead_deliveries (status, updated_at);

CREATE TABLE IF NOT EXISTS delivery_attempts (
  delivery_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  attempted_at TEXT NOT NULL,
  ok INTEGER NOT NULL,
  http_status INTEGER,
  error TEXT,
  elapsed_ms INTEGER,
  PRIMARY KEY (delivery_id, attempt)
);
