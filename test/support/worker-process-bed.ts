import type { EndpointId } from '../../src/core/ids.js';
/**
 * What the end-to-end tests with production workers in processes of their own share: a test API
 * and `workerCount` workers on a task queue of the file's own, a client of the dev server, an
 * HTTPS receiver and a tenant, started before the file's tests and stopped after; the POSTs an
 * endpoint received, and endpoints verified through the API.
 */
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { createTenant, startTestApi, type Tenant, type TestApi } from './harness.js';
import { startReceiver, type ReceivedRequest, type Receiver } from './https-receiver.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';

export interface WorkerProcessBed {
  readonly taskQueue: string;
  readonly api: TestApi;
  readonly temporal: Client;
  readonly receiver: Receiver;
  readonly tenant: Tenant;
  /** The running workers: a test that kills or starts one updates the list, and whatever is in it is stopped at the end. */
  readonly workers: WorkerProcess[];
  /** The deliveries (test sends left out) received under `prefix`. */
  posts(prefix: string): ReceivedRequest[];
  /** An endpoint on the receiver under `prefix`, created with `secret` and verified by a test send, through the API. */
  verifiedEndpoint(prefix: string, secret: string): Promise<EndpointId>;
}

export function workerProcessBed(name: string, workerCount: number): WorkerProcessBed {
  const taskQueue = `${name}-${crypto.randomUUID()}`;
  const workers: WorkerProcess[] = [];
  let api: TestApi;
  let temporal: Client;
  let receiver: Receiver;
  let tenant: Tenant;
  beforeAll(async () => {
    [receiver, tenant] = await Promise.all([startReceiver(), createTenant()]);
    api = await startTestApi({ allowLoopback: true, taskQueue });
    temporal = new Client({ connection: await Connection.connect({ address: inject('devServerAddress') }) });
    workers.push(...(await Promise.all(Array.from({ length: workerCount }, () => startWorkerProcess(taskQueue)))));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await api.close();
    await temporal.connection.close();
    await receiver.close();
  });
  return {
    taskQueue,
    workers,
    get api() {
      return api;
    },
    get temporal() {
      return temporal;
    },
    get receiver() {
      return receiver;
    },
    get tenant() {
      return tenant;
    },
    posts: (prefix) => receiver.deliveriesUnder(prefix),
    async verifiedEndpoint(prefix, secret) {
      const created = await api.request('POST', '/api/v1/webhooks', {
        key: tenant.key,
        body: { url: `https://127.0.0.1:${receiver.port}${prefix}`, events: ['crm'], secret },
      });
      expect(created.status).toBe(201);
      expect((await api.request('POST', `/api/v1/webhooks/${created.body.data.id}/test`, { key: tenant.key })).status).toBe(200);
      return created.body.data.id;
    },
  };
}

/** The signature a delivery signed with `secret` carries. */
export const hmac = (secret: string, body: Buffer) => crypto.createHmac('sha256', secret).update(body).digest('hex');
