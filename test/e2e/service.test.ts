/**
 * End to end: the production entry points (startApi, runWorker) against the Temporal dev
 * server and Postgres, with a local HTTPS receiver. Nothing is wired by hand.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { RunningApi } from '../../src/api/server.js';
import { endpointStateQuery, endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';
import { samples } from '../support/catalog-samples.js';
import { eventually, testDb, type Tenant } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';
import { startService, type RunningService } from '../support/running-service.js';

let service: RunningService;
let api: RunningApi;
let receiver: Receiver;
let tenant: Tenant;

beforeAll(async () => {
  [service, receiver] = await Promise.all([startService({ name: 'service' }), startReceiver()]);
  ({ api, tenant } = service);
});
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

const call = (method: string, path: string, body?: unknown) => service.call(method, path, body);

describe('the service end to end', () => {
  it('is healthy and exposes metrics', async () => {
    const health = await fetch(`${api.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ postgres: true, temporal: true });
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    expect(metrics).toContain('http_request_duration_seconds');
  });

  it("routes a published event to a verified endpoint, the worker delivers it and a resend; the endpoint workflow's activities start by eager dispatch, none through its task queue", async () => {
    const created = await call('POST', '/api/v1/webhooks', { url: `https://localhost:${receiver.port}/hooks`, events: ['crm'] });
    const id = created.body.data.id;
    expect((await call('POST', `/api/v1/webhooks/${id}/test`)).status).toBe(200);
    const published = await call('POST', '/api/v1/events', { type: 'crm.demand.created', data: samples['crm.demand.created']!.data });
    expect(published.status).toBe(201);
    // The worker's delivery engine sends it: signed, with the exact body, recorded as a success.
    const delivered = await eventually(async () => {
      const list = await call('GET', `/api/v1/webhook_deliveries?endpoint_id=${id}&event_type=crm.demand.created`);
      return list.body.data[0]?.status === 'success' ? list.body.data[0] : undefined;
    });
    expect(delivered).toMatchObject({ event_id: published.body.data.id, attempts: 1, response_code: 200 });
    const post = receiver.received.find((r) => r.headers['x-webhook-event'] === 'crm.demand.created')!;
    expect(post.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', created.body.data.secret).update(post.body).digest('hex'));
    expect(post.headers['x-idempotency-key']).toBe(samples['crm.demand.created']!.key);
    expect(JSON.parse(post.body.toString())).toMatchObject({ event: 'crm.demand.created', environment: 'live', entity_type: 'demand' });

    // An exhausted delivery resent by hand goes out again.
    await testDb().query(`UPDATE deliveries SET status = 'exhausted', terminal_reason = 'hold_expired' WHERE id = $1`, [delivered.id]);
    expect((await call('POST', `/api/v1/webhook_deliveries/${delivered.id}/resend`)).body.data.status).toBe('pending');
    const again = await eventually(async () => {
      const d = (await call('GET', `/api/v1/webhook_deliveries/${delivered.id}`)).body.data;
      return d.status === 'success' && d.attempts === 2 ? d : undefined;
    });
    expect(again.attempts_log.map((a: { number: number; response_code: number }) => [a.number, a.response_code])).toEqual([
      [1, 200],
      [2, 200],
    ]);

    const connection = await Connection.connect({ address: inject('devServerAddress') });
    try {
      const handle = new Client({ connection }).workflow.getHandle(endpointWorkflowId(id));
      await eventually(async () => (await handle.query(endpointStateQuery)).changesSeen >= 2);
      // Eager dispatch (dev/temporal-servers.ts): an activity (a session among them) comes back in
      // the answer to the workflow task that scheduled it, and never goes into the task queue for a
      // poller. The history has no mark of which path an activity took; the task queue's stats do:
      // its workflow tasks were added to it, its activity tasks were not.
      const sessions = await eventually(async () => {
        const events = (await handle.fetchHistory()).events ?? [];
        const pairs = events
          .filter((e) => e.activityTaskScheduledEventAttributes)
          .map((scheduled) => ({
            scheduled,
            started: events.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled.eventId)),
          }))
          .filter((p) => p.started);
        return pairs.some((p) => p.scheduled.activityTaskScheduledEventAttributes!.activityType?.name === 'deliverDue') ? pairs : undefined;
      }, 30_000);
      expect(sessions.length).toBeGreaterThanOrEqual(3);
      const added = async (taskQueueType: temporal.api.enums.v1.TaskQueueType) => {
        const described = await connection.workflowService.describeTaskQueue({
          namespace: 'default',
          taskQueue: { name: service.config.taskQueue },
          taskQueueType,
          reportStats: true,
        });
        return described.stats?.tasksAddRate ?? 0;
      };
      expect(await added(temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)).toBeGreaterThan(0);
      expect(await added(temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)).toBe(0);
    } finally {
      await connection.close();
    }
  });

  it('creates, tests, patches and deletes an endpoint through API, workflow, activity and Postgres', async () => {
    const url = `https://localhost:${receiver.port}/hooks`;
    const created = await call('POST', '/api/v1/webhooks', { url, events: ['messages', 'statuses'] });
    expect(created.status).toBe(201);
    const { id, secret } = created.body.data;

    const tested = await call('POST', `/api/v1/webhooks/${id}/test`);
    expect(tested.body).toEqual({ data: { success: true, response_code: 200, health_status: 'healthy', active: true } });
    const sent = receiver.received.at(-1)!;
    expect(sent.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', secret).update(sent.body).digest('hex'));

    const patched = await call('PATCH', `/api/v1/webhooks/${id}`, { events: ['crm'] });
    expect(patched.body.data).toMatchObject({ events: ['crm'], health_status: 'healthy' });

    // A delivery still owed to the endpoint when it is deleted: of a real event (the engine owes
    // only those; a row without one is a test send), never due, so only the deletion ends it.
    const owed = await testDb().query(
      `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status)
       SELECT $1, $2, id, type, idempotency_key, environment, 'pending' FROM events WHERE account_id = $1 AND type = 'crm.demand.created' LIMIT 1`,
      [tenant.accountId, id],
    );
    expect(owed.rowCount).toBe(1);
    expect((await call('DELETE', `/api/v1/webhooks/${id}`)).status).toBe(204);

    // The workflow's activity closes it; the result is read back through the API.
    const closed = await eventually(async () => {
      const list = await call('GET', `/api/v1/webhook_deliveries?endpoint_id=${id}&status=exhausted`);
      expect(list.status).toBe(200);
      return list.body.data.length === 1 ? list.body.data[0] : undefined;
    });
    expect(closed).toMatchObject({ event_type: 'crm.demand.created', terminal_reason: 'endpoint_deleted' });
    const tests = await call('GET', `/api/v1/webhook_deliveries?endpoint_id=${id}&event_type=webhook.test`);
    expect(tests.body.data[0]).toMatchObject({ status: 'success', response_code: 200 });
  });
});
