/**
 * Every event of the catalog from the action that makes it, end to end: the production entry
 * points (startApi, runWorker) on the Temporal dev server and Postgres, the local provider
 * standing in for the messaging provider (it answers sends and posts signed notifications back),
 * and one verified HTTPS endpoint subscribed to every category. Nothing is stored by hand:
 * provider facts come from the local provider, platform facts from the routes that make them.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/core/catalog/index.js';
import { createChannelAccount } from '../../src/db/directory.js';
import type { LocalProvider } from '../../dev/local-provider/server.js';
import { addWaba, newNumericId } from '../../dev/local-provider/state.js';
import { samples } from '../support/catalog-samples.js';
import { eventually, testDb, type Tenant } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';
import { startService, type RunningService } from '../support/running-service.js';

let service: RunningService;
let provider: LocalProvider;
let receiver: Receiver;
let tenant: Tenant;
let secret: string;
let chatappAccountId: string;

const waba = newNumericId();
const phoneNumberId = newNumericId();
const photoappAccountId = newNumericId();
const contactPhone = `1555${crypto.randomInt(1_000_000, 9_999_999)}`;
const failingPhone = `1555${crypto.randomInt(1_000_000, 9_999_999)}`;

beforeAll(async () => {
  [service, receiver] = await Promise.all([startService({ name: 'catalog', provider: { statusDelayMs: 100 } }), startReceiver()]);
  ({ tenant } = service);
  provider = service.provider!;

  // A connected number and a photoapp account, known to the provider and to the directory.
  addWaba(provider.state, { id: waba, phone_numbers: [{ id: phoneNumberId, display_phone_number: '+1 555 0100' }] });
  const photoapp = await control<{ id: string }>('/photoapp_accounts', { id: photoappAccountId });
  const db = testDb();
  const chatapp = await createChannelAccount(db, {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'chatapp',
    display: '+1 555 0100',
    phoneNumberId,
    wabaId: waba,
  });
  chatappAccountId = chatapp.id;
  await createChannelAccount(db, {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'photoapp',
    display: '@local.shop',
    providerAccountId: photoapp.id,
  });

  const created = await call('POST', '/api/v1/webhooks', {
    url: `https://localhost:${receiver.port}/hooks`,
    events: ['messages', 'statuses', 'crm', 'account', 'app_messages'],
  });
  expect(created.status).toBe(201);
  secret = created.body.data.secret;
  expect((await call('POST', `/api/v1/webhooks/${created.body.data.id}/test`)).status).toBe(200);
});

afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

const call = (method: string, path: string, body?: unknown) => service.call(method, path, body);

async function control<T = any>(path: string, body: unknown): Promise<T> {
  const res = await fetch(`${provider.rootUrl}/_local${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as T & { notification_status?: number };
  if (!res.ok) throw new Error(`local provider ${path}: ${res.status} ${JSON.stringify(json)}`);
  // A notification the platform did not take would make the wait below time out without a reason.
  if (json.notification_status !== undefined && json.notification_status !== 200)
    throw new Error(`the platform answered ${json.notification_status} to the notification of ${path}`);
  return json;
}

/** The bodies the receiver got for one event type, each checked against its signature. */
function deliveredOf(type: string): Array<Record<string, any>> {
  return receiver.received
    .filter((r) => r.headers['x-webhook-event'] === type)
    .map((r) => {
      expect(r.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', secret).update(r.body).digest('hex'));
      return JSON.parse(r.body.toString()) as Record<string, any>;
    });
}

/** Waits until an event of `type` matching `where` has been delivered, signed. */
function arrives(type: string, where: (body: Record<string, any>) => boolean = () => true): Promise<Record<string, any>> {
  return eventually(async () => deliveredOf(type).find(where), 30_000);
}

async function contactIdOf(waId: string): Promise<string> {
  const found = await eventually(async () => (await call('GET', `/api/v1/contacts?wa_id=${waId}`)).body.data?.[0]);
  return found.id;
}

describe('every catalog event comes from the action that makes it', () => {
  it('a contact writes from an ad: chatapp.message.received', async () => {
    const { id } = await control('/inbound/messages', {
      phone_number_id: phoneNumberId,
      from: contactPhone,
      profile_name: 'Ada',
      text: 'Is the blue one in stock?',
      referral: { source_id: 'ad-1', source_url: 'https://ads.example/1', source_type: 'ad' },
    });
    const body = await arrives('chatapp.message.received', (b) => b.external_id === id);
    expect(body).toMatchObject({ environment: 'live', channel: 'chatapp', customer_id: tenant.customerId, phone_number_id: phoneNumberId });
  });

  it('a message sent through the API: chatapp.message.sent, .delivered and .read, in order in the stream', async () => {
    const sent = await call('POST', '/api/v1/messages', {
      channel_account_id: chatappAccountId,
      to: contactPhone,
      type: 'text',
      text: { body: 'Yes, it is. Shall I reserve it?' },
    });
    expect(sent.status).toBe(202);
    const wamid = sent.body.data.external_id;
    for (const status of ['sent', 'delivered', 'read']) await arrives(`chatapp.message.${status}`, (b) => b.message_id === wamid);
    // Inside the ad's free-entry-point window the sent status carries the window's end.
    expect((await arrives('chatapp.message.sent', (b) => b.message_id === wamid)).conversation?.expiration_timestamp).toBeTruthy();
    const stream = (await call('GET', '/api/v1/events?after=0&limit=100')).body.data as Array<{ type: string; external_id: string }>;
    expect(stream.filter((e) => e.external_id === wamid).map((e) => e.type)).toEqual([
      'chatapp.message.sent',
      'chatapp.message.delivered',
      'chatapp.message.read',
    ]);
  });

  it('a send the provider cannot deliver: chatapp.message.failed', async () => {
    await control(`/recipients/${failingPhone}/fail`, {});
    const sent = await call('POST', '/api/v1/messages', {
      channel_account_id: chatappAccountId,
      to: failingPhone,
      type: 'text',
      text: { body: 'Hi' },
    });
    expect(sent.status).toBe(202);
    const failed = await arrives('chatapp.message.failed', (b) => b.message_id === sent.body.data.external_id);
    expect(failed.errors?.[0]?.code).toBeTypeOf('number');
  });

  it('staff in the business app: chatapp.message.echo, .edited and .revoked', async () => {
    const echo = await control<{ id: string }>('/business_app/messages', {
      phone_number_id: phoneNumberId,
      to: contactPhone,
      text: 'On my way',
    });
    await arrives('chatapp.message.echo', (b) => b.external_id === echo.id);
    await control('/business_app/edits', { phone_number_id: phoneNumberId, to: contactPhone, message_id: echo.id, text: 'On my way!' });
    await arrives('chatapp.message.edited', (b) => b.external_id === echo.id);
    await control('/business_app/revokes', { phone_number_id: phoneNumberId, to: contactPhone, message_id: echo.id });
    await arrives('chatapp.message.revoked', (b) => b.external_id === echo.id);
  });

  it('the provider reports on the business account: chatapp.account.updated and .phone_number.quality_updated', async () => {
    await control('/account_updates', { waba_id: waba, event: 'ACCOUNT_VIOLATION', violation_type: 'SPAM' });
    const updated = await arrives('chatapp.account.updated', (b) => b.waba_id === waba);
    expect(updated).toMatchObject({ account_event: 'ACCOUNT_VIOLATION', violation_type: 'SPAM', customer_id: tenant.customerId });
    await control(`/phone_numbers/${phoneNumberId}/quality`, { messaging_limit_tier: 'TIER_10K' });
    const quality = await arrives('chatapp.phone_number.quality_updated', (b) => b.phone_number_id === phoneNumberId);
    expect(quality.messaging_limit_tier).toBe('TIER_10K');
  });

  it('a customer finishes the embedded signup of a setup link: chatapp.phone_number.connected', async () => {
    const link = await call('POST', `/api/v1/customers/${tenant.customerId}/setup_links`, { connection_mode: 'coexistence' });
    expect(link.status).toBe(201);
    const newNumber = newNumericId();
    await control('/signup/complete', {
      setup_url: link.body.data.url,
      connection_mode: 'coexistence',
      waba: { id: newNumericId(), phone_numbers: [{ id: newNumber, display_phone_number: '+1 555 0199' }] },
    });
    const connected = await arrives('chatapp.phone_number.connected', (b) => b.phone_number_id === newNumber);
    expect(connected).toMatchObject({ setup_link_id: link.body.data.id, connection_mode: 'coexistence', customer_id: tenant.customerId });
  });

  it('the funnel and consent routes: crm.contact.stage_changed and crm.contact.consent_changed', async () => {
    const contactId = await contactIdOf(contactPhone);
    expect((await call('POST', '/api/v1/stages', { key: 'lead', label: 'Lead' })).status).toBe(201);
    expect((await call('PATCH', `/api/v1/contacts/${contactId}`, { stage: 'lead' })).status).toBe(200);
    const stage = await arrives('crm.contact.stage_changed', (b) => b.contact?.id === contactId);
    expect(stage).toMatchObject({ new_stage: { key: 'lead' }, changed_by: 'manual' });
    const consent = await call('POST', `/api/v1/contacts/${contactId}/consents`, {
      channel: 'chatapp',
      purpose: 'marketing',
      state: 'granted',
      evidence: 'Ticked the box at checkout',
    });
    expect(consent.status).toBe(201);
    await arrives('crm.contact.consent_changed', (b) => b.contact?.id === contactId && b.state === 'granted');
  });

  it('the CRM and automation families through the publish API', async () => {
    const published = [
      'crm.opportunity.created',
      'crm.opportunity.updated',
      'crm.demand.created',
      'crm.demand.updated',
      'crm.appointment_created',
      'crm.appointment_updated',
      'automation.journey_run.finished',
    ];
    for (const type of published) {
      const sample = samples[type]!;
      const res = await call('POST', '/api/v1/events', { type, data: sample.data, refs: sample.refs });
      expect(res.status, `${type}: ${JSON.stringify(res.body)}`).toBe(201);
    }
    for (const type of published) await arrives(type);
  });

  it('a contact writes to the photoapp account: photoapp.message.received', async () => {
    const { id } = await control('/photoapp/inbound/messages', { account_id: photoappAccountId, from: 'igsid-4242', text: 'hello' });
    const body = await arrives('photoapp.message.received', (b) => b.external_id === id);
    expect(body.channel).toBe('photoapp');
  });

  it('covers the whole catalog, webhook.test included', () => {
    const delivered = new Set(receiver.received.map((r) => String(r.headers['x-webhook-event'])));
    const missing = EVENT_TYPES.map((d) => d.type).filter((t) => !delivered.has(t));
    expect(missing).toEqual([]);
  });
});
