/**
 * What the delivery-session integration tests share: a test API, an HTTPS receiver, a tenant and
 * the worker's HTTP client (loopback allowed), started before the file's tests and closed after,
 * and healthy endpoints with a backlog due.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { claimWithEndpointsFor, type ClaimedDelivery } from '../../src/db/deliveries.js';
import { createAttemptRecorder } from '../../src/delivery/attempt-recorder.js';
import { runDeliverySession } from '../../src/delivery/delivery-session.js';
import { createHttpClient, type HttpClient } from '../../src/delivery/http-client.js';
import { createSessionRegistry } from '../../src/delivery/session-registry.js';
import type { DeliveryRound } from '../../src/workflows/endpoint-contract.js';
import { createDestinationPolicy } from '../../src/security/destination-policy.js';
import { createTenant, startTestApi, storeDemandEvent, testDb, type Tenant, type TestApi } from './harness.js';
import { startReceiver, type Receiver } from './https-receiver.js';

export interface SessionTestBed {
  readonly api: TestApi;
  readonly receiver: Receiver;
  readonly tenant: Tenant;
  readonly httpClient: HttpClient;
  /** A healthy, verified endpoint (its url under `/<area>/<uuid>`, its `secret` when given) with `backlog` deliveries due. */
  endpointWithBacklog(backlog: number, secret?: string): Promise<{ id: string; prefix: string; posts: () => Receiver['received'] }>;
  /** One delivery session of the endpoint, as the worker runs it (no linger, up to 10 deliveries), on the bed's HTTP client. */
  session(endpointId: string, o: { concurrency: number; maxSessionMs: number }): Promise<DeliveryRound>;
  /** What another session would claim of the endpoint now (up to 10). */
  claimedByAnother(endpointId: string): Promise<ClaimedDelivery[]>;
}

/** `maxConnectionsPerOrigin`: the HTTP client's cap (the worker's `ORIGIN_CAP` when unset). */
export function sessionTestBed(area: string, o: { maxConnectionsPerOrigin?: number } = {}): SessionTestBed {
  let api: TestApi;
  let receiver: Receiver;
  let tenant: Tenant;
  let httpClient: HttpClient;
  beforeAll(async () => {
    [receiver, tenant] = await Promise.all([startReceiver(), createTenant()]);
    api = await startTestApi({ allowLoopback: true });
    httpClient = createHttpClient({
      policy: createDestinationPolicy({ allowCidrs: ['127.0.0.0/8'] }),
      timeoutMs: 5_000,
      maxConnectionsPerOrigin: o.maxConnectionsPerOrigin,
    });
  });
  afterAll(async () => {
    await httpClient.close();
    await api.close();
    await receiver.close();
  });
  return {
    get api() {
      return api;
    },
    get receiver() {
      return receiver;
    },
    get tenant() {
      return tenant;
    },
    get httpClient() {
      return httpClient;
    },
    async endpointWithBacklog(backlog, secret) {
      const prefix = `/${area}/${crypto.randomUUID()}`;
      const created = await api.request('POST', '/api/v1/webhooks', {
        key: tenant.key,
        body: { url: `https://127.0.0.1:${receiver.port}${prefix}`, events: ['crm'], ...(secret ? { secret } : {}) },
      });
      expect(created.status).toBe(201);
      const id: string = created.body.data.id;
      await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [id]);
      for (let n = 0; n < backlog; n++) await storeDemandEvent(tenant.accountId, `${prefix}_${n}`);
      return { id, prefix, posts: () => receiver.received.filter((r) => r.path.startsWith(prefix)) };
    },
    session(endpointId, o) {
      const deps = {
        db: testDb(),
        secretBox: api.deps.secretBox,
        httpClient,
        sessions: createSessionRegistry(),
        recorder: createAttemptRecorder(testDb()),
        concurrency: o.concurrency,
        lingerMs: 0,
        maxSessionMs: o.maxSessionMs,
      };
      const owner = `${area}/${crypto.randomUUID()}`;
      return runDeliverySession(deps, { endpointId, owner, clock: Date.now, limit: 10, signal: new AbortController().signal });
    },
    async claimedByAnother(endpointId) {
      const owner = `other/${crypto.randomUUID()}`;
      return (await claimWithEndpointsFor(testDb(), [{ endpointId, now: new Date(), limit: 10, owner }], 10_000))[0]!.deliveries;
    },
  };
}
