/**
 * The maintenance Schedule the worker makes at start, on the Temporal dev server (schedules need
 * the real server): created once with its timing, overlap policy and Web UI summary, kept as an
 * operator left it (paused), updated when the worker's task queue changed, and it really starts
 * the maintenance workflow. Each test uses its own schedule id: files share the server.
 */
import crypto from 'node:crypto';
import { Client, Connection, ScheduleOverlapPolicy, type ScheduleHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import {
  MAINTENANCE_EVERY_MS,
  MAINTENANCE_SUMMARY,
  type PartitionsAheadReport,
  type RetentionReport,
  type TokenMaintenanceReport,
} from '../../src/core/maintenance.js';
import type { MaintenanceActivities } from '../../src/workflows/maintenance-contract.js';
import { ensureMaintenanceSchedule } from '../../src/worker/maintenance-schedule.js';
import { MAINTENANCE_WORKFLOW_TYPE } from '../../src/workflows/maintenance-contract.js';
import { eventually } from '../support/harness.js';

let connection: Connection;
let client: Client;
const made: ScheduleHandle[] = [];

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('devServerAddress') });
  client = new Client({ connection, namespace: 'default' });
});
afterAll(async () => {
  await Promise.all(made.map((h) => h.delete().catch(() => undefined)));
  await connection?.close();
});

function scheduleId(): string {
  const id = `maintenance-test-${crypto.randomUUID()}`;
  made.push(client.schedule.getHandle(id));
  return id;
}

describe('the maintenance Schedule', () => {
  it('is created once, hourly, skipping a run while one goes, with its summary; kept paused as an operator left it; updated for a new task queue, still paused', async () => {
    const id = scheduleId();
    expect(await ensureMaintenanceSchedule(client, 'queue-a', id)).toBe('created');
    const handle = client.schedule.getHandle(id);
    let described = await handle.describe();
    expect(described.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
    expect(described.spec.intervals?.map((i) => Number(i.every))).toEqual([MAINTENANCE_EVERY_MS]);
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: MAINTENANCE_WORKFLOW_TYPE, taskQueue: 'queue-a' });
    expect(described.action.type === 'startWorkflow' && described.action.staticSummary).toBe(MAINTENANCE_SUMMARY);
    expect(described.state.paused).toBe(false);

    await handle.pause('an operator paused it');
    expect(await ensureMaintenanceSchedule(client, 'queue-a', id)).toBe('kept');
    described = await handle.describe();
    expect(described.state).toMatchObject({ paused: true, note: 'an operator paused it' });

    expect(await ensureMaintenanceSchedule(client, 'queue-b', id)).toBe('updated');
    described = await handle.describe();
    expect(described.action).toMatchObject({ taskQueue: 'queue-b' });
    expect(described.state).toMatchObject({ paused: true, note: 'an operator paused it' });
  });

  it('starts the maintenance workflow on the worker’s task queue when it fires', async () => {
    const taskQueue = `maintenance-schedule-${crypto.randomUUID()}`;
    const report: TokenMaintenanceReport = { renewed: 0, checked: 0, failed: 0, needReconnect: 0, providerConfigured: false };
    const partitions: PartitionsAheadReport = { created: [], partitions: 6 };
    const retention: RetentionReport = { retentionDays: 90, closed: 0, dropped: [], rollupsDeleted: 0 };
    const nativeConnection = await NativeConnection.connect({ address: inject('devServerAddress') });
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: {
        maintainPhotoappTokens: async () => report,
        ensureDeliveryPartitions: async () => partitions,
        applyDeliveryRetention: async () => retention,
      } satisfies MaintenanceActivities,
    });
    const running = worker.run();
    try {
      const id = scheduleId();
      await ensureMaintenanceSchedule(client, taskQueue, id);
      const handle = client.schedule.getHandle(id);
      await handle.trigger();
      const started = await eventually(async () => (await handle.describe()).info.recentActions[0]?.action.workflow);
      const result = await client.workflow.getHandle(started!.workflowId, started!.firstExecutionRunId).result();
      expect(result).toEqual({ tokens: report, partitions, retention });
    } finally {
      worker.shutdown();
      await running;
      await nativeConnection.close();
    }
  });
});
