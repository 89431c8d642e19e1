-- A tenant's page of the ledger (GET /api/events for one tenant, workers/events/store.cpp
-- read_page) is an equality on tenant_id and a range of seq from its cursor: this index lets
-- SQLite seek to the cursor and read that tenant's events only. Without it the read walked the
-- ledger's seq range and skipped every other tenant's event on the way, so a small tenant's page
-- read (and D1 billed) up to the whole ledger. The code of this migration's release needs it.
--
-- It replaces (tenant_id, event_id), which no statement reads since pages follow the insertion
-- order (0004): the ledger's writes keep the same number of indexes. The new index is built
-- before the old one is dropped, so the table is never without a tenant index. Building it reads
-- the whole events table once (docs/runbook-events.md, "Migration 0008").
CREATE INDEX IF NOT EXISTS events_by_tenant_seq ON events (tenant_id, seq);
DROP INDEX IF EXISTS events_by_tenant;
