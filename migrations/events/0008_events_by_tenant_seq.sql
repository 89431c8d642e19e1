-- A tenant's page of the ledger (GET /api/events for one tenant, workers/events/store.cpp
-- read_page) is an equality on tenant_id and a range of seq from its cursor: this index lets
-- SQLite seek to the cursor and read that tenant's events only. Without it the read walked the
-- ledger's seq range and skipped every other tenant's event on the way, so a small tenant's page
-- read (and D1 billed) up to the whole ledger. It replaces (tenant_id, event_id), which no
-- statement reads since pages follow the insertion order (0004): the ledger's writes keep the same
-- number of indexes.
DROP INDEX IF EXISTS events_by_tenant;
CREATE INDEX IF NOT EXISTS events_by_tenant ON events (tenant_id, seq);
