/** Temporal test environments attached to the servers started once by global-setup. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection, type Client, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection, Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { createActivities, sessionDepsOf, type ActivityDeps } from '../../src/delivery/activities.js';
import { createSessionLeases } from '../../src/delivery/session-leases.js';
import { createDirectSessions, type DirectSessions } from '../../src/delivery/direct-sessions.js';
import { createSessionRegistry } from '../../src/delivery/session-registry.js';
import type { SessionPreference } from '../../src/delivery/session-preference.js';
import { dueChannel } from '../../src/db/due-notifications.js';
import { startTimeSkippingTestServer } from '../../dev/temporal-servers.js';
import { endpointWorkflows, ensureSearchAttributes } from '../../src/delivery/workflow-client.js';
import { startDueRouter } from '../../src/delivery/due-router.js';
import { createHttpClient, type HttpClient } from '../../src/delivery/http-client.js';
import { createDestinationPolicy, type Resolver } from '../../src/security/destination-policy.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { eventually, staticResolver, TEST_ENCRYPTION_KEY, TEST_HOSTS, testDb } from './harness.js';

/**
 * A time-skipping environment on a Java test server of its own. Time skipping is global to
 * a server, so each test file gets one (files run in parallel). The SDK only spawns its own
 * server for time skipping; attaching to ours goes through its internal factory, which takes
 * exactly the options below.
 */
export async function timeSkippingEnvironment(): Promise<TestWorkflowEnvironment & { address: string; stopServer(): Promise<void> }> {
  const server = await startTimeSkippingTestServer();
  const admin = await Connection.connect({ address: server.address });
  await ensureSearchAttributes(admin, 'default');
  await admin.close();
  const create = (TestWorkflowEnvironment as unknown as { create(opts: unknown): Promise<TestWorkflowEnvironment> }).create.bind(
    TestWorkflowEnvironment,
  );
  const env = await create({ server: { type: 'existing' }, supportsTimeSkipping: true, address: server.address, namespace: 'default' });
  return Object.assign(env, { address: server.address, stopServer: () => server.stop() });
}

/**
 * Tests' window between two reports of an endpoint's direct sessions (DIRECT_REPORT_EVERY_MS,
 * minutes in service): their coalescing has unit tests of its own (test/unit/session-reports.test.ts).
 */
const TEST_REPORT_EVERY_MS = 2_000;

/** A worker on a fresh task queue with the real activities and the bundle built once per run. */
export async function startTestWorker(
  connection: NativeConnection,
  opts: {
    resolver?: Resolver;
    allowLoopback?: boolean;
    timeoutMs?: number;
    taskQueue?: string;
    /** With a client, the worker listens for due deliveries (of its task queue) as in production, without the sweep. */
    client?: Client;
    lingerMs?: number;
    /** Sessions take the endpoints' session leases, and (with a client) healthy endpoints' news starts direct sessions. */
    directSessions?: boolean;
    /** How long the direct sessions wait before asking for a lease (src/delivery/session-preference.ts); and whether they leave news to the preferred worker; at once when unset. */
    preference?: Pick<SessionPreference, 'delayMs' | 'leavesNews'>;
  } = {},
): Promise<{ worker: Worker; taskQueue: string; running: Promise<void>; httpClient: HttpClient; direct?: DirectSessions }> {
  const taskQueue = opts.taskQueue ?? `test-${crypto.randomUUID()}`;
  const policy = createDestinationPolicy({
    allowCidrs: opts.allowLoopback ? ['127.0.0.0/8'] : [],
    resolver: opts.resolver ?? staticResolver(TEST_HOSTS),
  });
  const httpClient = createHttpClient({ policy, timeoutMs: opts.timeoutMs ?? 10_000 });
  const sessions = createSessionRegistry();
  const deps: ActivityDeps = {
    db: testDb(),
    secretBox: createSecretBox(TEST_ENCRYPTION_KEY),
    httpClient,
    sessions,
    lingerMs: opts.lingerMs,
    leases: opts.directSessions ? createSessionLeases(testDb()) : undefined,
  };
  const sessionDeps = sessionDepsOf(deps);
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: createActivities(deps, sessionDeps),
  });
  const direct =
    opts.client && deps.leases
      ? createDirectSessions({
          deps: { ...sessionDeps, leases: deps.leases },
          workflows: endpointWorkflows(opts.client, taskQueue),
          preference: opts.preference,
          reportEveryMs: TEST_REPORT_EVERY_MS,
        })
      : undefined;
  const router = opts.client
    ? startDueRouter({
        databaseUrl: inject('databaseUrl'),
        db: testDb(),
        channel: dueChannel(taskQueue),
        sessions,
        workflows: endpointWorkflows(opts.client, taskQueue),
        sweepEveryMs: 0,
        heldQuietMs: opts.lingerMs,
        direct,
      })
    : null;
  await router?.ready;
  const running = worker.run().finally(async () => {
    await router?.close();
    await httpClient.close();
  });
  return { worker, taskQueue, running, httpClient, direct };
}

/**
 * Waits until a workflow has handled everything it was told and waits idle: its last completed
 * workflow task started at most a timer (no activity, no signal after it).
 */
export async function waitIdle(handle: WorkflowHandle): Promise<void> {
  const { EventType } = temporal.api.enums.v1;
  // A wake-up that moves the wait cancels the old timer and starts a new one: still idle. A
  // patch's marker (and its search attribute) is recorded by the task that first takes the patched path.
  const waiting = new Set([
    EventType.EVENT_TYPE_TIMER_STARTED,
    EventType.EVENT_TYPE_TIMER_CANCELED,
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    EventType.EVENT_TYPE_MARKER_RECORDED,
  ]);
  await eventually(async () => {
    const events = (await handle.fetchHistory()).events ?? [];
    const lastTask = events.map((e) => e.eventType).lastIndexOf(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    return lastTask >= 0 && events.slice(lastTask + 1).every((e) => waiting.has(e.eventType!));
  });
}

const historiesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'workflow', 'histories');

/** `RECORD_HISTORIES=1 npx vitest run test/workflow` refreshes the histories the replay test keeps (test/workflow/replay.test.ts). */
export async function recordHistory(handle: Pick<WorkflowHandle, 'fetchHistory'>, name: string): Promise<void> {
  if (process.env.RECORD_HISTORIES !== '1') return;
  fs.mkdirSync(historiesDir, { recursive: true });
  fs.writeFileSync(path.join(historiesDir, `${name}.binpb`), temporal.api.history.v1.History.encode(await handle.fetchHistory()).finish());
}
