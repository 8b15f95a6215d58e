/**
 * The upkeep of the weekly partitions of deliveries and delivery_attempts (migration 0029):
 * weeks created ahead, and weeks past DELIVERY_RETENTION_DAYS detached and dropped, after the
 * deliveries still open in them were closed. What to do is decided in src/core/delivery-partitions.ts.
 */
import {
  partitionsPastRetention,
  periodsToCreate,
  retentionCutoff,
  PARTITIONS_AHEAD,
  type PartitionBounds,
} from '../core/delivery-partitions.js';
import { OWED } from './deliveries.js';
import { countEndedSql } from './endpoint-hourly-stats.js';
import type { Queryable } from './pool.js';

export const PARTITIONED_TABLES = ['deliveries', 'delivery_attempts'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

export interface ListedPartition extends PartitionBounds {
  /** An earlier DETACH ... CONCURRENTLY was interrupted: it must be finalized. */
  detachPending: boolean;
}

/** The partitions of one parent with their bounds, as the catalog has them. */
export async function listPartitions(db: Queryable, parent: PartitionedTable): Promise<ListedPartition[]> {
  const { rows } = await db.query<{ name: string; lower: Date | null; upper: Date | null; detach_pending: boolean }>(
    `SELECT c.relname AS name,
            (regexp_match(b.bound, 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz AS lower,
            (regexp_match(b.bound, 'TO \\(''([^'']+)''\\)'))[1]::timestamptz AS upper,
            i.inhdetachpending AS detach_pending
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid, LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b
     WHERE i.inhparent = $1::regclass ORDER BY lower NULLS FIRST`,
    [parent],
  );
  return rows.map((r) => ({
    name: r.name,
    lowerMs: r.lower ? r.lower.getTime() : null,
    upperMs: r.upper ? r.upper.getTime() : null,
    detachPending: r.detach_pending,
  }));
}

/**
 * Creates the weeks from `from` up to `ahead` weeks after it that no partition covers yet (both
 * tables, same bounds; `create_delivery_partitions` of migration 0029). Returns the weeks made.
 * Safe from several processes at once.
 */
export async function ensurePartitionsAhead(db: Queryable, nowMs: number, ahead = PARTITIONS_AHEAD): Promise<string[]> {
  const wanted = periodsToCreate(await listPartitions(db, 'deliveries'), nowMs, ahead);
  const made: string[] = [];
  for (const p of wanted) {
    const { rows } = await db.query<{ made: boolean }>(`SELECT create_delivery_partitions($1, $2) AS made`, [
      new Date(p.lowerMs),
      new Date(p.upperMs),
    ]);
    if (rows[0]!.made) made.push(new Date(p.lowerMs).toISOString().slice(0, 10));
  }
  return made;
}

/**
 * Ends the deliveries the engine still owes whose record reached the end of the window:
 * `exhausted` / `retention_expired`, never due again (no claim, hold or release picks a closed
 * delivery: they all select OWED). One a session is POSTing right now (a live lease) is left to
 * the next run, so its outcome is not overwritten. Returns how many.
 */
export async function closeExpiredOpenDeliveries(db: Queryable, nowMs: number, retentionDays: number): Promise<number> {
  // Counted in the endpoints' rollups in the same statement, like every delivery ended without an attempt.
  const { rows } = await db.query<{ closed: string }>(
    `WITH ended AS (
       UPDATE deliveries SET status = 'exhausted', terminal_reason = 'retention_expired', next_attempt_at = NULL,
         leased_until = NULL, lease_owner = NULL, updated_at = now()
       WHERE created_at <= $1 AND ${OWED} AND (leased_until IS NULL OR leased_until < now())
       RETURNING account_id, endpoint_id
     ), ${countEndedSql('ended', 'exhausted')}
     SELECT count(*) AS closed FROM ended`,
    [new Date(retentionCutoff(nowMs, retentionDays))],
  );
  return Number(rows[0]?.closed ?? 0);
}

/**
 * Detaches and drops the partitions every row of which is past retention, attempts first.
 * DETACH ... CONCURRENTLY takes only SHARE UPDATE EXCLUSIVE on the parent (it waits for the
 * statements that may still see the partition, blocking none); the DROP then locks the detached
 * table alone. A detach interrupted earlier is finalized. Returns the dropped tables' names.
 */
export async function dropPartitionsPastRetention(db: Queryable, nowMs: number, retentionDays: number): Promise<string[]> {
  const dropped: string[] = [];
  for (const parent of ['delivery_attempts', 'deliveries'] as const) {
    for (const p of partitionsPastRetention(await listPartitions(db, parent), nowMs, retentionDays) as ListedPartition[]) {
      await db.query(`ALTER TABLE ${parent} DETACH PARTITION "${p.name}" ${p.detachPending ? 'FINALIZE' : 'CONCURRENTLY'}`);
      await db.query(`DROP TABLE "${p.name}"`);
      dropped.push(p.name);
    }
  }
  return dropped;
}
