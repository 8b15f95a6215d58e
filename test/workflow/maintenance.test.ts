/**
 * The maintenance workflow on the time-skipping server: with the real token job (real Postgres,
 * the local provider, limited to the test's Account) it renews a token near expiry and tells
 * what it did in the Web UI's terms; with a stub job that keeps failing, it retries it and fails
 * the run, leaving the next one to the Schedule.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startLocalProvider, type LocalProvider } from '../../dev/local-provider/server.js';
import { createProviderHttp } from '../../src/channels/provider-http.js';
import { TOKEN_JOB_SUMMARY, type MaintenanceReport } from '../../src/core/maintenance.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { getPhotoappToken, storePhotoappToken } from '../../src/db/photoapp-tokens.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { createMaintenanceActivities } from '../../src/worker/maintenance-activities.js';
import { MAINTENANCE_WORKFLOW_TYPE, type MaintenanceActivities } from '../../src/workflows/maintenance-contract.js';
import { createTenant, PROVIDER_APP_SECRET, TEST_ENCRYPTION_KEY, testDb } from '../support/harness.js';
import { timeSkippingEnvironment } from '../support/temporal.js';

const historiesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'histories');
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
    ]);
    // `RECORD_HISTORIES=1 npx vitest run test/workflow` refreshes the recorded history the replay test keeps.
    if (process.env.RECORD_HISTORIES === '1') {
      fs.writeFileSync(
        path.join(historiesDir, 'maintenance-renews-a-token.binpb'),
        temporal.api.history.v1.History.encode(await handle.fetchHistory()).finish(),
      );
    }
  });

  it('retries a token job that keeps failing three times, then fails the run (the next one is the Schedule’s)', async () => {
    let attempts = 0;
    const taskQueue = await startWorker({
      async maintainPhotoappTokens() {
        attempts++;
        throw new Error('database away');
      },
    });
    const handle = await env.client.workflow.start(MAINTENANCE_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: `maintenance-${crypto.randomUUID()}`,
    });
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(attempts).toBe(3);
  });
});
