/**
 * The deployment's maintenance Schedule (DECISIONS: one Temporal Schedule per deployment), made
 * by every worker as it starts: created when missing, left as it is when it exists (an operator may
 * have paused it in the Web UI; that stays), and brought up to date only when its action or
 * timing differs from this version's. Its overlap policy skips a run due while one is still
 * going, so however many workers or deployments share the namespace, one run goes at a time.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { doublingBackoffMs } from '../core/backoff.js';
import { MAINTENANCE_EVERY_MS, MAINTENANCE_SCHEDULE_ID, MAINTENANCE_SUMMARY, maintenanceStaticDetails } from '../core/maintenance.js';
import { temporalCall } from '../delivery/workflow-client.js';
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

/**
 * Creates the Schedule, or keeps it (paused or not), updating only what this version changed.
 * Through `temporalCall`: the Schedule client's calls turn the connection's context on, and left
 * on, it ran async hooks on every promise of the sending worker until its first report to a
 * workflow (2–4 % of its busy time in the first seconds of traffic).
 */
export function ensureMaintenanceSchedule(client: Client, taskQueue: string, scheduleId = MAINTENANCE_SCHEDULE_ID): Promise<EnsureOutcome> {
  return temporalCall(client.connection, () => ensureSchedule(client, taskQueue, scheduleId));
}

async function ensureSchedule(client: Client, taskQueue: string, scheduleId: string): Promise<EnsureOutcome> {
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

/**
 * `ensure` until it succeeds or `signal` aborts, waiting 1 s after the first failure, doubled per
 * failure up to a minute; undefined when aborted first. The worker runs it beside its start, not
 * before it: a Temporal server that has just started answers "Not enough hosts to serve the
 * request" (UNAVAILABLE) for a while, and a worker that awaited the Schedule exited on it, leaving
 * its endpoints' deliveries waiting for a restart. The weeks ahead do not wait for the Schedule
 * either: every process makes them at start (src/services.ts).
 */
export async function keepEnsuring(
  ensure: () => Promise<EnsureOutcome>,
  signal: AbortSignal,
  o: { firstWaitMs?: number; maxWaitMs?: number } = {},
): Promise<EnsureOutcome | undefined> {
  for (let failures = 0; !signal.aborted; failures++) {
    try {
      return await ensure();
    } catch (err) {
      const waitMs = doublingBackoffMs(o.firstWaitMs ?? 1_000, failures, o.maxWaitMs ?? 60_000);
      logger.warn({ err, failures: failures + 1, waitMs }, 'maintenance schedule not ensured yet; trying again');
      // An abort ends the wait early (rejecting it), and the loop's condition then ends the tries.
      await sleep(waitMs, undefined, { signal }).catch(() => {});
    }
  }
  return undefined;
}

/** The Schedule ensured beside the worker's start (`keepEnsuring`); `stop` ends the tries and waits for the one under way. */
export function ensureMaintenanceScheduleBeside(
  client: Client,
  taskQueue: string,
  scheduleId = MAINTENANCE_SCHEDULE_ID,
): { stop(): Promise<void> } {
  const stop = new AbortController();
  const ensured = keepEnsuring(() => ensureMaintenanceSchedule(client, taskQueue, scheduleId), stop.signal);
  return {
    async stop() {
      stop.abort();
      await ensured;
    },
  };
}
