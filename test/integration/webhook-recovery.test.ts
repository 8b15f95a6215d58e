/** POST /api/v1/webhooks/{id}/recover against real Postgres (the sending itself is in test/e2e/delivery-controls.test.ts). */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, startTestApi, storeDemandEvent, testDb, type Tenant, type TestApi } from '../support/harness.js';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  [tenant, other] = await Promise.all([createTenant(), createTenant()]);
});
afterAll(() => api.close());

async function endpoint(t = tenant): Promise<string> {
  const res = await api.request('POST', '/api/v1/webhooks', { key: t.key, body: { url: 'https://public.example/hooks', events: ['crm'] } });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

interface Row {
  status: string;
  terminal_reason?: string | null;
  created_at?: Date;
  environment?: 'live' | 'sandbox';
  leased?: boolean;
  test?: boolean;
}

/** A delivery row as the engine would have left it, of a real stored event unless `test`. */
async function delivery(endpointId: string, r: Row, t = tenant): Promise<string> {
  const { event } = await storeDemandEvent(t.accountId, `dem-${crypto.randomUUID()}`);
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, attempts,
       terminal_reason, created_at, leased_until, lease_owner, next_attempt_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, coalesce($9, now()), $10, $11, CASE WHEN $7 = 'failed' THEN now() + interval '1 hour' END)
     RETURNING id`,
    [
      t.accountId,
      endpointId,
      r.test ? null : event.id,
      r.test ? 'webhook.test' : event.type,
      r.test ? `test:${endpointId}` : event.idempotency_key,
      r.test ? null : (r.environment ?? 'live'),
      r.status,
      r.terminal_reason ?? null,
      r.created_at ?? null,
      r.leased ? new Date(Date.now() + 60_000) : null,
      r.leased ? 'a-running-session' : null,
    ],
  );
  return rows[0]!.id;
}

async function statusOf(id: string) {
  const { rows } = await testDb().query(`SELECT status, terminal_reason, next_attempt_at, held_since FROM deliveries WHERE id = $1`, [id]);
  return rows[0];
}

const recover = (id: string, body: unknown, key = tenant.key) => api.request('POST', `/api/v1/webhooks/${id}/recover`, { key, body });

describe('POST /api/v1/webhooks/{id}/recover', () => {
  it('puts the failed, exhausted and limited deliveries of the window back to pending, and a repeat recovers nothing more', async () => {
    const id = await endpoint();
    const otherEndpoint = await endpoint();
    const since = new Date(Date.now() - 60 * 60_000);
    const recoverable = [
      await delivery(id, { status: 'failed' }),
      await delivery(id, { status: 'exhausted', terminal_reason: 'hold_expired' }),
      await delivery(id, { status: 'limited', terminal_reason: 'free_plan_limit' }),
    ];
    const kept = {
      success: await delivery(id, { status: 'success' }),
      pending: await delivery(id, { status: 'pending' }),
      endpointDeleted: await delivery(id, { status: 'exhausted', terminal_reason: 'endpoint_deleted' }),
      eventDeleted: await delivery(id, { status: 'exhausted', terminal_reason: 'event_deleted' }),
      testSend: await delivery(id, { status: 'failed', test: true }),
      beforeWindow: await delivery(id, { status: 'failed', created_at: new Date(since.getTime() - 1000) }),
      sandbox: await delivery(id, { status: 'exhausted', terminal_reason: 'hold_expired', environment: 'sandbox' }),
      inFlight: await delivery(id, { status: 'failed', leased: true }),
      otherEndpoint: await delivery(otherEndpoint, { status: 'failed' }),
    };
    const before = Object.fromEntries(await Promise.all(Object.entries(kept).map(async ([k, v]) => [k, await statusOf(v)])));

    const res = await recover(id, { since: since.toISOString() });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      recovered: 3,
      since: since.toISOString(),
      until: expect.any(String),
      statuses: ['failed', 'exhausted', 'limited'],
    });
    expect(Math.abs(new Date(res.body.data.until).getTime() - Date.now())).toBeLessThan(10_000);
    for (const d of recoverable) {
      const row = await statusOf(d);
      expect(row).toMatchObject({ status: 'pending', terminal_reason: null, held_since: null });
      expect(row.next_attempt_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    }
    for (const [k, v] of Object.entries(kept)) expect({ k, row: await statusOf(v) }).toEqual({ k, row: before[k] });

    const again = await recover(id, { since: since.toISOString() });
    expect(again.status).toBe(200);
    expect(again.body.data.recovered).toBe(0);
  });

  it('recovers only the statuses named and only up to until; a sandbox key only sandbox deliveries', async () => {
    const id = await endpoint();
    const failed = await delivery(id, { status: 'failed' });
    const limited = await delivery(id, { status: 'limited', terminal_reason: 'free_plan_limit' });
    const old = await delivery(id, { status: 'limited', created_at: new Date('2026-01-01T12:00:00Z') });
    const sandbox = await delivery(id, { status: 'limited', environment: 'sandbox' });

    const onlyLimited = await recover(id, { since: '2026-01-01T00:00:00Z', statuses: ['limited', 'limited'] });
    expect(onlyLimited.body.data).toMatchObject({ recovered: 2, since: '2026-01-01T00:00:00.000Z', statuses: ['limited'] });
    expect((await statusOf(failed)).status).toBe('failed');
    expect((await statusOf(limited)).status).toBe('pending');
    expect((await statusOf(old)).status).toBe('pending');
    expect((await statusOf(sandbox)).status).toBe('limited');

    const sandboxKey = await tenant.keyFor(['webhooks:write'], 'sandbox');
    const window = { since: '2026-01-01T00:00:00+02:00', until: '2026-01-01T11:00:00+01:00', statuses: ['failed'] };
    const empty = await recover(id, window, sandboxKey);
    expect(empty.body.data).toEqual({
      recovered: 0,
      since: '2025-12-31T22:00:00.000Z',
      until: '2026-01-01T10:00:00.000Z',
      statuses: ['failed'],
    });
    const fromSandbox = await recover(id, { since: '2026-01-02T00:00:00Z' }, sandboxKey);
    expect(fromSandbox.body.data.recovered).toBe(1);
    expect((await statusOf(sandbox)).status).toBe('pending');
    expect((await statusOf(failed)).status).toBe('failed');
  });

  it('refuses a bad body with 422 invalid_recovery naming the field', async () => {
    const id = await endpoint();
    const cases: [unknown, RegExp][] = [
      [{}, /since/],
      [{ since: 'yesterday' }, /since/],
      [{ since: '2026-11-22' }, /since/],
      [{ since: '2026-11-22T10:00:00Z', until: 12 }, /until/],
      [{ since: '2026-11-22T10:00:00Z', until: '2026-11-22T09:59:59Z' }, /since.*after until/],
      [{ since: '2026-11-22T10:00:00Z', statuses: [] }, /statuses/],
      [{ since: '2026-11-22T10:00:00Z', statuses: ['success'] }, /statuses/],
      [{ since: '2026-11-22T10:00:00Z', statuses: 'failed' }, /statuses/],
      [{ since: '2026-11-22T10:00:00Z', extra: true }, /extra/],
    ];
    for (const [body, message] of cases) {
      const res = await recover(id, body);
      expect({ body, status: res.status, code: res.body.error.code }).toEqual({ body, status: 422, code: 'invalid_recovery' });
      expect(res.body.error.message).toMatch(message);
    }
    // A bodiless POST lacks since.
    const bodiless = await api.request('POST', `/api/v1/webhooks/${id}/recover`, { key: tenant.key });
    expect(bodiless.status).toBe(422);
    expect(bodiless.body.error.message).toMatch(/since/);
  });

  it("is 404 for another Account's endpoint, an unknown or deleted one, and 403 without webhooks:write", async () => {
    const mine = await endpoint();
    const theirs = await endpoint(other);
    const theirFailed = await delivery(theirs, { status: 'failed' }, other);
    const body = { since: '2026-01-01T00:00:00Z' };
    const stranger = await recover(theirs, body);
    expect(stranger.status).toBe(404);
    expect(stranger.body.error.code).toBe('not_found');
    expect((await statusOf(theirFailed)).status).toBe('failed');
    expect((await recover(crypto.randomUUID(), body)).status).toBe(404);
    expect((await recover('not-a-uuid', body)).status).toBe(404);
    const readOnly = await recover(mine, body, await tenant.keyFor(['webhooks:read']));
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.error.code).toBe('insufficient_scope');
    expect((await api.request('DELETE', `/api/v1/webhooks/${mine}`, { key: tenant.key })).status).toBe(204);
    expect((await recover(mine, body)).status).toBe(404);
  });
});
