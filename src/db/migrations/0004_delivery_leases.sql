-- Up Migration

-- A claimed delivery is leased to one attempt, so a retried activity cannot POST it twice at once.
ALTER TABLE deliveries ADD COLUMN leased_until timestamptz;
CREATE INDEX deliveries_held ON deliveries (endpoint_id, held_since) WHERE held_since IS NOT NULL AND status IN ('pending', 'failed');
