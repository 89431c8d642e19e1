-- The open incidents, oldest first: what the sweep for incidents nobody watches any more reads
-- (workers/monitoring/store.cpp kOrphanedIncidents: ORDER BY opened_at LIMIT n), however many
-- resolved ones accumulate.
CREATE INDEX IF NOT EXISTS incidents_open ON incidents (opened_at) WHERE resolved_at IS NULL;
