/**
 * A delivery-engine test bed for one test file: its own time-skipping server (time skipping
 * is global to a server), a worker with the real activities, and a local HTTPS receiver.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { getEventDefinition } from '../../core/catalog/index.js';
import { insertEndpoint } from '../../db/endpoints.js';
import { inTransaction } from '../../db/pool.js';
import { storeEvent } from '../../ingest/store-event.js';
import { endpointWorkflows } from '../../runtime/temporal.js';
import { createSecretBox } from '../../security/secret-box.js';
import { endpointWorkflowId } from '../../workflows/endpoint-contract.js';
import { TEST_ENCRYPTION_KEY, testDb, type Tenant } from './harness.js';
import { startReceiver, type Receiver } from './https-receiver.js';
import { startTestWorker, timeSkippingEnvironment } from './temporal.js';

export const SECRET = 'whsec_delivery_engine_secret';
const def = getEventDefinition('crm.demand.created')!;
const historiesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'workflow', 'histories');

export function deliveryTestBed() {
  let env: Awaited<ReturnType<typeof timeSkippingEnvironment>>;
  let worker: Awaited<ReturnType<typeof startTestWorker>>;
  let receiver: Receiver;

  beforeAll(async () => {
    env = await timeSkippingEnvironment();
    [worker, receiver] = await Promise.all([startTestWorker(env.nativeConnection, { allowLoopback: true }), startReceiver()]);
  });
  afterAll(async () => {
    worker.worker.shutdown();
    await worker.running;
    await env.teardown();
    await env.stopServer();
    await receiver.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.reply({ status: 200, body: 'ok' });
  });
  // Workflows are left to idle, never terminated: the test server keeps time locked for an
  // activity whose workflow was terminated under it, and every later sleep would then hang.

  return {
    get env() {
      return env;
    },
    get receiver() {
      return receiver;
    },
    workflows: () => endpointWorkflows(env.client, worker.taskQueue),
    handle: (endpointId: string) => env.client.workflow.getHandle(endpointWorkflowId(endpointId)),

    async verifiedEndpoint(tenant: Tenant, urlPath: string): Promise<string> {
      const endpoint = await inTransaction(testDb(), (tx) =>
        insertEndpoint(tx, { accountId: tenant.accountId, customerId: null, url: receiver.url(urlPath), events: ['crm'], active: true, secretCiphertext: createSecretBox(TEST_ENCRYPTION_KEY).seal(SECRET), limit: 50 }),
      );
      await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [endpoint.id]);
      return endpoint.id;
    },

    async publish(tenant: Tenant, n: number) {
      const data = def.data.parse({ entity_type: 'demand', entity_id: `dem_${n}`, before_data: null, after_data: { id: `dem_${n}`, version: 1, status: 'open', contact_id: 'c', title: `D${n}` }, actor_user_id: null });
      return storeEvent(testDb(), { accountId: tenant.accountId, environment: 'live', def, data, refs: {}, customerId: null, channelAccount: null, externalId: null, messageResourceId: null, contactRef: null, streamContext: {}, occurredAt: new Date() });
    },

    /** `RECORD_HISTORIES=1 npx vitest run test/workflow` refreshes the histories the replay test keeps. */
    async recordHistory(endpointId: string, name: string) {
      if (process.env.RECORD_HISTORIES !== '1') return;
      const history = await env.client.workflow.getHandle(endpointWorkflowId(endpointId)).fetchHistory();
      fs.writeFileSync(path.join(historiesDir, `${name}.binpb`), temporal.api.history.v1.History.encode(history).finish());
    },

    deliveries: async (endpointId: string) =>
      (await testDb().query(`SELECT status, attempts, terminal_reason, held_since, next_attempt_at, last_attempt_at FROM deliveries WHERE endpoint_id = $1 ORDER BY created_at`, [endpointId])).rows,
    endpointRow: async (id: string) => (await testDb().query(`SELECT health_status, failure_streak, paused_at, last_response_code, next_attempt_at FROM endpoints WHERE id = $1`, [id])).rows[0],
    uniquePath: (prefix: string) => `/${prefix}/${crypto.randomUUID()}`,
  };
}
