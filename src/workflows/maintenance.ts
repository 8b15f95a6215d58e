/**
 * The deployment's maintenance run: a short workflow the Schedule `maintenance` starts every
 * MAINTENANCE_EVERY_MS (src/worker/maintenance-schedule.ts). Each job is one activity, run in
 * turn; a job that fails after its retries fails the run, and the next scheduled run starts
 * afresh. Jobs are added at the end, behind a patch (docs/workflow-versions.md).
 */
import { patched, proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import {
  maintenanceDetails,
  PARTITIONS_JOB_SUMMARY,
  RETENTION_JOB_SUMMARY,
  RETENTION_JOB_TIMEOUT_MS,
  TOKEN_JOB_SUMMARY,
  TOKEN_JOB_TIMEOUT_MS,
  type MaintenanceReport,
} from '../core/maintenance.js';
import type { MaintenanceActivities } from './maintenance-contract.js';

const retry = { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 3 };

const { maintainPhotoappTokens } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: TOKEN_JOB_TIMEOUT_MS,
  // It heartbeats after each account: a job lost with its worker is retried within a minute.
  heartbeatTimeout: '1 minute',
  retry,
});

const { ensureDeliveryPartitions, applyDeliveryRetention } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: RETENTION_JOB_TIMEOUT_MS,
  retry,
});

/** The patch that added the delivery partitions and retention jobs: runs recorded before it replay without them. */
export const DELIVERY_RETENTION_PATCH = 'delivery-partitions-and-retention';

export async function maintenanceWorkflow(): Promise<MaintenanceReport> {
  setCurrentDetails(maintenanceDetails(undefined, Date.now()));
  const tokens = await maintainPhotoappTokens.executeWithOptions({ summary: TOKEN_JOB_SUMMARY }, []);
  const report: MaintenanceReport = { tokens };
  if (patched(DELIVERY_RETENTION_PATCH)) {
    // Ahead first: a run that fails in retention has still made room for the coming weeks.
    report.partitions = await ensureDeliveryPartitions.executeWithOptions({ summary: PARTITIONS_JOB_SUMMARY }, []);
    report.retention = await applyDeliveryRetention.executeWithOptions({ summary: RETENTION_JOB_SUMMARY }, []);
  }
  setCurrentDetails(maintenanceDetails(report, Date.now()));
  return report;
}
