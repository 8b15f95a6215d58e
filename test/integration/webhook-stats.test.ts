/** GET /api/v1/webhooks/{id}/stats: an endpoint's attempts per hour over the last 24 hours. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookPlatform } from '@webhook-platform/sdk';
import { createTenant, startTestApi, testDb, type Tenant, type TestApi } from '../support/harness.js';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  [api, tenant, other] = await Promise.all([startTestApi(), createTenant(), createTenant()]);
});
afterAll(() => api.close());

async function endpoint(t: Tenant): Promise<string> {
  const res = await api.request('POST', '/api/v1/webhooks', { key: t.key, body: { url: 'https://public.example/hooks', events: ['crm'] } });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

const HOUR = 3600_000;

/** One delivery of the endpoint with attempts started `agoMs` before now, each failed when `error` is set. */
async function delivery(accountId: string, endpointId: string, attempts: { agoMs: number; error?: string }[]) {
  const now = Date.now();
  const last = new Date(now - Math.min(...attempts.map((a) => a.agoMs)));
  const { rows } = await testDb().query<{ id: string; created_at: Date }>(
    `INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, environment, status, attempts, last_attempt_at)
     VALUES ($1, $2, 'crm.demand.created', gen_random_uuid()::text, 'live', 'failed', $3, $4) RETURNING id, created_at`,
    [accountId, endpointId, attempts.length, last],
  );
  for (const [i, a] of attempts.entries()) {
    await testDb().query(
      `INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, response_code, error, delivery_created_at)
       SELECT $1, $2, $3, 5, $4, $5, created_at FROM deliveries WHERE id = $1`,
      [rows[0]!.id, i + 1, new Date(now - a.agoMs), a.error ? 503 : 200, a.error ?? null],
    );
  }
}

describe('endpoint stats', () => {
  it('counts successes and failures per hour, oldest first, the current hour last, nothing older than 24 hours', async () => {
    const id = await endpoint(tenant);
    const otherId = await endpoint(tenant);
    await delivery(tenant.accountId, id, [{ agoMs: 2 * HOUR + 60_000, error: 'non_2xx' }, { agoMs: 1000 }]);
    await delivery(tenant.accountId, id, [{ agoMs: 2000, error: 'timeout' }]);
    await delivery(tenant.accountId, id, [{ agoMs: 30 * HOUR }]);
    await delivery(tenant.accountId, otherId, [{ agoMs: 1000 }]);

    const hourOf = (ms: number) => new Date(ms - (ms % HOUR)).toISOString();
    const hourBefore = hourOf(Date.now());
    const res = await api.request('GET', `/api/v1/webhooks/${id}/stats`, { key: tenant.key });
    const hourAfter = hourOf(Date.now());
    expect(res.status).toBe(200);
    const { since, hours } = res.body.data as { since: string; hours: { hour: string; successes: number; failures: number }[] };
    expect(hours).toHaveLength(24);
    expect(since).toBe(hours[0]!.hour);
    // The current hour: the one before or after the request, should it cross an hour.
    expect([hourBefore, hourAfter]).toContain(hours.at(-1)!.hour);
    for (let i = 1; i < hours.length; i++) expect(Date.parse(hours[i]!.hour) - Date.parse(hours[i - 1]!.hour)).toBe(HOUR);

    const total = (k: 'successes' | 'failures') => hours.reduce((n, h) => n + h[k], 0);
    expect([total('successes'), total('failures')]).toEqual([1, 2]);
    // The attempt of two hours ago sits in its own hour, not the current one.
    const twoHoursAgo = new Date(Date.now() - 2 * HOUR - 60_000);
    twoHoursAgo.setUTCMinutes(0, 0, 0);
    expect(hours.find((h) => h.hour === twoHoursAgo.toISOString())).toMatchObject({ failures: 1 });

    // The SDK reads the same answer.
    const sdk = new WebhookPlatform({ baseUrl: `${api.url}/api/v1`, apiKey: tenant.key });
    expect(await sdk.webhooks.stats(id)).toEqual(res.body.data);
  });

  it("is 404 for another Account's endpoint or an unknown id, 403 without webhooks:read", async () => {
    const theirs = await endpoint(other);
    expect((await api.request('GET', `/api/v1/webhooks/${theirs}/stats`, { key: tenant.key })).body.error.code).toBe('not_found');
    expect((await api.request('GET', `/api/v1/webhooks/not-a-uuid/stats`, { key: tenant.key })).status).toBe(404);
    const streamOnly = await tenant.keyFor(['events:read']);
    const mine = await endpoint(tenant);
    const denied = await api.request('GET', `/api/v1/webhooks/${mine}/stats`, { key: streamOnly });
    expect([denied.status, denied.body.error.code]).toEqual([403, 'insufficient_scope']);
  });
});
