-- Up Migration

-- Per endpoint and UTC hour: its attempts (by success or failure, and their total duration for
-- the mean latency) and its deliveries that ended without an attempt (`exhausted`, `limited`).
-- GET /webhooks/{id}/stats and the console's chart read these rows instead of counting the
-- endpoint's deliveries, so they cost the same at any history. Kept as long as delivery records
-- (DELIVERY_RETENTION_DAYS): `deleteRollupsBefore` (src/db/endpoint-hourly-stats.ts).
CREATE TABLE endpoint_hourly_stats (
  account_id uuid NOT NULL,
  endpoint_id uuid NOT NULL,
  -- The start of the UTC hour.
  hour timestamptz NOT NULL,
  -- Attempts by the hour they started: a success is one without an `error`.
  attempts_succeeded integer NOT NULL DEFAULT 0,
  attempts_failed integer NOT NULL DEFAULT 0,
  attempt_ms_total bigint NOT NULL DEFAULT 0,
  -- Deliveries by the hour they ended so (a resent one that ends again counts again).
  deliveries_exhausted integer NOT NULL DEFAULT 0,
  deliveries_limited integer NOT NULL DEFAULT 0,
  PRIMARY KEY (endpoint_id, hour),
  -- Rollups go with their endpoint: a soft-deleted one keeps them (as it keeps its deliveries);
  -- a hard-deleted one (its Account deleted) takes them.
  FOREIGN KEY (account_id, endpoint_id) REFERENCES endpoints (account_id, id) ON DELETE CASCADE
  -- A row is updated many times in its hour: room on its page keeps the updates HOT.
) WITH (fillfactor = 70);
-- Retention removes whole hours.
CREATE INDEX endpoint_hourly_stats_hour ON endpoint_hourly_stats (hour);

-- Every attempt counts, whichever statement inserts it (the worker's batched record, a test
-- send), once per statement: one upsert per (endpoint, hour) of the batch, in the statement that
-- inserts the attempts, so the counts never drift from them. An attempt already on record (ON
-- CONFLICT DO NOTHING) is not in the transition table and is not counted twice. Rows are upserted
-- in key order so two batches touching the same endpoint-hours cannot deadlock. The join names the
-- delivery's week (an attempt's delivery_created_at is its delivery's created_at, taken in SQL), so
-- it probes one partition.
CREATE FUNCTION delivery_attempts_roll_up() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO endpoint_hourly_stats AS s (account_id, endpoint_id, hour, attempts_succeeded, attempts_failed, attempt_ms_total)
  SELECT d.account_id, d.endpoint_id, date_trunc('hour', a.started_at, 'UTC'),
         count(*) FILTER (WHERE a.error IS NULL), count(*) FILTER (WHERE a.error IS NOT NULL), sum(a.duration_ms)
  FROM new_attempts a JOIN deliveries d ON d.id = a.delivery_id AND d.created_at = a.delivery_created_at
  GROUP BY d.account_id, d.endpoint_id, date_trunc('hour', a.started_at, 'UTC')
  ORDER BY d.endpoint_id, date_trunc('hour', a.started_at, 'UTC')
  ON CONFLICT (endpoint_id, hour) DO UPDATE SET
    attempts_succeeded = s.attempts_succeeded + excluded.attempts_succeeded,
    attempts_failed = s.attempts_failed + excluded.attempts_failed,
    attempt_ms_total = s.attempt_ms_total + excluded.attempt_ms_total;
  RETURN NULL;
END $$;

-- Created before the backfill reads: from here on, attempts wait for this migration's commit
-- and are then counted by the trigger; the backfill sees every attempt committed before.
CREATE TRIGGER delivery_attempts_roll_up AFTER INSERT ON delivery_attempts
  REFERENCING NEW TABLE AS new_attempts FOR EACH STATEMENT EXECUTE FUNCTION delivery_attempts_roll_up();

-- Backfill, in one pass over the history (a young database: thousands of rows, not millions).
-- Exhausted deliveries count in the hour they were last updated (when they ended), limited ones
-- in the hour they were created (they are limited from the start).
INSERT INTO endpoint_hourly_stats (account_id, endpoint_id, hour, attempts_succeeded, attempts_failed, attempt_ms_total,
                                   deliveries_exhausted, deliveries_limited)
SELECT account_id, endpoint_id, hour, sum(ok), sum(failed), sum(ms), sum(exhausted), sum(limited)
FROM (
  SELECT d.account_id, d.endpoint_id, date_trunc('hour', a.started_at, 'UTC') AS hour,
         (a.error IS NULL)::int AS ok, (a.error IS NOT NULL)::int AS failed, a.duration_ms::bigint AS ms, 0 AS exhausted, 0 AS limited
  FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
  UNION ALL
  SELECT account_id, endpoint_id, date_trunc('hour', updated_at, 'UTC'), 0, 0, 0, 1, 0 FROM deliveries WHERE status = 'exhausted'
  UNION ALL
  SELECT account_id, endpoint_id, date_trunc('hour', created_at, 'UTC'), 0, 0, 0, 0, 1 FROM deliveries WHERE status = 'limited'
) counted
GROUP BY account_id, endpoint_id, hour;
