import type { EndpointId } from '../../src/core/ids.js';
/**
 * A delivery-engine test bed for one test file: its own time-skipping server (time skipping
 * is global to a server), a worker with the real activities, the real API signalling that
 * server, and a local HTTPS receiver. Endpoints are created, verified, deactivated and
 * resumed through the API, as a tenant would.
 */
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, beforeEach, expect, inject } from 'vitest';
import type { SessionPreference } from '../../src/delivery/session-preference.js';
import { endpointWorkflows } from '../../src/delivery/workflow-client.js';
import { endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';
import { eventually, staticResolver, startTestApi, storeDemandEvent, TEST_HOSTS, testDb, type Tenant, type TestApi } from './harness.js';
import { startReceiver, type ReceivedRequest, type Receiver } from './https-receiver.js';
import { recordHistory, startTestWorker, timeSkippingEnvironment, waitIdle } from './temporal.js';

export const SECRET = 'whsec_delivery_engine_secret';

export interface DeliveryView {
  id: string;
  status: string;
  attempts: number;
  terminal_reason: string | null;
  held_since: Date | null;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
}

/**
 * A bed on the dev server started by global-setup instead of a time-skipping server: what the
 * bed uses of an environment (no `sleep`: real time only). For what the test server lacks (user
 * metadata: current details).
 */
async function devServerEnvironment(): Promise<Awaited<ReturnType<typeof timeSkippingEnvironment>>> {
  const address = inject('devServerAddress');
  const nativeConnection = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  const env = {
    address,
    nativeConnection,
    client: new Client({ connection }),
    sleep: () => Promise.reject(new Error('no time skipping on the dev server')),
    teardown: async () => {
      await connection.close();
      await nativeConnection.close();
    },
    stopServer: async () => {},
  };
  return env as unknown as Awaited<ReturnType<typeof timeSkippingEnvironment>>;
}

/**
 * `directSessions`: the worker's sessions take the endpoints' leases, and `bed.direct` starts direct sessions (src/delivery/direct-sessions.ts).
 * `devServer`: on the dev server (real time) rather than a time-skipping server of the file's own.
 * `preference`: how long the direct sessions wait before asking for a lease (a worker not preferred), and whether they leave news to the preferred worker.
 */
export function deliveryTestBed(
  o: { directSessions?: boolean; devServer?: boolean; preference?: Pick<SessionPreference, 'delayMs' | 'leavesNews'> } = {},
) {
  let env: Awaited<ReturnType<typeof timeSkippingEnvironment>>;
  let worker: Awaited<ReturnType<typeof startTestWorker>>;
  let receiver: Receiver;
  let api: TestApi;
  // The test DNS, which a test may re-point (a destination that moves inside the network).
  const hosts: Record<string, string[]> = { ...TEST_HOSTS };
  const resolver = staticResolver(hosts);

  beforeAll(async () => {
    env = o.devServer ? await devServerEnvironment() : await timeSkippingEnvironment();
    [worker, receiver] = await Promise.all([
      startTestWorker(env.nativeConnection, {
        allowLoopback: true,
        resolver,
        client: env.client,
        directSessions: o.directSessions,
        preference: o.preference,
      }),
      startReceiver(),
    ]);
    api = await startTestApi({ allowLoopback: true, resolver, temporalAddress: env.address, taskQueue: worker.taskQueue });
  });
  afterAll(async () => {
    await api.close();
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

  const bed = {
    get env() {
      return env;
    },
    get receiver() {
      return receiver;
    },
    get api() {
      return api;
    },
    /** The worker's direct sessions (with `directSessions`). */
    get direct() {
      return worker.direct;
    },
    hosts,
    workflows: () => endpointWorkflows(env.client, worker.taskQueue),
    handle: (endpointId: string) => env.client.workflow.getHandle(endpointWorkflowId(endpointId)),

    /** POST /api/v1/webhooks (categories `crm`, secret SECRET); the endpoint starts unverified. */
    async createEndpoint(tenant: Tenant, urlPath: string, host = 'receiver.test'): Promise<EndpointId> {
      const res = await api.request('POST', '/api/v1/webhooks', {
        key: tenant.key,
        body: { url: `https://${host}:${receiver.port}${urlPath}`, events: ['crm'], secret: SECRET },
      });
      expect(res.status).toBe(201);
      return res.body.data.id;
    },

    /** POST /api/v1/webhooks/{id}/test, expecting the given status (200 when the receiver answers 2xx). */
    async test(tenant: Tenant, endpointId: string, status = 200) {
      const res = await api.request('POST', `/api/v1/webhooks/${endpointId}/test`, { key: tenant.key });
      expect(res.status).toBe(status);
      return res.body;
    },

    async patch(tenant: Tenant, endpointId: string, body: unknown) {
      const res = await api.request('PATCH', `/api/v1/webhooks/${endpointId}`, { key: tenant.key, body });
      expect(res.status).toBe(200);
      return res.body.data;
    },

    idle: (endpointId: string) => waitIdle(bed.handle(endpointId)),

    /** Created and verified by a 2xx test, as a tenant does it. */
    async verifiedEndpoint(tenant: Tenant, urlPath: string, host?: string): Promise<EndpointId> {
      const id = await bed.createEndpoint(tenant, urlPath, host);
      await bed.test(tenant, id);
      return id;
    },

    publish: (tenant: Tenant, n: number) => storeDemandEvent(tenant.accountId, `dem_${n}`),

    /** The real deliveries (not test sends) the receiver got under a path prefix. */
    posts: (prefix: string): ReceivedRequest[] => receiver.deliveriesUnder(prefix),

    /** Keeps the endpoint workflow's history for the replay test (`recordHistory`, test/support/temporal.ts). */
    recordHistory: (endpointId: string, name: string) => recordHistory(env.client.workflow.getHandle(endpointWorkflowId(endpointId)), name),

    /** The endpoint's event deliveries (test sends excluded), oldest first. */
    deliveries: async (endpointId: string): Promise<DeliveryView[]> =>
      (
        await testDb().query<DeliveryView>(
          `SELECT id, status, attempts, terminal_reason, held_since, next_attempt_at, last_attempt_at FROM deliveries WHERE endpoint_id = $1 AND event_type <> 'webhook.test' ORDER BY created_at`,
          [endpointId],
        )
      ).rows,
    /**
     * Waits until the endpoint has exactly `count` event deliveries and all of them match. A minute
     * by default: a bound on liveness, which a full suite beside other work on two cores can stretch.
     */
    async settled(endpointId: string, count: number, match: (d: DeliveryView) => boolean, timeoutMs = 60_000): Promise<DeliveryView[]> {
      return eventually(async () => {
        const all = await bed.deliveries(endpointId);
        return all.length === count && all.every(match) ? all : undefined;
      }, timeoutMs);
    },
    endpointRow: async (id: string) =>
      (
        await testDb().query(
          `SELECT health_status, failure_streak, paused_at, last_response_code, last_failure_at, next_attempt_at, active FROM endpoints WHERE id = $1`,
          [id],
        )
      ).rows[0],
    uniquePath: (prefix: string) => `/${prefix}/${crypto.randomUUID()}`,
  };
  return bed;
}
