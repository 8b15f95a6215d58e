/** The endpoint workflow on the time-skipping test server, with real activities on real Postgres. */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointWorkflows } from '../../src/delivery/workflow-client.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { endpointStateQuery, endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';
import { insertEndpoint } from '../../src/db/endpoints.js';
import { inTransaction } from '../../src/db/pool.js';
import { createTenant, eventually, TEST_ENCRYPTION_KEY, testDb } from '../support/harness.js';
import { recordHistory, startTestWorker, timeSkippingEnvironment } from '../support/temporal.js';

let env: Awaited<ReturnType<typeof timeSkippingEnvironment>>;
let worker: Awaited<ReturnType<typeof startTestWorker>>;

beforeAll(async () => {
  env = await timeSkippingEnvironment();
  worker = await startTestWorker(env.nativeConnection);
});
afterAll(async () => {
  worker.worker.shutdown();
  await worker.running;
  await env.teardown();
  await env.stopServer();
});

async function seedEndpoint() {
  const tenant = await createTenant();
  const endpoint = await inTransaction(testDb(), (tx) =>
    insertEndpoint(tx, {
      accountId: tenant.accountId,
      customerId: null,
      url: 'https://public.example/hooks',
      events: ['messages'],
      active: true,
      secretCiphertext: createSecretBox(TEST_ENCRYPTION_KEY).seal('whsec_workflow_test_secret'),
      limit: 50,
    }),
  );
  return { tenant, endpoint };
}

async function seedOpenDelivery(accountId: string, endpointId: string, status: 'pending' | 'failed' | 'success') {
  const { rows } = await testDb().query(
    `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status)
     VALUES ($1, $2, gen_random_uuid(), 'chatapp.message.received', 'wamid.X', 'live', $3) RETURNING id`,
    [accountId, endpointId, status],
  );
  return rows[0].id as string;
}

describe('endpoint workflow (time skipping)', () => {
  it('is started by signalWithStart, tracks configuration, and on deletion closes the open deliveries', async () => {
    const { tenant, endpoint } = await seedEndpoint();
    const workflows = endpointWorkflows(env.client, worker.taskQueue);

    await workflows.notify(endpoint.id, tenant.accountId, 'created');
    const handle = env.client.workflow.getHandle(endpointWorkflowId(endpoint.id));
    expect((await handle.describe()).type).toBe('endpointWorkflow');
    await eventually(async () => (await handle.query(endpointStateQuery)).changesSeen === 1);

    await testDb().query(`UPDATE endpoints SET health_status = 'healthy' WHERE id = $1`, [endpoint.id]);
    await workflows.notify(endpoint.id, tenant.accountId, 'verified');
    await eventually(async () => (await handle.query(endpointStateQuery)).health === 'healthy');

    // Two weeks of quiet cost nothing: the workflow waits on a signal, not on a poll.
    await env.sleep('14 days');
    expect((await handle.query(endpointStateQuery)).changesSeen).toBe(2);

    // Deliveries still owed when the endpoint goes (not yet due, so the engine has not sent them).
    const pending = await seedOpenDelivery(tenant.accountId, endpoint.id, 'pending');
    const failed = await seedOpenDelivery(tenant.accountId, endpoint.id, 'failed');
    const done = await seedOpenDelivery(tenant.accountId, endpoint.id, 'success');
    await testDb().query(`UPDATE endpoints SET deleted_at = now() WHERE id = $1`, [endpoint.id]);
    await workflows.notify(endpoint.id, tenant.accountId, 'deleted');
    await handle.result();

    const { rows } = await testDb().query(`SELECT id, status, terminal_reason FROM deliveries WHERE endpoint_id = $1`, [endpoint.id]);
    const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
    expect(byId[pending]).toMatchObject({ status: 'exhausted', terminal_reason: 'endpoint_deleted' });
    expect(byId[failed]).toMatchObject({ status: 'exhausted', terminal_reason: 'endpoint_deleted' });
    expect(byId[done]).toMatchObject({ status: 'success', terminal_reason: null });

    const history = await handle.fetchHistory();
    expect(JSON.stringify(history)).not.toContain('whsec_workflow_test_secret');
    await recordHistory(handle, 'endpoint-created-verified-deleted');
  });

  it('coalesces wake-ups: signals that arrive together make one pass of the loop', async () => {
    const { tenant, endpoint } = await seedEndpoint();
    // The signals queue up while no worker polls the endpoint's task queue; the worker then
    // finds all of them in its first workflow task.
    const taskQueue = `test-${crypto.randomUUID()}`;
    const workflows = endpointWorkflows(env.client, taskQueue);
    await workflows.notify(endpoint.id, tenant.accountId, 'created');
    for (let i = 0; i < 20; i++) await workflows.wake(endpoint.id, tenant.accountId);
    const late = await startTestWorker(env.nativeConnection, { taskQueue });
    try {
      const handle = env.client.workflow.getHandle(endpointWorkflowId(endpoint.id));
      await eventually(async () => (await handle.query(endpointStateQuery)).changesSeen === 1);
      expect(await handle.query(endpointStateQuery)).toMatchObject({ changesSeen: 1, wakeups: 1 });
    } finally {
      late.worker.shutdown();
      await late.running;
    }
  });
});
