-- Up Migration
-- Step 1 of 2 of moving deliveries and their attempts to weekly time partitions (the why is in
-- 0029_partitioned_deliveries.sql). Only what is instant under its brief ACCESS EXCLUSIVE lock:
-- no row is read or rewritten here, so the scans happen in step 2 under a lock writes pass.
--
-- The attempts of a delivery are partitioned on their delivery's created_at. Existing attempts
-- take a constant default (kept in the catalog, no rewrite): they all stay in the legacy partition.
ALTER TABLE delivery_attempts ADD COLUMN delivery_created_at timestamptz NOT NULL DEFAULT '-infinity';
-- The cutover: the existing tables become the partition of everything before it, and weekly
-- partitions start there. Two week-starts (Monday 00:00 UTC) ahead, so that nothing written
-- between these two migrations can be later than it. NOT VALID: enforced for new rows from now
-- on, checked for existing rows by step 2.
DO $$
DECLARE
  cutover timestamptz := (date_trunc('week', now() AT TIME ZONE 'UTC') + interval '2 weeks') AT TIME ZONE 'UTC';
BEGIN
  EXECUTE format('ALTER TABLE deliveries ADD CONSTRAINT deliveries_before_cutover CHECK (created_at < %L::timestamptz) NOT VALID', cutover);
  EXECUTE format('ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_before_cutover CHECK (delivery_created_at < %L::timestamptz) NOT VALID', cutover);
END $$;
