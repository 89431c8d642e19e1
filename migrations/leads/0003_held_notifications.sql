-- Notifications held by the kill switch kill:notifications (docs/leads.md "Kill switch"): while it is
-- on, the queue consumer parks each message on its delivery instead of sending it; the sweeper cron
-- re-sends the parked message once the switch is off and clears both columns.
ALTER TABLE lead_deliveries ADD COLUMN held_at TEXT;      -- RFC 3339, NULL: not held
ALTER TABLE lead_deliveries ADD COLUMN held_message TEXT; -- the queue message body (JSON) to re-send
CREATE INDEX IF NOT EXISTS idx_deliveries_held ON lead_deliveries (held_at) WHERE held_at IS NOT NULL;
