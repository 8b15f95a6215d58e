/**
 * Statuses of sent messages through the local provider's signed notifications and the real
 * ingress: sent → delivered → read, failed, forward only, free-entry-point windows; and the
 * numbers re-read on a quality update (SPEC 6.3).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannelAccount } from '../../src/db/directory.js';
import { registerOutboundMessage } from '../../src/db/messaging.js';
import { createTenant, eventually, testDb, type Tenant } from '../support/harness.js';
import { startApiWithProvider, type ApiWithProvider, unreachableProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider({ statusDelayMs: 30 });
});
afterAll(() => bed.close());

async function setup(): Promise<{ tenant: Tenant; id: string; pnid: string; wabaId: string }> {
  const tenant = await createTenant();
  const waba = await bed.control('/wabas', {
    phone_numbers: [{ display_phone_number: '+1 555 0100' }, { display_phone_number: '+1 555 0199' }],
  });
  const pnid = waba.phone_numbers[0].id as string;
  const ca = await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'chatapp',
    display: '+1 555 0100',
    phoneNumberId: pnid,
    wabaId: waba.id,
  });
  return { tenant, id: ca.id, pnid, wabaId: waba.id };
}

async function sendText(s: { tenant: Tenant; id: string }, to = '15550001111') {
  const res = await bed.api.request('POST', '/api/v1/messages', {
    key: s.tenant.key,
    body: { channel_account_id: s.id, to, type: 'text', text: { body: 'Hello' } },
  });
  expect(res.status).toBe(202);
  return res.body.data as { id: string; external_id: string; conversation_id: string };
}

async function streamItems(tenant: Tenant) {
  const res = await bed.api.request('GET', '/api/v1/events?limit=100', { key: tenant.key });
  return res.body.data as Array<{ type: string; external_id: string; message_resource_id: string; data: any }>;
}
const types = async (tenant: Tenant) => (await streamItems(tenant)).map((e) => e.type);
const statusOf = async (id: string) => (await testDb().query(`SELECT status FROM messages WHERE id = $1`, [id])).rows[0].status;

describe('statuses of a sent message', () => {
  it('arrive as sent, delivered, read events in that order, for the registered message', async () => {
    const s = await setup();
    const m = await sendText(s);
    const items = await eventually(async () => {
      const all = await streamItems(s.tenant);
      return all.length === 3 ? all : undefined;
    });
    expect(items.map((e) => e.type)).toEqual(['chatapp.message.sent', 'chatapp.message.delivered', 'chatapp.message.read']);
    for (const e of items) {
      expect(e).toMatchObject({ external_id: m.external_id, message_resource_id: m.id });
      expect(e.data).toMatchObject({ phone_number_id: s.pnid, message_id: m.external_id, recipient_id: '15550001111' });
    }
    expect(items[0]!.data.pricing).toMatchObject({ pricing_model: 'PMP', type: 'regular' });
    expect(items[0]!.data.conversation).toBeUndefined();
    expect(await statusOf(m.id)).toBe('read');
  });

  it('a recipient the provider fails gives sent then failed, with the provider’s errors', async () => {
    const s = await setup();
    await bed.control('/recipients/15550009999/fail', {});
    const m = await sendText(s, '15550009999');
    await eventually(async () => (await types(s.tenant)).length === 2);
    const items = await streamItems(s.tenant);
    expect(items.map((e) => e.type)).toEqual(['chatapp.message.sent', 'chatapp.message.failed']);
    expect(items[1]!.data.errors[0]).toMatchObject({ code: 131026, title: 'Message undeliverable' });
    expect(await statusOf(m.id)).toBe('failed');
  });

  it('POST /_local/messages/{id}/fail fails a message at any point', async () => {
    const s = await setup();
    await bed.control('/settings', { auto_statuses: false });
    try {
      const m = await sendText(s);
      await bed.control(`/messages/${m.external_id}/status`, { status: 'sent' });
      await bed.control(`/messages/${m.external_id}/fail`, {});
      expect(await types(s.tenant)).toEqual(['chatapp.message.sent', 'chatapp.message.failed']);
    } finally {
      await bed.control('/settings', { auto_statuses: true });
    }
  });

  it('move forward only: a late or repeated status emits nothing new', async () => {
    const s = await setup();
    await bed.control('/settings', { auto_statuses: false });
    try {
      const m = await sendText(s);
      const post = (status: string) => bed.control(`/messages/${m.external_id}/status`, { status });
      await post('sent');
      await post('read');
      await post('delivered'); // late: behind read
      await post('read'); // repeated
      await post('sent'); // repeated and late
      expect(await types(s.tenant)).toEqual(['chatapp.message.sent', 'chatapp.message.read']);
      expect(await statusOf(m.id)).toBe('read');
      await post('failed'); // failed at any point
      await post('delivered');
      await post('read');
      expect(await types(s.tenant)).toEqual(['chatapp.message.sent', 'chatapp.message.read', 'chatapp.message.failed']);
      expect(await statusOf(m.id)).toBe('failed');
    } finally {
      await bed.control('/settings', { auto_statuses: true });
    }
  });

  it('inside a free-entry-point window: conversation and free_entry_point pricing, the end stored as fep_expires_at', async () => {
    const s = await setup();
    const end = Math.floor(Date.now() / 1000) + 72 * 3600;
    await bed.control('/free_entry_points', { recipient: '15550003333', expires_at: end });
    const m = await sendText(s, '15550003333');
    await eventually(async () => (await types(s.tenant)).length === 3);
    const [sent, delivered] = await streamItems(s.tenant);
    expect(sent!.data.pricing).toMatchObject({ type: 'free_entry_point', billable: false });
    expect(sent!.data.conversation).toMatchObject({ id: 'conv-15550003333', expiration_timestamp: String(end) });
    expect(delivered!.data.conversation.expiration_timestamp).toBeUndefined();
    const { rows } = await testDb().query(`SELECT fep_expires_at FROM conversations WHERE id = $1`, [m.conversation_id]);
    expect(rows[0].fep_expires_at.getTime()).toBe(end * 1000);
  });
});

describe('statuses out of order and at once', () => {
  it('a sent arriving after delivered emits nothing, yet stores its free-entry-point end as fep_expires_at', async () => {
    const s = await setup();
    const end = Math.floor(Date.now() / 1000) + 48 * 3600;
    await bed.control('/free_entry_points', { recipient: '15550006666', expires_at: end });
    await bed.control('/settings', { auto_statuses: false });
    try {
      const m = await sendText(s, '15550006666');
      await bed.control(`/messages/${m.external_id}/status`, { status: 'delivered' });
      await bed.control(`/messages/${m.external_id}/status`, { status: 'sent' }); // late, carries the window's end
      expect(await types(s.tenant)).toEqual(['chatapp.message.delivered']);
      expect(await statusOf(m.id)).toBe('delivered');
      const { rows } = await testDb().query(`SELECT fep_expires_at FROM conversations WHERE id = $1`, [m.conversation_id]);
      expect(rows[0].fep_expires_at?.getTime()).toBe(end * 1000);
    } finally {
      await bed.control('/settings', { auto_statuses: true });
    }
  });

  it('racing delivered and read notifications of one message: the stream never shows delivered after read, each status once', async () => {
    const s = await setup();
    await bed.control('/settings', { auto_statuses: false });
    try {
      const messages = [];
      for (let i = 0; i < 8; i++) messages.push(await sendText(s, `1555000700${i}`));
      // Every notification of every message at once: read and delivered interleaved, each three times.
      await Promise.all(
        messages.flatMap((m) =>
          ['read', 'delivered', 'read', 'delivered', 'read', 'delivered'].map((status) =>
            bed.control(`/messages/${m.external_id}/status`, { status }),
          ),
        ),
      );
      const items = await streamItems(s.tenant);
      for (const m of messages) {
        const seen = items.filter((e) => e.message_resource_id === m.id).map((e) => e.type);
        // read may win the race (delivered then emits nothing) or lose it; never both orders, never twice.
        expect([['chatapp.message.read'], ['chatapp.message.delivered', 'chatapp.message.read']]).toContainEqual(seen);
        expect(await statusOf(m.id)).toBe('read');
      }
    } finally {
      await bed.control('/settings', { auto_statuses: true });
    }
  });
});

describe('statuses published through POST /api/v1/events', () => {
  const publishStatus = (s: { tenant: Tenant; id: string; pnid: string }, m: { external_id: string }, status: string, extra = {}) =>
    bed.api.request('POST', '/api/v1/events', {
      key: s.tenant.key,
      body: {
        type: `chatapp.message.${status}`,
        channel_account_id: s.id,
        data: {
          phone_number_id: s.pnid,
          status,
          message_id: m.external_id,
          recipient_id: '15550008888',
          pricing: null,
          errors: null,
          ...extra,
        },
      },
    });

  it('move forward only and advance the message, as provider statuses do; a late sent still stores fep_expires_at', async () => {
    const s = await setup();
    await bed.control('/settings', { auto_statuses: false });
    try {
      const m = await sendText(s, '15550008888');
      expect((await publishStatus(s, m, 'read')).status).toBe(201);
      expect(await statusOf(m.id)).toBe('read');
      const late = await publishStatus(s, m, 'delivered');
      expect([late.status, late.body.error?.code]).toEqual([422, 'invalid_event']);
      expect(late.body.error.message).toContain('already read');
      expect((await publishStatus(s, m, 'read')).status).toBe(200); // a repeat answers the first event
      const end = Math.floor(Date.now() / 1000) + 24 * 3600;
      const lateSent = await publishStatus(s, m, 'sent', {
        pricing: { billable: false, pricing_model: 'PMP', category: 'service', type: 'free_entry_point' },
        conversation: { id: 'conv-8888', expiration_timestamp: String(end) },
      });
      expect(lateSent.status).toBe(422);
      expect(await types(s.tenant)).toEqual(['chatapp.message.read']);
      expect(await statusOf(m.id)).toBe('read');
      const { rows } = await testDb().query(`SELECT fep_expires_at FROM conversations WHERE id = $1`, [m.conversation_id]);
      expect(rows[0].fep_expires_at?.getTime()).toBe(end * 1000);
      expect((await publishStatus(s, m, 'failed')).status).toBe(201);
      expect(await statusOf(m.id)).toBe('failed');
    } finally {
      await bed.control('/settings', { auto_statuses: true });
    }
  });
});

describe('a status that outruns the registration of its send', () => {
  it('waits briefly for the registration, then emits; a message never registered emits nothing', async () => {
    const s = await setup();
    await bed.control('/settings', { auto_statuses: false });
    try {
      // Sends the platform has not registered (yet): straight to the provider.
      const providerSend = async () =>
        (
          await bed.api.deps.providerApi!.post<{ messages: Array<{ id: string }> }>(`/${s.pnid}/messages`, {
            messaging_product: 'whatsapp',
            to: '15550005555',
            type: 'text',
            text: { body: 'x' },
          })
        ).messages[0]!.id;
      const late = await providerSend();
      const notified = bed.control(`/messages/${late}/status`, { status: 'sent' });
      await new Promise((r) => setTimeout(r, 150));
      await registerOutboundMessage(testDb(), {
        accountId: s.tenant.accountId,
        channelAccountId: s.id,
        externalId: late,
        status: 'queued',
      });
      expect((await notified).notification_status).toBe(200);
      expect(await types(s.tenant)).toEqual(['chatapp.message.sent']);

      const never = await providerSend();
      const started = Date.now();
      await bed.control(`/messages/${never}/status`, { status: 'sent' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(800);
      expect(await types(s.tenant)).toEqual(['chatapp.message.sent']);
    } finally {
      await bed.control('/settings', { auto_statuses: true });
    }
  });
});

describe('after an inbound ad-referral message', () => {
  it('the reply is in the free-entry-point window: fep_expires_at is stored on the conversation the contact opened', async () => {
    const s = await setup();
    const inbound = await bed.control('/inbound/messages', {
      phone_number_id: s.pnid,
      from: '15550004444',
      text: 'I saw your ad',
      referral: { source_id: 'ad-1', source_type: 'ad', source_url: 'https://ads.example/1', headline: 'Sale', ctwa_clid: 'clid-1' },
    });
    expect(inbound.notification_status).toBe(200);
    const m = await sendText(s, '15550004444');
    await eventually(async () => (await types(s.tenant)).length === 4);
    const [received, sent] = await streamItems(s.tenant);
    expect(received!.type).toBe('chatapp.message.received');
    expect(received!.data.message.conversation_id).toBe(m.conversation_id);
    expect(sent!.data.pricing.type).toBe('free_entry_point');
    const { rows } = await testDb().query(`SELECT fep_expires_at FROM conversations WHERE id = $1`, [m.conversation_id]);
    expect(rows[0].fep_expires_at.getTime()).toBe(inbound.free_entry_point_until * 1000);
  });
});

describe('quality updates re-read the numbers', () => {
  it('updates quality, tier and status of the channel accounts, then emits the event', async () => {
    const s = await setup();
    const res = await bed.control(`/phone_numbers/${s.pnid}/quality`, {
      messaging_limit_tier: 'TIER_10K',
      quality_rating: 'YELLOW',
      status: 'FLAGGED',
    });
    expect(res.notification_status).toBe(200);
    const items = await streamItems(s.tenant);
    expect(items.map((e) => e.type)).toEqual(['chatapp.phone_number.quality_updated']);
    expect(items[0]!.data).toMatchObject({ waba_id: s.wabaId, phone_number_id: s.pnid, messaging_limit_tier: 'TIER_10K' });
    const ca = (await bed.api.request('GET', `/api/v1/channel_accounts/${s.id}`, { key: s.tenant.key })).body.data;
    expect(ca).toMatchObject({ quality_rating: 'YELLOW', messaging_limit_tier: 'TIER_10K', number_status: 'FLAGGED' });
    expect(ca.numbers_read_at).not.toBeNull();
  });

  it('a notification without a usable tier makes no event but still re-reads the numbers', async () => {
    const tenant = await createTenant();
    const waba = await bed.control('/wabas', {
      phone_numbers: [{ display_phone_number: '+1 555 0177', messaging_limit_tier: 'TIER_NOT_SET' }],
    });
    const pnid = waba.phone_numbers[0].id as string;
    const ca = await createChannelAccount(testDb(), {
      accountId: tenant.accountId,
      customerId: tenant.customerId,
      channel: 'chatapp',
      display: '+1 555 0177',
      phoneNumberId: pnid,
      wabaId: waba.id,
    });
    // The notification carries the number's tier, TIER_NOT_SET: no usable tier.
    const res = await bed.control(`/phone_numbers/${pnid}/quality`, { quality_rating: 'RED', status: 'FLAGGED' });
    expect(res.notification_status).toBe(200);
    expect(await types(tenant)).toEqual([]);
    const read = (await bed.api.request('GET', `/api/v1/channel_accounts/${ca.id}`, { key: tenant.key })).body.data;
    expect(read).toMatchObject({ quality_rating: 'RED', number_status: 'FLAGGED' });
    expect(read.numbers_read_at).not.toBeNull();
  });

  it('a provider that cannot be reached loses no event; the re-read is skipped', async () => {
    const s = await setup();
    const res = await bed.withProvider(unreachableProvider(), () =>
      bed.control(`/phone_numbers/${s.pnid}/quality`, { messaging_limit_tier: 'TIER_100K', quality_rating: 'RED' }),
    );
    expect(res.notification_status).toBe(200);
    expect(await types(s.tenant)).toEqual(['chatapp.phone_number.quality_updated']);
    const ca = (await bed.api.request('GET', `/api/v1/channel_accounts/${s.id}`, { key: s.tenant.key })).body.data;
    expect(ca).toMatchObject({ quality_rating: null, messaging_limit_tier: null, numbers_read_at: null });
  });
});
