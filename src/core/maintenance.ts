/**
 * The deployment's maintenance run (DECISIONS: one Temporal Schedule per deployment): what each
 * job reports and what the run tells an operator in the Temporal Web UI (the schedule's and the
 * workflow's summary and details, the activities' summaries). Pure and deterministic. Each job
 * adds a field to MaintenanceReport and a line to the story.
 */
import { COMPACT_AFTER_MS, PARTITIONS_AHEAD } from './delivery-partitions.js';
import { framedForWebUi } from './endpoint-story.js';
import { RECHECK_AFTER_MS, RENEW_WITHIN_DAYS } from './token-status.js';

/** What the photoapp token job did in one run. */
export interface TokenMaintenanceReport {
  /** Tokens ending within RENEW_WITHIN_DAYS that the provider renewed. */
  renewed: number;
  /** Tokens whose status was read again from the provider (and stored). */
  checked: number;
  /** Renewals or reads the provider could not answer (tried again next run). */
  failed: number;
  /** Tokens found expired, invalid or revoked: their accounts need a reconnect. */
  needReconnect: number;
  /** False when this deployment has no provider (PROVIDER_API_URL unset): nothing was looked at. */
  providerConfigured: boolean;
}

/** What the delivery partitions job did: weeks created ahead (src/db/delivery-partitions.ts). */
export interface PartitionsAheadReport {
  /** The weeks created, by their first day (YYYY-MM-DD); empty when all were there. */
  created: string[];
  /** Partitions of deliveries after the run. */
  partitions: number;
  /** Indexes a migration added to the partitioned tables, built on the partitions that lacked them (src/db/partition-indexes.ts); absent from runs before the job built any. */
  indexesBuilt?: string[];
  /** Indexes a migration replaced, dropped once their replacements were valid; absent when none was. */
  indexesReplaced?: string[];
  /** A week written no more whose indexes were rebuilt (src/db/partition-compaction.ts); absent when none was. */
  compacted?: { partition: string; indexBytesBefore: number; indexBytesAfter: number };
}

/** What the delivery retention job did (DECISIONS, "Retention and growth"). */
export interface RetentionReport {
  retentionDays: number;
  /** Open deliveries past the window ended `exhausted` / `retention_expired`. */
  closed: number;
  /** Partitions (deliveries and attempts) past the window, detached and dropped. */
  dropped: string[];
  /** Hourly rollup rows past the window, deleted (src/db/endpoint-hourly-stats.ts, deleteRollupsBefore). */
  rollupsDeleted: number;
}

export interface MaintenanceReport {
  tokens: TokenMaintenanceReport;
  /** Absent from runs recorded before the job existed (replayed unchanged). */
  partitions?: PartitionsAheadReport;
  retention?: RetentionReport;
}

/** The Schedule's id: one per deployment (Temporal namespace). */
export const MAINTENANCE_SCHEDULE_ID = 'maintenance';
/** How often the Schedule starts a run. */
export const MAINTENANCE_EVERY_MS = 3_600_000;
/** The longest a run's token job may take before Temporal retries it (it heartbeats per token). */
export const TOKEN_JOB_TIMEOUT_MS = 10 * 60_000;
/** Tokens one run looks at, soonest to end first; the rest wait for the next run. */
export const TOKENS_PER_RUN = 500;

/** The partitions and retention jobs' timeout: the drop waits for statements still reading a partition. */
export const RETENTION_JOB_TIMEOUT_MS = 10 * 60_000;

export const MAINTENANCE_SUMMARY = 'maintenance: photoapp tokens, delivery partitions ahead, delivery retention behind';

export function maintenanceStaticDetails(): string {
  return [
    'The deployment-wide maintenance run, started by the Schedule `maintenance` (pause it there; overlapping runs are skipped).',
    `Photoapp tokens: renews those ending within ${RENEW_WITHIN_DAYS} days and re-reads any status older than ${RECHECK_AFTER_MS / 3_600_000} h.`,
    `Delivery partitions: keeps the current week and ${PARTITIONS_AHEAD} ahead, and builds on the partitions holding rows the indexes a migration added (dropping those they replace once valid). Compaction: rebuilds the indexes of a week ${COMPACT_AFTER_MS / 86_400_000} days after its end (written no more), one a run. Retention: ends open deliveries past DELIVERY_RETENTION_DAYS as retention_expired, then drops the weeks past it.`,
  ].join('\n\n');
}

export const TOKEN_JOB_SUMMARY = `photoapp tokens: renew within ${RENEW_WITHIN_DAYS} days of expiry, refresh stale statuses`;

export const PARTITIONS_JOB_SUMMARY = `delivery partitions: keep the current week and ${PARTITIONS_AHEAD} ahead`;
export const RETENTION_JOB_SUMMARY = 'delivery retention: close open deliveries past the window, drop the weeks past it';

function partitionsLine(p: PartitionsAheadReport): string {
  const built = p.indexesBuilt?.length ? `; indexes built: ${p.indexesBuilt.join(', ')}` : '';
  const replaced = p.indexesReplaced?.length ? `; replaced indexes dropped: ${p.indexesReplaced.join(', ')}` : '';
  const c = p.compacted;
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  const compacted = c ? `; compacted ${c.partition}: indexes ${mib(c.indexBytesBefore)} → ${mib(c.indexBytesAfter)}` : '';
  const indexes = built + replaced + compacted;
  return `${p.created.length ? `created ${p.created.join(', ')}` : 'none to create'}; ${p.partitions} partitions${indexes}`;
}

function retentionLine(r: RetentionReport): string {
  const dropped = r.dropped.length ? `dropped ${r.dropped.join(', ')}` : 'nothing to drop';
  return `${r.retentionDays} days: ${r.closed} open deliveries closed (retention_expired), ${dropped}, ${r.rollupsDeleted} rollup rows deleted`;
}

/** The run's current details: what it is doing, or what it did. */
export function maintenanceDetails(report: MaintenanceReport | undefined, atMs: number): string {
  if (!report) return framedForWebUi(`**maintenance** running since ${new Date(atMs).toISOString()}\n\n- **photoapp tokens**: in progress`);
  const t = report.tokens;
  const tokens = t.providerConfigured
    ? `${t.renewed} renewed, ${t.checked} checked, ${t.failed} failed (tried again next run), ${t.needReconnect} need a reconnect`
    : 'skipped: no provider configured (PROVIDER_API_URL)';
  const lines = [`- **photoapp tokens**: ${tokens}`];
  if (report.partitions) lines.push(`- **delivery partitions**: ${partitionsLine(report.partitions)}`);
  if (report.retention) lines.push(`- **delivery retention**: ${retentionLine(report.retention)}`);
  return framedForWebUi(`**maintenance** finished ${new Date(atMs).toISOString()}\n\n${lines.join('\n')}`);
}
