-- Up Migration

-- Per-endpoint throttle: at most this many POSTs per second to the endpoint (null: unlimited).
-- Waiting for it is not a failure; the delivery session paces its lanes by it (core/pacer.ts).
ALTER TABLE endpoints ADD COLUMN rate_limit integer CHECK (rate_limit IS NULL OR rate_limit >= 1);
