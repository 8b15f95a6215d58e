/**
 * The deployment's maintenance run: a short workflow the Schedule `maintenance` starts every
 * MAINTENANCE_EVERY_MS (src/worker/maintenance-schedule.ts). Each job is one activity, run in
 * turn; a job that fails after its retries fails the run, and the next scheduled run starts
 * afresh. Jobs to come (partitions ahead, retention behind, rollups) are added here.
 */
import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import { maintenanceDetails, TOKEN_JOB_SUMMARY, TOKEN_JOB_TIMEOUT_MS, type MaintenanceReport } from '../core/maintenance.js';
import type { MaintenanceActivities } from './maintenance-contract.js';

const { maintainPhotoappTokens } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: TOKEN_JOB_TIMEOUT_MS,
  // It heartbeats after each account: a job lost with its worker is retried within a minute.
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 3 },
});

export async function maintenanceWorkflow(): Promise<MaintenanceReport> {
  setCurrentDetails(maintenanceDetails(undefined, Date.now()));
  const tokens = await maintainPhotoappTokens.executeWithOptions({ summary: TOKEN_JOB_SUMMARY }, []);
  const report: MaintenanceReport = { tokens };
  setCurrentDetails(maintenanceDetails(report, Date.now()));
  return report;
}
