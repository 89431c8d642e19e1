-- The open incidents: what the cron's sweep for incidents nobody watches any more reads
-- (workers/monitoring/store.cpp kOrphanedIncidents), however many resolved ones accumulate.
CREATE INDEX IF NOT EXISTS incidents_open ON incidents (tenant_id, opened_at) WHERE resolved_at IS NULL;
