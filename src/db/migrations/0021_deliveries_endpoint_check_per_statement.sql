-- Up Migration

-- A delivery's (account, endpoint) must be an endpoint of that account (migration 0018), now
-- checked once per statement instead of once per row. A foreign key looks its parent row up and
-- locks it for every row inserted: at fan-out 10 an event writes ten delivery rows naming the
-- same few endpoints, and that look-up was about 3 of a delivery row's 21-23 µs of Postgres CPU
-- (ingest, one stream, fan-out 10). These triggers keep what the key guaranteed, with the same
-- locks: the endpoints a statement's deliveries name are locked FOR KEY SHARE until commit (an
-- endpoint's deletion waits for them, or they see it gone and fail), deleting endpoints deletes
-- their deliveries, and the keys a delivery is tied by never change.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_endpoint_of_account;

CREATE FUNCTION deliveries_name_endpoints_of_their_account() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  wanted bigint;
  found bigint;
BEGIN
  SELECT count(*) INTO wanted FROM (SELECT DISTINCT account_id, endpoint_id FROM new_rows) w;
  PERFORM 1 FROM endpoints e WHERE (e.account_id, e.id) IN (SELECT account_id, endpoint_id FROM new_rows) FOR KEY SHARE OF e;
  GET DIAGNOSTICS found = ROW_COUNT;
  IF found < wanted THEN
    RAISE EXCEPTION 'a delivery names no endpoint of its account' USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER deliveries_name_endpoints_of_their_account AFTER INSERT ON deliveries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION deliveries_name_endpoints_of_their_account();

-- Only when a statement sets these columns: nothing does (a delivery never moves to another endpoint).
CREATE FUNCTION delivery_keys_never_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (OLD.account_id, OLD.endpoint_id) IS DISTINCT FROM (NEW.account_id, NEW.endpoint_id) THEN
    RAISE EXCEPTION 'a delivery''s account and endpoint never change' USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER delivery_keys_never_change BEFORE UPDATE OF account_id, endpoint_id ON deliveries
  FOR EACH ROW EXECUTE FUNCTION delivery_keys_never_change();

CREATE FUNCTION endpoint_keys_never_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (OLD.account_id, OLD.id) IS DISTINCT FROM (NEW.account_id, NEW.id) THEN
    RAISE EXCEPTION 'an endpoint''s account and id never change' USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER endpoint_keys_never_change BEFORE UPDATE OF account_id, id ON endpoints
  FOR EACH ROW EXECUTE FUNCTION endpoint_keys_never_change();

-- ON DELETE CASCADE as the key had it (an Account's deletion deletes its endpoints, hence their deliveries).
CREATE FUNCTION endpoints_take_their_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM deliveries d USING old_rows o WHERE d.endpoint_id = o.id;
  RETURN NULL;
END $$;

CREATE TRIGGER endpoints_take_their_deliveries AFTER DELETE ON endpoints
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION endpoints_take_their_deliveries();
