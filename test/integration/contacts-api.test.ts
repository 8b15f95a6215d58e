/** Funnel stages, contacts (read, PATCH) and crm.contact.stage_changed, on real Postgres. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyContactEdit } from '../../src/crm/contact-stage.js';
import { emitPendingCrmEvents } from '../../src/crm/outbox.js';
import { deleteAccount } from '../../src/db/directory.js';
import { inTransaction } from '../../src/db/pool.js';
import { contactOn, crmOrigin, deliveriesOf, eventsOf, receivingEndpoint, type CrmOrigin } from '../support/crm-fixtures.js';
import { startTestApi, testDb, type TestApi } from '../support/harness.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

async function stage(o: CrmOrigin, key: string, label = key.toUpperCase()) {
  const res = await api.request('POST', '/api/v1/stages', { key: o.tenant.key, body: { key, label } });
  expect(res.status, res.text).toBe(201);
  return res.body.data as { id: string; key: string; label: string; position: number };
}

function patch(o: CrmOrigin, id: string, body: unknown, key = o.tenant.key) {
  return api.request('PATCH', `/api/v1/contacts/${id}`, { key, body });
}

const stageEvents = async (o: CrmOrigin, env = 'live') =>
  (await eventsOf(o.tenant.accountId, env)).filter((e) => e.type === 'crm.contact.stage_changed');

describe('funnel stages', () => {
  it('creates stages in funnel order, lists them paged, and emits nothing', async () => {
    const o = await crmOrigin();
    const lead = await stage(o, 'lead', 'Lead');
    const won = await stage(o, 'won', 'Won');
    expect(lead).toMatchObject({ key: 'lead', label: 'Lead', position: 1 });
    expect(won.position).toBe(2);
    const first = await api.request('GET', '/api/v1/stages?limit=1', { key: o.tenant.key });
    expect(first.status).toBe(200);
    expect(first.body.data.map((s: { key: string }) => s.key)).toEqual(['lead']);
    expect(first.body.paging.next).toEqual(expect.any(String));
    const second = await api.request('GET', `/api/v1/stages?limit=1&after=${first.body.paging.next}`, { key: o.tenant.key });
    expect(second.body.data.map((s: { key: string }) => s.key)).toEqual(['won']);
    expect(second.body.paging.next).toBeNull();
    expect((await api.request('GET', '/api/v1/stages?after=forged', { key: o.tenant.key })).body.error.code).toBe('invalid_cursor');
    expect(await eventsOf(o.tenant.accountId)).toEqual([]);
  });

  it('refuses a duplicate key (409 stage_exists) and a bad key or label (422 invalid_stage)', async () => {
    const o = await crmOrigin();
    await stage(o, 'lead');
    const dup = await api.request('POST', '/api/v1/stages', { key: o.tenant.key, body: { key: 'lead', label: 'Again' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('stage_exists');
    for (const body of [{ key: 'Has Space', label: 'x' }, { key: 'ok', label: '' }, { key: '', label: 'x' }, { label: 'x' }]) {
      const res = await api.request('POST', '/api/v1/stages', { key: o.tenant.key, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe('invalid_stage');
    }
    // Another Account may use the same key.
    const other = await crmOrigin();
    await stage(other, 'lead');
  });

  it('checks scopes and keeps Accounts apart', async () => {
    const o = await crmOrigin();
    const other = await crmOrigin();
    const s = await stage(o, 'lead');
    const readOnly = await o.tenant.keyFor(['contacts:read']);
    const writeOnly = await o.tenant.keyFor(['contacts:write']);
    expect((await api.request('POST', '/api/v1/stages', { key: readOnly, body: { key: 'x', label: 'x' } })).body.error.code).toBe(
      'insufficient_scope',
    );
    const list = await api.request('GET', '/api/v1/stages', { key: writeOnly });
    expect(list.status).toBe(403);
    expect((await api.request('DELETE', `/api/v1/stages/${s.id}`, { key: readOnly })).status).toBe(403);
    expect((await api.request('GET', '/api/v1/stages', { key: other.tenant.key })).body.data).toEqual([]);
    const foreign = await api.request('DELETE', `/api/v1/stages/${s.id}`, { key: other.tenant.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    expect((await api.request('DELETE', '/api/v1/stages/not-a-uuid', { key: o.tenant.key })).status).toBe(404);
  });
});

describe('GET /api/v1/contacts', () => {
  it('shows the fields, filters, pages newest first, and only the key environment', async () => {
    const o = await crmOrigin();
    const lead = await stage(o, 'lead', 'Lead');
    const a = await contactOn(o, o.chatapp.id, { profileName: 'Ana' });
    const b = await contactOn(o, o.photoapp.id, { phone: null, username: 'bia', profileName: null });
    const sb = await contactOn(o, o.sandbox.id);
    expect((await patch(o, a.id, { stage: 'lead' })).status).toBe(200);

    const one = await api.request('GET', `/api/v1/contacts/${a.id}`, { key: o.tenant.key });
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual({
      id: a.id,
      channel_account_id: o.chatapp.id,
      channel: 'chatapp',
      wa_id: a.waId,
      user_id: null,
      username: null,
      phone: `+${a.waId}`,
      profile_name: 'Ana',
      metadata: {},
      stage: { id: lead.id, key: 'lead', label: 'Lead' },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });

    const all = await api.request('GET', '/api/v1/contacts', { key: o.tenant.key });
    expect(all.body.data.map((c: { id: string }) => c.id)).toEqual([b.id, a.id]);
    const paged = await api.request('GET', '/api/v1/contacts?limit=1', { key: o.tenant.key });
    expect(paged.body.data.map((c: { id: string }) => c.id)).toEqual([b.id]);
    const next = await api.request('GET', `/api/v1/contacts?limit=1&after=${paged.body.paging.next}`, { key: o.tenant.key });
    expect(next.body.data.map((c: { id: string }) => c.id)).toEqual([a.id]);
    const byChannel = await api.request('GET', `/api/v1/contacts?channel_account_id=${o.photoapp.id}`, { key: o.tenant.key });
    expect(byChannel.body.data.map((c: { id: string }) => c.id)).toEqual([b.id]);
    const byStage = await api.request('GET', '/api/v1/contacts?stage=lead', { key: o.tenant.key });
    expect(byStage.body.data.map((c: { id: string }) => c.id)).toEqual([a.id]);
    expect((await api.request('GET', '/api/v1/contacts?channel_account_id=nope', { key: o.tenant.key })).status).toBe(422);

    const sandboxKey = await o.tenant.keyFor(['contacts:read'], 'sandbox');
    const sandboxList = await api.request('GET', '/api/v1/contacts', { key: sandboxKey });
    expect(sandboxList.body.data.map((c: { id: string }) => c.id)).toEqual([sb.id]);
    expect((await api.request('GET', `/api/v1/contacts/${a.id}`, { key: sandboxKey })).status).toBe(404);
    expect((await api.request('GET', `/api/v1/contacts/${sb.id}`, { key: o.tenant.key })).status).toBe(404);
  });

  it('404 for another Account and for ids that are not UUIDs; 403 without contacts:read', async () => {
    const o = await crmOrigin();
    const other = await crmOrigin();
    const a = await contactOn(o, o.chatapp.id);
    const foreign = await api.request('GET', `/api/v1/contacts/${a.id}`, { key: other.tenant.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    expect((await api.request('GET', '/api/v1/contacts', { key: other.tenant.key })).body.data).toEqual([]);
    expect((await api.request('GET', '/api/v1/contacts/c_1', { key: o.tenant.key })).status).toBe(404);
    const noScope = await o.tenant.keyFor(['contacts:write']);
    expect((await api.request('GET', `/api/v1/contacts/${a.id}`, { key: noScope })).status).toBe(403);
    expect((await api.request('GET', '/api/v1/contacts', { key: noScope })).body.error.code).toBe('insufficient_scope');
  });
});

describe('PATCH /api/v1/contacts/{id}', () => {
  it('edits profile fields and metadata without an event', async () => {
    const o = await crmOrigin();
    const a = await contactOn(o, o.chatapp.id);
    const before = (await api.request('GET', `/api/v1/contacts/${a.id}`, { key: o.tenant.key })).body.data;
    const res = await patch(o, a.id, { profile_name: 'Maria S.', metadata: { plan: 'gold', city: 'SP' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ profile_name: 'Maria S.', metadata: { plan: 'gold', city: 'SP' }, stage: null });
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    const merged = await patch(o, a.id, { metadata: { city: null, tier: 2 } });
    expect(merged.body.data.metadata).toEqual({ plan: 'gold', tier: 2 });
    expect(await eventsOf(o.tenant.accountId)).toEqual([]);
    expect((await patch(o, a.id, { nickname: 'x' })).body.error.code).toBe('invalid_request');
    expect((await patch(o, a.id, { metadata: 'x' })).status).toBe(422);
  });

  it('emits stage_changed on entering, moving and leaving; the same stage emits nothing', async () => {
    const o = await crmOrigin();
    const lead = await stage(o, 'lead', 'Lead');
    const won = await stage(o, 'won', 'Won');
    const a = await contactOn(o, o.chatapp.id, { profileName: 'Ana' });

    const entered = await patch(o, a.id, { stage: 'lead' });
    expect(entered.body.data.stage).toEqual({ id: lead.id, key: 'lead', label: 'Lead' });
    expect((await patch(o, a.id, { stage: 'lead' })).status).toBe(200);
    await patch(o, a.id, { stage: 'won', profile_name: 'Ana Paula' });
    const left = await patch(o, a.id, { stage: null });
    expect(left.body.data.stage).toBeNull();
    expect((await patch(o, a.id, { stage: null })).status).toBe(200);

    const events = await stageEvents(o);
    expect(events).toHaveLength(3);
    const contact = { id: a.id, wa_id: a.waId, phone: `+${a.waId}` };
    expect(events[0]!.data).toEqual({
      phone_number_id: o.chatapp.phoneNumberId,
      contact: { ...contact, profile_name: 'Ana' },
      new_stage: { id: lead.id, key: 'lead', label: 'Lead' },
      changed_by: 'manual',
      occurred_at: expect.any(String),
    });
    expect(events[1]!.data).toMatchObject({
      contact: { ...contact, profile_name: 'Ana Paula' },
      previous_stage: { id: lead.id, key: 'lead', label: 'Lead' },
      new_stage: { id: won.id, key: 'won', label: 'Won' },
    });
    expect(events[2]!.data).not.toHaveProperty('new_stage');
    expect(events[2]!.data.previous_stage).toEqual({ id: won.id, key: 'won', label: 'Won' });
    // A fresh transaction id per change, in the key.
    const keys = events.map((e) => e.idempotency_key);
    expect(keys[0]).toMatch(new RegExp(`^crm:stage:${a.id}:[0-9a-f-]{36}:none>lead$`));
    expect(keys[1]).toMatch(/:lead>won$/);
    expect(keys[2]).toMatch(/:won>none$/);
    expect(new Set(keys.map((k) => k.split(':')[3])).size).toBe(3);
    for (const e of events) {
      expect(e.contact_ref).toBe(a.id);
      expect(e.channel_account_id).toBe(o.chatapp.id);
      expect(e.customer_id).toBe(o.tenant.customerId);
    }
  });

  it('moving back and forth between the same stages gives one event per move', async () => {
    const o = await crmOrigin();
    await stage(o, 'lead');
    await stage(o, 'won');
    const a = await contactOn(o, o.chatapp.id);
    for (const s of ['lead', 'won', 'lead', 'won']) await patch(o, a.id, { stage: s });
    expect((await stageEvents(o)).map((e) => e.idempotency_key.split(':').pop())).toEqual([
      'none>lead',
      'lead>won',
      'won>lead',
      'lead>won',
    ]);
  });

  it('omits phone_number_id and null contact fields for a photoapp contact', async () => {
    const o = await crmOrigin();
    await stage(o, 'lead');
    const b = await contactOn(o, o.photoapp.id, { phone: null, username: 'bia', profileName: null });
    await patch(o, b.id, { stage: 'lead' });
    const [event] = await stageEvents(o);
    expect(event!.data).not.toHaveProperty('phone_number_id');
    expect(event!.data.contact).toEqual({ id: b.id, wa_id: b.waId, username: 'bia' });
  });

  it('refuses an unknown stage with 422 invalid_stage and changes nothing', async () => {
    const o = await crmOrigin();
    const a = await contactOn(o, o.chatapp.id);
    const res = await patch(o, a.id, { stage: 'nope', profile_name: 'Changed' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_stage');
    expect((await api.request('GET', `/api/v1/contacts/${a.id}`, { key: o.tenant.key })).body.data.profile_name).toBe('Maria');
    // Another Account's stage key is unknown here.
    const other = await crmOrigin();
    await stage(other, 'vip');
    expect((await patch(o, a.id, { stage: 'vip' })).body.error.code).toBe('invalid_stage');
    expect((await patch(o, a.id, { stage: 'Not A Key' })).body.error.code).toBe('invalid_stage');
    expect((await patch(o, a.id, { stage: '' })).status).toBe(422);
    expect(await eventsOf(o.tenant.accountId)).toEqual([]);
  });

  it('isolation: another Account 404, sandbox key on a live contact 404 (and back), 403 without contacts:write', async () => {
    const o = await crmOrigin();
    await stage(o, 'lead');
    const other = await crmOrigin();
    await stage(other, 'lead');
    const live = await contactOn(o, o.chatapp.id);
    const sb = await contactOn(o, o.sandbox.id);
    expect((await patch(o, live.id, { stage: 'lead' }, other.tenant.key)).status).toBe(404);
    const sandboxKey = await o.tenant.keyFor(['contacts:write', 'contacts:read'], 'sandbox');
    const cross = await patch(o, live.id, { stage: 'lead', profile_name: 'X' }, sandboxKey);
    expect(cross.status).toBe(404);
    expect(cross.body.error.code).toBe('not_found');
    expect((await patch(o, sb.id, { stage: 'lead' })).status).toBe(404);
    const readOnly = await o.tenant.keyFor(['contacts:read']);
    expect((await patch(o, live.id, { stage: 'lead' }, readOnly)).status).toBe(403);
    expect(await eventsOf(o.tenant.accountId)).toEqual([]);
    expect((await api.request('GET', `/api/v1/contacts/${live.id}`, { key: o.tenant.key })).body.data).toMatchObject({
      stage: null,
      profile_name: 'Maria',
    });

    // The sandbox key moves its own contact: the event goes to the sandbox stream only.
    const ok = await patch(o, sb.id, { stage: 'lead' }, sandboxKey);
    expect(ok.status).toBe(200);
    expect(await stageEvents(o, 'sandbox')).toHaveLength(1);
    expect(await stageEvents(o, 'live')).toHaveLength(0);
  });

  it('stores the event in the stream and routes it to endpoints subscribed to crm', async () => {
    const o = await crmOrigin();
    await stage(o, 'lead');
    const crm = await receivingEndpoint(api, o.tenant, ['crm']);
    const messagesOnly = await receivingEndpoint(api, o.tenant, ['messages']);
    const a = await contactOn(o, o.chatapp.id);
    await patch(o, a.id, { stage: 'lead' });
    const [event] = await stageEvents(o);
    const stream = await api.request('GET', '/api/v1/events', { key: o.tenant.key });
    expect(stream.body.data).toHaveLength(1);
    expect(stream.body.data[0]).toMatchObject({ id: event!.id, type: 'crm.contact.stage_changed', environment: 'live', external_id: null });
    expect(stream.body.data[0].data).toEqual(event!.data);
    const deliveries = await deliveriesOf(event!.id);
    expect(deliveries).toEqual([{ endpoint_id: crm, status: 'pending', idempotency_key: event!.idempotency_key }]);
    expect(deliveries.map((d) => d.endpoint_id)).not.toContain(messagesOnly);
  });

  it('concurrent PATCHes to different stages: one event per change, each with the right previous and new stage', async () => {
    const o = await crmOrigin();
    const keys = ['s1', 's2', 's3', 's4', 's5', 's6'];
    for (const k of keys) await stage(o, k);
    const a = await contactOn(o, o.chatapp.id);
    const results = await Promise.all(keys.map((k) => patch(o, a.id, { stage: k })));
    expect(results.map((r) => r.status)).toEqual(keys.map(() => 200));
    const events = await stageEvents(o);
    expect(events).toHaveLength(keys.length);
    // In stream order the moves form one chain: none > x > y > ... > the stage the contact ends on.
    let previous: string | undefined;
    for (const e of events) {
      expect(e.data.previous_stage?.key).toBe(previous);
      previous = e.data.new_stage.key;
    }
    const final = (await api.request('GET', `/api/v1/contacts/${a.id}`, { key: o.tenant.key })).body.data.stage.key;
    expect(final).toBe(previous);
    expect(new Set(events.map((e) => e.data.new_stage.key)).size).toBe(keys.length);
  });

  it('an event left waiting by a crash after the commit is stored by the next write, or by the sweep', async () => {
    const o = await crmOrigin();
    await stage(o, 'lead');
    await stage(o, 'won');
    const a = await contactOn(o, o.chatapp.id);
    const b = await contactOn(o, o.chatapp.id);
    const scope = { accountId: o.tenant.accountId, environment: 'live' as const };
    // The write commits, the process "dies" before storing its event.
    await inTransaction(testDb(), (tx) => applyContactEdit(tx, scope, { contactId: a.id, stageKey: 'lead', changedBy: 'manual' }));
    await inTransaction(testDb(), (tx) => applyContactEdit(tx, scope, { contactId: b.id, stageKey: 'won', changedBy: 'auto' }));
    expect(await stageEvents(o)).toHaveLength(0);
    // A retried PATCH finds the stage already set, and still stores the waiting event.
    await patch(o, a.id, { stage: 'lead' });
    expect((await stageEvents(o)).map((e) => e.data.contact.id)).toEqual([a.id]);
    expect(await emitPendingCrmEvents(api.deps, { olderThanMs: 0 })).toBeGreaterThanOrEqual(1);
    const events = await stageEvents(o);
    expect(events.map((e) => [e.data.contact.id, e.data.changed_by])).toEqual([
      [a.id, 'manual'],
      [b.id, 'auto'],
    ]);
    const { rows } = await testDb().query(`SELECT count(*)::int AS n FROM crm_outbox WHERE account_id = $1`, [o.tenant.accountId]);
    expect(rows[0].n).toBe(0);
  });
});

describe('DELETE /api/v1/stages/{id}', () => {
  it('moves its contacts out of the funnel with system events, in each contact environment, and removes the stage', async () => {
    const o = await crmOrigin();
    const lead = await stage(o, 'lead', 'Lead');
    await stage(o, 'won');
    const a = await contactOn(o, o.chatapp.id);
    const b = await contactOn(o, o.chatapp.id);
    const sb = await contactOn(o, o.sandbox.id);
    const sandboxKey = await o.tenant.keyFor(['contacts:write', 'contacts:read'], 'sandbox');
    await patch(o, a.id, { stage: 'lead' });
    await patch(o, b.id, { stage: 'won' });
    await patch(o, sb.id, { stage: 'lead' }, sandboxKey);

    const res = await api.request('DELETE', `/api/v1/stages/${lead.id}`, { key: o.tenant.key });
    expect(res.status).toBe(204);
    const live = await stageEvents(o, 'live');
    const last = live[live.length - 1]!;
    expect(last.data).toMatchObject({
      contact: { id: a.id },
      previous_stage: { id: lead.id, key: 'lead', label: 'Lead' },
      changed_by: 'system',
    });
    expect(last.data).not.toHaveProperty('new_stage');
    const sandbox = await stageEvents(o, 'sandbox');
    expect(sandbox.map((e) => e.data.changed_by)).toEqual(['manual', 'system']);
    expect((await api.request('GET', `/api/v1/contacts/${a.id}`, { key: o.tenant.key })).body.data.stage).toBeNull();
    expect((await api.request('GET', `/api/v1/contacts/${b.id}`, { key: o.tenant.key })).body.data.stage.key).toBe('won');
    expect((await api.request('GET', '/api/v1/stages', { key: o.tenant.key })).body.data.map((s: { key: string }) => s.key)).toEqual([
      'won',
    ]);
    expect((await api.request('DELETE', `/api/v1/stages/${lead.id}`, { key: o.tenant.key })).status).toBe(404);
    expect((await patch(o, a.id, { stage: 'lead' })).body.error.code).toBe('invalid_stage');
  });

  it('PATCHes onto a stage racing its deletion: each lands before (and is moved out) or is refused, never a 500', async () => {
    const o = await crmOrigin();
    const doomed = await stage(o, 'doomed');
    const contacts = await Promise.all(Array.from({ length: 8 }, () => contactOn(o, o.chatapp.id)));
    const [deletion, ...patches] = await Promise.all([
      api.request('DELETE', `/api/v1/stages/${doomed.id}`, { key: o.tenant.key }),
      ...contacts.map((c) => patch(o, c.id, { stage: 'doomed' })),
    ]);
    expect(deletion!.status).toBe(204);
    const events = await stageEvents(o);
    for (const [i, c] of contacts.entries()) {
      const res = patches[i]!;
      expect([200, 422], res.text).toContain(res.status);
      const mine = events.filter((e) => e.data.contact.id === c.id).map((e) => e.data.changed_by);
      // Entered then moved out by the deletion, or never entered.
      expect(mine).toEqual(res.status === 200 ? ['manual', 'system'] : []);
      if (res.status === 422) expect(res.body.error.code).toBe('invalid_stage');
      expect((await api.request('GET', `/api/v1/contacts/${c.id}`, { key: o.tenant.key })).body.data.stage).toBeNull();
    }
  });

  it('deleting the Account takes its stages with the contacts on them', async () => {
    const o = await crmOrigin();
    await stage(o, 'lead');
    const a = await contactOn(o, o.chatapp.id);
    await patch(o, a.id, { stage: 'lead' });
    expect(await deleteAccount(testDb(), o.tenant.accountId)).toBe(true);
    const { rows } = await testDb().query(`SELECT count(*)::int AS n FROM stages WHERE account_id = $1`, [o.tenant.accountId]);
    expect(rows[0].n).toBe(0);
  });
});
