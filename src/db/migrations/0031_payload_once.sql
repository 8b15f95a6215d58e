-- Up Migration

-- Each event's payload is stored once, in `payload` (src/db/payload-bytes.ts): its JSON with keys
-- in jsonb's order, zlib-compressed when shorter. Postgres compresses no value of a row under about
-- 2 KB (toast_tuple_target does not lower that threshold, and this build has no lz4), so a 1 KiB
-- payload was stored as it came, twice: `data` (webhook bodies) and `stream_data` (stream items).
--
-- The stream item's data is now derived from the payload when read (streamData in src/core/catalog,
-- keys put in jsonb's order by src/db/events.ts): the same object for most types, without top-level
-- nulls for chatapp statuses, normalised with the platform's ids for *.message.received. Those ids
-- are all a received message's item needs beyond the payload: the message resource is
-- message_resource_id, the contact and conversation are kept here (32 bytes, not a second payload).
-- `stream_data` stays, nullable, for rows stored before this migration whose item cannot be derived
-- in SQL (received messages: their ids were never columns); new rows leave it NULL.
ALTER TABLE events
  ADD COLUMN payload bytea,
  ADD COLUMN contact_id uuid,
  ADD COLUMN conversation_id uuid,
  ALTER COLUMN stream_data DROP NOT NULL;

-- Existing rows: the payload as JSON text (jsonb's output keeps jsonb's key order; the reader takes
-- text or zlib), and no stream copy where the derivation gives it. This UPDATE writes a new version
-- of every row (row locks, no table lock; WAL and, until VACUUM, disk about the table's size) and the
-- NOT NULL below scans the table under an exclusive lock: immediate on a young database. On a large
-- one, add the columns, run the UPDATE in batches of ids with VACUUM between them while the service
-- writes `payload` (as this version does), then the rest.
UPDATE events SET
  payload = convert_to(data::text, 'UTF8'),
  stream_data = CASE
    WHEN type NOT LIKE '%.message.received' AND stream_data = CASE
      -- In the stream, top-level null fields of chatapp statuses are omitted.
      WHEN type IN ('chatapp.message.sent', 'chatapp.message.delivered', 'chatapp.message.read', 'chatapp.message.failed')
        THEN coalesce((SELECT jsonb_object_agg(key, value) FROM jsonb_each(data) WHERE value <> 'null'::jsonb), '{}'::jsonb)
      ELSE data
    END THEN NULL
    ELSE stream_data
  END;

ALTER TABLE events
  ALTER COLUMN payload SET NOT NULL,
  DROP COLUMN data;

-- Deliveries: no index leads with the account any more. The account-wide list (listDeliveries without
-- an endpoint) merges the first rows of each of the account's endpoints on deliveries_endpoint_page,
-- and no other statement looks deliveries up by account alone. It was 104 of a delivery's 700 bytes
-- (npm run bench:bytes): a delivery's recorded outcome changes indexed columns, so the update is not
-- HOT and every index takes a second entry for it.
DROP INDEX IF EXISTS deliveries_account_page;
