-- Tenants registered on this worker by PUT /admin/tenants/{id}. Only SHA-256 digests of the tenant
-- token and the tenant admin token are kept; config_json holds this worker's part of the manifest.
CREATE TABLE IF NOT EXISTS tenants (
  tenant_id TEXT PRIMARY KEY NOT NULL,
  token_hash TEXT NOT NULL,
  admin_token_hash TEXT NOT NULL,
  config_json TEXT NOT NULL DEFAULT '{}',
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
