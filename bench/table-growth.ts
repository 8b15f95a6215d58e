/**
 * What the delivery tables hold and how much vacuum owes them, summed over their partitions when
 * they are partitioned: rows, dead rows, heap (with TOAST) and index bytes, autovacuum runs.
 */
import type { Db } from './scale-fill.js';

export const GROWING_TABLES = ['deliveries', 'delivery_attempts', 'events'] as const;

export interface TableGrowth {
  table: string;
  partitions: number;
  liveRows: number;
  deadRows: number;
  heapBytes: number;
  indexBytes: number;
  autovacuums: number;
}

export async function tableGrowth(db: Db): Promise<TableGrowth[]> {
  const { rows } = await db.query<{
    table: string;
    partitions: string;
    live: string;
    dead: string;
    heap: string;
    index: string;
    autovacuums: string;
  }>(
    `SELECT p.name AS table, count(*) FILTER (WHERE c.oid <> parent.oid) AS partitions,
            coalesce(sum(s.n_live_tup), 0) AS live, coalesce(sum(s.n_dead_tup), 0) AS dead,
            sum(pg_table_size(c.oid)) AS heap, sum(pg_indexes_size(c.oid)) AS index,
            coalesce(sum(s.autovacuum_count), 0) AS autovacuums
     FROM unnest($1::text[]) p(name)
     JOIN pg_class parent ON parent.oid = to_regclass(p.name)
     JOIN pg_class c ON c.oid = parent.oid OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = parent.oid)
     LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
     GROUP BY p.name ORDER BY array_position($1::text[], p.name)`,
    [GROWING_TABLES],
  );
  return rows.map((r) => ({
    table: r.table,
    partitions: Number(r.partitions),
    liveRows: Number(r.live),
    deadRows: Number(r.dead),
    heapBytes: Number(r.heap),
    indexBytes: Number(r.index),
    autovacuums: Number(r.autovacuums),
  }));
}

export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
