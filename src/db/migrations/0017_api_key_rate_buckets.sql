-- Up Migration

-- The per-key rate limit shared by every API process (api/rate-limiter.ts): one token bucket per
-- API key, from which each process leases a few tokens at a time and spends them in memory.
-- `tokens` is the level at `updated_at`; the refill since then is computed by the statement that
-- leases (db/rate-buckets.ts), so no process's clock and no background job keeps it.
-- `last_grant` is what the latest lease took, for that statement's RETURNING.
-- Updated in place on every lease: room on the page keeps those updates HOT (no index touched).
CREATE TABLE api_key_rate_buckets (
  key_id uuid PRIMARY KEY REFERENCES api_keys (id) ON DELETE CASCADE,
  tokens double precision NOT NULL,
  last_grant integer NOT NULL,
  updated_at timestamptz NOT NULL
) WITH (fillfactor = 50);
