/**
 * Which weekly partitions of deliveries (and of their attempts, with the same bounds) should
 * exist and which have left the retention window (DECISIONS, "Retention and growth"). Pure: the
 * database side is src/db/delivery-partitions.ts, and migration 0029 says why a week.
 */

/** Partitions are weeks starting Monday 00:00 UTC (Postgres `date_trunc('week', ...)`). */
export const PARTITION_PERIOD_MS = 7 * 86_400_000;
/** Weeks kept created ahead of the current one, so inserts never find no partition while maintenance is paused. */
export const PARTITIONS_AHEAD = 4;
export const DEFAULT_RETENTION_DAYS = 90;
export const MIN_RETENTION_DAYS = 1;
export const MAX_RETENTION_DAYS = 3650;
/** 1970-01-01 was a Thursday: the first Monday after it. */
const MONDAY_EPOCH_MS = 4 * 86_400_000;

/** A partition as the catalog has it: its range of created_at, null for MINVALUE / MAXVALUE. */
export interface PartitionBounds {
  name: string;
  lowerMs: number | null;
  upperMs: number | null;
}

/** The start of the week (Monday 00:00 UTC) holding `atMs`. */
export function periodStart(atMs: number): number {
  return atMs - ((((atMs - MONDAY_EPOCH_MS) % PARTITION_PERIOD_MS) + PARTITION_PERIOD_MS) % PARTITION_PERIOD_MS);
}

/** deliveries_p20261123 for the week starting 2026-11-23 (the attempts' partition: delivery_attempts_p20261123). */
export function partitionSuffix(startMs: number): string {
  return `p${new Date(startMs).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

const overlaps = (p: PartitionBounds, lower: number, upper: number): boolean =>
  (p.lowerMs === null || p.lowerMs < upper) && (p.upperMs === null || p.upperMs > lower);

/**
 * The weeks to create so that the current one and the `ahead` after it exist: those no existing
 * partition covers any part of (the legacy partition of migration 0029 covers everything before
 * its cutover, so no week overlapping it is made). Earliest first.
 */
export function periodsToCreate(
  existing: readonly PartitionBounds[],
  nowMs: number,
  ahead = PARTITIONS_AHEAD,
): { lowerMs: number; upperMs: number }[] {
  const first = periodStart(nowMs);
  const wanted: { lowerMs: number; upperMs: number }[] = [];
  for (let i = 0; i <= ahead; i++) {
    const lowerMs = first + i * PARTITION_PERIOD_MS;
    const upperMs = lowerMs + PARTITION_PERIOD_MS;
    if (!existing.some((p) => overlaps(p, lowerMs, upperMs))) wanted.push({ lowerMs, upperMs });
  }
  return wanted;
}

/** The end of the window: a delivery created at or before it is past retention. */
export function retentionCutoff(nowMs: number, retentionDays: number): number {
  return nowMs - retentionDays * 86_400_000;
}

/**
 * The partitions every row of which is past retention: those whose upper bound is at or before
 * the cutoff. A partition holding any delivery still in the window stays whole, so a delivery is
 * readable at most one period past its window (closed `retention_expired` meanwhile if it was open).
 */
export function partitionsPastRetention(existing: readonly PartitionBounds[], nowMs: number, retentionDays: number): PartitionBounds[] {
  const cutoff = retentionCutoff(nowMs, retentionDays);
  return existing.filter((p) => p.upperMs !== null && p.upperMs <= cutoff);
}

/**
 * How long after its end a week's indexes are rebuilt (compacted). Until then its deliveries are
 * retried and held (a hold lasts 14 days), and each recorded outcome leaves a dead entry in every
 * index whose space VACUUM frees but later inserts, at the indexes' right edges, never reuse. After
 * it, a week is written little (a resend, now and then).
 */
export const COMPACT_AFTER_MS = 15 * 86_400_000;

/**
 * The weeks of deliveries due for compaction: ended COMPACT_AFTER_MS ago or more and not compacted
 * yet, the newest first (the oldest are the nearest to being dropped with their retention).
 */
export function partitionsToCompact(
  existing: readonly PartitionBounds[],
  compacted: ReadonlySet<string>,
  nowMs: number,
): PartitionBounds[] {
  return existing
    .filter((p) => p.upperMs !== null && p.upperMs + COMPACT_AFTER_MS <= nowMs && !compacted.has(p.name))
    .sort((a, b) => b.upperMs! - a.upperMs!);
}

/** The error for a DELIVERY_RETENTION_DAYS out of range, or undefined. */
export function retentionDaysProblem(days: number): string | undefined {
  if (!Number.isInteger(days) || days < MIN_RETENTION_DAYS || days > MAX_RETENTION_DAYS)
    return `must be a whole number of days from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS}`;
  return undefined;
}

/** The statement that builds `def` (pg_get_indexdef of a parent index created ON ONLY) on one partition. */
export function partitionIndexStatement(def: string, name: string, partition: string): string {
  const m = /^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ (USING .*)$/s.exec(def);
  if (!m) throw new Error(`not an index created ON ONLY a parent: ${def}`);
  return `CREATE ${m[1] ?? ''}INDEX CONCURRENTLY "${name}" ON "${partition}" ${m[2]}`;
}

/** deliveries_endpoint_status_page on deliveries_p20261123: deliveries_p20261123_endpoint_status_page. */
export function partitionIndexName(parentIndex: string, parent: string, partition: string): string {
  const rest = parentIndex.startsWith(`${parent}_`) ? parentIndex.slice(parent.length + 1) : parentIndex;
  const name = `${partition}_${rest}`;
  // Postgres keeps 63 bytes of a name: a longer one would be cut and could collide.
  if (new TextEncoder().encode(name).length > 63) throw new Error(`index name over 63 bytes: ${name}`);
  return name;
}
