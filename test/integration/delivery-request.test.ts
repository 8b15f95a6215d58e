/**
 * "See what was sent": GET /api/v1/webhook_deliveries/{id} shows the request as signed, and
 * GET /api/v1/events/{id} reads one event, on real Postgres and a real local HTTPS receiver.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverOnce, onlyDeliveryOf } from '../support/deliver-once.js';
import { createTenant, startTestApi, storeDemandEvent, testDb, type Tenant, type TestApi } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';

let api: TestApi;
let receiver: Receiver;
beforeAll(async () => {
  [api, receiver] = await Promise.all([startTestApi({ allowLoopback: true }), startReceiver()]);
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

const SECRET = 'whsec_delivery_request_secret_0001';
const TOKEN = 'Bearer receiver-token-never-shown';

/** A healthy crm endpoint on the receiver with a stored Authorization value. */
async function receivingEndpoint(tenant: Tenant): Promise<string> {
  const created = await api.request('POST', '/api/v1/webhooks', {
    key: tenant.key,
    body: { url: receiver.url(`/delivery-request/${tenant.accountId}`), events: ['crm'], secret: SECRET },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.data.id as string;
  const patched = await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { headers: { Authorization: TOKEN } } });
  expect(patched.status).toBe(200);
  await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [id]);
  return id;
}

const deliveryOf = onlyDeliveryOf;
const deliver = (endpointId: string, deliveryId: string) => deliverOnce(api, receiver, endpointId, deliveryId);

const hmacHex = (body: string) => crypto.createHmac('sha256', SECRET).update(body, 'utf8').digest('hex');
const standardSignature = (id: string, ts: string, body: string) =>
  `v1,${crypto.createHmac('sha256', SECRET).update(`${id}.${ts}.${body}`, 'utf8').digest('base64')}`;

describe('GET /api/v1/webhook_deliveries/{id} request', () => {
  it('shows the body byte-identical to what the receiver got, the headers it got, signatures that verify, and Authorization as <set>', async () => {
    const tenant = await createTenant();
    const endpointId = await receivingEndpoint(tenant);
    await storeDemandEvent(tenant.accountId, `dem-${crypto.randomUUID()}`);
    const deliveryId = await deliveryOf(endpointId);
    const post = await deliver(endpointId, deliveryId);

    const res = await api.request('GET', `/api/v1/webhook_deliveries/${deliveryId}`, { key: tenant.key });
    expect(res.status).toBe(200);
    const request = res.body.data.request as { attempt: number | null; body: string; headers: Record<string, string> };
    expect(request.attempt).toBe(1);
    expect(Buffer.from(request.body, 'utf8').equals(post.body)).toBe(true);
    const { authorization, ...rest } = request.headers;
    expect(authorization).toBe('<set>');
    expect(post.headers.authorization).toBe(TOKEN);
    for (const [name, value] of Object.entries(rest)) expect(post.headers[name], name).toBe(value);
    expect(Object.keys(request.headers).sort()).toEqual(
      [
        'authorization',
        'content-type',
        'user-agent',
        'webhook-id',
        'webhook-signature',
        'webhook-timestamp',
        'x-idempotency-key',
        'x-webhook-event',
        'x-webhook-signature',
      ].sort(),
    );
    expect(request.headers['x-webhook-signature']).toBe(hmacHex(request.body));
    expect(request.headers['webhook-signature']).toBe(standardSignature(deliveryId, request.headers['webhook-timestamp']!, request.body));
    expect(request.headers['webhook-timestamp']).toBe(String(Math.floor(Date.parse(res.body.data.attempts_log[0].started_at) / 1000)));
    expect(res.text).not.toContain(SECRET);
    expect(res.text).not.toContain('receiver-token-never-shown');
  });

  it('shows a pending delivery before its first attempt with attempt null and headers signed as they would be sent now', async () => {
    const tenant = await createTenant();
    const endpointId = await receivingEndpoint(tenant);
    await storeDemandEvent(tenant.accountId, `dem-${crypto.randomUUID()}`);
    const deliveryId = await deliveryOf(endpointId);

    const res = await api.request('GET', `/api/v1/webhook_deliveries/${deliveryId}`, { key: tenant.key });
    expect(res.status).toBe(200);
    const { request } = res.body.data;
    expect(request.attempt).toBeNull();
    expect(JSON.parse(request.body)).toMatchObject({ event: 'crm.demand.created', environment: 'live' });
    expect(request.headers['x-webhook-signature']).toBe(hmacHex(request.body));
    expect(request.headers.authorization).toBe('<set>');
  });

  it("shows a test send's request byte-identical to what the receiver got", async () => {
    const tenant = await createTenant();
    const endpointId = await receivingEndpoint(tenant);
    const sent = await api.request('POST', `/api/v1/webhooks/${endpointId}/test`, { key: tenant.key });
    expect(sent.status).toBe(200);
    const list = await api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&event_type=webhook.test`, {
      key: tenant.key,
    });
    const deliveryId = list.body.data[0].id as string;
    const post = receiver.received.find((r) => r.headers['webhook-id'] === deliveryId)!;

    const res = await api.request('GET', `/api/v1/webhook_deliveries/${deliveryId}`, { key: tenant.key });
    const { request } = res.body.data;
    expect(Buffer.from(request.body, 'utf8').equals(post.body)).toBe(true);
    expect(request.headers['webhook-signature']).toBe(post.headers['webhook-signature']);
    expect(request.headers['x-webhook-signature']).toBe(post.headers['x-webhook-signature']);
    expect(request.headers.authorization).toBe('<set>');
  });

  it('signs the shown headers with the current secret after a rotation, and shows no request once the endpoint is deleted', async () => {
    const tenant = await createTenant();
    const endpointId = await receivingEndpoint(tenant);
    await storeDemandEvent(tenant.accountId, `dem-${crypto.randomUUID()}`);
    const deliveryId = await deliveryOf(endpointId);
    const post = await deliver(endpointId, deliveryId);
    const rotated = 'whsec_delivery_request_rotated_02';
    await api.request('PATCH', `/api/v1/webhooks/${endpointId}`, { key: tenant.key, body: { secret: rotated } });

    const after = await api.request('GET', `/api/v1/webhook_deliveries/${deliveryId}`, { key: tenant.key });
    const { request } = after.body.data;
    expect(Buffer.from(request.body, 'utf8').equals(post.body)).toBe(true);
    expect(request.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', rotated).update(post.body).digest('hex'));
    expect(request.headers['x-webhook-signature']).not.toBe(post.headers['x-webhook-signature']);
    expect(after.text).not.toContain(rotated);

    expect((await api.request('DELETE', `/api/v1/webhooks/${endpointId}`, { key: tenant.key })).status).toBe(204);
    const gone = await api.request('GET', `/api/v1/webhook_deliveries/${deliveryId}`, { key: tenant.key });
    expect(gone.status).toBe(200);
    expect(gone.body.data.request).toBeNull();
    expect(gone.body.data.attempts_log).toHaveLength(1);
  });

  it("answers 404 in the error envelope to another tenant's key for a delivery", async () => {
    const tenant = await createTenant();
    const other = await createTenant();
    const endpointId = await receivingEndpoint(tenant);
    await storeDemandEvent(tenant.accountId, `dem-${crypto.randomUUID()}`);
    const deliveryId = await deliveryOf(endpointId);

    const res = await api.request('GET', `/api/v1/webhook_deliveries/${deliveryId}`, { key: other.key });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'not_found' });
    expect(res.text).not.toContain('crm.demand.created');
  });
});

describe('GET /api/v1/events/{id}', () => {
  it('reads one event of the key as the same stream item GET /api/v1/events lists', async () => {
    const tenant = await createTenant();
    const stored = await storeDemandEvent(tenant.accountId, `dem-${crypto.randomUUID()}`);
    const res = await api.request('GET', `/api/v1/events/${stored.event.id}`, { key: tenant.key });
    expect(res.status).toBe(200);
    const stream = await api.request('GET', '/api/v1/events', { key: tenant.key });
    const item = stream.body.data.find((e: { id: string }) => e.id === stored.event.id);
    expect(res.body).toEqual({ data: item });
  });

  it("answers 404 in the error envelope to another tenant's key, to the same Account's other environment, and to a non-UUID id", async () => {
    const tenant = await createTenant();
    const other = await createTenant();
    const stored = await storeDemandEvent(tenant.accountId, `dem-${crypto.randomUUID()}`);
    const sandboxKey = await tenant.keyFor(['events:read'], 'sandbox');
    for (const [key, id] of [
      [other.key, stored.event.id],
      [sandboxKey, stored.event.id],
      [tenant.key, 'not-a-uuid'],
    ] as const) {
      const res = await api.request('GET', `/api/v1/events/${id}`, { key });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'not_found' });
    }
  });

  it('refuses a key without events:read with 403 insufficient_scope', async () => {
    const tenant = await createTenant();
    const stored = await storeDemandEvent(tenant.accountId, `dem-${crypto.randomUUID()}`);
    const key = await tenant.keyFor(['webhooks:read']);
    const res = await api.request('GET', `/api/v1/events/${stored.event.id}`, { key });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'insufficient_scope' });
  });
});
