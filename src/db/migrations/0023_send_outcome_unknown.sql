-- Up Migration

-- A send whose request may have reached the provider without an answer (a timeout, a connection
-- lost mid-exchange) keeps its Idempotency-Key: a retry with that key must not send a second
-- message to a person. The key is marked, and never taken over as abandoned.
ALTER TABLE message_idempotency_keys ADD COLUMN outcome_unknown_at timestamptz;
