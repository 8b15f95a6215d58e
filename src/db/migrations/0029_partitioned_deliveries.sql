-- Up Migration
-- Step 2 of 2: deliveries and their attempts become partitioned by week of the delivery's
-- created_at (DELIVERY_RETENTION_DAYS keeps them that long, then src/db/delivery-partitions.ts
-- drops the whole week: no row DELETE, no bloat, no vacuum debt). A week keeps the count of
-- partitions low (about 15 in a 90-day window: planning stays cheap, and the statements that do
-- not prune, by delivery id or due by endpoint, probe that many small indexes); a week at 100M
-- deliveries a day is still dropped by a file unlink. A delivery's attempts are partitioned on
-- their delivery's created_at with the same bounds, so the two leave together.
--
-- The existing tables are kept, as the partition of everything before the cutover step 1 chose,
-- and nothing is copied or rebuilt: each partitioned index below matches an index they already
-- have, which ATTACH adopts, and their CHECK constraints (validated first, under SHARE UPDATE
-- EXCLUSIVE, which inserts and updates pass) prove the partition bound, so ATTACH scans nothing.
-- The ACCESS EXCLUSIVE part after the validation is catalog work only (docs/scaling.md,
-- "Partitions and retention", has what it measured).
--
-- No primary key on the parents: a partitioned table's unique index must contain the partition
-- key, and a new (id, created_at) index over every existing delivery would be a build under this
-- migration's lock. Each partition has its own primary key instead (deliveries (id), attempts
-- (delivery_id, number)); ids are gen_random_uuid(), and an attempt conflicts within its
-- delivery's partition, which is all `ON CONFLICT DO NOTHING` needs.
ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_before_cutover;
ALTER TABLE delivery_attempts VALIDATE CONSTRAINT delivery_attempts_before_cutover;

-- The attempts no longer reference their delivery (a foreign key to a partitioned table would
-- need that unique (id, created_at) index): deleting deliveries deletes their attempts (below).
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;
-- A table with a transition-table trigger cannot be attached, and the parent's row trigger is
-- cloned to each partition: the parent gets both back below.
DROP TRIGGER deliveries_name_endpoints_of_their_account ON deliveries;
DROP TRIGGER delivery_keys_never_change ON deliveries;

ALTER TABLE deliveries RENAME TO deliveries_legacy;
ALTER TABLE deliveries_legacy RENAME CONSTRAINT deliveries_pkey TO deliveries_legacy_pkey;
ALTER INDEX deliveries_account_page RENAME TO deliveries_legacy_account_page;
ALTER INDEX deliveries_endpoint_page RENAME TO deliveries_legacy_endpoint_page;
ALTER INDEX deliveries_due RENAME TO deliveries_legacy_due;
ALTER INDEX deliveries_event RENAME TO deliveries_legacy_event;
ALTER INDEX deliveries_held RENAME TO deliveries_legacy_held;
ALTER TABLE delivery_attempts RENAME TO delivery_attempts_legacy;
ALTER TABLE delivery_attempts_legacy RENAME CONSTRAINT delivery_attempts_pkey TO delivery_attempts_legacy_pkey;
-- New attempts name their delivery's created_at; the legacy default stays on the legacy table only.

CREATE TABLE deliveries (
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL,
  endpoint_id uuid NOT NULL,
  event_id uuid,
  event_type text NOT NULL,
  idempotency_key text NOT NULL,
  environment text CONSTRAINT deliveries_environment_check CHECK (environment IN ('live', 'sandbox')),
  status text NOT NULL CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'success', 'failed', 'exhausted', 'limited')),
  attempts integer NOT NULL DEFAULT 0,
  response_code integer,
  last_attempt_at timestamptz,
  next_attempt_at timestamptz,
  terminal_reason text,
  held_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  leased_until timestamptz,
  lease_owner text
) PARTITION BY RANGE (created_at);
CREATE INDEX deliveries_account_page ON deliveries (account_id, created_at DESC, id DESC);
CREATE INDEX deliveries_endpoint_page ON deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX deliveries_due ON deliveries (endpoint_id, next_attempt_at) WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_event ON deliveries (event_id) WHERE event_id IS NOT NULL;
CREATE INDEX deliveries_held ON deliveries (endpoint_id, held_since) WHERE held_since IS NOT NULL AND status IN ('pending', 'failed');

CREATE TABLE delivery_attempts (
  delivery_id uuid NOT NULL,
  number integer NOT NULL,
  started_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  response_code integer,
  error text CONSTRAINT delivery_attempts_error_check CHECK (error IN ('timeout', 'connection_error', 'tls_error', 'blocked_destination', 'non_2xx')),
  response_excerpt text,
  delivery_created_at timestamptz NOT NULL
) PARTITION BY RANGE (delivery_created_at);

DO $$
DECLARE
  cutover timestamptz := (regexp_match(
    (SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'deliveries_before_cutover' AND conrelid = 'deliveries_legacy'::regclass),
    '''([^'']+)'''))[1]::timestamptz;
BEGIN
  EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION deliveries_legacy FOR VALUES FROM (MINVALUE) TO (%L)', cutover);
  EXECUTE format('ALTER TABLE delivery_attempts ATTACH PARTITION delivery_attempts_legacy FOR VALUES FROM (MINVALUE) TO (%L)', cutover);
END $$;
-- The partition bound says it now.
ALTER TABLE deliveries_legacy DROP CONSTRAINT deliveries_before_cutover;
ALTER TABLE delivery_attempts_legacy DROP CONSTRAINT delivery_attempts_before_cutover;

-- 0021's triggers, on the parent (the function bodies name `deliveries`, now the parent).
CREATE TRIGGER deliveries_name_endpoints_of_their_account AFTER INSERT ON deliveries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION deliveries_name_endpoints_of_their_account();
CREATE TRIGGER delivery_keys_never_change BEFORE UPDATE OF account_id, endpoint_id ON deliveries
  FOR EACH ROW EXECUTE FUNCTION delivery_keys_never_change();
-- ON DELETE CASCADE as the attempts' foreign key had it, once per statement (an endpoint's or an
-- Account's deletion deletes its deliveries through endpoints_take_their_deliveries). Partitions
-- leaving by DROP fire nothing: their attempts leave with their own partition.
CREATE FUNCTION deliveries_take_their_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- An attempt's delivery_created_at is its delivery's, or -infinity (attempts older than 0029).
  DELETE FROM delivery_attempts a USING old_rows o WHERE a.delivery_id = o.id AND a.delivery_created_at <= o.created_at;
  RETURN NULL;
END $$;
CREATE TRIGGER deliveries_take_their_attempts AFTER DELETE ON deliveries
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION deliveries_take_their_attempts();

-- One week's partition of each table, made as a table of its own and attached (ATTACH takes SHARE
-- UPDATE EXCLUSIVE on the parent, which inserts, claims and reads pass; CREATE TABLE ... PARTITION
-- OF would take ACCESS EXCLUSIVE and queue every statement behind the longest running one).
-- Returns false when that week's partition exists. src/db/delivery-partitions.ts calls it ahead.
CREATE FUNCTION create_delivery_partitions(lower timestamptz, upper timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
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
  EXECUTE format('CREATE TABLE %I (LIKE deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS, PRIMARY KEY (id)) WITH (fillfactor = 80)', d);
  EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', d, lower, upper);
  EXECUTE format('CREATE TABLE %I (LIKE delivery_attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS, PRIMARY KEY (delivery_id, number))', a);
  EXECUTE format('ALTER TABLE delivery_attempts ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', a, lower, upper);
  RETURN true;
END $$;

-- The four weeks after the cutover, so a fresh database (and one whose maintenance Schedule is
-- paused) inserts without waiting for maintenance; every start and every maintenance run keeps
-- four weeks ahead.
SELECT create_delivery_partitions(w, w + interval '1 week')
FROM (SELECT generate_series(0, 3) AS n) s,
     LATERAL (SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz + s.n * interval '1 week' AS w
              FROM pg_class c WHERE c.oid = 'deliveries_legacy'::regclass) b;
