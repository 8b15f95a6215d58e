/**
 * Broadcasts on real Postgres and the local provider: creation, recipients (1000 / 1001,
 * invalid items, duplicates), sending through sendMessage with per-recipient refusals, statuses
 * flowing as events, resuming after an outage, isolation.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RECIPIENTS_BODY_BYTES } from '../../src/core/broadcast-recipients.js';
import { promoteOnBroadcastReply } from '../../src/crm/broadcast-reply.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { createTenant, eventually, testDb, type Tenant } from '../support/harness.js';
import { recipientsBody } from '../support/broadcast-bodies.js';
import { connectChatappNumber, startApiWithProvider, type ApiWithProvider, unreachableProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider({ statusDelayMs: 50 });
});
afterAll(() => bed.close());

interface Setup {
  tenant: Tenant;
  channelAccountId: string;
  phoneNumberId: string;
  templates: { id: string; name: string }[];
}

async function setup(): Promise<Setup> {
  const tenant = await createTenant();
  const number = await connectChatappNumber(bed, tenant);
  const added = await bed.control(`/wabas/${number.wabaId}/templates`, {
    templates: [
      { name: 'order_update', language: 'en_US', status: 'APPROVED' },
      { name: 'promo', language: 'en_US', status: 'PENDING' },
    ],
  });
  const synced = await bed.api.request('POST', '/api/v1/templates/sync', {
    key: tenant.key,
    body: { channel_account_id: number.channelAccountId },
  });
  expect(synced.status).toBe(200);
  return { tenant, channelAccountId: number.channelAccountId, phoneNumberId: number.phoneNumberId, templates: added.data };
}

const create = (key: string, body: unknown) => bed.api.request('POST', '/api/v1/broadcasts', { key, body });
const addRecipients = (key: string, id: string, recipients: unknown) =>
  bed.api.request('POST', `/api/v1/broadcasts/${id}/recipients`, { key, body: { recipients } });
const send = (key: string, id: string) => bed.api.request('POST', `/api/v1/broadcasts/${id}/send`, { key });
const get = (key: string, id: string) => bed.api.request('GET', `/api/v1/broadcasts/${id}`, { key });

async function draft(s: Setup, template = { name: 'order_update', language: 'en_US' }): Promise<string> {
  const res = await create(s.tenant.key, { channel_account_id: s.channelAccountId, template, name: 'Black Friday' });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

/** Distinct valid numbers, 12 digits each. */
const numbers = (n: number) => {
  const base = 551100000000 + crypto.randomInt(0, 10_000_000) * 1000;
  return Array.from({ length: n }, (_, i) => String(base + i));
};

describe('broadcasts', () => {
  it('are created as drafts for an approved-or-not template the channel account knows', async () => {
    const s = await setup();
    const res = await create(s.tenant.key, {
      channel_account_id: s.channelAccountId,
      template: { name: 'order_update', language: 'en_US' },
      name: 'Black Friday',
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      channel_account_id: s.channelAccountId,
      environment: 'live',
      name: 'Black Friday',
      template: { name: 'order_update', language: 'en_US' },
      status: 'draft',
      counts: { total: 0, pending: 0, sending: 0, sent: 0, failed: 0 },
      sent_at: null,
    });
    const unknown = await create(s.tenant.key, { channel_account_id: s.channelAccountId, template: { name: 'nope', language: 'en_US' } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe('unknown_template');
    expect((await create(s.tenant.key, { channel_account_id: s.channelAccountId })).status).toBe(422);
    const photo = await createChannelAccount(testDb(), { accountId: s.tenant.accountId, channel: 'photoapp', display: 'shop' });
    expect((await create(s.tenant.key, { channel_account_id: photo.id, template: { name: 'x', language: 'en' } })).body.error.code).toBe(
      'invalid_channel_account',
    );
  });

  it('take recipients: invalid items come back with their index, repeats count once in duplicates', async () => {
    const s = await setup();
    const id = await draft(s);
    const res = await addRecipients(s.tenant.key, id, [
      { to_recipient: '+55 11 98765-4321' },
      { to_recipient: 'call me' },
      { components: [] },
      { to_recipient: '5511987654321' },
      { to_recipient: '+1 555 010 9999', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }] }] },
      { to_recipient: '15550108888', components: 'body' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ added: 2, duplicates: 1 });
    expect(res.body.data.errors.map((e: any) => [e.index, e.reason, e.to_recipient])).toEqual([
      [1, 'invalid_to_recipient', 'call me'],
      [2, 'missing_to_recipient', undefined],
      [5, 'invalid_components', '15550108888'],
    ]);

    // Already on the broadcast, written another way: a duplicate, nothing added.
    const again = await addRecipients(s.tenant.key, id, [{ to_recipient: '005511987654321' }, { to_recipient: '15550107777' }]);
    expect(again.body.data).toEqual({ added: 1, duplicates: 1, errors: [] });

    const list = await bed.api.request('GET', `/api/v1/broadcasts/${id}/recipients`, { key: s.tenant.key });
    expect(list.body.data.map((r: any) => r.to_recipient).sort()).toEqual(['15550107777', '15550109999', '5511987654321']);
    expect(list.body.data.find((r: any) => r.to_recipient === '15550109999').components).toEqual([
      { type: 'body', parameters: [{ type: 'text', text: 'Ana' }] },
    ]);
    expect((await get(s.tenant.key, id)).body.data.counts).toMatchObject({ total: 3, pending: 3 });

    expect((await bed.api.request('POST', `/api/v1/broadcasts/${id}/recipients`, { key: s.tenant.key, body: {} })).status).toBe(422);
    expect((await addRecipients(s.tenant.key, id, 'nope')).status).toBe(422);
  });

  it('a recipients body that is not an object (null, an array, a number, a string) is 422 invalid_request, never a 500', async () => {
    const s = await setup();
    const id = await draft(s);
    for (const body of [null, [], 7, 'recipients']) {
      const res = await bed.api.request('POST', `/api/v1/broadcasts/${id}/recipients`, { key: s.tenant.key, body });
      expect([res.status, res.body.error.code], JSON.stringify(body)).toEqual([422, 'invalid_request']);
    }
  });

  it('1000 maximal recipients (32-character numbers, 4096 bytes of components each) are taken in one call; one byte more than that is 413 payload_too_large', async () => {
    const s = await setup();
    const id = await draft(s);
    const body = recipientsBody(1000);
    expect(Buffer.byteLength(body)).toBe(MAX_RECIPIENTS_BODY_BYTES);
    const taken = await bed.api.request('POST', `/api/v1/broadcasts/${id}/recipients`, {
      key: s.tenant.key,
      rawBody: body,
      headers: { 'content-type': 'application/json' },
    });
    expect([taken.status, taken.body.data?.added, taken.body.data?.errors]).toEqual([200, 1000, []]);

    const over = await bed.api.request('POST', `/api/v1/broadcasts/${await draft(s)}/recipients`, {
      key: s.tenant.key,
      rawBody: `${body} `,
      headers: { 'content-type': 'application/json' },
    });
    expect(over.status).toBe(413);
    expect(over.body).toEqual({ error: { code: 'payload_too_large', message: expect.any(String) } });
    // Other routes keep 256 KiB.
    const big = await create(s.tenant.key, {
      channel_account_id: s.channelAccountId,
      template: { name: 'order_update', language: 'en_US' },
      name: 'x'.repeat(256 * 1024),
    });
    expect(big.status).toBe(413);
  });

  it('1000 recipients in one call are taken, 1001 are refused whole', async () => {
    const s = await setup();
    const id = await draft(s);
    const tooMany = await addRecipients(
      s.tenant.key,
      id,
      numbers(1001).map((to_recipient) => ({ to_recipient })),
    );
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error.code).toBe('too_many_recipients');
    expect((await get(s.tenant.key, id)).body.data.counts.total).toBe(0);

    const ok = await addRecipients(
      s.tenant.key,
      id,
      numbers(1000).map((to_recipient) => ({ to_recipient })),
    );
    expect(ok.status).toBe(200);
    expect(ok.body.data).toEqual({ added: 1000, duplicates: 0, errors: [] });
    expect((await get(s.tenant.key, id)).body.data.counts.total).toBe(1000);
  });

  it('send the template to each recipient: a refusal fails that recipient only, statuses flow as events', async () => {
    const s = await setup();
    const id = await draft(s);
    const [a, b, refused] = numbers(3);
    await bed.control(`/recipients/${refused}/refuse`, {});
    await addRecipients(s.tenant.key, id, [{ to_recipient: a }, { to_recipient: b }, { to_recipient: refused }]);

    const res = await send(s.tenant.key, id);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'sent', counts: { total: 3, pending: 0, sending: 0, sent: 2, failed: 1 } });
    expect(res.body.data.sent_at).not.toBeNull();

    const recipients = (await bed.api.request('GET', `/api/v1/broadcasts/${id}/recipients`, { key: s.tenant.key })).body.data;
    const failed = recipients.find((r: any) => r.to_recipient === refused);
    expect(failed).toMatchObject({ status: 'failed', message_id: null });
    expect(failed.failure_reason).toMatch(/provider_error.*131030/);
    const sent = recipients.filter((r: any) => r.status === 'sent');
    expect(sent).toHaveLength(2);
    const failedOnly = await bed.api.request('GET', `/api/v1/broadcasts/${id}/recipients?status=failed`, { key: s.tenant.key });
    expect(failedOnly.body.data.map((r: any) => r.to_recipient)).toEqual([refused]);

    // Each message is registered with the broadcast's id, and its provider message got the template.
    const { rows: messages } = await testDb().query(`SELECT * FROM messages WHERE broadcast_id = $1`, [id]);
    expect(messages.map((m) => m.id).sort()).toEqual(sent.map((r: any) => r.message_id).sort());
    for (const m of messages) {
      const provided = await bed.control(`/messages/${encodeURIComponent(m.external_id)}`);
      expect(provided.body).toMatchObject({ type: 'template', template: { name: 'order_update', language: { code: 'en_US' } } });
    }

    // The local provider reports sent, delivered, read: status events of the broadcast's messages.
    const wamids = messages.map((m) => m.external_id);
    const events = await eventually(async () => {
      const stream = await bed.api.request('GET', '/api/v1/events?limit=100', { key: s.tenant.key });
      const mine = stream.body.data.filter((e: any) => wamids.includes(e.message_id));
      return mine.filter((e: any) => e.type === 'chatapp.message.read').length === 2 ? mine : undefined;
    });
    expect(events.map((e: any) => e.type).sort()).toEqual(
      ['sent', 'sent', 'delivered', 'delivered', 'read', 'read'].map((t) => `chatapp.message.${t}`).sort(),
    );

    const again = await send(s.tenant.key, id);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('broadcast_already_sent');
    const late = await addRecipients(s.tenant.key, id, [{ to_recipient: numbers(1)[0] }]);
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('broadcast_not_draft');
  });

  it('a template that is not approved is not sent; after approval it is', async () => {
    const s = await setup();
    const id = await draft(s, { name: 'promo', language: 'en_US' });
    await addRecipients(s.tenant.key, id, [{ to_recipient: numbers(1)[0] }]);
    const refused = await send(s.tenant.key, id);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('template_not_approved');
    expect((await get(s.tenant.key, id)).body.data.status).toBe('draft');

    await bed.control(`/templates/${s.templates[1]!.id}/status`, { status: 'APPROVED' });
    const res = await send(s.tenant.key, id);
    expect(res.status).toBe(200);
    expect(res.body.data.counts).toMatchObject({ sent: 1, failed: 0 });

    const empty = await draft(s);
    expect((await send(s.tenant.key, empty)).body.error.code).toBe('no_recipients');
  });

  it('an unreachable provider stops the send, leaving the rest pending; sending again resumes', async () => {
    const s = await setup();
    const id = await draft(s);
    await addRecipients(
      s.tenant.key,
      id,
      numbers(5).map((to_recipient) => ({ to_recipient })),
    );
    const res = await bed.withProvider(unreachableProvider(), () => send(s.tenant.key, id));
    expect(res.status).toBe(503);
    const stopped = (await get(s.tenant.key, id)).body.data;
    expect(stopped).toMatchObject({ status: 'sending', counts: { total: 5, pending: 5, sending: 0, sent: 0 } });

    const resumed = await send(s.tenant.key, id);
    expect(resumed.status).toBe(200);
    expect(resumed.body.data).toMatchObject({ status: 'sent', counts: { sent: 5, pending: 0 } });
  });

  it('a provider that takes sends without answering stops the send; those recipients are failed, never sent twice', async () => {
    const s = await setup();
    const id = await draft(s);
    const to = numbers(5);
    await addRecipients(
      s.tenant.key,
      id,
      to.map((to_recipient) => ({ to_recipient })),
    );
    const res = await bed.withSlowProvider({ answerDelayMs: 1_000, timeoutMs: 200 }, () => send(s.tenant.key, id));
    expect(res.status).toBe(504);
    expect(res.body.error.code).toBe('provider_outcome_unknown');
    const resumed = await send(s.tenant.key, id);
    expect(resumed.status).toBe(200);
    const counts = resumed.body.data.counts;
    expect(counts.pending).toBe(0);
    expect(counts.failed).toBeGreaterThan(0);
    expect(counts.sent + counts.failed).toBe(5);
    const failed = (await bed.api.request('GET', `/api/v1/broadcasts/${id}/recipients?status=failed`, { key: s.tenant.key })).body.data;
    for (const r of failed) expect(r.failure_reason).toContain('provider_outcome_unknown');
    // Each number got the template once: the unanswered sends did reach the provider.
    for (const n of to) expect([...bed.provider.state.messages.values()].filter((m) => m.to === n)).toHaveLength(1);
  });

  it('a claim abandoned by a dead sender is taken again, without a second message when it had been sent', async () => {
    const s = await setup();
    const id = await draft(s);
    const [a, b, c] = numbers(3);
    await addRecipients(s.tenant.key, id, [{ to_recipient: a }]);
    expect((await send(s.tenant.key, id)).status).toBe(200);
    const sentA = (await bed.api.request('GET', `/api/v1/broadcasts/${id}/recipients`, { key: s.tenant.key })).body.data[0];

    // As if the sender died after the message was registered but before the recipient was marked,
    // and another sender is still busy with b; c was never tried.
    await testDb().query(`UPDATE broadcasts SET status = 'sending' WHERE id = $1`, [id]);
    await testDb().query(
      `UPDATE broadcast_recipients SET status = 'sending', message_id = NULL, updated_at = now() - interval '10 minutes' WHERE id = $1`,
      [sentA.id],
    );
    await testDb().query(
      `INSERT INTO broadcast_recipients (broadcast_id, to_recipient, status) VALUES ($1, $2, 'sending'), ($1, $3, 'pending')`,
      [id, b, c],
    );

    const res = await send(s.tenant.key, id);
    expect(res.status).toBe(200);
    // b's sender is alive (its claim is recent): the broadcast is not finished until it is.
    expect(res.body.data).toMatchObject({ status: 'sending', counts: { total: 3, sending: 1, sent: 2 } });
    const after = (await bed.api.request('GET', `/api/v1/broadcasts/${id}/recipients?status=sent`, { key: s.tenant.key })).body.data;
    expect(after.find((r: any) => r.to_recipient === a).message_id).toBe(sentA.message_id);
    expect([...bed.provider.state.messages.values()].filter((m) => m.to === a)).toHaveLength(1);
    expect([...bed.provider.state.messages.values()].filter((m) => m.to === c)).toHaveLength(1);
    expect([...bed.provider.state.messages.values()].filter((m) => m.to === b)).toHaveLength(0);
  });

  it('two sends at once share the recipients: each gets the template once', async () => {
    const s = await setup();
    const id = await draft(s);
    const to = numbers(40);
    await addRecipients(
      s.tenant.key,
      id,
      to.map((to_recipient) => ({ to_recipient })),
    );
    const [one, two] = await Promise.all([send(s.tenant.key, id), send(s.tenant.key, id)]);
    expect([one.status, two.status]).toEqual([200, 200]);
    expect((await get(s.tenant.key, id)).body.data).toMatchObject({ status: 'sent', counts: { total: 40, sent: 40 } });
    const { rows } = await testDb().query(`SELECT to_recipient FROM messages WHERE broadcast_id = $1`, [id]);
    expect(rows.map((r) => r.to_recipient).sort()).toEqual([...to].sort());
    const provided = [...bed.provider.state.messages.values()].filter((m) => to.includes(m.to));
    expect(provided).toHaveLength(40);
  });

  it('isolation: another Account, the other environment, scopes', async () => {
    const s = await setup();
    const id = await draft(s);
    const other = await createTenant();
    expect((await get(other.key, id)).status).toBe(404);
    expect((await addRecipients(other.key, id, [])).status).toBe(404);
    expect((await send(other.key, id)).status).toBe(404);
    expect((await bed.api.request('GET', `/api/v1/broadcasts/${id}/recipients`, { key: other.key })).status).toBe(404);
    expect((await bed.api.request('GET', '/api/v1/broadcasts', { key: other.key })).body.data).toEqual([]);
    const theirs = await create(other.key, {
      channel_account_id: s.channelAccountId,
      template: { name: 'order_update', language: 'en_US' },
    });
    expect(theirs.status).toBe(404);

    const sandbox = await s.tenant.keyFor(['messages:read', 'messages:write'], 'sandbox');
    expect((await get(sandbox, id)).status).toBe(404);
    expect((await send(sandbox, id)).status).toBe(404);
    expect((await bed.api.request('GET', '/api/v1/broadcasts', { key: sandbox })).body.data).toEqual([]);
    const intoLive = await create(sandbox, {
      channel_account_id: s.channelAccountId,
      template: { name: 'order_update', language: 'en_US' },
    });
    expect(intoLive.status).toBe(404);

    const readOnly = await s.tenant.keyFor(['messages:read']);
    expect((await get(readOnly, id)).status).toBe(200);
    const noWrite = await send(readOnly, id);
    expect(noWrite.status).toBe(403);
    expect(noWrite.body.error.code).toBe('insufficient_scope');
    expect((await addRecipients(readOnly, id, [])).status).toBe(403);
    expect(
      (await create(readOnly, { channel_account_id: s.channelAccountId, template: { name: 'order_update', language: 'en_US' } })).status,
    ).toBe(403);
    expect((await get(await s.tenant.keyFor(['webhooks:read']), id)).status).toBe(403);

    const listed = await bed.api.request('GET', `/api/v1/broadcasts?channel_account_id=${s.channelAccountId}&status=draft`, {
      key: s.tenant.key,
    });
    expect(listed.body.data.map((b: any) => b.id)).toEqual([id]);
    expect((await bed.api.request('GET', '/api/v1/broadcasts?status=nope', { key: s.tenant.key })).body.error.code).toBe('invalid_status');
    expect((await get(s.tenant.key, 'not-a-uuid')).status).toBe(404);
  });
});

describe('a reply to a broadcast', () => {
  const stageEvents = async (key: string, contactId: string) =>
    (await bed.api.request('GET', '/api/v1/events?limit=100', { key })).body.data.filter(
      (e: any) => e.type === 'crm.contact.stage_changed' && e.data.contact.id === contactId,
    );

  it('promotes its contact to the reply stage (changed_by auto), forward only, once', async () => {
    const s = await setup();
    const key = s.tenant.key;
    for (const stage of ['lead', 'engaged', 'customer'])
      expect((await bed.api.request('POST', '/api/v1/stages', { key, body: { key: stage, label: stage } })).status).toBe(201);
    const created = await create(key, {
      channel_account_id: s.channelAccountId,
      template: { name: 'order_update', language: 'en_US' },
      reply_stage: 'engaged',
    });
    expect(created.body.data.reply_stage).toBe('engaged');
    const id = created.body.data.id;
    const [fresh, customer, silent] = numbers(3) as [string, string, string];
    await addRecipients(key, id, [{ to_recipient: fresh }, { to_recipient: customer }, { to_recipient: silent }]);
    expect((await send(key, id)).status).toBe(200);
    const { rows } = await testDb().query<{ external_id: string; contact_id: string; wa_id: string }>(
      `SELECT m.external_id, m.contact_id, c.wa_id FROM messages m JOIN contacts c ON c.id = m.contact_id WHERE m.broadcast_id = $1`,
      [id],
    );
    const sentTo = new Map(rows.map((r) => [r.wa_id, r]));
    // Already further down the funnel than the reply stage: a reply must not move them back.
    const patched = await bed.api.request('PATCH', `/api/v1/contacts/${sentTo.get(customer)!.contact_id}`, {
      key,
      body: { stage: 'customer' },
    });
    expect(patched.status).toBe(200);

    const reply = (from: string, repliedTo?: string) =>
      bed.control('/inbound/messages', { phone_number_id: s.phoneNumberId, from, text: 'Yes please', context_id: repliedTo });
    await reply(fresh, sentTo.get(fresh)!.external_id);
    await reply(customer, sentTo.get(customer)!.external_id);
    await reply(fresh, sentTo.get(fresh)!.external_id);
    // A message that replies to nothing promotes nobody.
    await reply(silent);

    const contact = async (wa: string) =>
      (await bed.api.request('GET', `/api/v1/contacts/${sentTo.get(wa)!.contact_id}`, { key })).body.data;
    expect((await contact(fresh)).stage).toMatchObject({ key: 'engaged' });
    expect((await contact(customer)).stage).toMatchObject({ key: 'customer' });
    expect((await contact(silent)).stage).toBeNull();

    const promoted = await stageEvents(key, sentTo.get(fresh)!.contact_id);
    expect(promoted).toHaveLength(1);
    expect(promoted[0].data).toMatchObject({ new_stage: { key: 'engaged' }, changed_by: 'auto' });
    expect(promoted[0].data.previous_stage).toBeUndefined();
    expect((await stageEvents(key, sentTo.get(customer)!.contact_id)).map((e: any) => e.data.changed_by)).toEqual(['manual']);
    expect(await stageEvents(key, sentTo.get(silent)!.contact_id)).toEqual([]);
  });

  /** A broadcast with reply stage `engaged` (after `lead`, before `customer`) sent to one contact. */
  async function sentBroadcast() {
    const s = await setup();
    const key = s.tenant.key;
    const stages = new Map<string, string>();
    for (const stage of ['lead', 'engaged', 'customer']) {
      const made = await bed.api.request('POST', '/api/v1/stages', { key, body: { key: stage, label: stage } });
      expect(made.status).toBe(201);
      stages.set(stage, made.body.data.id);
    }
    const created = await create(key, {
      channel_account_id: s.channelAccountId,
      template: { name: 'order_update', language: 'en_US' },
      reply_stage: 'engaged',
    });
    const [to] = numbers(1) as [string];
    await addRecipients(key, created.body.data.id, [{ to_recipient: to }]);
    expect((await send(key, created.body.data.id)).status).toBe(200);
    const { rows } = await testDb().query<{ external_id: string; contact_id: string }>(
      `SELECT external_id, contact_id FROM messages WHERE broadcast_id = $1`,
      [created.body.data.id],
    );
    const reply = (o: { messageId?: string; toNothing?: boolean } = {}) =>
      bed.control<{ id: string }>('/inbound/messages', {
        phone_number_id: s.phoneNumberId,
        from: to,
        text: 'Yes please',
        context_id: o.toNothing ? undefined : rows[0]!.external_id,
        message_id: o.messageId,
      });
    const stageOf = async () =>
      (await bed.api.request('GET', `/api/v1/contacts/${rows[0]!.contact_id}`, { key })).body.data.stage?.key ?? null;
    const autoEvents = async () => (await stageEvents(key, rows[0]!.contact_id)).filter((e: any) => e.data.changed_by === 'auto');
    return { s, key, stages, contactId: rows[0]!.contact_id, broadcastMessage: rows[0]!.external_id, reply, stageOf, autoEvents };
  }

  it('a redelivery of the same reply does not promote again, even after the contact was moved back', async () => {
    const b = await sentBroadcast();
    const first = await b.reply();
    expect(await b.stageOf()).toBe('engaged');
    const back = await bed.api.request('PATCH', `/api/v1/contacts/${b.contactId}`, { key: b.key, body: { stage: 'lead' } });
    expect(back.status).toBe(200);
    await b.reply({ messageId: first.id });
    expect(await b.stageOf()).toBe('lead');
    expect(await b.autoEvents()).toHaveLength(1);
  });

  it('concurrent redeliveries of a handled reply promote nobody; concurrent new replies promote the contact once', async () => {
    const b = await sentBroadcast();
    const handled = await b.reply();
    const out = await bed.api.request('PATCH', `/api/v1/contacts/${b.contactId}`, { key: b.key, body: { stage: null } });
    expect(out.status).toBe(200);
    await Promise.all([1, 2, 3].map(() => b.reply({ messageId: handled.id })));
    expect(await b.stageOf()).toBeNull();
    expect(await b.autoEvents()).toHaveLength(1);
    await Promise.all([1, 2, 3].map(() => b.reply()));
    expect(await b.stageOf()).toBe('engaged');
    expect(await b.autoEvents()).toHaveLength(2);
  });

  it('decides "further down the funnel" under the contact’s row lock: a move to customer committed meanwhile is not undone', async () => {
    const b = await sentBroadcast();
    // The webhook path locks the contact early (its upsert); the promotion is driven directly so
    // that the concurrent move lands between the reply's ingestion and its promotion.
    const inbound = await b.reply({ toNothing: true });
    const { rows } = await testDb().query<{ id: string }>(`SELECT id FROM messages WHERE external_id = $1`, [inbound.id]);
    const locker = await testDb().connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`UPDATE contacts SET stage_id = $2 WHERE id = $1`, [b.contactId, b.stages.get('customer')]);
      const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const promoting = promoteOnBroadcastReply(
        bed.api.deps,
        { id: b.s.channelAccountId, account_id: b.s.tenant.accountId, environment: 'live' },
        { messageId: rows[0]!.id, contactId: b.contactId, repliedToExternalId: b.broadcastMessage },
      );
      // The promotion waits for the contact's row lock.
      await eventually(async () => {
        const blocked = await testDb().query(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))`, [lockerPid]);
        return blocked.rows.length > 0;
      });
      await locker.query('COMMIT');
      await promoting;
    } finally {
      locker.release();
    }
    expect(await b.stageOf()).toBe('customer');
    expect(await b.autoEvents()).toHaveLength(0);
  });

  it('a reply_stage naming no stage of the Account is 422 invalid_stage', async () => {
    const s = await setup();
    const res = await create(s.tenant.key, {
      channel_account_id: s.channelAccountId,
      template: { name: 'order_update', language: 'en_US' },
      reply_stage: 'nope',
    });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_stage');
  });
});
