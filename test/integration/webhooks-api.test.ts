/** The endpoints API against real Postgres and a real Temporal dev server. */
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startTemporalDevServer } from '../../dev/temporal-servers.js';
import { endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';
import { createTenant, startTestApi, testDb, type Tenant, type TestApi } from '../support/harness.js';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;
const publicUrl = 'https://public.example/hooks';

beforeAll(async () => {
  api = await startTestApi();
  [tenant, other] = await Promise.all([createTenant(), createTenant()]);
});
afterAll(() => api.close());

async function create(body: Record<string, unknown>, key = tenant.key) {
  return api.request('POST', '/api/v1/webhooks', { key, body: { url: publicUrl, events: ['messages'], ...body } });
}

describe('authentication and the error envelope', () => {
  it('401 without a key and with an unknown key', async () => {
    const none = await api.request('GET', '/api/v1/webhooks');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    const wrong = await api.request('GET', '/api/v1/webhooks', { key: 'wh_live_' + 'x'.repeat(43) });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('unauthorized');
  });

  it('wears the envelope on bad JSON, huge bodies, unknown routes and wrong methods', async () => {
    const badJson = await api.request('POST', '/api/v1/webhooks', {
      key: tenant.key,
      rawBody: '{"url":',
      headers: { 'content-type': 'application/json' },
    });
    expect(badJson.status).toBe(400);
    expect(badJson.body.error.code).toBe('invalid_json');
    const huge = await api.request('POST', '/api/v1/webhooks', {
      key: tenant.key,
      rawBody: JSON.stringify({ url: 'x'.repeat(300_000) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('payload_too_large');
    const notJsonType = await api.request('POST', '/api/v1/webhooks', {
      key: tenant.key,
      rawBody: 'url=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(notJsonType.status).toBe(415);
    const array = await api.request('POST', '/api/v1/webhooks', { key: tenant.key, body: [1, 2] });
    expect(array.status).toBe(422);
    expect(array.body.error.code).toBe('invalid_request');
    const unknown = await api.request('GET', '/api/v1/nothing-here', { key: tenant.key });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const method = await api.request('PUT', '/api/v1/webhooks', { key: tenant.key, body: {} });
    expect(method.status).toBe(405);
    expect(method.body.error.code).toBe('method_not_allowed');
    for (const r of [badJson, huge, unknown, method]) expect(r.text).not.toMatch(/at .*\.ts:|SELECT|INSERT/);
  });

  it('429 with Retry-After once a key exhausts its bucket', async () => {
    const limited = await startTestApi({ rateLimit: { capacity: 2, refillPerSecond: 0.5 } });
    try {
      expect((await limited.request('GET', '/api/v1/webhooks', { key: tenant.key })).status).toBe(200);
      expect((await limited.request('GET', '/api/v1/webhooks', { key: tenant.key })).status).toBe(200);
      const third = await limited.request('GET', '/api/v1/webhooks', { key: tenant.key });
      expect(third.status).toBe(429);
      expect(third.body.error.code).toBe('rate_limited');
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Another key has its own bucket.
      expect((await limited.request('GET', '/api/v1/webhooks', { key: other.key })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('POST /api/v1/webhooks', () => {
  it('creates an unverified endpoint and shows a generated secret once', async () => {
    const res = await create({ events: ['statuses', 'messages', 'bogus', 'messages'] });
    expect(res.status).toBe(201);
    const d = res.body.data;
    expect(d).toMatchObject({
      customer_id: null,
      url: publicUrl,
      events: ['messages', 'statuses'],
      active: true,
      has_authorization: false,
      health_status: 'unverified',
      failure_streak: 0,
      verified_at: null,
      last_success_at: null,
      last_failure_at: null,
      last_response_code: null,
      next_attempt_at: null,
      paused_at: null,
    });
    expect(d.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(d.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(new Date(d.created_at).toISOString()).toBe(d.created_at);
    expect(Object.keys(d).sort()).toEqual(
      [
        'active',
        'created_at',
        'customer_id',
        'description',
        'events',
        'failure_streak',
        'has_authorization',
        'health_status',
        'id',
        'last_failure_at',
        'last_response_code',
        'last_success_at',
        'next_attempt_at',
        'paused_at',
        'rate_limit',
        'secret',
        'updated_at',
        'url',
        'verified_at',
      ].sort(),
    );
  });

  it.each([
    [15, 422],
    [16, 201],
    [256, 201],
    [257, 422],
  ])('secret of %i characters: %i', async (length, status) => {
    const res = await create({ secret: 's'.repeat(length) });
    expect(res.status).toBe(status);
    if (status === 422) expect(res.body.error.code).toBe('invalid_secret');
    else expect(res.body.data.secret).toBe('s'.repeat(length));
  });

  it.each(['with\nnewline-secret-value', 'with\rreturn-secret-value'])('secret with a line break is invalid_secret', async (secret) => {
    const res = await create({ secret });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_secret');
  });

  it.each([
    ['http://public.example/hooks', 'https'],
    ['https://localhost/hooks', 'loopback'],
    ['https://127.0.0.1/hooks', 'loopback'],
    ['https://10.2.3.4/hooks', 'private'],
    ['https://169.254.169.254/latest', 'link-local'],
    ['https://[::1]/hooks', 'loopback'],
    ['https://[::ffff:127.0.0.1]/hooks', 'loopback'],
    ['https://private.example/hooks', 'private'],
    ['https://mixed.example/hooks', 'private'],
    ['https://unresolvable.example/hooks', 'does not resolve'],
    ['not a url', 'valid'],
  ])('refuses %s (%s)', async (url, why) => {
    const res = await create({ url });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_url');
    expect(res.body.error.message).toContain(why);
  });

  it.each(['https://[::7f00:1]/', 'https://[::127.0.0.1]/', 'https://[::a00:1]/'])(
    'refuses the IPv4-compatible address %s at create and PATCH',
    async (url) => {
      const created = await create({ url });
      expect(created.status, JSON.stringify(created.body)).toBe(422);
      expect(created.body.error).toEqual({ code: 'invalid_url', message: expect.stringContaining('IPv4-compatible') });
      const id = (await create({})).body.data.id;
      const patched = await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { url } });
      expect(patched.status, JSON.stringify(patched.body)).toBe(422);
      expect(patched.body.error.code).toBe('invalid_url');
      expect((await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key })).body.data.url).toBe(publicUrl);
    },
  );

  it('accepts a public IPv6 destination', async () => {
    expect((await create({ url: 'https://public-v6.example/h' })).status).toBe(201);
  });

  it.each([[['bogus', 'other']], [[]]])('events %j is invalid_events', async (events) => {
    const res = await create({ events });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_events');
  });

  it.each([[['messages', 5]], [[null, 'messages', { category: 'crm' }, ['statuses'], true]], [['messages', 'bogus', 1.5, 'messages']]])(
    'events %j keeps its valid categories and discards the rest, whatever their type',
    async (events) => {
      const res = await create({ events });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.data.events).toEqual(['messages']);
    },
  );

  it.each([[[5, null, { messages: true }]], ['messages'], [{ 0: 'messages' }], [null], [7]])(
    'events %j (no valid category, or not an array) is invalid_events',
    async (events) => {
      const res = await create({ events });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('invalid_events');
    },
  );

  it('PATCH discards non-category values of events the same way', async () => {
    const id = (await create({})).body.data.id;
    const patch = (events: unknown) => api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { events } });
    const kept = await patch(['crm', 5, null, { x: 1 }, 'account']);
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.data.events).toEqual(['crm', 'account']);
    for (const bad of [[5, false], 'crm', null]) {
      const res = await patch(bad);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('invalid_events');
    }
  });

  it("customer_id must be a Customer of the key's Account", async () => {
    expect((await create({ customer_id: tenant.customerId })).body.data.customer_id).toBe(tenant.customerId);
    const foreign = await create({ customer_id: other.customerId });
    expect(foreign.status).toBe(422);
    expect(foreign.body.error.code).toBe('invalid_customer_id');
    const notUuid = await create({ customer_id: 'abc' });
    expect(notUuid.status).toBe(422);
  });

  it('stops at the endpoint limit of the Account', async () => {
    const t = await createTenant();
    for (let i = 0; i < 50; i++) expect((await create({}, t.key)).status).toBe(201);
    const over = await create({}, t.key);
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe('endpoint_limit_reached');
  });
});

describe('reads, PATCH and DELETE', () => {
  it('never shows the secret or the Authorization value after creation', async () => {
    const secret = `whsec_${crypto.randomBytes(24).toString('hex')}`;
    const created = (await create({ secret })).body.data;
    const auth = `Bearer ${crypto.randomBytes(16).toString('hex')}`;
    const patched = await api.request('PATCH', `/api/v1/webhooks/${created.id}`, {
      key: tenant.key,
      body: { events: ['crm'], headers: { Authorization: auth } },
    });
    const read = await api.request('GET', `/api/v1/webhooks/${created.id}`, { key: tenant.key });
    const list = await api.request('GET', '/api/v1/webhooks?limit=100', { key: tenant.key });
    for (const r of [patched, read, list]) {
      expect(r.status).toBe(200);
      expect(r.text).not.toContain(secret);
      expect(r.text).not.toContain(auth);
      expect(r.text).not.toContain('"secret"');
    }
    expect(read.body.data.has_authorization).toBe(true);

    // Not in a database dump either: the row holds ciphertext only.
    const { rows } = await testDb().query(`SELECT e::text AS dump FROM endpoints e WHERE id = $1`, [created.id]);
    expect(rows[0].dump).not.toContain(secret);
    expect(rows[0].dump).not.toContain(auth);
    expect(rows[0].dump).not.toContain(Buffer.from(secret).toString('hex'));

    // Nor in the endpoint workflow's history.
    const connection = await Connection.connect({ address: inject('devServerAddress') });
    try {
      const history = await new Client({ connection }).workflow.getHandle(endpointWorkflowId(created.id)).fetchHistory();
      const text = JSON.stringify(history);
      expect(text).toContain(created.id);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(Buffer.from(secret).toString('base64'));
      expect(text).not.toContain(auth);
    } finally {
      await connection.close();
    }
  });

  it('pages the list with cursors, without gaps or repeats', async () => {
    const t = await createTenant();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await create({}, t.key)).body.data.id);
    const seen: string[] = [];
    let next: string | null = null;
    let pages = 0;
    do {
      const res = await api.request('GET', `/api/v1/webhooks?limit=3${next ? `&after=${next}` : ''}`, { key: t.key });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((e: { id: string }) => e.id));
      next = res.body.paging.next;
      pages++;
    } while (next);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    const first = await api.request('GET', '/api/v1/webhooks?limit=3', { key: t.key });
    const second = await api.request('GET', `/api/v1/webhooks?limit=3&after=${first.body.paging.next}`, { key: t.key });
    const back = await api.request('GET', `/api/v1/webhooks?limit=3&before=${second.body.paging.previous}`, { key: t.key });
    expect(back.body.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(0, 3));
    const bad = await api.request('GET', '/api/v1/webhooks?after=garbage', { key: t.key });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('invalid_cursor');
  });

  it('a forged cursor naming an impossible date is 422 invalid_cursor on both lists, after and before', async () => {
    const t = await createTenant();
    await create({}, t.key);
    const forged = (ts: string) => Buffer.from(JSON.stringify([ts, '00000000-0000-4000-8000-000000000001'])).toString('base64url');
    for (const ts of ['2026-13-01 10:00:00+00', '2026-11-22 10:00:00+99', '2026-02-30 10:00:00+00', '2026-11-22 25:00:00+00']) {
      for (const path of ['/api/v1/webhooks', '/api/v1/webhook_deliveries']) {
        for (const param of ['after', 'before']) {
          const res = await api.request('GET', `${path}?${param}=${forged(ts)}`, { key: t.key });
          expect(res.status, `${path} ${param} ${ts}: ${res.text}`).toBe(422);
          expect(res.body.error.code).toBe('invalid_cursor');
        }
      }
    }
    // A real date that names no row is simply an empty page.
    const empty = await api.request('GET', `/api/v1/webhook_deliveries?after=${forged('2026-02-28 10:00:00+00')}`, { key: t.key });
    expect([empty.status, empty.body.data]).toEqual([200, []]);
  });

  it('applies the state effects of SPEC 3.2 and is safe to repeat', async () => {
    const id = (await create({})).body.data.id;
    // Simulate a verified endpoint: the test route is covered with a receiver elsewhere.
    await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [id]);
    const patch = (body: unknown) => api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body });

    const events = await patch({ events: ['crm', 'account'] });
    expect(events.body.data).toMatchObject({ events: ['crm', 'account'], health_status: 'healthy' });
    expect(events.body.data.verified_at).not.toBeNull();
    const secret = await patch({ secret: 'a-brand-new-secret-value' });
    expect(secret.body.data.health_status).toBe('healthy');
    const again = await patch({ secret: 'a-brand-new-secret-value' });
    expect(again.body.data).toEqual(secret.body.data);

    expect((await patch({ active: true })).status).toBe(200); // already active: no-op
    const off = await patch({ active: false });
    expect(off.body.data).toMatchObject({ active: false, health_status: 'healthy' });
    const on = await patch({ active: true });
    expect(on.status).toBe(409);
    expect(on.body.error.code).toBe('verification_required');
    const onWithOthers = await patch({ active: true, events: ['messages'] });
    expect(onWithOthers.status).toBe(409);
    expect((await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key })).body.data.events).toEqual(['crm', 'account']);

    const moved = await patch({ url: 'https://public-v6.example/new' });
    expect(moved.body.data).toMatchObject({ url: 'https://public-v6.example/new', health_status: 'unverified', verified_at: null });
    const movedAgain = await patch({ url: 'https://public-v6.example/new' });
    expect(movedAgain.body.data).toEqual(moved.body.data);

    await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [id]);
    const auth = await patch({ headers: { Authorization: 'Bearer abc' } });
    expect(auth.body.data).toMatchObject({ has_authorization: true, health_status: 'unverified', verified_at: null });
    const removed = await patch({ headers: { Authorization: null } });
    expect(removed.body.data.has_authorization).toBe(false);

    expect((await patch({ customer_id: tenant.customerId })).body.data.customer_id).toBe(tenant.customerId);
    expect((await patch({ customer_id: null })).body.data.customer_id).toBeNull();
    expect((await patch({ secret: 'short' })).body.error.code).toBe('invalid_secret');
    expect((await patch({ url: 'https://10.0.0.1/x' })).body.error.code).toBe('invalid_url');
    expect((await patch({ events: ['nope'] })).body.error.code).toBe('invalid_events');
    expect((await patch({ nonsense: 1 })).body.error.code).toBe('invalid_request');
  });

  it('DELETE answers 204, then the endpoint is gone', async () => {
    const id = (await create({})).body.data.id;
    const del = await api.request('DELETE', `/api/v1/webhooks/${id}`, { key: tenant.key });
    expect(del.status).toBe(204);
    expect((await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key })).status).toBe(404);
    expect((await api.request('DELETE', `/api/v1/webhooks/${id}`, { key: tenant.key })).status).toBe(404);
    expect((await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: {} })).status).toBe(404);
  });
});

describe('description', () => {
  it('round-trips through create, read, list and PATCH; null and "" remove it; PATCH of the description alone keeps health', async () => {
    const created = await create({ description: 'Orders service, production' });
    expect(created.status).toBe(201);
    expect(created.body.data.description).toBe('Orders service, production');
    const id = created.body.data.id as string;
    const read = await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key });
    expect(read.body.data.description).toBe('Orders service, production');
    const listed = await api.request('GET', '/api/v1/webhooks?limit=100', { key: tenant.key });
    expect(listed.body.data.find((e: { id: string }) => e.id === id).description).toBe('Orders service, production');

    await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [id]);
    const patched = await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { description: 'Orders, v2' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ description: 'Orders, v2', health_status: 'healthy' });
    expect((await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key })).body.data.description).toBe('Orders, v2');

    const untouched = await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { active: true } });
    expect(untouched.body.data.description).toBe('Orders, v2');
    const emptied = await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { description: '' } });
    expect(emptied.body.data.description).toBeNull();
    await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { description: 'again' } });
    const nulled = await api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body: { description: null } });
    expect(nulled.body.data.description).toBeNull();
  });

  it('is null when not given, and 512 characters is accepted while 513 is 422 invalid_description on create and PATCH', async () => {
    const plain = await create({});
    expect(plain.body.data.description).toBeNull();
    const longest = await create({ description: 'd'.repeat(512) });
    expect(longest.status).toBe(201);
    expect(longest.body.data.description).toHaveLength(512);
    const tooLong = await create({ description: 'd'.repeat(513) });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error).toMatchObject({ code: 'invalid_description', message: expect.stringContaining('description') });
    const patch = await api.request('PATCH', `/api/v1/webhooks/${plain.body.data.id}`, {
      key: tenant.key,
      body: { description: 'd'.repeat(513) },
    });
    expect(patch.status).toBe(422);
    expect(patch.body.error.code).toBe('invalid_description');
  });
});

describe('tenant isolation and scopes on every route', () => {
  const routes = (id: string) =>
    [
      ['GET', `/api/v1/webhooks/${id}`, 'webhooks:read', undefined],
      ['PATCH', `/api/v1/webhooks/${id}`, 'webhooks:write', { events: ['crm'] }],
      ['POST', `/api/v1/webhooks/${id}/test`, 'webhooks:write', undefined],
      ['DELETE', `/api/v1/webhooks/${id}`, 'webhooks:write', undefined],
    ] as const;

  it('another Account gets 404 on every route, and the endpoint is untouched', async () => {
    const id = (await create({})).body.data.id;
    for (const [method, path, , body] of routes(id)) {
      const res = await api.request(method, path, { key: other.key, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const list = await api.request('GET', '/api/v1/webhooks?limit=100', { key: other.key });
    expect(list.body.data.map((e: { id: string }) => e.id)).not.toContain(id);
    const deliveries = await api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${id}`, { key: other.key });
    expect(deliveries.body.data).toEqual([]);
    const { rows } = await testDb().query(
      `INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, status) VALUES ($1, $2, 'webhook.test', 'test:x', 'success') RETURNING id`,
      [tenant.accountId, id],
    );
    expect((await api.request('GET', `/api/v1/webhook_deliveries/${rows[0].id}`, { key: other.key })).status).toBe(404);
    expect((await api.request('GET', `/api/v1/webhook_deliveries/${rows[0].id}`, { key: tenant.key })).status).toBe(200);
    const still = await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key });
    expect(still.body.data.events).toEqual(['messages']);
  });

  it('a key without the scope gets 403 on every route', async () => {
    const id = (await create({})).body.data.id;
    const readOnly = await tenant.keyFor(['webhooks:read']);
    const writeOnly = await tenant.keyFor(['webhooks:write']);
    const eventsOnly = await tenant.keyFor(['events:read']);
    for (const [method, path, scope, body] of [
      ...routes(id),
      ['POST', '/api/v1/webhooks', 'webhooks:write', { url: publicUrl, events: ['messages'] }],
      ['GET', '/api/v1/webhooks', 'webhooks:read', undefined],
      ['GET', '/api/v1/webhook_deliveries', 'webhooks:read', undefined],
      ['GET', `/api/v1/webhook_deliveries/${id}`, 'webhooks:read', undefined],
    ] as const) {
      const key = scope === 'webhooks:read' ? writeOnly : readOnly;
      const res = await api.request(method, path, { key, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
      expect((await api.request(method, path, { key: eventsOnly, body })).status).toBe(403);
    }
    expect((await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key })).status).toBe(200);
  });
});

describe('when Temporal is down', () => {
  it('still commits and answers the change, and /healthz says what is down', async () => {
    const temporal = await startTemporalDevServer();
    const detached = await startTestApi({ temporalAddress: temporal.address, noTemporalRetries: true });
    try {
      await temporal.stop();
      const started = Date.now();
      const created = await detached.request('POST', '/api/v1/webhooks', {
        key: tenant.key,
        body: { url: publicUrl, events: ['messages'] },
      });
      expect(created.status).toBe(201);
      expect((await detached.request('GET', `/api/v1/webhooks/${created.body.data.id}`, { key: tenant.key })).status).toBe(200);
      expect((await detached.request('DELETE', `/api/v1/webhooks/${created.body.data.id}`, { key: tenant.key })).status).toBe(204);
      // Each signal gives up after its deadline instead of the SDK's long retry.
      expect(Date.now() - started).toBeLessThan(15_000);
      const health = await detached.request('GET', '/healthz');
      expect(health.status).toBe(503);
      expect(health.body.error.message).toContain('temporal: down');
    } finally {
      await detached.close();
    }
  });
});

describe('OpenAPI', () => {
  it('serves a valid OpenAPI 3.1 document with examples', async () => {
    const doc = await api.request('GET', '/api/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    for (const path of [
      '/api/v1/webhooks/{id}/test',
      '/api/v1/webhook_deliveries',
      '/api/v1/events',
      '/api/v1/event_types',
      '/api/v1/contacts/{id}',
    ])
      expect(Object.keys(doc.body.paths)).toContain(path);
    const result = await new Validator().validate(doc.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.body.components.schemas.Endpoint.example).toMatchObject({ health_status: 'healthy' });
  });

  it('serves /docs as Swagger UI whose every asset is local and answers with its content type', async () => {
    const page = await api.request('GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    // Nothing from another host: the reference must work offline.
    expect(page.text).not.toMatch(/(https?:)?\/\/[a-z0-9]/i);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toEqual(
      expect.arrayContaining(['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js', '/docs/init.js', '/api/v1/openapi.json']),
    );
    const expectedType: Record<string, RegExp> = {
      css: /^text\/css/,
      js: /^(text|application)\/javascript/,
      png: /^image\/png/,
      json: /^application\/json/,
    };
    for (const asset of assets) {
      const res = await fetch(api.url + asset);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type'), asset).toMatch(expectedType[asset.split('.').pop()!]!);
      expect((await res.arrayBuffer()).byteLength, asset).toBeGreaterThan(0);
    }
    // The initializer points Swagger UI at this API's document, and at no online validator.
    const init = await (await fetch(`${api.url}/docs/init.js`)).text();
    expect(init).toContain("url: '/api/v1/openapi.json'");
    expect(init).toContain('validatorUrl: null');
    expect((await fetch(`${api.url}/docs/assets/package.json`)).status).toBe(404);
  });
});
