/**
 * The SDK and the `webhooks` CLI (run as a child process) on "see what was sent": a delivery with
 * its request as signed, one event, and an endpoint's description, against the real API on real
 * Postgres and a real local HTTPS receiver.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookPlatform, WebhookPlatformError } from '@webhook-platform/sdk';
import { deliverOnce, onlyDeliveryOf } from '../support/deliver-once.js';
import { createTenant, startTestApi, storeDemandEvent, testDb, type Tenant, type TestApi } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';
import { runWebhooksCli, type CliRun } from '../support/webhooks-cli.js';

const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooks-cli-sent-'));
const SECRET = 'whsec_see_what_was_sent_secret_01';
const TOKEN = 'Bearer kit-receiver-token';

let api: TestApi;
let receiver: Receiver;
let tenant: Tenant;
let sdk: WebhookPlatform;
beforeAll(async () => {
  [api, receiver, tenant] = await Promise.all([startTestApi({ allowLoopback: true }), startReceiver(), createTenant()]);
  sdk = new WebhookPlatform({ apiKey: tenant.key, baseUrl: `${api.url}/api/v1` });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

function cli(...args: string[]): Promise<CliRun> {
  return runWebhooksCli(args, {
    ...process.env,
    WEBHOOKS_CONFIG: path.join(configDir, 'config.json'),
    WEBHOOKS_API_KEY: tenant.key,
    WEBHOOKS_BASE_URL: `${api.url}/api/v1`,
  });
}

/** An event delivered to a healthy endpoint with a stored Authorization value: the ids and the POST received. */
async function deliveredEvent() {
  const endpoint = await sdk.webhooks.create({ url: receiver.url(`/kit-sent/${crypto.randomUUID()}`), events: ['crm'], secret: SECRET });
  await sdk.webhooks.update(endpoint.id, { headers: { Authorization: TOKEN } });
  await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [endpoint.id]);
  const stored = await storeDemandEvent(tenant.accountId, `dem-${crypto.randomUUID()}`);
  const deliveryId = await onlyDeliveryOf(endpoint.id);
  const post = await deliverOnce(api, receiver, endpoint.id, deliveryId);
  return { deliveryId, eventId: stored.event.id, post };
}

describe('the SDK: deliveries.get with the request, events.get', () => {
  it('deliveries.get returns the request whose body is the bytes received and whose headers show Authorization as <set>', async () => {
    const { deliveryId, post } = await deliveredEvent();
    const delivery = await sdk.deliveries.get(deliveryId);
    expect(delivery.request).not.toBeNull();
    expect(Buffer.from(delivery.request!.body, 'utf8').equals(post.body)).toBe(true);
    expect(delivery.request!.headers).toMatchObject({
      authorization: '<set>',
      'x-webhook-signature': post.headers['x-webhook-signature'],
      'webhook-signature': post.headers['webhook-signature'],
    });
  });

  it("events.get returns the stream item; another tenant's SDK gets a not_found error", async () => {
    const { eventId } = await deliveredEvent();
    const event = await sdk.events.get(eventId);
    expect(event).toMatchObject({ id: eventId, type: 'crm.demand.created', environment: 'live' });
    const other = await createTenant();
    const theirs = new WebhookPlatform({ apiKey: other.key, baseUrl: `${api.url}/api/v1` });
    const err = await theirs.events.get(eventId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookPlatformError);
    expect(err).toMatchObject({ status: 404, code: 'not_found' });
  });
});

describe('the webhooks CLI: deliveries get, events get, --description', () => {
  it('deliveries get prints the attempts and the request as signed, Authorization as <set>; --json is the API answer', async () => {
    const { deliveryId, post } = await deliveredEvent();
    const human = await cli('deliveries', 'get', deliveryId);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('STARTED_AT');
    expect(human.stdout).toContain('Request, as attempt 1 sent it:');
    expect(human.stdout).toContain('authorization: <set>');
    expect(human.stdout).toContain(`x-webhook-signature: ${String(post.headers['x-webhook-signature'])}`);
    expect(human.stdout).toContain(post.body.toString('utf8'));
    expect(human.stdout).not.toContain('kit-receiver-token');

    const json = await cli('deliveries', 'get', deliveryId, '--json');
    expect(json.code).toBe(0);
    expect(json.json).toEqual(await sdk.deliveries.get(deliveryId));
  });

  it('events get prints one event, and exits 1 on an id the key cannot read', async () => {
    const { eventId } = await deliveredEvent();
    const json = await cli('events', 'get', eventId, '--json');
    expect(json.code, json.stderr).toBe(0);
    expect(json.json).toEqual(await sdk.events.get(eventId));
    const human = await cli('events', 'get', eventId);
    expect(human.stdout).toContain('crm.demand.created');
    const missing = await cli('events', 'get', crypto.randomUUID());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found');
  });

  it('endpoints create and update take --description; "" removes it', async () => {
    const created = await cli(
      'endpoints',
      'create',
      '--url',
      'https://public.example/kit',
      '--events',
      'crm',
      '--description',
      'Billing',
      '--json',
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.json.description).toBe('Billing');
    const id = created.json.id as string;
    const updated = await cli('endpoints', 'update', id, '--description', 'Billing, v2', '--json');
    expect(updated.json.description).toBe('Billing, v2');
    expect((await sdk.webhooks.get(id)).description).toBe('Billing, v2');
    const removed = await cli('endpoints', 'update', id, '--description', '', '--json');
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.json.description).toBeNull();
  });
});
