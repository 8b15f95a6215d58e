/** Temporal test environments attached to the servers started once by global-setup. */
import crypto from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection, Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { testDb } from './harness.js';

/**
 * A time-skipping environment on the shared Java test server. The SDK only spawns its own
 * server for time skipping; attaching to ours goes through its internal factory, which
 * takes exactly the options below.
 */
export async function timeSkippingEnvironment(): Promise<TestWorkflowEnvironment> {
  const create = (TestWorkflowEnvironment as unknown as { create(opts: unknown): Promise<TestWorkflowEnvironment> }).create.bind(TestWorkflowEnvironment);
  return create({ server: { type: 'existing' }, supportsTimeSkipping: true, address: inject('timeSkippingAddress'), namespace: 'default' });
}

/** A worker on a fresh task queue with the real activities and the bundle built once per run. */
export async function startTestWorker(connection: NativeConnection, namespace = 'default'): Promise<{ worker: Worker; taskQueue: string; running: Promise<void> }> {
  const taskQueue = `test-${crypto.randomUUID()}`;
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: createActivities({ db: testDb() }),
  });
  const running = worker.run();
  return { worker, taskQueue, running };
}
