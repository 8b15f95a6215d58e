-- Up Migration

-- A reply to a broadcast may promote the contact to this funnel stage (changed_by auto, SPEC 6.3).
ALTER TABLE broadcasts ADD COLUMN reply_stage_id uuid REFERENCES stages (id) ON DELETE SET NULL;
