/**
 * The maintenance run's delivery jobs (DECISIONS, "Retention and growth"): weekly partitions kept
 * ahead, a week written no more compacted, and behind, the records past DELIVERY_RETENTION_DAYS
 * removed with their partitions after the deliveries still open in them were closed.
 */
import type { PartitionsAheadReport, RetentionReport } from '../core/maintenance.js';
import { retentionCutoff } from '../core/delivery-partitions.js';
import {
  closeExpiredOpenDeliveries,
  dropPartitionsPastRetention,
  ensurePartitionsAhead,
  listPartitions,
} from '../db/delivery-partitions.js';
import { deleteRollupsBefore } from '../db/endpoint-hourly-stats.js';
import { compactClosedPartition, forgetCompactions } from '../db/partition-compaction.js';
import { buildPartitionIndexes, dropReplacedIndexes } from '../db/partition-indexes.js';
import type { Db } from '../db/pool.js';

export interface DeliveryRetentionDeps {
  db: Db;
  retentionDays: number;
  now?: () => Date;
}

export async function ensureDeliveryPartitions(deps: Pick<DeliveryRetentionDeps, 'db' | 'now'>): Promise<PartitionsAheadReport> {
  const nowMs = (deps.now?.() ?? new Date()).getTime();
  const created = await ensurePartitionsAhead(deps.db, nowMs);
  const indexesBuilt = await buildPartitionIndexes(deps.db);
  const indexesReplaced = await dropReplacedIndexes(deps.db);
  const compacted = await compactClosedPartition(deps.db, nowMs);
  const report: PartitionsAheadReport = { created, partitions: (await listPartitions(deps.db, 'deliveries')).length, indexesBuilt };
  // Field by field, absent when empty: runs recorded before these jobs had none.
  if (indexesReplaced.length) report.indexesReplaced = indexesReplaced;
  if (compacted) report.compacted = compacted;
  return report;
}

export async function applyDeliveryRetention(deps: DeliveryRetentionDeps): Promise<RetentionReport> {
  const nowMs = (deps.now?.() ?? new Date()).getTime();
  // Closed first: a delivery whose week is not yet dropped stays readable as retention_expired.
  const closed = await closeExpiredOpenDeliveries(deps.db, nowMs, deps.retentionDays);
  const dropped = await dropPartitionsPastRetention(deps.db, nowMs, deps.retentionDays);
  await forgetCompactions(deps.db, dropped);
  const rollupsDeleted = await deleteRollupsBefore(deps.db, new Date(retentionCutoff(nowMs, deps.retentionDays)));
  return { retentionDays: deps.retentionDays, closed, dropped, rollupsDeleted };
}
