-- timeline_indexer materializes per-entity event lists for the UI (issue 11; docs/runbook-events.md,
-- "Entity timelines"): one row per event of an entity, holding what a list needs without reading
-- payloads. GET /api/entities/{type}/{id}/timeline reads these rows up to the indexer's cursor and
-- the events recorded after it live from `events`.
--
-- Nothing here comes from a payload: `title` is made from the event type alone, so when retention
-- redacts an event's payload its entry holds nothing to clear.
CREATE TABLE IF NOT EXISTS entity_timeline_entries (
  entity_type TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  tenant_key TEXT NOT NULL,                    -- '' for platform-wide (tenant-less) events
  seq INTEGER NOT NULL,                        -- events.seq: the ledger's insertion order
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  title TEXT NOT NULL,                         -- display title from the event type ("Lead received")
  occurred_at TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  caused_by TEXT,
  workflow_run_id TEXT,
  source_system TEXT,
  idempotency_key TEXT,
  sequence_no INTEGER,
  -- One entry per event: the indexer writes with INSERT OR IGNORE, so a replayed batch adds nothing.
  -- The key is also the read path: one tenant's entity, oldest or newest first by seq (a range scan
  -- from the cursor); the operator's all-tenant read sorts that one entity's entries.
  PRIMARY KEY (entity_type, entity_id, tenant_key, seq)
) WITHOUT ROWID;

-- A ledger migrated with events already indexed: the entries the indexer would have written for
-- everything up to its cursor (the read takes events after the cursor from `events`). The title
-- expression is timeline_title() in workers/events/timeline_indexer.cpp: dots and underscores become
-- spaces, the first letter upper case.
INSERT OR IGNORE INTO entity_timeline_entries (entity_type, entity_id, tenant_key, seq, event_id,
                                               event_type, title, occurred_at, recorded_at,
                                               caused_by, workflow_run_id, source_system,
                                               idempotency_key, sequence_no)
SELECT entity_type, entity_id, COALESCE(tenant_id, ''), seq, event_id, event_type,
       upper(substr(event_type, 1, 1)) || replace(replace(substr(event_type, 2), '.', ' '), '_', ' '),
       occurred_at, recorded_at, caused_by, workflow_run_id, source_system, idempotency_key,
       sequence_no
FROM events
WHERE seq <= (SELECT COALESCE(MAX(cursor_seq), 0) FROM event_drain_state
              WHERE consumer = 'timeline_indexer');

-- The live tail of one tenant's entity (events after the indexer's cursor), read as a range scan in
-- seq order instead of every event of the entity.
CREATE INDEX IF NOT EXISTS events_by_entity_seq ON events (entity_type, entity_id, tenant_id, seq);
