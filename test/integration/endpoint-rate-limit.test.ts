/** rate_limit of an endpoint through the API on real Postgres (its effect on sending: test/e2e/delivery-controls.test.ts). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, startTestApi, testDb, type Tenant, type TestApi } from '../support/harness.js';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant();
});
afterAll(() => api.close());

const create = (body: Record<string, unknown>) =>
  api.request('POST', '/api/v1/webhooks', { key: tenant.key, body: { url: 'https://public.example/hooks', events: ['crm'], ...body } });
const patch = (id: string, body: Record<string, unknown>) => api.request('PATCH', `/api/v1/webhooks/${id}`, { key: tenant.key, body });

describe('rate_limit of an endpoint', () => {
  it('is null (unlimited) unless given, and shown in every read', async () => {
    const plain = await create({});
    expect(plain.body.data.rate_limit).toBeNull();
    const limited = await create({ rate_limit: 5 });
    expect(limited.status).toBe(201);
    expect(limited.body.data.rate_limit).toBe(5);
    const id = limited.body.data.id;
    expect((await api.request('GET', `/api/v1/webhooks/${id}`, { key: tenant.key })).body.data.rate_limit).toBe(5);
    const list = await api.request('GET', '/api/v1/webhooks?limit=100', { key: tenant.key });
    expect(list.body.data.find((e: { id: string }) => e.id === id).rate_limit).toBe(5);
    expect((await create({ rate_limit: null })).body.data.rate_limit).toBeNull();
  });

  it('changes by PATCH without touching health, verification or the configuration version; null removes it', async () => {
    const id = (await create({ rate_limit: 5 })).body.data.id;
    // A verified endpoint, as a 2xx test would leave it.
    await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [id]);
    const before = (await testDb().query(`SELECT config_version, verified_at FROM endpoints WHERE id = $1`, [id])).rows[0];
    const raised = await patch(id, { rate_limit: 50 });
    expect(raised.status).toBe(200);
    expect(raised.body.data).toMatchObject({ rate_limit: 50, health_status: 'healthy', active: true });
    expect(raised.body.data.verified_at).not.toBeNull();
    expect((await testDb().query(`SELECT config_version, verified_at FROM endpoints WHERE id = $1`, [id])).rows[0]).toEqual(before);
    // Repeating it is safe; leaving it out keeps it.
    expect((await patch(id, { rate_limit: 50 })).body.data.rate_limit).toBe(50);
    expect((await patch(id, { events: ['crm', 'messages'] })).body.data.rate_limit).toBe(50);
    expect((await patch(id, { rate_limit: null })).body.data.rate_limit).toBeNull();
  });

  it.each([0, -1, 1.5, '5', true, 10_001])('refuses %j with 422 invalid_rate_limit on create and PATCH', async (value) => {
    const created = await create({ rate_limit: value });
    expect(created.status).toBe(422);
    expect(created.body.error.code).toBe('invalid_rate_limit');
    expect(created.body.error.message).toMatch(/rate_limit/);
    const id = (await create({})).body.data.id;
    const patched = await patch(id, { rate_limit: value });
    expect(patched.status).toBe(422);
    expect(patched.body.error.code).toBe('invalid_rate_limit');
  });
});
