/**
 * The deployment's maintenance Schedule (DECISIONS: one Temporal Schedule per deployment), made
 * by every worker at start: created when missing, left as it is when it exists (an operator may
 * have paused it in the Web UI; that stays), and brought up to date only when its action or
 * timing differs from this version's. Its overlap policy skips a run due while one is still
 * going, so however many workers or deployments share the namespace, one run goes at a time.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { MAINTENANCE_EVERY_MS, MAINTENANCE_SCHEDULE_ID, MAINTENANCE_SUMMARY, maintenanceStaticDetails } from '../core/maintenance.js';
import { logger } from '../runtime/logger.js';
import { MAINTENANCE_WORKFLOW_TYPE } from '../workflows/maintenance-contract.js';

export function maintenanceScheduleOptions(taskQueue: string, scheduleId = MAINTENANCE_SCHEDULE_ID): ScheduleOptions {
  return {
    scheduleId,
    spec: { intervals: [{ every: MAINTENANCE_EVERY_MS }] },
    action: {
      type: 'startWorkflow',
      workflowType: MAINTENANCE_WORKFLOW_TYPE,
      workflowId: scheduleId,
      taskQueue,
      args: [],
      staticSummary: MAINTENANCE_SUMMARY,
      staticDetails: maintenanceStaticDetails(),
    },
    // A run missed while the server was away is made up once, not once per missed hour.
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: MAINTENANCE_EVERY_MS, pauseOnFailure: false },
    state: {
      note: 'Created by the worker. Pausing it stops token renewal, status refresh and delivery retention until it is unpaused (starts still make the weeks ahead).',
    },
  };
}

export type EnsureOutcome = 'created' | 'kept' | 'updated';

/** Creates the Schedule, or keeps it (paused or not), updating only what this version changed. */
export async function ensureMaintenanceSchedule(
  client: Client,
  taskQueue: string,
  scheduleId = MAINTENANCE_SCHEDULE_ID,
): Promise<EnsureOutcome> {
  const wanted = maintenanceScheduleOptions(taskQueue, scheduleId);
  try {
    await client.schedule.create(wanted);
    logger.info({ scheduleId, taskQueue }, 'maintenance schedule created');
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = client.schedule.getHandle(scheduleId);
  const now = await handle.describe();
  const same =
    now.action.type === 'startWorkflow' &&
    now.action.workflowType === MAINTENANCE_WORKFLOW_TYPE &&
    now.action.taskQueue === taskQueue &&
    now.policies.overlap === ScheduleOverlapPolicy.SKIP &&
    now.spec.intervals?.length === 1 &&
    Number(now.spec.intervals[0]!.every) === MAINTENANCE_EVERY_MS;
  if (same) return 'kept';
  await handle.update((previous) => ({
    spec: wanted.spec,
    action: wanted.action,
    policies: wanted.policies,
    state: { paused: previous.state.paused, note: previous.state.note },
  }));
  logger.info({ scheduleId, taskQueue }, 'maintenance schedule updated');
  return 'updated';
}
