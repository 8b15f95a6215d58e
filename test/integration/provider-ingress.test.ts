/** The messaging provider's webhook end to end on real Postgres: signature, mapping, directory, stream. */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { webhookBody } from '../../src/core/webhook-body.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { fromTable, type TableRow } from '../../src/db/events.js';
import { registerOutboundMessage } from '../../src/db/messaging.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { MAX_ITEMS } from '../../src/channels/inbound/photoapp-webhook.js';
import {
  createTenant,
  PROVIDER_APP_SECRET,
  PROVIDER_VERIFY_TOKEN,
  startTestApi,
  testDb,
  type Tenant,
  type TestApi,
} from '../support/harness.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

const T = '1795341600'; // 2026-11-22T10:00:00Z

interface Setup {
  tenant: Tenant;
  waba: string;
  pnid: string;
  sandboxPnid: string;
  channelAccountId: string;
  endpointId: string;
}

async function setup(): Promise<Setup> {
  const tenant = await createTenant();
  const suffix = crypto.randomBytes(5).toString('hex');
  const waba = `waba${suffix}`;
  const pnid = `pn${suffix}`;
  const sandboxPnid = `sb${suffix}`;
  const ca = await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'chatapp',
    display: '+1 555-078-3881',
    phoneNumberId: pnid,
    wabaId: waba,
  });
  await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    channel: 'chatapp',
    display: 'Sandbox',
    phoneNumberId: sandboxPnid,
    wabaId: `sbwaba${suffix}`,
    environment: 'sandbox',
  });
  const ep = await api.request('POST', '/api/v1/webhooks', {
    key: tenant.key,
    body: { url: 'https://public.example/h', events: ['messages', 'statuses', 'account', 'app_messages'] },
  });
  await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [ep.body.data.id]);
  return { tenant, waba, pnid, sandboxPnid, channelAccountId: ca.id, endpointId: ep.body.data.id };
}

function envelope(waba: string, field: string, value: unknown) {
  return { object: 'whatsapp_business_account', entry: [{ id: waba, time: Number(T), changes: [{ field, value }] }] };
}

async function post(body: unknown, opts: { secret?: string; signature?: string; raw?: string } = {}) {
  const raw = opts.raw ?? JSON.stringify(body);
  const signature =
    opts.signature ??
    `sha256=${crypto
      .createHmac('sha256', opts.secret ?? PROVIDER_APP_SECRET)
      .update(raw)
      .digest('hex')}`;
  return api.request('POST', '/provider/chatapp/webhook', {
    rawBody: raw,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
  });
}

async function stream(s: Setup, environment: 'live' | 'sandbox' = 'live') {
  const key = environment === 'live' ? s.tenant.key : await s.tenant.keyFor(['events:read'], 'sandbox');
  return (await api.request('GET', '/api/v1/events?limit=100', { key })).body.data as Array<Record<string, any>>;
}

/** The rejections recorded for notifications whose body mentions `text`. */
async function rejectionsNaming(text: string): Promise<Array<{ reason: string; body: string }>> {
  const { rows } = await testDb().query(`SELECT reason, body FROM provider_rejections WHERE body LIKE $1 ORDER BY created_at`, [
    `%${text}%`,
  ]);
  return rows;
}

const textMessage = (s: Setup, id: string, pnid = s.pnid) =>
  envelope(s.waba, 'messages', {
    messaging_product: 'whatsapp',
    metadata: { display_phone_number: '15550783881', phone_number_id: pnid },
    contacts: [{ profile: { name: 'Maria Souza' }, wa_id: '5511999998888' }],
    messages: [{ from: '5511999998888', id, timestamp: T, type: 'text', text: { body: 'Vocês abrem sábado?' } }],
  });

describe('provider webhook', () => {
  it('answers the subscription handshake only with the right token', async () => {
    const ok = await api.request(
      'GET',
      `/provider/chatapp/webhook?hub.mode=subscribe&hub.verify_token=${PROVIDER_VERIFY_TOKEN}&hub.challenge=1158201444`,
    );
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('1158201444');
    const bad = await api.request('GET', '/provider/chatapp/webhook?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1');
    expect(bad.status).toBe(403);
  });

  it('refuses a bad or missing signature and stores nothing', async () => {
    const s = await setup();
    const body = textMessage(s, 'wamid.sig');
    expect((await post(body, { secret: 'not-the-secret' })).status).toBe(401);
    expect((await post(body, { signature: '' })).status).toBe(401);
    expect((await post(body, { signature: 'sha256=zz' })).status).toBe(401);
    expect(await stream(s)).toEqual([]);
  });

  it('turns an incoming message into one event with contact, message and exact bodies; redeliveries add nothing', async () => {
    const s = await setup();
    const wamid = `wamid.in.${s.pnid}`;
    const res = await post(textMessage(s, wamid));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, events: 1 });
    expect((await post(textMessage(s, wamid))).body.events).toBe(1);

    const items = await stream(s);
    expect(items).toHaveLength(1);
    const item = items[0]!;
    const { rows: contacts } = await testDb().query(`SELECT id FROM contacts WHERE channel_account_id = $1`, [s.channelAccountId]);
    const { rows: messages } = await testDb().query(`SELECT id, conversation_id FROM messages WHERE external_id = $1`, [wamid]);
    expect(contacts).toHaveLength(1);
    expect(item).toEqual({
      id: expect.any(String),
      cursor: '1',
      type: 'chatapp.message.received',
      environment: 'live',
      message_id: wamid,
      external_id: wamid,
      message_resource_id: messages[0].id,
      occurred_at: '2026-11-22T10:00:00.000Z',
      created_at: expect.any(String),
      data: {
        phone_number_id: s.pnid,
        message: {
          id: wamid,
          external_id: wamid,
          resource_id: messages[0].id,
          conversation_id: messages[0].conversation_id,
          contact_id: contacts[0].id,
          direction: 'inbound',
          type: 'text',
          status: 'received',
          content: { body: 'Vocês abrem sábado?' },
          context: null,
          timestamp: '2026-11-22T10:00:00.000Z',
        },
        contact: {
          id: contacts[0].id,
          wa_id: '5511999998888',
          user_id: null,
          username: null,
          phone: '5511999998888',
          profile_name: 'Maria Souza',
          metadata: {},
        },
      },
    });

    const row = fromTable((await testDb().query<TableRow>(`SELECT * FROM events WHERE id = $1`, [item.id])).rows[0]!);
    expect(row.idempotency_key).toBe(wamid);
    expect(webhookBody(getEventDefinition('chatapp.message.received')!, row)).toEqual({
      event: 'chatapp.message.received',
      customer_id: s.tenant.customerId,
      environment: 'live',
      channel: 'chatapp',
      channel_account: { id: s.channelAccountId, channel: 'chatapp', display: '+1 555-078-3881' },
      external_id: wamid,
      phone_number_id: s.pnid,
      message: { from: '5511999998888', id: wamid, timestamp: T, type: 'text', text: { body: 'Vocês abrem sábado?' }, external_id: wamid },
      contact: { wa_id: '5511999998888', user_id: null, username: null, phone: '5511999998888', profile_name: 'Maria Souza', metadata: {} },
    });
    const { rows: deliveries } = await testDb().query(`SELECT endpoint_id, status, idempotency_key FROM deliveries WHERE event_id = $1`, [
      item.id,
    ]);
    expect(deliveries).toEqual([{ endpoint_id: s.endpointId, status: 'pending', idempotency_key: wamid }]);
  });

  it('gives the sandbox number sandbox events, in the sandbox stream', async () => {
    const s = await setup();
    await post(textMessage(s, `wamid.sb.${s.pnid}`, s.sandboxPnid));
    expect(await stream(s)).toEqual([]);
    const sandbox = await stream(s, 'sandbox');
    expect(sandbox.map((e) => [e.type, e.environment, e.cursor])).toEqual([['chatapp.message.received', 'sandbox', '1']]);
  });

  it('emits statuses only for registered messages, and nothing for deleted or warning', async () => {
    const s = await setup();
    const sent = `wamid.out.${s.pnid}`;
    const registered = await registerOutboundMessage(testDb(), {
      accountId: s.tenant.accountId,
      channelAccountId: s.channelAccountId,
      externalId: sent,
    });
    const statuses = (list: unknown[]) =>
      envelope(s.waba, 'messages', {
        messaging_product: 'whatsapp',
        metadata: { display_phone_number: '15550783881', phone_number_id: s.pnid },
        statuses: list,
      });
    const status = (id: string, st: string, extra: Record<string, unknown> = {}) => ({
      id,
      status: st,
      timestamp: T,
      recipient_id: '5511999998888',
      ...extra,
    });
    const res = await post(
      statuses([
        status(sent, 'sent', {
          pricing: { billable: true, pricing_model: 'PMP', category: 'utility', type: 'regular' },
          conversation: { id: 'conv1', expiration_timestamp: '1795428000' },
        }),
        status(sent, 'delivered'),
        status(sent, 'deleted'),
        status(sent, 'warning'),
        status('wamid.unknown', 'read'),
        status(sent, 'failed', {
          errors: [
            {
              code: 131026,
              title: 'Message undeliverable',
              message: 'Message undeliverable',
              error_data: { details: 'Receiver is incapable of receiving this message' },
            },
          ],
        }),
      ]),
    );
    expect(res.status).toBe(200);
    const items = await stream(s);
    expect(items.map((e) => e.type)).toEqual(['chatapp.message.sent', 'chatapp.message.delivered', 'chatapp.message.failed']);
    for (const e of items) expect(e).toMatchObject({ message_id: sent, external_id: sent, message_resource_id: registered.id });
    expect(items[1]!.data).toEqual({ phone_number_id: s.pnid, status: 'delivered', message_id: sent, recipient_id: '5511999998888' });
    expect(items[0]!.data.conversation).toEqual({ id: 'conv1', expiration_timestamp: '1795428000' });
    expect(items[2]!.data.errors[0].code).toBe(131026);
    const keys = (
      await testDb().query(`SELECT idempotency_key FROM events WHERE account_id = $1 ORDER BY cursor`, [s.tenant.accountId])
    ).rows.map((r) => r.idempotency_key);
    expect(keys).toEqual([`${sent}:sent`, `${sent}:delivered`, `${sent}:failed`]);
  });

  it('answers with the number of events it stored: 0 when a notification stores nothing', async () => {
    const s = await setup();
    const statuses = (list: unknown[]) =>
      envelope(s.waba, 'messages', {
        messaging_product: 'whatsapp',
        metadata: { display_phone_number: '15550783881', phone_number_id: s.pnid },
        statuses: list,
      });
    const status = (id: string, st: string) => ({ id, status: st, timestamp: T, recipient_id: '5511999998888' });
    expect((await post(statuses([status('wamid.never', 'delivered'), status('wamid.never', 'read')]))).body).toEqual({
      received: true,
      events: 0,
    });
    const sent = `wamid.count.${s.pnid}`;
    await registerOutboundMessage(testDb(), { accountId: s.tenant.accountId, channelAccountId: s.channelAccountId, externalId: sent });
    const mixed = statuses([status(sent, 'delivered'), status('wamid.never', 'read'), status(sent, 'read')]);
    expect((await post(mixed)).body).toEqual({ received: true, events: 2 });
    // A redelivery stores nothing new: the read is found again, the delivered is now late (behind read) and skipped.
    expect((await post(mixed)).body).toEqual({ received: true, events: 1 });
    expect((await stream(s)).map((e) => e.type)).toEqual(['chatapp.message.delivered', 'chatapp.message.read']);
  });

  it('stores the end of a free-entry-point window as fep_expires_at of the conversation', async () => {
    const s = await setup();
    // The contact wrote first (a click-to-chat ad): that opened the conversation.
    await post(textMessage(s, `wamid.ad.${s.pnid}`));
    const { rows: contacts } = await testDb().query(`SELECT id FROM contacts WHERE channel_account_id = $1`, [s.channelAccountId]);
    const fepEnd = async () =>
      (await testDb().query(`SELECT fep_expires_at FROM conversations WHERE channel_account_id = $1`, [s.channelAccountId])).rows.map(
        (r) => r.fep_expires_at?.toISOString() ?? null,
      );
    expect(await fepEnd()).toEqual([null]);

    const statuses = (list: unknown[]) =>
      envelope(s.waba, 'messages', {
        messaging_product: 'whatsapp',
        metadata: { display_phone_number: '15550783881', phone_number_id: s.pnid },
        statuses: list,
      });
    const fepPricing = { billable: false, pricing_model: 'PMP', category: 'referral_conversion', type: 'free_entry_point' };
    const sentIn = (id: string, expiration: string, pricing: Record<string, unknown> = fepPricing) => ({
      id,
      status: 'sent',
      timestamp: T,
      recipient_id: '5511999998888',
      pricing,
      conversation: { id: 'conv-fep', expiration_timestamp: expiration, origin: { type: 'referral_conversion' } },
    });
    const first = `wamid.fep1.${s.pnid}`;
    await registerOutboundMessage(testDb(), {
      accountId: s.tenant.accountId,
      channelAccountId: s.channelAccountId,
      contactId: contacts[0].id,
      externalId: first,
    });
    expect((await post(statuses([sentIn(first, '1795428000')]))).body.events).toBe(1);
    expect(await fepEnd()).toEqual(['2026-11-23T10:00:00.000Z']);

    // A later window, on a message registered without its contact: found through the recipient.
    const second = `wamid.fep2.${s.pnid}`;
    await registerOutboundMessage(testDb(), { accountId: s.tenant.accountId, channelAccountId: s.channelAccountId, externalId: second });
    await post(statuses([sentIn(second, '1795514400')]));
    expect(await fepEnd()).toEqual(['2026-11-24T10:00:00.000Z']);

    // A redelivered older notification does not move the end back; a regular price is no window.
    await post(statuses([sentIn(first, '1795428000')]));
    const third = `wamid.fep3.${s.pnid}`;
    await registerOutboundMessage(testDb(), {
      accountId: s.tenant.accountId,
      channelAccountId: s.channelAccountId,
      contactId: contacts[0].id,
      externalId: third,
    });
    await post(statuses([sentIn(third, '1795600800', { billable: true, pricing_model: 'PMP', category: 'utility', type: 'regular' })]));
    expect(await fepEnd()).toEqual(['2026-11-24T10:00:00.000Z']);
  });

  it('maps account updates (always live, resolved through waba_id) and tier changes', async () => {
    const s = await setup();
    await post(envelope(s.waba, 'account_update', { event: 'ACCOUNT_VIOLATION', violation_info: { violation_type: 'SPAM' } }));
    await post(
      envelope(s.waba, 'phone_number_quality_update', { display_phone_number: '15550783881', event: 'UPGRADE', current_limit: 'TIER_10K' }),
    );
    await post(
      envelope(s.waba, 'phone_number_quality_update', {
        display_phone_number: '15550783881',
        event: 'FLAGGED',
        current_limit: 'TIER_NOT_SET',
      }),
    );
    await post(envelope(s.waba, 'message_template_status_update', { event: 'APPROVED', message_template_id: 1 }));
    const items = await stream(s);
    expect(items.map((e) => e.type)).toEqual(['chatapp.account.updated', 'chatapp.phone_number.quality_updated']);
    expect(items[0]!.data).toMatchObject({ waba_id: s.waba, account_event: 'ACCOUNT_VIOLATION', violation_type: 'SPAM' });
    expect(items[1]!.data).toMatchObject({ waba_id: s.waba, phone_number_id: s.pnid, messaging_limit_tier: 'TIER_10K' });
    const row = fromTable((await testDb().query<TableRow>(`SELECT * FROM events WHERE id = $1`, [items[0]!.id])).rows[0]!);
    const body = webhookBody(getEventDefinition('chatapp.account.updated')!, row);
    expect(body).toMatchObject({ event: 'chatapp.account.updated', customer_id: s.tenant.customerId, environment: 'live' });
    expect(body).not.toHaveProperty('channel');
  });

  it('an account update of a waba shared by two Accounts reaches each Account with its own Customer, as a publish resolves it', async () => {
    const [a, b] = [await createTenant(), await createTenant()];
    const waba = `wabashared${crypto.randomBytes(5).toString('hex')}`;
    const number = async (t: Tenant, customerId?: string) =>
      createChannelAccount(testDb(), {
        accountId: t.accountId,
        customerId,
        channel: 'chatapp',
        display: 'shared',
        phoneNumberId: `pn${crypto.randomBytes(5).toString('hex')}`,
        wabaId: waba,
      });
    // The oldest channel account on the waba has no Customer; A's Customer is on a later one.
    await number(a);
    await number(b, b.customerId);
    await number(a, a.customerId);
    await post(envelope(waba, 'account_update', { event: 'ACCOUNT_RESTRICTION', restriction_info: [] }));
    const eventsOf = async (t: Tenant) =>
      (
        await testDb().query(`SELECT customer_id, environment FROM events WHERE account_id = $1 AND type = 'chatapp.account.updated'`, [
          t.accountId,
        ])
      ).rows;
    expect(await eventsOf(a)).toEqual([{ customer_id: a.customerId, environment: 'live' }]);
    expect(await eventsOf(b)).toEqual([{ customer_id: b.customerId, environment: 'live' }]);
    // The publish API resolves the Customer of the same waba the same way.
    const published = await api.request('POST', '/api/v1/events', {
      key: a.key,
      body: { type: 'chatapp.account.updated', data: { waba_id: waba, account_event: 'ACCOUNT_VIOLATION', violation_type: 'SPAM' } },
    });
    expect(published.status, JSON.stringify(published.body)).toBe(201);
    const row = (await testDb().query(`SELECT customer_id FROM events WHERE id = $1`, [published.body.data.id])).rows[0];
    expect(row.customer_id).toBe(a.customerId);
  });

  it("a tier change of a number without a Customer goes to its waba owner's Customer, as a publish resolves it", async () => {
    const a = await createTenant();
    const waba = `wabatier${crypto.randomBytes(5).toString('hex')}`;
    const pnid = `pn${crypto.randomBytes(5).toString('hex')}`;
    await createChannelAccount(testDb(), {
      accountId: a.accountId,
      channel: 'chatapp',
      display: 'no customer',
      phoneNumberId: pnid,
      wabaId: waba,
    });
    await createChannelAccount(testDb(), {
      accountId: a.accountId,
      customerId: a.customerId,
      channel: 'chatapp',
      display: 'owner',
      phoneNumberId: `pn${crypto.randomBytes(5).toString('hex')}`,
      wabaId: waba,
    });
    await post(envelope(waba, 'phone_number_quality_update', { phone_number_id: pnid, event: 'UPGRADE', current_limit: 'TIER_10K' }));
    const { rows } = await testDb().query(
      `SELECT customer_id FROM events WHERE account_id = $1 AND type = 'chatapp.phone_number.quality_updated'`,
      [a.accountId],
    );
    expect(rows).toEqual([{ customer_id: a.customerId }]);
  });

  it('stores the valid items of a notification and keeps each invalid one in provider_rejections', async () => {
    const s = await setup();
    const good = textMessage(s, `wamid.half.${s.pnid}`);
    const half = {
      ...good,
      entry: [
        ...good.entry,
        {
          id: s.waba,
          changes: [{ field: 'messages', value: { metadata: { display_phone_number: '1' }, messages: [{ id: 'x', type: 'text' }] } }],
        },
      ],
    };
    const res = await post(half);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, events: 1 });
    expect((await stream(s)).map((e) => e.external_id)).toEqual([`wamid.half.${s.pnid}`]);
    const rejected = await rejectionsNaming(s.waba);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.reason).toContain('entry[1].changes[0].value.metadata.phone_number_id');
    // The record holds the refused item in a notification of its own, not the valid one.
    expect(rejected[0]!.body).not.toContain(`wamid.half.${s.pnid}`);

    // A redelivery finds the same event and keeps the bad item again.
    expect((await post(half)).body).toEqual({ received: true, events: 1 });
    expect(await stream(s)).toHaveLength(1);
    expect(await rejectionsNaming(s.waba)).toHaveLength(2);

    const notJson = await post(undefined, { raw: '{"object":' });
    expect(notJson.status).toBe(200);
    expect(notJson.body).toEqual({ received: true, events: 0 });
    const { rows } = await testDb().query(`SELECT reason FROM provider_rejections WHERE body = '{"object":'`);
    expect(rows.length).toBeGreaterThan(0);
  });

  it('one invalid message or status among valid ones costs only itself', async () => {
    const s = await setup();
    const sent = `wamid.mixed-status.${s.pnid}`;
    await registerOutboundMessage(testDb(), { accountId: s.tenant.accountId, channelAccountId: s.channelAccountId, externalId: sent });
    const body = envelope(s.waba, 'messages', {
      messaging_product: 'whatsapp',
      metadata: { display_phone_number: '15550783881', phone_number_id: s.pnid },
      contacts: [{ profile: { name: 'Maria Souza' }, wa_id: '5511999998888' }],
      messages: [
        { from: '5511999998888', id: `wamid.mixed-a.${s.pnid}`, timestamp: T, type: 'text', text: { body: 'a' } },
        { from: '5511999998888', timestamp: T, type: 'text', text: { body: 'no id' } },
        { from: '5511999998888', id: `wamid.mixed-b.${s.pnid}`, timestamp: T, type: 'text', text: { body: 'b' } },
      ],
      statuses: [
        { id: sent, status: 'delivered', timestamp: T, recipient_id: '5511999998888' },
        { id: sent, timestamp: T, recipient_id: '5511999998888' },
      ],
    });
    const res = await post(body);
    expect(res.body).toEqual({ received: true, events: 3 });
    expect((await stream(s)).map((e) => [e.type, e.external_id])).toEqual([
      ['chatapp.message.received', `wamid.mixed-a.${s.pnid}`],
      ['chatapp.message.received', `wamid.mixed-b.${s.pnid}`],
      ['chatapp.message.delivered', sent],
    ]);
    const reasons = (await rejectionsNaming(s.pnid)).map((r) => r.reason).sort();
    expect(reasons).toEqual([
      expect.stringContaining('entry[0].changes[0].value.messages[1].id'),
      expect.stringContaining('entry[0].changes[0].value.statuses[1].status'),
    ]);
  });

  it("deleting a message's contact removes the events the provider brought in for it, in the stream's environment", async () => {
    const s = await setup();
    const sent = `wamid.del-out.${s.pnid}`;
    await post(textMessage(s, `wamid.del-in.${s.pnid}`));
    const { rows: contacts } = await testDb().query(`SELECT id FROM contacts WHERE channel_account_id = $1`, [s.channelAccountId]);
    await registerOutboundMessage(testDb(), {
      accountId: s.tenant.accountId,
      channelAccountId: s.channelAccountId,
      contactId: contacts[0].id,
      externalId: sent,
    });
    await post(
      envelope(s.waba, 'messages', {
        metadata: { display_phone_number: '15550783881', phone_number_id: s.pnid },
        statuses: [{ id: sent, status: 'delivered', timestamp: T, recipient_id: '5511999998888' }],
      }),
    );
    expect(await stream(s)).toHaveLength(2);
    const sandboxKey = await s.tenant.keyFor(['contacts:write'], 'sandbox');
    expect((await api.request('DELETE', `/api/v1/contacts/${contacts[0].id}`, { key: sandboxKey })).status).toBe(404);
    expect(await stream(s)).toHaveLength(2);
    expect((await api.request('DELETE', `/api/v1/contacts/${contacts[0].id}`, { key: s.tenant.key })).status).toBe(204);
    expect(await stream(s)).toEqual([]);
  });

  it('ignores numbers that are not on the platform', async () => {
    const s = await setup();
    const res = await post(textMessage(s, 'wamid.stranger', 'pn-not-ours'));
    expect(res.body).toEqual({ received: true, events: 0 });
  });
});

describe('photoapp webhook', () => {
  async function photoSetup() {
    const tenant = await createTenant();
    const igId = `1784${crypto.randomInt(1e9, 9e9)}`;
    const ca = await createChannelAccount(testDb(), {
      accountId: tenant.accountId,
      customerId: tenant.customerId,
      channel: 'photoapp',
      display: '@acme.store',
      providerAccountId: igId,
    });
    return { tenant, igId, ca };
  }
  const dm = (igId: string, mid: string, message: Record<string, unknown> = { text: 'Tem no tamanho M?' }) => ({
    object: 'instagram',
    entry: [
      {
        id: igId,
        time: 1795341600123,
        messaging: [
          { sender: { id: '6583920192837465' }, recipient: { id: igId }, timestamp: 1795341600000, message: { mid, ...message } },
        ],
      },
    ],
  });
  const postPhoto = (body: unknown) => {
    const raw = JSON.stringify(body);
    const signature = `sha256=${crypto.createHmac('sha256', PROVIDER_APP_SECRET).update(raw).digest('hex')}`;
    return api.request('POST', '/provider/photoapp/webhook', {
      rawBody: raw,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
    });
  };

  it('turns a direct message into photoapp.message.received, once, stamped with the photoapp channel', async () => {
    const { tenant, igId, ca } = await photoSetup();
    const mid = `aWdf${crypto.randomBytes(8).toString('hex')}`;
    expect((await postPhoto(dm(igId, mid))).body).toEqual({ received: true, events: 1 });
    expect((await postPhoto(dm(igId, mid))).body).toEqual({ received: true, events: 1 });
    const items = (await api.request('GET', '/api/v1/events', { key: tenant.key })).body.data;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      type: 'photoapp.message.received',
      message_id: null,
      external_id: mid,
      occurred_at: '2026-11-22T10:00:00.000Z',
    });
    expect(items[0].data.message).toMatchObject({ id: mid, direction: 'inbound', type: 'text', content: { body: 'Tem no tamanho M?' } });
    const row = fromTable((await testDb().query<TableRow>(`SELECT * FROM events WHERE id = $1`, [items[0].id])).rows[0]!);
    expect(row.idempotency_key).toBe(mid);
    expect(webhookBody(getEventDefinition('photoapp.message.received')!, row)).toMatchObject({
      event: 'photoapp.message.received',
      channel: 'photoapp',
      channel_account: { id: ca.id, channel: 'photoapp', display: '@acme.store' },
      external_id: mid,
      account_id: igId,
      contact: { user_id: '6583920192837465' },
    });
  });

  it('stores the valid direct messages of a notification and keeps an invalid one in provider_rejections', async () => {
    const { tenant, igId } = await photoSetup();
    const mid = `aWdf${crypto.randomBytes(8).toString('hex')}`;
    const body = dm(igId, mid);
    const entry = body.entry[0]!;
    entry.messaging.push({
      sender: { id: '6583920192837465' },
      recipient: { id: igId },
      timestamp: 1795341600000,
      message: { text: 'no mid' },
    } as never);
    expect((await postPhoto(body)).body).toEqual({ received: true, events: 1 });
    const items = (await api.request('GET', '/api/v1/events', { key: tenant.key })).body.data;
    expect(items.map((i: { external_id: string }) => i.external_id)).toEqual([mid]);
    const { rows } = await testDb().query(`SELECT reason, body FROM provider_rejections WHERE provider = 'photoapp' AND body LIKE $1`, [
      `%${igId}%`,
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0].reason).toContain('entry[0].messaging[1].message.mid');
    expect(rows[0].body).not.toContain(mid);
  });

  it('ignores echoes and refuses a bad signature', async () => {
    const { tenant, igId } = await photoSetup();
    expect((await postPhoto(dm(igId, 'aWdf-echo', { text: 'we sent this', is_echo: true }))).body.events).toBe(0);
    const raw = JSON.stringify(dm(igId, 'aWdf-x'));
    const bad = await api.request('POST', '/provider/photoapp/webhook', {
      rawBody: raw,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': 'sha256=' + '0'.repeat(64) },
    });
    expect(bad.status).toBe(401);
    expect((await api.request('GET', '/api/v1/events', { key: tenant.key })).body.data).toEqual([]);
  });
  describe('a notification with many items', () => {
    /** A pool of its own (an API process's), counting the statements sent through it. */
    let counted: { db: Db; statements: () => number };
    let countedApi: TestApi;
    beforeAll(async () => {
      const db = createPool(inject('databaseUrl'), 5);
      let statements = 0;
      db.on('connect', (client) => {
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as unknown as { query: typeof query }).query = (...args: unknown[]) => {
          statements++;
          return query(...args);
        };
      });
      counted = { db, statements: () => statements };
      countedApi = await startTestApi({ db });
    });
    afterAll(async () => {
      await countedApi.close();
      await counted.db.end();
    });

    /** `count` direct messages to `igId`, from seven senders (many messages each), in one notification. */
    const many = (igId: string, count: number) => {
      const tag = crypto.randomBytes(4).toString('hex');
      return {
        object: 'instagram',
        entry: [
          {
            id: igId,
            time: 1795341600123,
            // Items kept small, so that a few thousand fit in one request body (256 KiB).
            messaging: Array.from({ length: count }, (_, n) => ({
              sender: { id: `s${n % 7}${tag}` },
              message: { mid: `${tag}_${n}`, text: `m${n}` },
            })),
          },
        ],
      };
    };
    const postCounted = async (body: unknown) => {
      const raw = JSON.stringify(body);
      const signature = `sha256=${crypto.createHmac('sha256', PROVIDER_APP_SECRET).update(raw).digest('hex')}`;
      const before = counted.statements();
      const res = await countedApi.request('POST', '/provider/photoapp/webhook', {
        rawBody: raw,
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
      });
      return { res, statements: counted.statements() - before };
    };
    const countOf = async (sql: string, accountId: string) => (await testDb().query<{ n: number }>(sql, [accountId])).rows[0]!.n;
    const eventsOf = (accountId: string) => countOf(`SELECT count(*)::int AS n FROM events WHERE account_id = $1`, accountId);
    const messagesOf = (accountId: string) => countOf(`SELECT count(*)::int AS n FROM messages WHERE account_id = $1`, accountId);
    const contactsOf = (accountId: string) => countOf(`SELECT count(*)::int AS n FROM contacts WHERE account_id = $1`, accountId);

    it('above the item limit: the first MAX_ITEMS items stored in a few statements, the rest kept in one rejection, the answer 200 for what was stored', async () => {
      const { tenant, igId } = await photoSetup();
      const beyond = 1500;
      const { res, statements } = await postCounted(many(igId, MAX_ITEMS + beyond));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, events: MAX_ITEMS, items_beyond_limit: beyond });
      expect(await eventsOf(tenant.accountId)).toBe(MAX_ITEMS);
      expect(await messagesOf(tenant.accountId)).toBe(MAX_ITEMS);
      expect(await contactsOf(tenant.accountId)).toBe(7);
      // Writes go together, not a few round trips per item.
      expect(statements).toBeLessThanOrEqual(30);
      // The items not stored are kept, as one notification of them, for an operator to post again.
      const rejections = await rejectionsNaming(igId);
      expect(rejections).toHaveLength(1);
      expect(rejections[0]!.reason).toContain(`${beyond} messaging items from entry[0].messaging[${MAX_ITEMS}] on`);
      const kept = JSON.parse(rejections[0]!.body);
      expect(kept.object).toBe('instagram');
      expect(kept.entry).toHaveLength(beyond);
      expect(kept.entry[0].messaging[0].message.text).toBe(`m${MAX_ITEMS}`);
      expect(kept.entry.at(-1).messaging[0].message.text).toBe(`m${MAX_ITEMS + beyond - 1}`);
    });

    it('at the item limit: every item stored, once, with its contact, conversation and message; a repeat stores nothing new', async () => {
      const { tenant, igId } = await photoSetup();
      const body = many(igId, MAX_ITEMS);
      const first = await postCounted(body);
      expect(first.res.body).toEqual({ received: true, events: MAX_ITEMS });
      expect(first.statements).toBeLessThanOrEqual(30);
      expect(await eventsOf(tenant.accountId)).toBe(MAX_ITEMS);
      expect(await messagesOf(tenant.accountId)).toBe(MAX_ITEMS);
      expect(
        await countOf(
          `SELECT count(*)::int AS n FROM events e JOIN messages m ON m.id = e.message_resource_id AND m.conversation_id IS NOT NULL
           WHERE e.account_id = $1 AND e.idempotency_key = m.external_id`,
          tenant.accountId,
        ),
      ).toBe(MAX_ITEMS);
      expect(await contactsOf(tenant.accountId)).toBe(7);
      expect(await rejectionsNaming(igId)).toEqual([]);
      // The provider's redelivery: the same answer, nothing stored twice.
      expect((await postCounted(body)).res.body).toEqual({ received: true, events: MAX_ITEMS });
      expect(await eventsOf(tenant.accountId)).toBe(MAX_ITEMS);
      expect(await messagesOf(tenant.accountId)).toBe(MAX_ITEMS);
    });
  });
});
