-- Up Migration

-- Only the newest week of deliveries is updated (claims, attempts, retries), and autovacuum's
-- default threshold (a fifth of the table dead) is a fifth of that week: at 100 M deliveries a day,
-- 140 M dead rows before vacuum starts (measured by bench:scale's churn: dead rows grew for ten
-- minutes with no vacuum of the written week). 2 % makes vacuum follow the churn; older weeks are
-- written no more and are skipped by the visibility map whatever the setting. Attempts are only
-- inserted, so their weeks keep the default.
CREATE OR REPLACE FUNCTION create_delivery_partitions(lower timestamptz, upper timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  suffix text := to_char(lower AT TIME ZONE 'UTC', 'YYYYMMDD');
  d text := 'deliveries_p' || suffix;
  a text := 'delivery_attempts_p' || suffix;
BEGIN
  -- Two processes at start (API and worker) may ask for the same week at once.
  PERFORM pg_advisory_xact_lock(hashtext('create_delivery_partitions'));
  IF to_regclass(d) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I (LIKE deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS, PRIMARY KEY (id))
                  WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02)', d);
  EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', d, lower, upper);
  EXECUTE format('CREATE TABLE %I (LIKE delivery_attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS, PRIMARY KEY (delivery_id, number))', a);
  EXECUTE format('ALTER TABLE delivery_attempts ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', a, lower, upper);
  RETURN true;
END $$;

-- The weeks that exist already (the legacy partition included): a setting, no rewrite, SHARE
-- UPDATE EXCLUSIVE on each (writes go on).
DO $$
DECLARE
  p regclass;
BEGIN
  FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'deliveries'::regclass LOOP
    EXECUTE format('ALTER TABLE %s SET (autovacuum_vacuum_scale_factor = 0.02)', p);
  END LOOP;
END $$;
