/** GET /api/v1/conversations and GET /api/v1/messages, on real Postgres. */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordFepExpiry, registerOutboundMessage } from '../../src/db/messaging.js';
import { contactOn, crmOrigin } from '../support/crm-fixtures.js';
import { startTestApi, testDb, type TestApi } from '../support/harness.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((x) => x.id);

async function world() {
  const o = await crmOrigin();
  const a = await contactOn(o, o.chatapp.id);
  const b = await contactOn(o, o.photoapp.id);
  const sb = await contactOn(o, o.sandbox.id);
  const out = await registerOutboundMessage(testDb(), {
    accountId: o.tenant.accountId,
    channelAccountId: o.chatapp.id,
    contactId: a.id,
    externalId: `wamid.out-${crypto.randomUUID()}`,
  });
  return { o, a, b, sb, out };
}

describe('GET /api/v1/messages', () => {
  it('lists the fields newest first, with filters, paged', async () => {
    const { o, a, b, out } = await world();
    const all = await api.request('GET', '/api/v1/messages', { key: o.tenant.key });
    expect(all.status).toBe(200);
    expect(ids(all)).toEqual([out.id, b.messageId, a.messageId]);
    expect(all.body.data[2]).toEqual({
      id: a.messageId,
      external_id: expect.stringMatching(/^wamid\./),
      channel_account_id: o.chatapp.id,
      contact_id: a.id,
      conversation_id: a.conversationId,
      direction: 'inbound',
      type: 'text',
      status: 'received',
      created_at: expect.any(String),
    });
    expect(all.body.data[0]).toMatchObject({ direction: 'outbound', status: 'accepted', conversation_id: null });
    const q = (s: string) => api.request('GET', `/api/v1/messages?${s}`, { key: o.tenant.key });
    expect(ids(await q(`conversation_id=${a.conversationId}`))).toEqual([a.messageId]);
    expect(ids(await q(`contact_id=${a.id}`))).toEqual([out.id, a.messageId]);
    expect(ids(await q(`channel_account_id=${o.photoapp.id}`))).toEqual([b.messageId]);
    expect(ids(await q('direction=inbound'))).toEqual([b.messageId, a.messageId]);
    const page = await q('limit=2');
    expect(ids(page)).toEqual([out.id, b.messageId]);
    expect(ids(await q(`limit=2&after=${page.body.paging.next}`))).toEqual([a.messageId]);
    expect((await q('direction=sideways')).body.error.code).toBe('invalid_request');
    expect((await q('contact_id=c_1')).status).toBe(422);
    expect((await q('after=forged')).body.error.code).toBe('invalid_cursor');
  });

  it('isolation: environment, Account, scope', async () => {
    const { o, sb } = await world();
    const other = await crmOrigin();
    const sandboxKey = await o.tenant.keyFor(['messages:read'], 'sandbox');
    expect(ids(await api.request('GET', '/api/v1/messages', { key: sandboxKey }))).toEqual([sb.messageId]);
    expect(ids(await api.request('GET', `/api/v1/messages?contact_id=${sb.id}`, { key: o.tenant.key }))).toEqual([]);
    expect(ids(await api.request('GET', '/api/v1/messages', { key: other.tenant.key }))).toEqual([]);
    const noScope = await o.tenant.keyFor(['contacts:read']);
    const refused = await api.request('GET', '/api/v1/messages', { key: noScope });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('insufficient_scope');
  });
});

describe('GET /api/v1/conversations', () => {
  it('lists the fields newest first with the last message time and the free-entry-point end, with filters', async () => {
    const { o, a, b, out } = await world();
    await recordFepExpiry(testDb(), out, null, '2026-11-25T10:00:00.000Z');
    const all = await api.request('GET', '/api/v1/conversations', { key: o.tenant.key });
    expect(all.status).toBe(200);
    expect(ids(all)).toEqual([b.conversationId, a.conversationId]);
    const { rows } = await testDb().query(`SELECT created_at FROM messages WHERE id = $1`, [a.messageId]);
    expect(all.body.data[1]).toEqual({
      id: a.conversationId,
      channel_account_id: o.chatapp.id,
      contact_id: a.id,
      fep_expires_at: '2026-11-25T10:00:00.000Z',
      last_message_at: rows[0].created_at.toISOString(),
      created_at: expect.any(String),
    });
    const q = (s: string) => api.request('GET', `/api/v1/conversations?${s}`, { key: o.tenant.key });
    expect(ids(await q(`contact_id=${b.id}`))).toEqual([b.conversationId]);
    expect(ids(await q(`channel_account_id=${o.chatapp.id}`))).toEqual([a.conversationId]);
    const page = await q('limit=1');
    expect(ids(await q(`limit=1&after=${page.body.paging.next}`))).toEqual([a.conversationId]);
    expect((await q('channel_account_id=x')).body.error.code).toBe('invalid_request');
  });

  it('isolation: environment, Account, scope', async () => {
    const { o, sb } = await world();
    const other = await crmOrigin();
    const sandboxKey = await o.tenant.keyFor(['messages:read'], 'sandbox');
    expect(ids(await api.request('GET', '/api/v1/conversations', { key: sandboxKey }))).toEqual([sb.conversationId]);
    expect(ids(await api.request('GET', `/api/v1/conversations?contact_id=${sb.id}`, { key: o.tenant.key }))).toEqual([]);
    expect(ids(await api.request('GET', '/api/v1/conversations', { key: other.tenant.key }))).toEqual([]);
    const noScope = await o.tenant.keyFor(['events:read']);
    expect((await api.request('GET', '/api/v1/conversations', { key: noScope })).status).toBe(403);
  });
});
