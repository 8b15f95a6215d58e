/**
 * The maintenance workflow on the time-skipping server: with the real token job (real Postgres,
 * the local provider, limited to the test's Account) it renews a token near expiry and tells
 * what it did in the Web UI's terms; with the real delivery jobs on a database of its own and a
 * clock moved months ahead, it makes the weeks ahead and drops those past retention; with a stub
 * job that keeps failing, it retries it and fails the run, leaving the next one to the Schedule.
 */
import crypto from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startLocalProvider, type LocalProvider } from '../../dev/local-provider/server.js';
import { createProviderHttp } from '../../src/channels/provider-http.js';
import { periodStart, PARTITION_PERIOD_MS } from '../../src/core/delivery-partitions.js';
import { PARTITIONS_JOB_SUMMARY, RETENTION_JOB_SUMMARY, TOKEN_JOB_SUMMARY, type MaintenanceReport } from '../../src/core/maintenance.js';
import { listPartitions } from '../../src/db/delivery-partitions.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { getPhotoappToken, storePhotoappToken } from '../../src/db/photoapp-tokens.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { createMaintenanceActivities } from '../../src/worker/maintenance-activities.js';
import { MAINTENANCE_WORKFLOW_TYPE, type MaintenanceActivities } from '../../src/workflows/maintenance-contract.js';
import { createTenant, insertTestEndpoint, PROVIDER_APP_SECRET, TEST_ENCRYPTION_KEY, testDb } from '../support/harness.js';
import { ownDatabase } from '../support/own-database.js';
import { recordHistory, timeSkippingEnvironment } from '../support/temporal.js';

const ACCESS_TOKEN = 'maintenance-test-app-token';
const box = createSecretBox(TEST_ENCRYPTION_KEY);
const { EventType } = temporal.api.enums.v1;

let env: Awaited<ReturnType<typeof timeSkippingEnvironment>>;
let provider: LocalProvider;
const workers: { worker: Worker; running: Promise<void> }[] = [];

async function startWorker(activities: MaintenanceActivities): Promise<string> {
  const taskQueue = `maintenance-${crypto.randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities,
  });
  workers.push({ worker, running: worker.run() });
  return taskQueue;
}

beforeAll(async () => {
  [env, provider] = await Promise.all([
    timeSkippingEnvironment(),
    startLocalProvider({ platformUrl: 'http://127.0.0.1:1', appSecret: PROVIDER_APP_SECRET, accessToken: ACCESS_TOKEN }),
  ]);
});
afterAll(async () => {
  for (const w of workers) w.worker.shutdown();
  await Promise.all(workers.map((w) => w.running));
  await provider?.close();
  await env?.teardown();
  await env?.stopServer();
});

describe('the maintenance workflow (time skipping)', () => {
  it('runs the photoapp token job, which renews a token ending in 3 days, and tells what it did in its details and its activity summary', async () => {
    const tenant = await createTenant();
    const local = await (
      await fetch(`${provider.rootUrl}/_local/photoapp_accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ expires_at: Math.floor(Date.now() / 1000) + 3 * 86_400 }),
      })
    ).json();
    const ca = await createChannelAccount(testDb(), {
      accountId: tenant.accountId,
      channel: 'photoapp',
      display: '@shop',
      providerAccountId: local.id,
    });
    await storePhotoappToken(testDb(), ca.id, box.seal(local.access_token));
    const taskQueue = await startWorker(
      createMaintenanceActivities({
        db: testDb(),
        secretBox: box,
        providerApi: createProviderHttp({ baseUrl: provider.url, accessToken: ACCESS_TOKEN }),
        accountId: tenant.accountId,
        // On the shared database: a window no test's rows are past, so the delivery jobs touch none of theirs.
        retentionDays: 3650,
      }),
    );

    const handle = await env.client.workflow.start(MAINTENANCE_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: `maintenance-${crypto.randomUUID()}`,
    });
    const report: MaintenanceReport = await handle.result();
    expect(report.tokens).toEqual({ renewed: 1, checked: 0, failed: 0, needReconnect: 0, providerConfigured: true });
    const renewed = provider.state.photoappAccounts.get(local.id)!.access_token;
    expect(renewed).not.toBe(local.access_token);
    expect(box.open((await getPhotoappToken(testDb(), ca.id))!)).toBe(renewed);

    const details = (await handle.query(workflowMetadataQuery)).currentDetails ?? '';
    expect(details).toMatch(/^\*\*maintenance\*\* finished \S+Z/);
    expect(details).toContain('- **photoapp tokens**: 1 renewed, 0 checked, 0 failed (tried again next run), 0 need a reconnect');
    const scheduled = ((await handle.fetchHistory()).events ?? []).filter(
      (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    );
    expect(scheduled.map((e) => defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary as never))).toEqual([
      TOKEN_JOB_SUMMARY,
      PARTITIONS_JOB_SUMMARY,
      RETENTION_JOB_SUMMARY,
    ]);
    await recordHistory(handle, 'maintenance-renews-a-token');
  });

  it('keeps the weeks ahead of its clock and drops those past retention with their deliveries (own database, clock 120 days on)', async () => {
    const own = await ownDatabase('maintenance');
    try {
      const tenant = await createTenant({ db: own.db });
      const cutover = (await listPartitions(own.db, 'deliveries')).find((p) => p.lowerMs === null)!.upperMs!;
      const endpointId = await insertTestEndpoint(own.db, tenant.accountId);
      await own.db.query(
        `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, next_attempt_at, created_at)
         VALUES ($1, $2, gen_random_uuid(), 'crm.demand.created', 'k1', 'live', 'failed', now(), $3)`,
        [tenant.accountId, endpointId, new Date(cutover - 86_400_000)],
      );
      const now = cutover + 120 * 86_400_000;
      const taskQueue = await startWorker(
        createMaintenanceActivities({ db: own.db, secretBox: box, retentionDays: 90, now: () => new Date(now) }),
      );
      const handle = await env.client.workflow.start(MAINTENANCE_WORKFLOW_TYPE, {
        taskQueue,
        workflowId: `maintenance-${crypto.randomUUID()}`,
      });
      const report: MaintenanceReport = await handle.result();
      const first = periodStart(now);
      const weeks = [0, 1, 2, 3, 4].map((i) => new Date(first + i * PARTITION_PERIOD_MS).toISOString().slice(0, 10));
      expect(report.partitions?.created).toEqual(weeks);
      // The closed delivery is counted in the database's current hour, 120 days behind this clock: its rollup row goes too.
      expect(report.retention).toMatchObject({ retentionDays: 90, closed: 1, rollupsDeleted: 1 });
      expect(report.retention?.dropped).toContain('deliveries_legacy');
      expect(report.retention?.dropped).toContain('delivery_attempts_legacy');
      expect((await own.db.query(`SELECT 1 FROM deliveries`)).rowCount).toBe(0);
      const left = (await listPartitions(own.db, 'deliveries')).map((p) => p.name);
      expect(left).not.toContain('deliveries_legacy');
      expect(left).toContain(`deliveries_p${weeks[4]!.replaceAll('-', '')}`);

      const details = (await handle.query(workflowMetadataQuery)).currentDetails ?? '';
      expect(details).toContain(`- **delivery partitions**: created ${weeks.join(', ')}; `);
      expect(details).toMatch(
        /- \*\*delivery retention\*\*: 90 days: 1 open deliveries closed \(retention_expired\), dropped .*deliveries_legacy/,
      );
      await recordHistory(handle, 'maintenance-partitions-and-retention');
    } finally {
      await own.drop();
    }
  });

  it('retries a token job that keeps failing three times, then fails the run (the next one is the Schedule’s)', async () => {
    let attempts = 0;
    const taskQueue = await startWorker({
      async maintainPhotoappTokens() {
        attempts++;
        throw new Error('database away');
      },
      ensureDeliveryPartitions: () => Promise.reject(new Error('not reached: the token job failed the run')),
      applyDeliveryRetention: () => Promise.reject(new Error('not reached: the token job failed the run')),
    });
    const handle = await env.client.workflow.start(MAINTENANCE_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: `maintenance-${crypto.randomUUID()}`,
    });
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(attempts).toBe(3);
  });
});
