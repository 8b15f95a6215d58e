/**
 * The SDK's methods for the platform's own surfaces (messages, contacts, stages, consents,
 * channel accounts, templates, setup links, broadcasts) against the real API on real Postgres,
 * with the local provider standing in for the messaging provider.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookPlatform, WebhookPlatformError } from '@webhook-platform/sdk';
import { createTenant, eventually, type Tenant } from '../support/harness.js';
import { connectChatappNumber, startApiWithProvider, type ApiWithProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
let tenant: Tenant;
let sdk: WebhookPlatform;
let channelAccountId: string;
let wabaId: string;

beforeAll(async () => {
  bed = await startApiWithProvider({ statusDelayMs: 20 });
  tenant = await createTenant();
  sdk = new WebhookPlatform({ apiKey: tenant.key, baseUrl: `${bed.api.url}/api/v1` });
  const number = await connectChatappNumber(bed, tenant, {
    templates: [{ name: 'order_update', language: 'en_US', status: 'APPROVED' }],
  });
  ({ wabaId, channelAccountId } = number);
});
afterAll(() => bed.close());

const phone = () => `1555${crypto.randomInt(1_000_000, 9_999_999)}`;

async function failure(p: Promise<unknown>): Promise<WebhookPlatformError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WebhookPlatformError);
  return err as WebhookPlatformError;
}

describe('the SDK on the platform surfaces', () => {
  it('messages.send registers the message; the same idempotencyKey answers the first send', async () => {
    const to = phone();
    const body = { channel_account_id: channelAccountId, to, type: 'text' as const, text: { body: 'Your order shipped' } };
    const first = await sdk.messages.send(body, { idempotencyKey: `order-42-${to}` });
    expect(first).toMatchObject({ status: 'queued', direction: 'outbound' });
    const again = await sdk.messages.send(body, { idempotencyKey: `order-42-${to}` });
    expect(again.id).toBe(first.id);
    const listed = await sdk.messages.list({ contact_id: first.contact_id! });
    expect(listed.data.map((m) => m.id)).toEqual([first.id]);
    const conversations = await sdk.conversations.list({ contact_id: first.contact_id! });
    expect(conversations.data).toHaveLength(1);
    // The local provider reports sent, delivered, read; the message's status follows them forward.
    await eventually(async () => (await sdk.messages.list({ contact_id: first.contact_id! })).data[0]?.status === 'read');
  });

  it('media the provider is still processing is a media_not_ready error with retryAfter', async () => {
    const media = await bed.control('/media', { ready: false });
    const err = await failure(
      sdk.messages.send({ channel_account_id: channelAccountId, to: phone(), type: 'image', media: { id: media.id } }),
    );
    expect(err).toMatchObject({ status: 202, code: 'media_not_ready' });
    expect(err.retryAfter).toBeGreaterThan(0);
  });

  it('contacts, stages and consents: a stage change and a consent each emit their event', async () => {
    const sent = await sdk.messages.send({ channel_account_id: channelAccountId, to: phone(), type: 'text', text: { body: 'hi' } });
    const contactId = sent.contact_id!;
    await sdk.stages.create({ key: 'qualified', label: 'Qualified' });
    expect((await sdk.stages.list()).data.map((s) => s.key)).toContain('qualified');
    const updated = await sdk.contacts.update(contactId, { stage: 'qualified' });
    expect(updated.stage).toMatchObject({ key: 'qualified' });
    expect((await sdk.contacts.get(contactId)).stage?.key).toBe('qualified');
    const consent = await sdk.contacts.consents.create(contactId, { channel: 'chatapp', state: 'granted', evidence: 'web form' });
    expect(consent).toMatchObject({ state: 'granted', changed: true });
    expect((await sdk.contacts.consents.list(contactId)).data.map((c) => c.id)).toEqual([consent.id]);
    const types = (await sdk.events.list({ limit: 100 })).data.map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['crm.contact.stage_changed', 'crm.contact.consent_changed']));
    const err = await failure(sdk.contacts.update(contactId, { stage: 'no-such-stage' }));
    expect(err).toMatchObject({ status: 422, code: 'invalid_stage' });
  });

  it('channel accounts, templates, setup links and broadcasts', async () => {
    expect((await sdk.channelAccounts.get(channelAccountId)).waba_id).toBe(wabaId);
    await sdk.templates.sync({ channel_account_id: channelAccountId });
    expect((await sdk.templates.list({ channel_account_id: channelAccountId })).data.map((t) => t.name)).toEqual(['order_update']);
    const link = await sdk.setupLinks.create(tenant.customerId, { connection_mode: 'dedicated' });
    expect(link.url).toMatch(/\/setup\//);
    const photoapp = await sdk.setupLinks.create(tenant.customerId, { channel: 'photoapp' });
    expect(photoapp).toMatchObject({ channel: 'photoapp', status: 'open' });
    expect((await sdk.setupLinks.list(tenant.customerId)).data.map((l) => [l.id, l.channel])).toEqual([
      [link.id, 'chatapp'],
      [photoapp.id, 'photoapp'],
    ]);

    const broadcast = await sdk.broadcasts.create({
      channel_account_id: channelAccountId,
      template: { name: 'order_update', language: 'en_US' },
    });
    const a = phone();
    const added = await sdk.broadcasts.addRecipients(broadcast.id, {
      recipients: [{ to_recipient: a }, { to_recipient: a }, { to_recipient: 'x' }],
    });
    expect(added).toMatchObject({ added: 1, duplicates: 1 });
    expect(added.errors.map((e) => e.index)).toEqual([2]);
    const tooMany = await failure(
      sdk.broadcasts.addRecipients(broadcast.id, {
        recipients: Array.from({ length: 1001 }, (_, i) => ({ to_recipient: `1555${1_000_000 + i}` })),
      }),
    );
    expect(tooMany).toMatchObject({ status: 422, code: 'too_many_recipients' });
    const done = await sdk.broadcasts.send(broadcast.id);
    expect(done).toMatchObject({ status: 'sent', counts: { sent: 1 } });
    expect((await sdk.broadcasts.listRecipients(broadcast.id)).data[0]?.status).toBe('sent');
  });
});
