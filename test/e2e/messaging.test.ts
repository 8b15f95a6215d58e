/**
 * End to end: a message sent through the API goes out through the local provider, whose signed
 * status notifications come back through the ingress, and the status events reach a verified
 * endpoint subscribed to `statuses` (signed, through the worker's delivery engine) and the
 * stream, in order. Production entry points (startApi, runWorker), Temporal dev server, Postgres.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalProvider } from '../../dev/local-provider/server.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { eventually, testDb, type Tenant } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';
import { startService, type RunningService } from '../support/running-service.js';

let service: RunningService;
let provider: LocalProvider;
let receiver: Receiver;
let tenant: Tenant;
let channelAccountId: string;

beforeAll(async () => {
  // Statuses apart enough that the engine delivers them one after the other even on a loaded machine.
  [service, receiver] = await Promise.all([startService({ name: 'messaging', provider: { statusDelayMs: 250 } }), startReceiver()]);
  ({ tenant } = service);
  provider = service.provider!;
  const waba = (await (
    await fetch(`${provider.rootUrl}/_local/wabas`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phone_numbers: [{ display_phone_number: '+1 555 0100' }] }),
    })
  ).json()) as { id: string; phone_numbers: Array<{ id: string }> };
  const ca = await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'chatapp',
    display: '+1 555 0100',
    phoneNumberId: waba.phone_numbers[0]!.id,
    wabaId: waba.id,
  });
  channelAccountId = ca.id;
});
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

const call = (method: string, path: string, body?: unknown) => service.call(method, path, body);

async function send(to: string) {
  const res = await call('POST', '/api/v1/messages', { channel_account_id: channelAccountId, to, type: 'text', text: { body: 'Hello' } });
  expect(res.status).toBe(202);
  return res.body.data as { id: string; external_id: string };
}

/** Status events received by the endpoint for a message, in arrival order, each checked against its signature. */
function receivedFor(externalId: string, secret: string): string[] {
  return receiver.received
    .filter((r) => r.path === '/statuses' && JSON.parse(r.body.toString()).external_id === externalId)
    .map((r) => {
      expect(r.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', secret).update(r.body).digest('hex'));
      return String(r.headers['x-webhook-event']);
    });
}

async function streamTypes(externalId: string): Promise<string[]> {
  const res = await call('GET', '/api/v1/events?limit=100');
  return (res.body.data as Array<{ type: string; external_id: string }>).filter((e) => e.external_id === externalId).map((e) => e.type);
}

describe('messaging end to end', () => {
  let secret: string;
  beforeAll(async () => {
    const created = await call('POST', '/api/v1/webhooks', { url: `https://localhost:${receiver.port}/statuses`, events: ['statuses'] });
    secret = created.body.data.secret;
    expect((await call('POST', `/api/v1/webhooks/${created.body.data.id}/test`)).status).toBe(200);
  });

  it('a sent message’s sent, delivered and read arrive signed at the endpoint, once each, and in order in the stream', async () => {
    const m = await send('15550001111');
    const types = ['chatapp.message.sent', 'chatapp.message.delivered', 'chatapp.message.read'];
    await eventually(async () => receivedFor(m.external_id, secret).length >= 3, 30_000);
    // POSTs to one endpoint go out side by side, so statuses may arrive out of order (the receiver's
    // rules in docs/delivery.md); the stream keeps the order they happened in.
    expect([...receivedFor(m.external_id, secret)].sort()).toEqual([...types].sort());
    expect(await streamTypes(m.external_id)).toEqual(types);
    const read = receiver.received.find((r) => r.headers['x-webhook-event'] === 'chatapp.message.read' && r.body.includes(m.external_id))!;
    expect(JSON.parse(read.body.toString())).toMatchObject({
      event: 'chatapp.message.read',
      environment: 'live',
      channel: 'chatapp',
      external_id: m.external_id,
      status: 'read',
      message_id: m.external_id,
    });
  });

  it('a failed send gives sent then failed: both at the endpoint, in order in the stream', async () => {
    await fetch(`${provider.rootUrl}/_local/recipients/15550009999/fail`, { method: 'POST' });
    const m = await send('15550009999');
    await eventually(async () => receivedFor(m.external_id, secret).length >= 2, 30_000);
    expect([...receivedFor(m.external_id, secret)].sort()).toEqual(['chatapp.message.failed', 'chatapp.message.sent']);
    expect(await streamTypes(m.external_id)).toEqual(['chatapp.message.sent', 'chatapp.message.failed']);
  });
});
