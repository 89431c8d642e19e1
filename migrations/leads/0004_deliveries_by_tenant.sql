-- The tenant's deliveries of one status, newest first, a page at a time (GET /api/leads/deliveries,
-- keyset on the delivery's ULID): a seek, not a walk over every tenant's rows of that status.
CREATE INDEX IF NOT EXISTS idx_deliveries_tenant_status ON lead_deliveries (tenant_id, status, id);
