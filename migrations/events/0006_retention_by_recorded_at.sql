-- Retention ages events by the ledger's clock (recorded_at), in insertion order (seq), no longer by
-- the producer's event_id (docs/runbook-events.md, "Retention"). This index holds only what retention
-- may still redact, so an hourly run reads the oldest batch of it and stops: its cost does not grow
-- with the events already redacted, nor with the tombstones (never redacted).
CREATE INDEX events_unredacted ON events (seq)
  WHERE redacted_at IS NULL AND event_type != 'events.tombstoned';
