/**
 * NUL bytes and unpaired UTF-16 surrogates, which Postgres text and jsonb refuse, through the
 * real API on real Postgres: request input is 422 in the envelope, a receiver's answer and a
 * provider notification are stored as clean text. Never a 500.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChannelAccount } from '../../src/db/directory.js';
import { samples } from '../support/catalog-samples.js';
import { createTenant, PROVIDER_APP_SECRET, startTestApi, testDb, type Tenant, type TestApi } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';

let api: TestApi;
let tenant: Tenant;
let receiver: Receiver;

beforeAll(async () => {
  [api, tenant, receiver] = await Promise.all([startTestApi({ allowLoopback: true }), createTenant(), startReceiver()]);
});
afterAll(() => Promise.all([api.close(), receiver.close()]));
beforeEach(() => receiver.reply({ status: 200, body: 'ok' }));

/** JSON text with a lone surrogate escape, which JSON.stringify writes as `\ud800` too. */
const LONE = '\ud800';

describe("a receiver's answer with NUL bytes or invalid UTF-8", () => {
  async function testSend(reply: { status: number; body: Buffer }) {
    const created = await api.request('POST', '/api/v1/webhooks', { key: tenant.key, body: { url: receiver.url(), events: ['messages'] } });
    receiver.reply(reply);
    const res = await api.request('POST', `/api/v1/webhooks/${created.body.data.id}/test`, { key: tenant.key });
    const list = await api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${created.body.data.id}`, { key: tenant.key });
    const detail = await api.request('GET', `/api/v1/webhook_deliveries/${list.body.data[0].id}`, { key: tenant.key });
    return { res, attempt: detail.body.data.attempts_log[0] };
  }

  it('2xx: a clean 200, and the audit entry shows the excerpt with U+FFFD in place of the bad bytes', async () => {
    const { res, attempt } = await testSend({ status: 200, body: Buffer.from([0x6f, 0x6b, 0x00, 0xff, 0xfe, 0x21, 0xed, 0xa0, 0x80]) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ success: true, response_code: 200 });
    expect(attempt).toMatchObject({ response_code: 200, error: null });
    expect(attempt.response_excerpt).toMatch(/^ok\ufffd\ufffd\ufffd!\ufffd+$/);
  });

  it('non-2xx: a clean 502 test_delivery_failed, the excerpt stored and cut at 4 KiB', async () => {
    const body = Buffer.concat([Buffer.from('err\u0000'), Buffer.alloc(5000, 0)]);
    const { res, attempt } = await testSend({ status: 500, body });
    expect(res.status, JSON.stringify(res.body)).toBe(502);
    expect(res.body.error.code).toBe('test_delivery_failed');
    expect(attempt).toMatchObject({ response_code: 500, error: 'non_2xx' });
    expect(attempt.response_excerpt).toBe('err' + '\ufffd'.repeat(4093));
  });
});

describe("request input Postgres cannot store is 422 with the route's code", () => {
  it('webhook create and PATCH: the url is invalid_url, other fields their own code', async () => {
    for (const url of ['https://public.example/h\u0000', `https://public.example/h${LONE}`]) {
      const res = await api.request('POST', '/api/v1/webhooks', { key: tenant.key, body: { url, events: ['messages'] } });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error).toEqual({ code: 'invalid_url', message: expect.stringContaining('url') });
    }
    const secret = await api.request('POST', '/api/v1/webhooks', {
      key: tenant.key,
      body: { url: 'https://public.example/h', events: ['messages'], secret: 'sixteen-chars-or\u0000more' },
    });
    expect([secret.status, secret.body.error.code]).toEqual([422, 'invalid_secret']);
    const events = await api.request('POST', '/api/v1/webhooks', {
      key: tenant.key,
      body: { url: 'https://public.example/h', events: ['messages', 'x\u0000'] },
    });
    expect([events.status, events.body.error.code]).toEqual([422, 'invalid_events']);

    const created = await api.request('POST', '/api/v1/webhooks', {
      key: tenant.key,
      body: { url: 'https://public.example/h', events: ['messages'] },
    });
    const id = created.body.data.id;
    const patchUrl = await api.request('PATCH', `/api/v1/webhooks/${id}`, {
      key: tenant.key,
      body: { url: `https://public.example/p${LONE}` },
    });
    expect([patchUrl.status, patchUrl.body.error.code]).toEqual([422, 'invalid_url']);
    const patchAuth = await api.request('PATCH', `/api/v1/webhooks/${id}`, {
      key: tenant.key,
      body: { headers: { Authorization: 'Bearer \u0000' } },
    });
    expect(patchAuth.status).toBe(422);
    expect(patchAuth.body.error).toEqual({ code: 'invalid_request', message: expect.stringContaining('headers.Authorization') });
    const unknownKey = await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { ['url\u0000']: 'x' } });
    expect(unknownKey.status).toBe(422);
    expect((await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key })).body.data.url).toBe('https://public.example/h');
  });

  it('publish: data anywhere, type and refs are invalid_event naming the field', async () => {
    const ca = await createChannelAccount(testDb(), {
      accountId: tenant.accountId,
      channel: 'chatapp',
      display: '+1',
      phoneNumberId: `pn-nul-${crypto.randomUUID()}`,
    });
    const received = samples['chatapp.message.received']!.data as { message: Record<string, unknown> };
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        {
          type: 'chatapp.message.received',
          channel_account_id: ca.id,
          data: { ...received, message: { ...received.message, text: { body: 'oi\u0000' } } },
        },
        'data.message.text.body',
      ],
      [
        {
          type: 'chatapp.message.received',
          channel_account_id: ca.id,
          data: { ...received, message: { ...received.message, text: { body: `oi${LONE}` } } },
        },
        'data.message.text.body',
      ],
      [{ type: 'crm.demand.created', data: { ...samples['crm.demand.created']!.data, ['extra\u0000']: 1 } }, 'data.extra'],
      [{ type: 'crm.demand.created\u0000', data: {} }, 'type'],
      [
        {
          type: 'crm.contact.consent_changed',
          data: samples['crm.contact.consent_changed']!.data,
          refs: { consent_record_id: `r${LONE}` },
        },
        'refs.consent_record_id',
      ],
    ];
    for (const [body, field] of cases) {
      const res = await api.request('POST', '/api/v1/events', { key: tenant.key, body });
      expect(res.status, `${field}: ${JSON.stringify(res.body)}`).toBe(422);
      expect(res.body.error.code).toBe('invalid_event');
      expect(res.body.error.message).toContain(field);
    }
    const { rows } = await testDb().query(`SELECT count(*)::int AS n FROM events WHERE account_id = $1`, [tenant.accountId]);
    expect(rows[0].n).toBe(0);
  });

  it('query and path: the event_type filter, the status filter and a contact id', async () => {
    const eventType = await api.request('GET', '/api/v1/webhook_deliveries?event_type=webhook.test%00', { key: tenant.key });
    expect(eventType.status, JSON.stringify(eventType.body)).toBe(422);
    expect(eventType.body.error).toEqual({ code: 'invalid_request', message: expect.stringContaining('event_type') });
    const status = await api.request('GET', '/api/v1/webhook_deliveries?status=failed%00', { key: tenant.key });
    expect([status.status, status.body.error.code]).toEqual([422, 'invalid_status']);
    const contact = await api.request('DELETE', '/api/v1/contacts/abc%00def', { key: tenant.key });
    expect(contact.status, JSON.stringify(contact.body)).toBe(422);
    expect(contact.body.error.code).toBe('invalid_request');
    // An invalid limit still falls back to the default (SPEC 6.5 rule 3).
    expect((await api.request('GET', '/api/v1/events?limit=%00', { key: tenant.key })).status).toBe(200);
  });
});

describe('provider notifications with NUL or unpaired surrogates', () => {
  async function postProvider(channel: 'chatapp' | 'photoapp', raw: string) {
    const signature = `sha256=${crypto.createHmac('sha256', PROVIDER_APP_SECRET).update(raw).digest('hex')}`;
    return api.request('POST', `/provider/${channel}/webhook`, {
      rawBody: raw,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
    });
  }
  const rejections = async (marker: string) =>
    (await testDb().query(`SELECT provider, reason, body FROM provider_rejections WHERE body LIKE $1 ORDER BY created_at`, [`%${marker}%`]))
      .rows;

  it('are answered 200 with no events, kept in provider_rejections, and store nothing', async () => {
    const owner = await createTenant();
    const suffix = crypto.randomBytes(5).toString('hex');
    const pnid = `pn${suffix}`;
    await createChannelAccount(testDb(), {
      accountId: owner.accountId,
      channel: 'chatapp',
      display: '+1',
      phoneNumberId: pnid,
      wabaId: `waba${suffix}`,
    });
    const igId = `1784${crypto.randomInt(1e9, 9e9)}`;
    await createChannelAccount(testDb(), { accountId: owner.accountId, channel: 'photoapp', display: '@x', providerAccountId: igId });
    const chatapp = (text: string) =>
      JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [
          {
            id: `waba${suffix}`,
            changes: [
              {
                field: 'messages',
                value: {
                  metadata: { display_phone_number: '1', phone_number_id: pnid },
                  contacts: [{ wa_id: '5511999998888', profile: { name: 'M' } }],
                  messages: [
                    {
                      from: '5511999998888',
                      id: `wamid.${suffix}.${text.length}`,
                      timestamp: '1795341600',
                      type: 'text',
                      text: { body: text },
                    },
                  ],
                },
              },
            ],
          },
        ],
      });
    const photo = JSON.stringify({
      object: 'instagram',
      entry: [
        {
          id: igId,
          time: 1795341600123,
          messaging: [
            {
              sender: { id: '658' },
              recipient: { id: igId },
              timestamp: 1795341600000,
              message: { mid: `aWdf${suffix}`, text: `x${LONE}` },
            },
          ],
        },
      ],
    });

    for (const [channel, raw] of [
      ['chatapp', chatapp('nul\u0000')],
      ['chatapp', chatapp(`lone${LONE}`)],
      ['photoapp', photo],
    ] as const) {
      const res = await postProvider(channel, raw);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ received: true, events: 0 });
    }
    // Literal NUL bytes in a body that is not even JSON: the rejection record is still storable.
    const notJson = await postProvider('chatapp', `{"marker":"${suffix}\u0000`);
    expect(notJson.status).toBe(200);

    const kept = await rejections(suffix);
    expect(kept.map((r) => r.provider)).toEqual(['chatapp', 'chatapp', 'photoapp', 'chatapp']);
    expect(kept[0].reason).toContain('text.body');
    expect(kept[2].reason).toContain('message.text');
    expect(kept[3]).toMatchObject({ reason: 'body is not JSON', body: `{"marker":"${suffix}\ufffd` });
    const { rows } = await testDb().query(
      `SELECT (SELECT count(*)::int FROM events WHERE account_id = $1) AS events, (SELECT count(*)::int FROM contacts WHERE account_id = $1) AS contacts`,
      [owner.accountId],
    );
    expect(rows[0]).toEqual({ events: 0, contacts: 0 });
  });
});
