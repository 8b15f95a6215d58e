-- Up Migration

-- The weeks of deliveries whose indexes the maintenance run rebuilt once they were written no more
-- (src/db/partition-compaction.ts), with their indexes' bytes before and after: what it did, and
-- what it has left to do. A week's row goes with the week.
CREATE TABLE delivery_partition_compactions (
  partition text PRIMARY KEY,
  compacted_at timestamptz NOT NULL DEFAULT now(),
  index_bytes_before bigint NOT NULL,
  index_bytes_after bigint NOT NULL
);
