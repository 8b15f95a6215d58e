/**
 * The deployment's maintenance run (DECISIONS: one Temporal Schedule per deployment): what each
 * job reports and what the run tells an operator in the Temporal Web UI (the schedule's and the
 * workflow's summary and details, the activities' summaries). Pure and deterministic. Jobs to
 * come (partitions, retention, rollups) add a field to MaintenanceReport and a line to the story.
 */
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

export interface MaintenanceReport {
  tokens: TokenMaintenanceReport;
}

/** The Schedule's id: one per deployment (Temporal namespace). */
export const MAINTENANCE_SCHEDULE_ID = 'maintenance';
/** How often the Schedule starts a run. */
export const MAINTENANCE_EVERY_MS = 3_600_000;
/** The longest a run's token job may take before Temporal retries it (it heartbeats per token). */
export const TOKEN_JOB_TIMEOUT_MS = 10 * 60_000;
/** Tokens one run looks at, soonest to end first; the rest wait for the next run. */
export const TOKENS_PER_RUN = 500;

export const MAINTENANCE_SUMMARY = 'maintenance: photoapp token renewal and status refresh';

export function maintenanceStaticDetails(): string {
  return [
    'The deployment-wide maintenance run, started by the Schedule `maintenance` (pause it there; overlapping runs are skipped).',
    `Photoapp tokens: renews those ending within ${RENEW_WITHIN_DAYS} days and re-reads any status older than ${RECHECK_AFTER_MS / 3_600_000} h.`,
  ].join('\n\n');
}

export const TOKEN_JOB_SUMMARY = `photoapp tokens: renew within ${RENEW_WITHIN_DAYS} days of expiry, refresh stale statuses`;

/** The run's current details: what it is doing, or what it did. */
export function maintenanceDetails(report: MaintenanceReport | undefined, atMs: number): string {
  if (!report) return framedForWebUi(`**maintenance** running since ${new Date(atMs).toISOString()}\n\n- **photoapp tokens**: in progress`);
  const t = report.tokens;
  const tokens = t.providerConfigured
    ? `${t.renewed} renewed, ${t.checked} checked, ${t.failed} failed (tried again next run), ${t.needReconnect} need a reconnect`
    : 'skipped: no provider configured (PROVIDER_API_URL)';
  return framedForWebUi(`**maintenance** finished ${new Date(atMs).toISOString()}\n\n- **photoapp tokens**: ${tokens}`);
}
