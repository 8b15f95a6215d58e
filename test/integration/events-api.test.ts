/** Publishing, the stream, routing to endpoints, the Free-plan cap and deletion, on real Postgres. */
import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { canonicalJson, getEventDefinition, sha256Hex } from '../../src/core/catalog/index.js';
import { webhookBody } from '../../src/core/webhook-body.js';
import { createChannelAccount, createCustomer } from '../../src/db/directory.js';
import { fromTable, type EventRow, type TableRow } from '../../src/db/events.js';
import { registerOutboundMessage, upsertContact } from '../../src/db/messaging.js';
import { samples, WAMID } from '../support/catalog-samples.js';
import { deliverOnce } from '../support/deliver-once.js';
import { createTenant, startTestApi, testDb, type Tenant, type TestApi } from '../support/harness.js';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/https-receiver.js';

let api: TestApi;
let receiver: Receiver;
/** The clock ingest judges the Free plan by; unset means the system clock. */
let clock: Date | undefined;
beforeAll(async () => {
  // Loopback allowed: a few tests deliver for real to a local HTTPS receiver.
  [api, receiver] = await Promise.all([startTestApi({ now: () => clock ?? new Date(), allowLoopback: true }), startReceiver()]);
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

interface Origin {
  tenant: Tenant;
  chatapp: string;
  photoapp: string;
  sandbox: string;
}

async function origin(plan: 'free' | 'paid' = 'paid', createdAt?: Date): Promise<Origin> {
  const tenant = await createTenant({ plan, createdAt });
  const db = testDb();
  const unique = tenant.accountId.slice(0, 8);
  const chatapp = await createChannelAccount(db, {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'chatapp',
    display: '+55 11 4000-0001',
    phoneNumberId: `pn-${unique}`,
    wabaId: `waba-${unique}`,
  });
  const photoapp = await createChannelAccount(db, {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'photoapp',
    display: '@acme',
  });
  const sandbox = await createChannelAccount(db, {
    accountId: tenant.accountId,
    channel: 'chatapp',
    display: 'Sandbox',
    phoneNumberId: `sb-${unique}`,
    environment: 'sandbox',
  });
  return { tenant, chatapp: chatapp.id, photoapp: photoapp.id, sandbox: sandbox.id };
}

function publish(o: Origin, type: string, extra: Record<string, unknown> = {}, key = o.tenant.key) {
  const sample = samples[type]!;
  const channelAccount = type.startsWith('photoapp.') ? o.photoapp : o.chatapp;
  return api.request('POST', '/api/v1/events', {
    key,
    body: { type, data: sample.data, refs: sample.refs, channel_account_id: channelAccount, ...extra },
  });
}

async function verifiedEndpoint(
  o: Origin,
  events: string[],
  over: { customer_id?: string | null; health?: string; active?: boolean } = {},
) {
  const res = await api.request('POST', '/api/v1/webhooks', {
    key: o.tenant.key,
    body: { url: 'https://public.example/h', events, customer_id: over.customer_id ?? null },
  });
  await testDb().query(`UPDATE endpoints SET health_status = $2, active = $3, verified_at = now() WHERE id = $1`, [
    res.body.data.id,
    over.health ?? 'healthy',
    over.active ?? true,
  ]);
  return res.body.data.id as string;
}

const RECEIVER_SECRET = 'whsec_events_api_receiver_secret_01';

/** A verified endpoint of the origin's customer, on the local HTTPS receiver, for one category. */
async function receivingEndpoint(o: Origin, category: string): Promise<string> {
  const res = await api.request('POST', '/api/v1/webhooks', {
    key: o.tenant.key,
    body: {
      url: receiver.url(`/events-api/${o.tenant.accountId}`),
      events: [category],
      customer_id: o.tenant.customerId,
      secret: RECEIVER_SECRET,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [res.body.data.id]);
  return res.body.data.id as string;
}

/** Runs one delivery session for the endpoint, as the worker would, and returns the POST the receiver got. */
async function deliverToReceiver(endpointId: string, type: string): Promise<{ post: ReceivedRequest; deliveryId: string }> {
  const { rows } = await testDb().query<{ id: string }>(`SELECT id FROM deliveries WHERE endpoint_id = $1 AND event_type = $2`, [
    endpointId,
    type,
  ]);
  expect(rows).toHaveLength(1);
  const deliveryId = rows[0]!.id;
  return { post: await deliverOnce(api, receiver, endpointId, deliveryId), deliveryId };
}

async function deliveriesOf(eventId: string) {
  const { rows } = await testDb().query(
    `SELECT endpoint_id, status, held_since, next_attempt_at, terminal_reason, idempotency_key FROM deliveries WHERE event_id = $1 ORDER BY endpoint_id`,
    [eventId],
  );
  return rows;
}

async function eventRow(id: string): Promise<EventRow> {
  return fromTable((await testDb().query<TableRow>(`SELECT * FROM events WHERE id = $1`, [id])).rows[0]!);
}

describe('POST /api/v1/events', () => {
  const publishable = Object.keys(samples).filter((t) => t !== 'webhook.test' && !t.startsWith('chatapp.message.'));

  it.each(publishable)('publishes %s with the catalog key, once', async (type) => {
    const o = await origin();
    const first = await publish(o, type);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const item = first.body.data;
    expect(item).toMatchObject({ type, environment: 'live', cursor: '1' });
    const row = await eventRow(item.id);
    // Samples of the hashed keys leave `key` empty: the key is the type and the hash of the canonical payload.
    const def = getEventDefinition(type)!;
    const expected = samples[type]!.key || `${type}:${sha256Hex(canonicalJson(def.data.parse(samples[type]!.data)))}`;
    expect(row.idempotency_key).toBe(expected);
    const again = await publish(o, type);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(item);
    const { rows } = await testDb().query(`SELECT count(*)::int AS n FROM events WHERE account_id = $1`, [o.tenant.accountId]);
    expect(rows[0].n).toBe(1);
  });

  const allPublishable = Object.keys(samples).filter((t) => t !== 'webhook.test');
  const MESSAGE_EVENTS = /^(chatapp|photoapp)\.message\./;
  const UNSTAMPED = ['chatapp.account.updated', 'chatapp.phone_number.quality_updated'];

  it.each(allPublishable)('%s: exact webhook body, delivery headers and stream item', async (type) => {
    const o = await origin();
    const def = getEventDefinition(type)!;
    // Statuses are published only for messages the platform sent.
    if (def.needsRegisteredMessage)
      await registerOutboundMessage(testDb(), { accountId: o.tenant.accountId, channelAccountId: o.chatapp, externalId: WAMID });
    const endpointId = await receivingEndpoint(o, def.category!);
    const res = await publish(o, type);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const row = await eventRow(res.body.data.id);
    const channelAccount = type.startsWith('photoapp.')
      ? { id: o.photoapp, channel: 'photoapp', display: '@acme' }
      : { id: o.chatapp, channel: 'chatapp', display: '+55 11 4000-0001' };
    const data = def.data.parse(samples[type]!.data);
    const externalId = MESSAGE_EVENTS.test(type)
      ? ((data.message as { id?: string } | undefined)?.id ?? (data.message_id as string))
      : undefined;
    const expectedBody = {
      ...data,
      event: type,
      customer_id: o.tenant.customerId,
      environment: 'live',
      ...(UNSTAMPED.includes(type) ? {} : { channel: channelAccount.channel, channel_account: channelAccount }),
      ...(externalId ? { external_id: externalId } : {}),
    };
    expect(webhookBody(def, row)).toEqual(expectedBody);

    // The POST a receiver gets, from a real delivery session over HTTPS: body, headers and both signatures.
    const { post, deliveryId } = await deliverToReceiver(endpointId, type);
    expect(JSON.parse(post.body.toString('utf8'))).toEqual(expectedBody);
    expect(post.headers).toMatchObject({
      'content-type': 'application/json',
      'x-webhook-event': type,
      'x-idempotency-key': row.idempotency_key,
      'x-webhook-signature': crypto.createHmac('sha256', RECEIVER_SECRET).update(post.body).digest('hex'),
      'webhook-id': deliveryId,
    });
    const timestamp = Number(post.headers['webhook-timestamp']);
    expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(60);
    const signed = crypto.createHmac('sha256', RECEIVER_SECRET).update(`${deliveryId}.${timestamp}.`).update(post.body).digest('base64');
    expect(post.headers['webhook-signature']).toBe(`v1,${signed}`);
    const item = res.body.data;
    expect(item).toMatchObject({
      type,
      environment: 'live',
      external_id: externalId ?? null,
      message_id: type.startsWith('chatapp.message.') ? externalId : null,
    });
    if (def.category === 'statuses' && type.startsWith('chatapp.')) expect(Object.values(item.data)).not.toContain(null);
    if (type.endsWith('.message.received'))
      expect(item.data.message).toMatchObject({ direction: 'inbound', status: 'received', external_id: externalId });
  });

  it('publishes message events against a channel account and stamps the envelope', async () => {
    const o = await origin();
    const received = await publish(o, 'chatapp.message.received');
    expect(received.status).toBe(201);
    expect(received.body.data).toMatchObject({ type: 'chatapp.message.received', message_id: WAMID, external_id: WAMID });
    const row = await eventRow(received.body.data.id);
    const def = getEventDefinition('chatapp.message.received')!;
    const body = webhookBody(def, row);
    expect(body).toMatchObject({
      event: 'chatapp.message.received',
      customer_id: o.tenant.customerId,
      environment: 'live',
      channel: 'chatapp',
      channel_account: { id: o.chatapp, channel: 'chatapp', display: '+55 11 4000-0001' },
      external_id: WAMID,
      phone_number_id: samples['chatapp.message.received']!.data.phone_number_id,
    });
    expect((body.message as { text: unknown }).text).toEqual({ body: 'Oi, quero saber o preço' });

    const photo = await publish(o, 'photoapp.message.received');
    expect(photo.body.data).toMatchObject({ type: 'photoapp.message.received', message_id: null });
    expect(webhookBody(getEventDefinition('photoapp.message.received')!, await eventRow(photo.body.data.id))).toMatchObject({
      channel: 'photoapp',
    });

    const health = await publish(o, 'chatapp.account.updated');
    const healthBody = webhookBody(getEventDefinition('chatapp.account.updated')!, await eventRow(health.body.data.id));
    expect(healthBody).not.toHaveProperty('channel');
    expect(healthBody).not.toHaveProperty('channel_account');
    expect(healthBody.environment).toBe('live');
  });

  it('publishes status events with message_resource_id when the message is registered', async () => {
    const o = await origin();
    const message = await registerOutboundMessage(testDb(), {
      accountId: o.tenant.accountId,
      channelAccountId: o.chatapp,
      externalId: WAMID,
    });
    const res = await publish(o, 'chatapp.message.delivered');
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ message_id: WAMID, external_id: WAMID, message_resource_id: message.id });
    // Null fields are omitted in the stream.
    expect(Object.values(res.body.data.data)).not.toContain(null);
  });

  it('refuses a status of a message the platform never registered, as the provider path drops it', async () => {
    const o = await origin();
    const unknown = await publish(o, 'chatapp.message.read');
    expect(unknown.status, JSON.stringify(unknown.body)).toBe(422);
    expect(unknown.body.error).toEqual({ code: 'invalid_event', message: expect.stringContaining('data.message_id') });
    expect(unknown.body.error.message).toContain('not registered');
    // An inbound message with that wamid is not one the platform sent either.
    expect((await publish(o, 'chatapp.message.received')).status).toBe(201);
    const inbound = await publish(o, 'chatapp.message.delivered');
    expect([inbound.status, inbound.body.error?.code]).toEqual([422, 'invalid_event']);
    // Registered on another channel account of the Account: still unknown on this one.
    const other = await createChannelAccount(testDb(), {
      accountId: o.tenant.accountId,
      channel: 'chatapp',
      display: 'other',
      phoneNumberId: `pn-other-${o.tenant.accountId}`,
    });
    await registerOutboundMessage(testDb(), { accountId: o.tenant.accountId, channelAccountId: other.id, externalId: `${WAMID}.x` });
    const elsewhere = await publish(o, 'chatapp.message.sent', {
      data: { ...samples['chatapp.message.sent']!.data, message_id: `${WAMID}.x` },
    });
    expect(elsewhere.status).toBe(422);
    const { rows } = await testDb().query(`SELECT type FROM events WHERE account_id = $1`, [o.tenant.accountId]);
    expect(rows.map((r) => r.type)).toEqual(['chatapp.message.received']);
  });

  it("publishes into the API key's environment; a body environment that differs is invalid_event", async () => {
    const o = await origin();
    const sandboxKey = await o.tenant.keyFor(['events:write', 'events:read'], 'sandbox');
    const body = (extra: Record<string, unknown>) => ({ type: 'crm.demand.created', data: samples['crm.demand.created']!.data, ...extra });
    const intoLive = await api.request('POST', '/api/v1/events', { key: sandboxKey, body: body({ environment: 'live' }) });
    expect(intoLive.status, JSON.stringify(intoLive.body)).toBe(422);
    expect(intoLive.body.error).toEqual({ code: 'invalid_event', message: expect.stringMatching(/^environment: /) });
    const intoSandbox = await api.request('POST', '/api/v1/events', { key: o.tenant.key, body: body({ environment: 'sandbox' }) });
    expect([intoSandbox.status, intoSandbox.body.error?.code]).toEqual([422, 'invalid_event']);
    expect(intoSandbox.body.error.message).toContain('environment');
    // Equal to the key's, or left out: accepted, into the key's stream.
    const same = await api.request('POST', '/api/v1/events', { key: sandboxKey, body: body({ environment: 'sandbox' }) });
    expect(same.status).toBe(201);
    expect(same.body.data.environment).toBe('sandbox');
    const demand = samples['crm.demand.created']!.data as { after_data: Record<string, unknown> };
    const implicit = await api.request('POST', '/api/v1/events', {
      key: sandboxKey,
      body: { ...body({}), data: { ...demand, after_data: { ...demand.after_data, version: 2 } } },
    });
    expect(implicit.status, JSON.stringify(implicit.body)).toBe(201);
    expect(implicit.body.data.environment).toBe('sandbox');
    // A channel account of the other environment, and account-health events (always live), need the matching key.
    const sandboxNumber = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: { type: 'chatapp.message.received', data: samples['chatapp.message.received']!.data, channel_account_id: o.sandbox },
    });
    expect([sandboxNumber.status, sandboxNumber.body.error?.code]).toEqual([422, 'invalid_event']);
    expect(sandboxNumber.body.error.message).toContain('channel_account_id');
    const health = await publish(o, 'chatapp.account.updated', {}, sandboxKey);
    expect([health.status, health.body.error?.code]).toEqual([422, 'invalid_event']);
    expect((await api.request('GET', '/api/v1/events', { key: o.tenant.key })).body.data).toEqual([]);
    expect((await api.request('GET', '/api/v1/events', { key: sandboxKey })).body.data.map((e: { cursor: string }) => e.cursor)).toEqual([
      '1',
      '2',
    ]);
  });

  it('refuses what the catalog does not allow, naming the field', async () => {
    const o = await origin();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'webhook.test', data: {} }, 'type'],
      [{ type: 'nope.event', data: {} }, 'type'],
      [
        {
          type: 'crm.contact.consent_changed',
          data: { ...samples['crm.contact.consent_changed']!.data, purpose: 'spam' },
          refs: samples['crm.contact.consent_changed']!.refs,
        },
        'data.purpose',
      ],
      [
        {
          type: 'crm.contact.consent_changed',
          data: { ...samples['crm.contact.consent_changed']!.data, evidence: 'x'.repeat(501) },
          refs: samples['crm.contact.consent_changed']!.refs,
        },
        'data.evidence',
      ],
      [{ type: 'crm.contact.consent_changed', data: samples['crm.contact.consent_changed']!.data }, 'refs.consent_record_id'],
      [{ type: 'chatapp.message.received', data: samples['chatapp.message.received']!.data }, 'channel_account_id'],
      [
        { type: 'chatapp.message.received', data: samples['chatapp.message.received']!.data, channel_account_id: o.photoapp },
        'channel_account_id',
      ],
      [{ type: 'chatapp.account.updated', data: samples['chatapp.account.updated']!.data, environment: 'sandbox' }, 'environment'],
      [
        { type: 'crm.demand.created', data: samples['crm.demand.created']!.data, customer_id: '00000000-0000-4000-8000-000000000000' },
        'customer_id',
      ],
      [{ type: 'crm.demand.created', data: samples['crm.demand.created']!.data, idempotency_key: 'mine' }, 'idempotency_key'],
      [{ data: {} }, 'type'],
    ];
    for (const [body, field] of cases) {
      const res = await api.request('POST', '/api/v1/events', { key: o.tenant.key, body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(res.body.error.code).toBe('invalid_event');
      expect(res.body.error.message).toContain(field);
    }
    const other = await origin();
    const foreign = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: { type: 'chatapp.message.received', data: samples['chatapp.message.received']!.data, channel_account_id: other.chatapp },
    });
    expect(foreign.status).toBe(422);
    const { rows } = await testDb().query(`SELECT count(*)::int AS n FROM events WHERE account_id = $1`, [o.tenant.accountId]);
    expect(rows[0].n).toBe(0);
  });

  it("refuses a consent whose data.channel is not its channel account's channel", async () => {
    const o = await origin();
    const sample = samples['crm.contact.consent_changed']!;
    const consent = (channel: string, channelAccountId: string, consentId: string) =>
      api.request('POST', '/api/v1/events', {
        key: o.tenant.key,
        body: {
          type: 'crm.contact.consent_changed',
          data: { ...sample.data, channel },
          refs: { consent_record_id: consentId },
          channel_account_id: channelAccountId,
        },
      });
    for (const [channel, channelAccountId] of [
      ['photoapp', o.chatapp],
      ['chatapp', o.photoapp],
    ] as const) {
      const res = await consent(channel, channelAccountId, `cr_mismatch_${channel}`);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('invalid_event');
      expect(res.body.error.message).toContain('data.channel');
    }
    const { rows } = await testDb().query(`SELECT count(*)::int AS n FROM events WHERE account_id = $1`, [o.tenant.accountId]);
    expect(rows[0].n).toBe(0);
    // Matching channels, or no channel account at all, publish.
    expect((await consent('photoapp', o.photoapp, 'cr_ok_1')).status).toBe(201);
    const unstamped = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: { type: 'crm.contact.consent_changed', data: { ...sample.data, channel: 'photoapp' }, refs: { consent_record_id: 'cr_ok_2' } },
    });
    expect(unstamped.status).toBe(201);
  });

  it('needs events:write', async () => {
    const o = await origin();
    const key = await o.tenant.keyFor(['events:read', 'webhooks:write']);
    const res = await publish(o, 'crm.demand.created', {}, key);
    expect(res.status).toBe(403);
  });

  it('races concurrent repeats safely: one event, one 201', async () => {
    const o = await origin();
    const results = await Promise.all(Array.from({ length: 12 }, () => publish(o, 'crm.opportunity.created')));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(11);
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
  });
});

describe('GET /api/v1/events', () => {
  it('follows SPEC 4.8 and 6.5 to the letter', async () => {
    const o = await origin();
    const ids: string[] = [];
    for (let v = 1; v <= 5; v++) {
      const data = {
        ...samples['crm.demand.created']!.data,
        after_data: { ...(samples['crm.demand.created']!.data.after_data as object), version: v },
      };
      ids.push(
        (await api.request('POST', '/api/v1/events', { key: o.tenant.key, body: { type: 'crm.demand.created', data } })).body.data.id,
      );
    }
    const read = (q: string, key = o.tenant.key) => api.request('GET', `/api/v1/events${q}`, { key });

    const all = await read('');
    expect(all.body.data.map((e: { cursor: string }) => e.cursor)).toEqual(['1', '2', '3', '4', '5']);
    expect(all.body.paging).toEqual({ cursor: '5', next: null, has_more: false });
    expect(all.body.data.map((e: { id: string }) => e.id)).toEqual(ids);
    expect(Object.keys(all.body.data[0]).sort()).toEqual(
      ['created_at', 'cursor', 'data', 'environment', 'external_id', 'id', 'message_id', 'occurred_at', 'type'].sort(),
    );

    const page = await read('?after=1&limit=2');
    expect(page.body.data.map((e: { cursor: string }) => e.cursor)).toEqual(['2', '3']);
    expect(page.body.paging).toEqual({ cursor: '3', next: '3', has_more: true });
    expect((await read('?after=1&limit=2')).body).toEqual(page.body);
    expect((await read('?after=5')).body).toEqual({ data: [], paging: { cursor: '5', next: null, has_more: false } });
    expect((await read('?after=99')).body.paging).toEqual({ cursor: '99', next: null, has_more: false });
    expect((await read('?limit=abc')).body.data).toHaveLength(5);
    for (const bad of ['-1', 'abc', '1.5', '']) {
      const res = await read(`?after=${bad}`);
      expect(res.status, bad).toBe(422);
      expect(res.body.error.code).toBe('invalid_cursor');
    }
  });

  it('caps a page at 100 items, even for limit=1000, and pages on without gaps', async () => {
    const o = await origin();
    const demand = samples['crm.demand.created']!.data as { after_data: Record<string, unknown> };
    for (let batch = 0; batch < 105; batch += 15) {
      await Promise.all(
        Array.from({ length: Math.min(15, 105 - batch) }, (_, i) =>
          api.request('POST', '/api/v1/events', {
            key: o.tenant.key,
            body: { type: 'crm.demand.created', data: { ...demand, after_data: { ...demand.after_data, version: batch + i + 1 } } },
          }),
        ),
      );
    }
    const first = await api.request('GET', '/api/v1/events?limit=1000', { key: o.tenant.key });
    expect(first.status).toBe(200);
    expect(first.body.data.map((e: { cursor: string }) => e.cursor)).toEqual(Array.from({ length: 100 }, (_, i) => String(i + 1)));
    expect(first.body.paging).toEqual({ cursor: '100', next: '100', has_more: true });
    const rest = await api.request('GET', `/api/v1/events?limit=1000&after=${first.body.paging.next}`, { key: o.tenant.key });
    expect(rest.body.data.map((e: { cursor: string }) => e.cursor)).toEqual(['101', '102', '103', '104', '105']);
    expect(rest.body.paging).toEqual({ cursor: '105', next: null, has_more: false });
  });

  it('keeps environments and Accounts apart', async () => {
    const o = await origin();
    const other = await origin();
    await publish(o, 'crm.demand.created');
    const sandboxKey = await o.tenant.keyFor(['events:read', 'events:write'], 'sandbox');
    await publish(o, 'crm.demand.created', { channel_account_id: o.sandbox }, sandboxKey);
    const live = await api.request('GET', '/api/v1/events', { key: o.tenant.key });
    const sandbox = await api.request('GET', '/api/v1/events', { key: sandboxKey });
    expect(live.body.data.map((e: { environment: string; cursor: string }) => [e.environment, e.cursor])).toEqual([['live', '1']]);
    expect(sandbox.body.data.map((e: { environment: string; cursor: string }) => [e.environment, e.cursor])).toEqual([['sandbox', '1']]);
    expect((await api.request('GET', '/api/v1/events', { key: other.tenant.key })).body.data).toEqual([]);
    const noScope = await o.tenant.keyFor(['webhooks:read']);
    expect((await api.request('GET', '/api/v1/events', { key: noScope })).status).toBe(403);
  });
});

describe('routing to endpoints', () => {
  it('creates deliveries by category, Customer filter, active and health', async () => {
    const o = await origin();
    const db = testDb();
    const otherCustomer = await createCustomer(db, { accountId: o.tenant.accountId, name: 'B' });
    const messages = await verifiedEndpoint(o, ['messages']);
    const statusesOnly = await verifiedEndpoint(o, ['statuses']);
    const filtered = await verifiedEndpoint(o, ['messages'], { customer_id: o.tenant.customerId });
    const otherFilter = await verifiedEndpoint(o, ['messages'], { customer_id: otherCustomer.id });
    const paused = await verifiedEndpoint(o, ['messages'], { health: 'paused' });
    const inactive = await verifiedEndpoint(o, ['messages'], { active: false });
    const unverified = (
      await api.request('POST', '/api/v1/webhooks', { key: o.tenant.key, body: { url: 'https://public.example/h', events: ['messages'] } })
    ).body.data.id;
    const appMessages = await verifiedEndpoint(o, ['app_messages']);

    const received = await publish(o, 'chatapp.message.received');
    const d = await deliveriesOf(received.body.data.id);
    const byEndpoint = Object.fromEntries(d.map((r) => [r.endpoint_id, r]));
    expect(Object.keys(byEndpoint).sort()).toEqual([messages, filtered, paused].sort());
    expect(byEndpoint[messages]).toMatchObject({ status: 'pending', held_since: null, idempotency_key: WAMID });
    expect(byEndpoint[messages].next_attempt_at).not.toBeNull();
    // Accepted but held: never due by itself; the endpoint's workflow starts its 14-day hold.
    expect(byEndpoint[paused]).toMatchObject({ status: 'pending', next_attempt_at: null });
    for (const none of [statusesOnly, otherFilter, inactive, unverified, appMessages]) expect(byEndpoint[none]).toBeUndefined();

    // Sandbox events reach the same endpoints.
    const sandboxKey = await o.tenant.keyFor(['events:write'], 'sandbox');
    const sandboxEvent = await api.request('POST', '/api/v1/events', {
      key: sandboxKey,
      body: { type: 'chatapp.message.received', data: samples['chatapp.message.received']!.data, channel_account_id: o.sandbox },
    });
    const sandboxDeliveries = await deliveriesOf(sandboxEvent.body.data.id);
    expect(sandboxDeliveries.map((r) => r.endpoint_id).sort()).toEqual([messages, paused].sort());

    // The stream keeps every event whatever the endpoints.
    const stream = await api.request('GET', '/api/v1/events', { key: o.tenant.key });
    expect(stream.body.data).toHaveLength(1);
  });
});

describe('account-health events resolve their Customer through waba_id (SPEC 6.3)', () => {
  const wabaOf = (o: Origin) => `waba-${o.tenant.accountId.slice(0, 8)}`;
  const healthTypes = ['chatapp.account.updated', 'chatapp.phone_number.quality_updated', 'chatapp.phone_number.connected'];

  it.each(healthTypes)("%s without customer_id or channel account goes to the waba owner's Customer filter", async (type) => {
    const o = await origin();
    const otherCustomer = await createCustomer(testDb(), { accountId: o.tenant.accountId, name: 'B' });
    const owner = await verifiedEndpoint(o, ['account'], { customer_id: o.tenant.customerId });
    const notOwner = await verifiedEndpoint(o, ['account'], { customer_id: otherCustomer.id });
    const res = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: { type, data: { ...samples[type]!.data, waba_id: wabaOf(o) } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const row = await eventRow(res.body.data.id);
    expect(row.customer_id).toBe(o.tenant.customerId);
    expect(webhookBody(getEventDefinition(type)!, row)).toMatchObject({ customer_id: o.tenant.customerId });
    expect((await deliveriesOf(res.body.data.id)).map((d) => d.endpoint_id)).toEqual([owner]);
    // The other Customer's endpoint does receive this type for its own Customer: it missed the one above by its filter.
    // (Another event: the idempotency key is the setup link's and number's, or a hash of the data.)
    const another =
      type === 'chatapp.phone_number.connected' ? { setup_link_id: 'sl_theirs' } : { occurred_at: '2026-11-22T11:00:00.000Z' };
    const theirs = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: { type, data: { ...samples[type]!.data, waba_id: wabaOf(o), ...another }, customer_id: otherCustomer.id },
    });
    expect(theirs.status, JSON.stringify(theirs.body)).toBe(201);
    expect((await deliveriesOf(theirs.body.data.id)).map((d) => d.endpoint_id)).toEqual([notOwner]);
  });

  it("never resolves through another Account's business account", async () => {
    const o = await origin();
    const other = await origin();
    const res = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: { type: 'chatapp.account.updated', data: { ...samples['chatapp.account.updated']!.data, waba_id: wabaOf(other) } },
    });
    expect(res.status).toBe(201);
    expect((await eventRow(res.body.data.id)).customer_id).toBeNull();
  });

  it('an explicit customer_id wins over the waba owner', async () => {
    const o = await origin();
    const otherCustomer = await createCustomer(testDb(), { accountId: o.tenant.accountId, name: 'B' });
    const res = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: {
        type: 'chatapp.account.updated',
        data: { ...samples['chatapp.account.updated']!.data, waba_id: wabaOf(o) },
        customer_id: otherCustomer.id,
      },
    });
    expect((await eventRow(res.body.data.id)).customer_id).toBe(otherCustomer.id);
  });
});

describe('free-plan cap', () => {
  // The verdict depends on the date (SPEC 8 rule 7): every test here pins the clock ingest uses.
  const NOW = new Date('2026-11-10T12:00:00Z');
  beforeEach(() => {
    clock = NOW;
  });
  afterEach(() => {
    clock = undefined;
  });

  async function receivedFor(o: Origin, n: number) {
    const data = samples['chatapp.message.received']!.data as { message: Record<string, unknown> };
    const wamid = `wamid.${o.tenant.accountId}.${n}`;
    const res = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: {
        type: 'chatapp.message.received',
        channel_account_id: o.chatapp,
        data: { ...data, message: { ...data.message, id: wamid, external_id: wamid } },
      },
    });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }
  const usage = async (accountId: string) =>
    (await testDb().query(`SELECT month::text, received_count FROM plan_usage WHERE account_id = $1 ORDER BY month`, [accountId])).rows;
  const warnings = async (accountId: string) =>
    (
      await testDb().query(`SELECT payload->>'count' AS count FROM notifications WHERE account_id = $1 ORDER BY created_at`, [accountId])
    ).rows.map((r) => Number(r.count));

  it('limits the 301st received message on every endpoint, counting it once, and warns at 240 and 300', async () => {
    const o = await origin('free', new Date('2026-10-05T00:00:00Z'));
    const a = await verifiedEndpoint(o, ['messages']);
    const b = await verifiedEndpoint(o, ['messages', 'statuses']);
    const month = '2026-11-01';
    await testDb().query(`INSERT INTO plan_usage (account_id, month, received_count) VALUES ($1, $2, 238)`, [o.tenant.accountId, month]);
    await receivedFor(o, 239);
    expect(await warnings(o.tenant.accountId)).toEqual([]);
    await receivedFor(o, 240);
    expect(await warnings(o.tenant.accountId)).toEqual([240]);
    await testDb().query(`UPDATE plan_usage SET received_count = 298 WHERE account_id = $1`, [o.tenant.accountId]);
    await receivedFor(o, 299);
    const at300 = await receivedFor(o, 300);
    expect((await deliveriesOf(at300)).map((d) => d.status)).toEqual(['pending', 'pending']);
    const at301 = await receivedFor(o, 301);
    const limited = await deliveriesOf(at301);
    expect(limited.map((d) => [d.endpoint_id, d.status]).sort()).toEqual(
      [
        [a, 'limited'],
        [b, 'limited'],
      ].sort(),
    );
    await receivedFor(o, 302);
    expect(await usage(o.tenant.accountId)).toEqual([{ month, received_count: 302 }]);
    expect(await warnings(o.tenant.accountId)).toEqual([240, 300]);

    // Statuses, CRM events and the sandbox do not count; the limited ones are filterable.
    await publish(o, 'crm.demand.created');
    const sandbox = await api.request('POST', '/api/v1/events', {
      key: await o.tenant.keyFor(['events:write'], 'sandbox'),
      body: { type: 'chatapp.message.received', data: samples['chatapp.message.received']!.data, channel_account_id: o.sandbox },
    });
    expect(sandbox.status).toBe(201);
    expect((await usage(o.tenant.accountId))[0].received_count).toBe(302);
    const list = await api.request('GET', '/api/v1/webhook_deliveries?status=limited', { key: o.tenant.key });
    expect(list.body.data).toHaveLength(4);

    // A limited delivery is resent only by hand.
    const limitedId = list.body.data[0].id;
    const resent = await api.request('POST', `/api/v1/webhook_deliveries/${limitedId}/resend`, { key: o.tenant.key });
    expect(resent.status).toBe(200);
    expect(resent.body.data).toMatchObject({ id: limitedId, status: 'pending', terminal_reason: null });
    expect((await api.request('POST', `/api/v1/webhook_deliveries/${limitedId}/resend`, { key: o.tenant.key })).body.error.code).toBe(
      'not_resendable',
    );
    const stranger = await origin();
    expect((await api.request('POST', `/api/v1/webhook_deliveries/${limitedId}/resend`, { key: stranger.tenant.key })).status).toBe(404);
    const readOnly = await o.tenant.keyFor(['webhooks:read']);
    expect((await api.request('POST', `/api/v1/webhook_deliveries/${list.body.data[1].id}/resend`, { key: readOnly })).status).toBe(403);
  });

  it('counts nothing without an endpoint, and nothing for paid accounts or an old free account before November', async () => {
    const lonely = await origin('free', new Date('2026-10-05T00:00:00Z'));
    await receivedFor(lonely, 1);
    expect(await usage(lonely.tenant.accountId)).toEqual([]);
    const paid = await origin('paid');
    await verifiedEndpoint(paid, ['messages']);
    await receivedFor(paid, 1);
    expect(await usage(paid.tenant.accountId)).toEqual([]);

    // Created up to 30 September 2026: unlimited before 1 November 2026, counted from it (SPEC 8 rule 7).
    const old = await origin('free', new Date('2026-09-15T00:00:00Z'));
    const endpoint = await verifiedEndpoint(old, ['messages']);
    await testDb().query(`INSERT INTO plan_usage (account_id, month, received_count) VALUES ($1, '2026-10-01', 300)`, [
      old.tenant.accountId,
    ]);
    clock = new Date('2026-10-31T23:59:59Z');
    const october = await receivedFor(old, 1);
    expect(await deliveriesOf(october)).toMatchObject([{ endpoint_id: endpoint, status: 'pending' }]);
    expect(await usage(old.tenant.accountId)).toEqual([{ month: '2026-10-01', received_count: 300 }]);
    clock = new Date('2026-11-01T00:00:00Z');
    await receivedFor(old, 2);
    expect(await usage(old.tenant.accountId)).toEqual([
      { month: '2026-10-01', received_count: 300 },
      { month: '2026-11-01', received_count: 1 },
    ]);
  });
});

describe('DELETE /api/v1/contacts/{id}', () => {
  it("removes the contact's events, keeps other cursors, and ends their undelivered deliveries", async () => {
    const o = await origin();
    const endpoint = await verifiedEndpoint(o, ['crm', 'messages']);
    const contact = samples['crm.contact.consent_changed']!.data.contact as { id: string };
    const consent = await publish(o, 'crm.contact.consent_changed');
    const demand = samples['crm.demand.created']!.data as { after_data: Record<string, unknown> };
    const keep = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: { type: 'crm.demand.created', data: { ...demand, after_data: { ...demand.after_data, contact_id: 'someone-else' } } },
    });
    const stage = await publish(o, 'crm.contact.stage_changed');
    const opportunity = await publish(o, 'crm.opportunity.created');
    expect((samples['crm.opportunity.created']!.data.after_data as { contact_id: string }).contact_id).toBe(contact.id);
    expect([consent.body.data.cursor, keep.body.data.cursor, stage.body.data.cursor, opportunity.body.data.cursor]).toEqual([
      '1',
      '2',
      '3',
      '4',
    ]);
    await testDb().query(`UPDATE deliveries SET status = 'success' WHERE event_id = $1`, [stage.body.data.id]);

    const res = await api.request('DELETE', `/api/v1/contacts/${contact.id}`, { key: o.tenant.key });
    expect(res.status).toBe(204);
    const stream = await api.request('GET', '/api/v1/events', { key: o.tenant.key });
    expect(stream.body.data.map((e: { cursor: string; id: string }) => [e.cursor, e.id])).toEqual([['2', keep.body.data.id]]);
    expect((await deliveriesOf(consent.body.data.id))[0]).toMatchObject({
      endpoint_id: endpoint,
      status: 'exhausted',
      terminal_reason: 'event_deleted',
    });
    expect((await deliveriesOf(stage.body.data.id))[0]).toMatchObject({ status: 'success', terminal_reason: null });

    // The next event continues after the highest cursor handed out, never reusing a deleted one.
    const next = await api.request('POST', '/api/v1/events', {
      key: o.tenant.key,
      body: {
        type: 'crm.demand.created',
        data: { ...demand, after_data: { ...demand.after_data, version: 99, contact_id: 'someone-else' } },
      },
    });
    expect(next.body.data.cursor).toBe('5');
    expect((await api.request('DELETE', `/api/v1/contacts/${contact.id}`, { key: o.tenant.key })).status).toBe(404);
    const other = await origin();
    expect((await api.request('DELETE', `/api/v1/contacts/${contact.id}`, { key: other.tenant.key })).status).toBe(404);
  });
});

describe('DELETE /api/v1/contacts/{id} in one environment', () => {
  /** A platform contact of a channel account, and a consent event carrying it published with `key`. */
  async function contactWithEvent(o: Origin, channelAccountId: string, key: string, consentId: string) {
    const contact = await upsertContact(testDb(), o.tenant.accountId, channelAccountId, {
      wa_id: `55119${consentId.replace(/\D/g, '').padStart(8, '0')}`,
      user_id: null,
      username: null,
      phone: null,
      profile_name: null,
    });
    const sample = samples['crm.contact.consent_changed']!;
    const res = await api.request('POST', '/api/v1/events', {
      key,
      body: {
        type: 'crm.contact.consent_changed',
        data: { ...sample.data, contact: { id: contact.id } },
        refs: { consent_record_id: consentId },
        channel_account_id: channelAccountId,
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return { contactId: contact.id, eventId: res.body.data.id as string };
  }
  const contactExists = async (id: string) => (await testDb().query(`SELECT 1 FROM contacts WHERE id = $1`, [id])).rowCount === 1;
  const eventExists = async (id: string) => (await testDb().query(`SELECT 1 FROM events WHERE id = $1`, [id])).rowCount === 1;

  it('a sandbox key cannot delete a live contact or its live events, and a live key cannot delete a sandbox one', async () => {
    const o = await origin();
    const sandboxKey = await o.tenant.keyFor(['contacts:write', 'events:write', 'events:read'], 'sandbox');
    const live = await contactWithEvent(o, o.chatapp, o.tenant.key, 'cr_live_1');
    const sandbox = await contactWithEvent(o, o.sandbox, sandboxKey, 'cr_sandbox_1');

    const refused = await api.request('DELETE', `/api/v1/contacts/${live.contactId}`, { key: sandboxKey });
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('not_found');
    expect(await contactExists(live.contactId)).toBe(true);
    expect(await eventExists(live.eventId)).toBe(true);
    expect((await api.request('DELETE', `/api/v1/contacts/${sandbox.contactId}`, { key: o.tenant.key })).status).toBe(404);
    expect(await contactExists(sandbox.contactId)).toBe(true);
    expect(await eventExists(sandbox.eventId)).toBe(true);

    expect((await api.request('DELETE', `/api/v1/contacts/${sandbox.contactId}`, { key: sandboxKey })).status).toBe(204);
    expect(await contactExists(sandbox.contactId)).toBe(false);
    expect(await eventExists(sandbox.eventId)).toBe(false);
    expect((await api.request('DELETE', `/api/v1/contacts/${live.contactId}`, { key: o.tenant.key })).status).toBe(204);
    expect(await contactExists(live.contactId)).toBe(false);
    expect(await eventExists(live.eventId)).toBe(false);
  });

  it('a sandbox key deletes only sandbox events of a contact id that is in no contact row', async () => {
    const o = await origin();
    const sandboxKey = await o.tenant.keyFor(['contacts:write', 'events:write', 'events:read'], 'sandbox');
    const contactId = 'crm-only-contact';
    const sample = samples['crm.contact.consent_changed']!;
    const publishFor = (key: string, channelAccountId: string, consentId: string) =>
      api.request('POST', '/api/v1/events', {
        key,
        body: {
          type: 'crm.contact.consent_changed',
          data: { ...sample.data, contact: { id: contactId } },
          refs: { consent_record_id: consentId },
          channel_account_id: channelAccountId,
        },
      });
    const live = await publishFor(o.tenant.key, o.chatapp, 'cr_l');
    const sandbox = await publishFor(sandboxKey, o.sandbox, 'cr_s');
    expect((await api.request('DELETE', `/api/v1/contacts/${contactId}`, { key: sandboxKey })).status).toBe(204);
    expect(await eventExists(sandbox.body.data.id)).toBe(false);
    expect(await eventExists(live.body.data.id)).toBe(true);
    expect((await api.request('DELETE', `/api/v1/contacts/${contactId}`, { key: sandboxKey })).status).toBe(404);
  });

  it('removes an event naming two contacts when either of them is deleted (SPEC 6.5 rule 6)', async () => {
    const o = await origin();
    const sample = samples['crm.opportunity.updated']!.data as {
      before_data: Record<string, unknown>;
      after_data: Record<string, unknown>;
    };
    const handOver = (version: number, from: string, to: string) =>
      api.request('POST', '/api/v1/events', {
        key: o.tenant.key,
        body: {
          type: 'crm.opportunity.updated',
          data: {
            ...sample,
            before_data: { ...sample.before_data, version: version - 1, contact_id: from },
            after_data: { ...sample.after_data, version, contact_id: to },
          },
        },
      });
    const first = await handOver(2, 'contact-before', 'contact-after');
    const second = await handOver(3, 'contact-after', 'contact-third');
    expect([first.status, second.status]).toEqual([201, 201]);
    // The contact the event names second (before_data) is enough to remove it.
    expect((await api.request('DELETE', '/api/v1/contacts/contact-before', { key: o.tenant.key })).status).toBe(204);
    expect(await eventExists(first.body.data.id)).toBe(false);
    expect(await eventExists(second.body.data.id)).toBe(true);
    expect((await api.request('DELETE', '/api/v1/contacts/contact-third', { key: o.tenant.key })).status).toBe(204);
    expect(await eventExists(second.body.data.id)).toBe(false);
  });
});

describe('GET /api/v1/event_types', () => {
  it('serves the catalog with JSON Schemas', async () => {
    const o = await origin();
    const res = await api.request('GET', '/api/v1/event_types', { key: o.tenant.key });
    expect(res.status).toBe(200);
    const received = res.body.data.find((t: { name: string }) => t.name === 'chatapp.message.received');
    expect(received).toMatchObject({ category: 'messages', in_stream: true });
    expect(received.schema.type).toBe('object');
    expect(res.body.data.find((t: { name: string }) => t.name === 'webhook.test')).toMatchObject({ category: null, in_stream: false });
  });
});
