-- Up Migration

-- The audit list's two indexes by endpoint, in ascending order, read backwards for the newest first.
--
-- A new delivery has the newest created_at of its endpoint. In the descending indexes it went to
-- the left end of the endpoint's entries, where a full leaf splits in half and its right half is
-- never written again: the endpoint's page index held 113 bytes a delivery (npm run bench:bytes).
-- In ascending order it goes to the right end, where nbtree fills a leaf to its fillfactor before
-- it splits (the rightmost leaf, or a run of rising keys within one endpoint's entries): 95-99
-- bytes, and the status index 14 instead of 27.
--
-- Replaced the way migration 0033 added an index to tables holding data: created ON ONLY the
-- parent (at once, without locking writes), at once on the empty partitions, and by the
-- maintenance run CONCURRENTLY on the others (src/db/partition-indexes.ts). The descending ones
-- stay while their replacements are invalid (the audit list keeps an index), and go when those
-- are valid: here, when every partition is empty; otherwise by the maintenance run that attaches
-- the last partition's index (dropReplacedIndexes).
CREATE INDEX deliveries_endpoint_list ON ONLY deliveries (endpoint_id, created_at, id);
CREATE INDEX deliveries_endpoint_status_list ON ONLY deliveries (endpoint_id, status, created_at, id)
  WHERE status <> 'success';

DO $$
DECLARE
  p text;
BEGIN
  FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE i.inhparent = 'deliveries'::regclass AND pg_relation_size(c.oid) = 0 LOOP
    EXECUTE format('CREATE INDEX %I ON %I (endpoint_id, created_at, id)', p || '_endpoint_list', p);
    EXECUTE format('ALTER INDEX deliveries_endpoint_list ATTACH PARTITION %I', p || '_endpoint_list');
    EXECUTE format('CREATE INDEX %I ON %I (endpoint_id, status, created_at, id) WHERE status <> ''success''',
                   p || '_endpoint_status_list', p);
    EXECUTE format('ALTER INDEX deliveries_endpoint_status_list ATTACH PARTITION %I', p || '_endpoint_status_list');
  END LOOP;
  IF (SELECT indisvalid FROM pg_index WHERE indexrelid = 'deliveries_endpoint_list'::regclass) THEN
    DROP INDEX IF EXISTS deliveries_endpoint_page;
  END IF;
  IF (SELECT indisvalid FROM pg_index WHERE indexrelid = 'deliveries_endpoint_status_list'::regclass) THEN
    DROP INDEX IF EXISTS deliveries_endpoint_status_page;
  END IF;
END $$;
