-- GET /api/events pages in insertion order (seq), oldest first as newest first already did: a
-- tenant's page is read along this index instead of sorting the tenant's events by seq.
CREATE INDEX IF NOT EXISTS events_by_tenant_seq ON events (tenant_id, seq);
