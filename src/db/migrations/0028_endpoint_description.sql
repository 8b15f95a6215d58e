-- Up Migration

-- An endpoint's free-text `description` (at most 512 characters, checked by the API): what the
-- tenant calls it. Nullable, no default and no constraint: adding it rewrites and scans no row.
ALTER TABLE endpoints ADD COLUMN description text;
