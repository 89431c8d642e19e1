-- The cms.* event of each committed version until the ledger's queue has accepted it. The row is
-- written in the version's own transaction (so a committed version always has its event, and a
-- version that lost its race has none), deleted once the queue took the message, and sent again
-- by the worker's cron while it stands. The message keeps its event_id: the ledger stores an
-- event_id once, so a message sent twice (its deletion failed, or the cron met a send still in
-- flight) is one event.
CREATE TABLE IF NOT EXISTS cms_event_outbox (
  tenant_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  message_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  PRIMARY KEY (tenant_id, version)
);
