-- Up Migration

-- The round that holds a lease: a retried round releases what its lost attempt had claimed,
-- at once, instead of waiting out the lease.
ALTER TABLE deliveries ADD COLUMN lease_owner text;
