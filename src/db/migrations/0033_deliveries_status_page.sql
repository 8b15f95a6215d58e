-- Up Migration

-- The audit list filtered by a status other than success: each endpoint's deliveries of that status,
-- newest first, without walking its successes on deliveries_endpoint_page (at 20 million
-- deliveries a page of `exhausted` 1,000 pages deep took 11 ms of SQL, growing with the data).
-- Partial: successes are most rows, and a filter on success finds them on the page index at once.
--
-- Created ON ONLY the parent: at once, and without locking the partitions' writes. Partitions
-- attached from now on get it then. The empty ones there now get it here (instant); those holding
-- rows get it from the maintenance run, built CONCURRENTLY one partition at a time
-- (src/db/partition-indexes.ts), and Postgres marks this index valid once the last is attached.
CREATE INDEX deliveries_endpoint_status_page ON ONLY deliveries (endpoint_id, status, created_at DESC, id DESC)
  WHERE status <> 'success';

DO $$
DECLARE
  p text;
BEGIN
  FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE i.inhparent = 'deliveries'::regclass AND pg_relation_size(c.oid) = 0 LOOP
    EXECUTE format('CREATE INDEX %I ON %I (endpoint_id, status, created_at DESC, id DESC) WHERE status <> ''success''',
                   p || '_endpoint_status_page', p);
    EXECUTE format('ALTER INDEX deliveries_endpoint_status_page ATTACH PARTITION %I', p || '_endpoint_status_page');
  END LOOP;
END $$;
