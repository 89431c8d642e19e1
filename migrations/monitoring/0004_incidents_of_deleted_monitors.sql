-- An incident belongs to the monitor it was opened for, not to whatever later bears its id: when a
-- monitor is deleted (DELETE /admin/monitors/{id}, or a manifest that no longer declares it), its
-- incidents are marked in the same D1 batch, and a monitor made again under that id shows none of
-- them (status page, alert list). The rows stay: an open one is still closed by the sweep, and its
-- resolves go out through the outbox, which needs it.
ALTER TABLE incidents ADD COLUMN monitor_deleted INTEGER NOT NULL DEFAULT 0;

-- Incidents from before this migration: those whose monitor is gone, or was made again after they
-- opened (no incident of a monitor opens before it exists).
UPDATE incidents SET monitor_deleted = 1
WHERE NOT EXISTS (SELECT 1 FROM monitors m
                  WHERE m.tenant_id = incidents.tenant_id AND m.monitor_id = incidents.monitor_id
                    AND m.created_at <= incidents.opened_at);
