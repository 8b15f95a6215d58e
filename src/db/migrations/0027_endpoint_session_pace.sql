-- Up Migration

-- The per-endpoint throttle (`rate_limit`) kept with the session lease (migration 0019): when the
-- last POST of the endpoint's last session started, by the database's clock, written when the
-- session gives its lease back and read when the next one takes it. A session that moves to
-- another worker then keeps the same pacing window instead of starting afresh (one POST too many).
-- Nullable, no default: adding it rewrites no row.
ALTER TABLE endpoints ADD COLUMN session_paced_at timestamptz;
