/**
 * What the delivery tables hold and how much vacuum owes them, summed over their partitions when
 * they are partitioned: rows, dead rows, heap (with TOAST) and index bytes, autovacuum runs.
 */
import { listPartitions, PARTITIONED_TABLES } from '../src/db/delivery-partitions.js';
import type { Db } from './scale-fill.js';

export const GROWING_TABLES = ['deliveries', 'delivery_attempts', 'events'] as const;

export interface TableGrowth {
  table: string;
  partitions: number;
  liveRows: number;
  deadRows: number;
  /** Heap with TOAST (pg_table_size). */
  heapBytes: number;
  /** Of heapBytes, what is not the heap's main fork: TOAST, the free space and visibility maps. */
  toastBytes: number;
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
    toast: string;
    index: string;
    autovacuums: string;
  }>(
    `SELECT p.name AS table, count(*) FILTER (WHERE c.oid <> parent.oid) AS partitions,
            coalesce(sum(s.n_live_tup), 0) AS live, coalesce(sum(s.n_dead_tup), 0) AS dead,
            sum(pg_table_size(c.oid)) AS heap, sum(pg_table_size(c.oid) - pg_relation_size(c.oid)) AS toast,
            sum(pg_indexes_size(c.oid)) AS index,
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
    toastBytes: Number(r.toast),
    indexBytes: Number(r.index),
    autovacuums: Number(r.autovacuums),
  }));
}

export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

/** One partition's rows, dead rows, sizes and autovacuum: the written week's, to see whether autovacuum keeps up with its churn. */
export interface PartitionGrowth {
  partition: string;
  liveRows: number;
  deadRows: number;
  /** Dead rows at which autovacuum starts on it: autovacuum_vacuum_threshold + its scale factor × reltuples. */
  vacuumAtDead: number;
  heapBytes: number;
  indexBytes: number;
  autovacuums: number;
  lastAutovacuum: Date | null;
}

/** The partitions of the partitioned tables holding `atMs` (the week being written), those that exist. */
export async function partitionGrowthAt(db: Db, atMs: number): Promise<PartitionGrowth[]> {
  const names: string[] = [];
  for (const table of PARTITIONED_TABLES) {
    const week = (await listPartitions(db, table)).find(
      (p) => p.lowerMs !== null && p.upperMs !== null && p.lowerMs <= atMs && atMs < p.upperMs,
    );
    if (week) names.push(week.name);
  }
  const { rows } = await db.query<{
    partition: string;
    live: string;
    dead: string;
    vacuum_at: string;
    heap: string;
    index: string;
    autovacuums: string;
    last_autovacuum: Date | null;
  }>(
    `SELECT c.relname AS partition, s.n_live_tup AS live, s.n_dead_tup AS dead,
            current_setting('autovacuum_vacuum_threshold')::float8
              + coalesce((SELECT option_value::float8 FROM pg_options_to_table(c.reloptions) WHERE option_name = 'autovacuum_vacuum_scale_factor'),
                         current_setting('autovacuum_vacuum_scale_factor')::float8) * greatest(c.reltuples, 0) AS vacuum_at,
            pg_table_size(c.oid) AS heap, pg_indexes_size(c.oid) AS index,
            s.autovacuum_count AS autovacuums, s.last_autovacuum
     FROM unnest($1::text[]) WITH ORDINALITY p(name, n)
     JOIN pg_class c ON c.oid = to_regclass(p.name)
     JOIN pg_stat_user_tables s ON s.relid = c.oid
     ORDER BY p.n`,
    [names],
  );
  return rows.map((r) => ({
    partition: r.partition,
    liveRows: Number(r.live),
    deadRows: Number(r.dead),
    vacuumAtDead: Math.round(Number(r.vacuum_at)),
    heapBytes: Number(r.heap),
    indexBytes: Number(r.index),
    autovacuums: Number(r.autovacuums),
    lastAutovacuum: r.last_autovacuum,
  }));
}
