-- Workflow starts are claimed before they are sent: a (consumer, event, workflow) row is inserted as
-- 'claimed' by one drain run (holder), turned 'started' when the target accepts, or deleted when it
-- refuses. Two runs (an overrunning drain and the next cron, or a drain and a quarantine retry) can then
-- never start the same workflow twice. A claim older than the lock TTL belongs to a dead run and may be
-- taken over.
ALTER TABLE event_consumer_dedupe ADD COLUMN status TEXT NOT NULL DEFAULT 'started';
ALTER TABLE event_consumer_dedupe ADD COLUMN holder TEXT;
ALTER TABLE event_consumer_dedupe ADD COLUMN claimed_at_ms INTEGER NOT NULL DEFAULT 0;
