-- Up Migration

-- Events and deliveries, written at the event rate, take time-ordered ids (UUIDv7; the API and
-- the worker make theirs the same way, src/db/row-id.ts). Their primary keys and the indexes keyed
-- by them (a delivery's event, an attempt's delivery) then grow at their right edge instead of on
-- a random leaf per insert. Existing rows keep their ids. A default is a catalog change: no rewrite,
-- and the lock is held for no longer than that.
DO $$
BEGIN
  IF to_regprocedure('uuidv7()') IS NULL THEN
    RAISE EXCEPTION 'Postgres 18 or later is needed (uuidv7()); this server is %', version();
  END IF;
END $$;

ALTER TABLE events ALTER COLUMN id SET DEFAULT uuidv7();
ALTER TABLE deliveries ALTER COLUMN id SET DEFAULT uuidv7();
