/** Consent records and crm.contact.consent_changed, on real Postgres. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contactOn, crmOrigin, deliveriesOf, eventsOf, receivingEndpoint, type CrmOrigin } from '../support/crm-fixtures.js';
import { startTestApi, type TestApi } from '../support/harness.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

function consent(o: CrmOrigin, contactId: string, body: unknown, key = o.tenant.key) {
  return api.request('POST', `/api/v1/contacts/${contactId}/consents`, { key, body });
}

const consentEvents = async (o: CrmOrigin, env = 'live') =>
  (await eventsOf(o.tenant.accountId, env)).filter((e) => e.type === 'crm.contact.consent_changed');

describe('POST /api/v1/contacts/{id}/consents', () => {
  it('records a consent with the defaults and emits consent_changed keyed by the record id', async () => {
    const o = await crmOrigin();
    const messages = await receivingEndpoint(api, o.tenant, ['messages']);
    const crmOnly = await receivingEndpoint(api, o.tenant, ['crm']);
    const a = await contactOn(o, o.chatapp.id);
    const res = await consent(o, a.id, { channel: 'chatapp', state: 'granted' });
    expect(res.status, res.text).toBe(201);
    const record = res.body.data;
    expect(record).toEqual({
      id: expect.any(String),
      contact_id: a.id,
      channel: 'chatapp',
      purpose: 'marketing',
      state: 'granted',
      origin: 'api',
      evidence: '',
      changed: true,
      created_at: expect.any(String),
    });
    const [event] = await consentEvents(o);
    expect(event!.idempotency_key).toBe(`consent:${record.id}`);
    expect(event!.data).toEqual({
      contact: { id: a.id },
      channel: 'chatapp',
      purpose: 'marketing',
      state: 'granted',
      origin: 'api',
      evidence: '',
      occurred_at: record.created_at,
    });
    expect(event!.contact_ref).toBe(a.id);
    expect(event!.channel_account_id).toBe(o.chatapp.id);
    const stream = await api.request('GET', '/api/v1/events', { key: o.tenant.key });
    expect(stream.body.data).toHaveLength(1);
    expect(stream.body.data[0]).toMatchObject({ id: event!.id, type: 'crm.contact.consent_changed', data: event!.data });
    // Category messages, despite the crm prefix (SPEC 2.2).
    expect(await deliveriesOf(event!.id)).toEqual([{ endpoint_id: messages, status: 'pending', idempotency_key: `consent:${record.id}` }]);
    expect((await deliveriesOf(event!.id)).map((d) => d.endpoint_id)).not.toContain(crmOnly);
  });

  it('a state equal to the current one is recorded but emits nothing; a change emits; purposes are apart', async () => {
    const o = await crmOrigin();
    const a = await contactOn(o, o.chatapp.id);
    const given = { channel: 'chatapp', origin: 'keyword', evidence: 'STOP' };
    expect((await consent(o, a.id, { ...given, state: 'granted' })).body.data.changed).toBe(true);
    const same = await consent(o, a.id, { ...given, state: 'granted' });
    expect(same.status).toBe(201);
    expect(same.body.data.changed).toBe(false);
    expect((await consent(o, a.id, { ...given, state: 'revoked' })).body.data.changed).toBe(true);
    expect((await consent(o, a.id, { ...given, state: 'granted', purpose: 'utility' })).body.data.changed).toBe(true);
    expect((await consent(o, a.id, { ...given, state: 'revoked' })).body.data.changed).toBe(false);
    const events = await consentEvents(o);
    expect(events.map((e) => [e.data.purpose, e.data.state])).toEqual([
      ['marketing', 'granted'],
      ['marketing', 'revoked'],
      ['utility', 'granted'],
    ]);
    expect(events[1]!.data).toMatchObject({ origin: 'keyword', evidence: 'STOP' });
  });

  it('concurrent records of one contact: changed follows the history, one event per change', async () => {
    const o = await crmOrigin();
    const a = await contactOn(o, o.chatapp.id);
    const states = ['granted', 'revoked', 'granted', 'granted', 'revoked', 'revoked', 'granted', 'revoked'];
    const results = await Promise.all(states.map((state) => consent(o, a.id, { channel: 'chatapp', state })));
    expect(results.map((r) => r.status)).toEqual(states.map(() => 201));
    const history = await api.request('GET', `/api/v1/contacts/${a.id}/consents?limit=100`, { key: o.tenant.key });
    const oldestFirst = [...history.body.data].reverse() as { id: string; state: string; changed: boolean }[];
    let current: string | undefined;
    for (const r of oldestFirst) {
      expect(r.changed).toBe(r.state !== current);
      current = r.state;
    }
    const events = await consentEvents(o);
    expect(events.map((e) => e.idempotency_key)).toEqual(oldestFirst.filter((r) => r.changed).map((r) => `consent:${r.id}`));
  });

  it('evidence of 500 characters is accepted, 501 is 422 invalid_consent', async () => {
    const o = await crmOrigin();
    const a = await contactOn(o, o.chatapp.id);
    const ok = await consent(o, a.id, { channel: 'chatapp', state: 'granted', evidence: 'x'.repeat(500) });
    expect(ok.status).toBe(201);
    expect(ok.body.data.evidence).toHaveLength(500);
    const [event] = await consentEvents(o);
    expect(event!.data.evidence).toHaveLength(500);
    const tooLong = await consent(o, a.id, { channel: 'chatapp', state: 'revoked', evidence: 'x'.repeat(501) });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error.code).toBe('invalid_consent');
    expect(await consentEvents(o)).toHaveLength(1);
  });

  it('refuses bad fields with 422 invalid_consent', async () => {
    const o = await crmOrigin();
    const a = await contactOn(o, o.chatapp.id);
    for (const body of [
      { channel: 'chatapp', state: 'maybe' },
      { channel: 'chatapp' },
      { state: 'granted' },
      { channel: 'chatapp', state: 'granted', purpose: 'sales' },
      { channel: 'chatapp', state: 'granted', origin: 'phone' },
      { channel: 'photoapp', state: 'granted' },
    ]) {
      const res = await consent(o, a.id, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe('invalid_consent');
    }
    expect(await consentEvents(o)).toEqual([]);
  });

  it('isolation: another Account 404, the other environment 404 both ways, 403 without contacts:write', async () => {
    const o = await crmOrigin();
    const other = await crmOrigin();
    const live = await contactOn(o, o.chatapp.id);
    const sb = await contactOn(o, o.sandbox.id);
    const body = { channel: 'chatapp', state: 'granted' };
    expect((await consent(o, live.id, body, other.tenant.key)).status).toBe(404);
    const sandboxKey = await o.tenant.keyFor(['contacts:write', 'contacts:read'], 'sandbox');
    const cross = await consent(o, live.id, body, sandboxKey);
    expect(cross.status).toBe(404);
    expect(cross.body.error.code).toBe('not_found');
    expect((await consent(o, sb.id, body)).status).toBe(404);
    expect((await consent(o, 'c_1', body)).status).toBe(404);
    const readOnly = await o.tenant.keyFor(['contacts:read']);
    expect((await consent(o, live.id, body, readOnly)).body.error.code).toBe('insufficient_scope');
    expect(await consentEvents(o)).toEqual([]);
    // The sandbox key records on its own contact, into the sandbox stream.
    expect((await consent(o, sb.id, body, sandboxKey)).status).toBe(201);
    expect(await consentEvents(o, 'sandbox')).toHaveLength(1);
    expect(await consentEvents(o, 'live')).toHaveLength(0);
  });
});

describe('GET /api/v1/contacts/{id}/consents', () => {
  it('lists the history newest first, paged', async () => {
    const o = await crmOrigin();
    const a = await contactOn(o, o.chatapp.id);
    const ids: string[] = [];
    for (const state of ['granted', 'granted', 'revoked']) ids.push((await consent(o, a.id, { channel: 'chatapp', state })).body.data.id);
    const first = await api.request('GET', `/api/v1/contacts/${a.id}/consents?limit=2`, { key: o.tenant.key });
    expect(first.status).toBe(200);
    expect(first.body.data.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.data.map((r: { changed: boolean }) => r.changed)).toEqual([true, false]);
    const second = await api.request('GET', `/api/v1/contacts/${a.id}/consents?limit=2&after=${first.body.paging.next}`, {
      key: o.tenant.key,
    });
    expect(second.body.data.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    expect(second.body.paging.next).toBeNull();
    const back = await api.request('GET', `/api/v1/contacts/${a.id}/consents?limit=2&before=${second.body.paging.previous}`, {
      key: o.tenant.key,
    });
    expect(back.body.data.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
  });

  it('isolation and scope', async () => {
    const o = await crmOrigin();
    const other = await crmOrigin();
    const live = await contactOn(o, o.chatapp.id);
    await consent(o, live.id, { channel: 'chatapp', state: 'granted' });
    expect((await api.request('GET', `/api/v1/contacts/${live.id}/consents`, { key: other.tenant.key })).status).toBe(404);
    const sandboxKey = await o.tenant.keyFor(['contacts:read'], 'sandbox');
    expect((await api.request('GET', `/api/v1/contacts/${live.id}/consents`, { key: sandboxKey })).status).toBe(404);
    const writeOnly = await o.tenant.keyFor(['contacts:write']);
    expect((await api.request('GET', `/api/v1/contacts/${live.id}/consents`, { key: writeOnly })).status).toBe(403);
  });
});
