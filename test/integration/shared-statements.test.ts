/**
 * Statements shared by many callers, so that a hundred endpoints or Customers cost Postgres a few
 * statements instead of one each: the latest successes of a worker's sessions (one statement per
 * window), the Customer checks of concurrent publishes (one statement for those waiting together,
 * a yes remembered), and the publish's read of known keys and routable endpoints (only the batch's
 * Customers' endpoints), and the next due times of a worker's waiting sessions; a session's
 * report, and a direct session's report with its lease's end.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { showSuccesses } from '../../src/delivery/success-display.js';
import { createCustomerCheck } from '../../src/events/customer-check.js';
import { claimWithEndpointsFor, nextDueAtFor, reportSession } from '../../src/db/deliveries.js';
import { areCustomersOfAccounts, createCustomer } from '../../src/db/directory.js';
import { recordEndpointSuccesses } from '../../src/db/endpoints.js';
import { endDirectSession } from '../../src/db/session-leases.js';
import { findKnownKeysAndEndpoints } from '../../src/db/events.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { createTenant, eventually, startTestApi, storeDemandEvent, testDb, type TestApi } from '../support/harness.js';
import { beforeEachQuery } from '../support/hooked-pool.js';

async function endpoint(accountId: string, over: { customerId?: string; health?: string; streak?: number } = {}): Promise<string> {
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, customer_id, url, events, secret_ciphertext, health_status, failure_streak)
     VALUES ($1, $2, 'https://public.example/h', '{crm}', '\\x00', $3, $4) RETURNING id`,
    [accountId, over.customerId ?? null, over.health ?? 'healthy', over.streak ?? 0],
  );
  return rows[0]!.id;
}

async function shown(id: string): Promise<{ at: Date | null; code: number | null }> {
  const { rows } = await testDb().query(`SELECT last_success_at AS at, last_response_code AS code FROM endpoints WHERE id = $1`, [id]);
  return rows[0];
}

/** The pool, counting the statements sent through it. */
function counting(db: Db): { db: Db; statements: () => number } {
  let n = 0;
  return { db: beforeEachQuery(async () => n++, db), statements: () => n };
}

describe('latest successes shown on endpoints', () => {
  it('many endpoints in one statement; the latest of an endpoint given twice; never an older over a later; never on a failing endpoint', async () => {
    const t = await createTenant();
    const [a, b, failing, ahead] = [
      await endpoint(t.accountId),
      await endpoint(t.accountId),
      await endpoint(t.accountId, { health: 'degraded', streak: 2 }),
      await endpoint(t.accountId),
    ];
    const at = (s: number) => new Date(Date.UTC(2026, 10, 24, 6, 0, s));
    await recordEndpointSuccesses(testDb(), [{ id: ahead, at: at(50), responseCode: 204 }]);
    const { db, statements } = counting(testDb());
    await recordEndpointSuccesses(db, [
      { id: a, at: at(2), responseCode: 200 },
      { id: b, at: at(1), responseCode: 201 },
      { id: a, at: at(1), responseCode: 202 },
      { id: failing, at: at(1), responseCode: 200 },
      { id: ahead, at: at(10), responseCode: 200 },
    ]);
    expect(statements()).toBe(1);
    expect(await shown(a)).toEqual({ at: at(2), code: 200 });
    expect(await shown(b)).toEqual({ at: at(1), code: 201 });
    expect(await shown(failing)).toEqual({ at: null, code: null });
    expect(await shown(ahead)).toEqual({ at: at(50), code: 204 });
  });

  it('two sessions’ displays within the window go in one statement, and both land', async () => {
    const t = await createTenant();
    const [a, b] = [await endpoint(t.accountId), await endpoint(t.accountId)];
    const { db, statements } = counting(testDb());
    const show = showSuccesses(db, 50);
    const at = new Date(Date.now() - 1_000);
    show({ id: a, at, responseCode: 200 });
    show({ id: b, at, responseCode: 201 });
    show({ id: a, at: new Date(at.getTime() + 1), responseCode: 202 });
    expect(statements()).toBe(0);
    // Both land (whenever a busy machine gets to it), by the one statement.
    await eventually(async () => (await shown(a)).code === 202 && (await shown(b)).code === 201);
    expect(statements()).toBe(1);
    expect(await shown(a)).toEqual({ at: new Date(at.getTime() + 1), code: 202 });
    expect(await shown(b)).toEqual({ at, code: 201 });
  });
});

describe('customer checks of publishes', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => {
    await api.close();
  });

  it('one statement answers each pair: a Customer of another Account is not one of this Account', async () => {
    const [t, other] = [await createTenant(), await createTenant()];
    const unknown = '00000000-0000-4000-8000-000000000000';
    const { db, statements } = counting(testDb());
    expect(
      await areCustomersOfAccounts(db, [
        { accountId: t.accountId, customerId: t.customerId },
        { accountId: t.accountId, customerId: other.customerId },
        { accountId: other.accountId, customerId: other.customerId },
        { accountId: t.accountId, customerId: unknown },
        { accountId: t.accountId, customerId: t.customerId },
      ]),
    ).toEqual([true, false, true, false, true]);
    expect(statements()).toBe(1);
  });

  it('concurrent publishes each get their own verdict', async () => {
    const [t, other] = [await createTenant(), await createTenant()];
    const second = await createCustomer(testDb(), { accountId: t.accountId, name: 'Customer B' });
    const customers = [t.customerId, other.customerId, second.id, other.customerId, t.customerId, second.id];
    const statuses = await Promise.all(
      customers.map((customerId, i) =>
        api
          .request('POST', '/api/v1/events', {
            key: t.key,
            body: {
              type: 'crm.demand.created',
              customer_id: customerId,
              data: {
                entity_type: 'demand',
                entity_id: `cc_${i}`,
                before_data: null,
                after_data: { id: `cc_${i}`, version: 1, status: 'open', contact_id: 'c', title: 'x' },
                actor_user_id: null,
              },
            },
          })
          .then((r) => [r.status, r.body?.error?.code ?? null]),
      ),
    );
    expect(statuses).toEqual(customers.map((c) => (c === other.customerId ? [422, 'invalid_event'] : [201, null])));
  });
});

describe('the remembered Customer checks', () => {
  it('a yes is asked once; a no, another Account’s pair and a Customer created since are asked each time', async () => {
    const [t, other] = [await createTenant(), await createTenant()];
    const { db, statements } = counting(testDb());
    const check = createCustomerCheck(db);
    expect(await check(t.accountId, t.customerId)).toBe(true);
    expect(await check(t.accountId, t.customerId)).toBe(true);
    expect(statements()).toBe(1);
    // Remembering t's yes says nothing of the same Customer under another Account.
    expect(await check(other.accountId, t.customerId)).toBe(false);
    expect(await check(other.accountId, t.customerId)).toBe(false);
    expect(statements()).toBe(3);
    const late = await createCustomer(testDb(), { accountId: other.accountId, name: 'Customer later' });
    expect(await check(other.accountId, late.id)).toBe(true);
    expect(statements()).toBe(4);
  });

  it('remembers at most its bound, forgetting the oldest first', async () => {
    const t = await createTenant();
    const second = await createCustomer(testDb(), { accountId: t.accountId, name: 'Customer B' });
    const { db, statements } = counting(testDb());
    const check = createCustomerCheck(db, 1);
    await check(t.accountId, t.customerId);
    await check(t.accountId, second.id);
    expect(statements()).toBe(2);
    expect(await check(t.accountId, second.id)).toBe(true);
    expect(statements()).toBe(2);
    expect(await check(t.accountId, t.customerId)).toBe(true);
    expect(statements()).toBe(3);
  });
});

describe('known keys and routable endpoints of a publish batch', () => {
  it('known keys of this stream only; endpoints of the batch’s Customers and of the whole Account, not of other Customers', async () => {
    const [t, other] = [await createTenant(), await createTenant()];
    const second = await createCustomer(testDb(), { accountId: t.accountId, name: 'Customer B' });
    const third = await createCustomer(testDb(), { accountId: t.accountId, name: 'Customer C' });
    const [wide, ofFirst, ofSecond, ofThird] = [
      await endpoint(t.accountId),
      await endpoint(t.accountId, { customerId: t.customerId }),
      await endpoint(t.accountId, { customerId: second.id }),
      await endpoint(t.accountId, { customerId: third.id }),
    ];
    await storeDemandEvent(t.accountId, 'known_1');
    await storeDemandEvent(other.accountId, 'known_2');
    const keys = ['crm:demand:known_1:1', 'crm:demand:known_2:1', 'crm:demand:known_0:1', 'crm:demand:known_10:1'];
    const live = await findKnownKeysAndEndpoints(testDb(), t.accountId, 'live', keys, [t.customerId, null, second.id, t.customerId]);
    expect(live.knownKeys).toEqual(['crm:demand:known_1:1']);
    expect(live.endpoints.map((e) => e.id).sort()).toEqual([wide, ofFirst, ofSecond].sort());
    expect(live.endpoints.map((e) => e.id)).not.toContain(ofThird);
    // The same key in the other environment is another stream's.
    const sandbox = await findKnownKeysAndEndpoints(testDb(), t.accountId, 'sandbox', keys, [null]);
    expect(sandbox.knownKeys).toEqual([]);
    expect(sandbox.endpoints.map((e) => e.id)).toEqual([wide]);
  });
});

describe('claims shared by sessions, with their endpoints', () => {
  it('each request that got deliveries gets its endpoint as the claim read it; one that got none gets none', async () => {
    const t = await createTenant();
    const [a, b, idle] = [await endpoint(t.accountId), await endpoint(t.accountId), await endpoint(t.accountId)];
    for (let i = 0; i < 3; i++) await storeDemandEvent(t.accountId, `with_endpoint_${i}`);
    await testDb().query(`UPDATE deliveries SET next_attempt_at = NULL WHERE endpoint_id = $1`, [idle]);
    await testDb().query(`UPDATE endpoints SET rate_limit = 7 WHERE id = $1`, [b]);
    const now = new Date(Date.now() + 1_000);
    const got = await claimWithEndpointsFor(
      testDb(),
      [
        { endpointId: a, now, limit: 2, owner: 'a' },
        { endpointId: b, now, limit: 1, owner: 'b' },
        { endpointId: b, now, limit: 5, owner: 'b2' },
        { endpointId: idle, now, limit: 5, owner: 'idle' },
      ],
      60_000,
    );
    expect(got.map((g) => g.deliveries.length)).toEqual([2, 1, 2, 0]);
    expect(got.map((g) => g.endpoint?.id)).toEqual([a, b, b, undefined]);
    expect(got[1]!.endpoint).toMatchObject({ rate_limit: 7, health_status: 'healthy', active: true });
  });

  it('is planned once per connection, not at every call', async () => {
    const t = await createTenant();
    const id = await endpoint(t.accountId);
    // One connection: prepared statements are per connection.
    const one = createPool(inject('databaseUrl'), 1);
    try {
      for (let i = 0; i < 8; i++)
        await claimWithEndpointsFor(one, [{ endpointId: id, now: new Date(), limit: 32, owner: `p${i}` }], 60_000);
      const { rows } = await one.query(
        `SELECT generic_plans::int AS generic FROM pg_prepared_statements WHERE name = 'claim_due_deliveries_for'`,
      );
      expect(rows[0].generic).toBeGreaterThan(0);
    } finally {
      await one.end();
    }
  });
});

describe('next due times of waiting sessions', () => {
  it('one statement answers many endpoints, in their order: held and finished deliveries never count', async () => {
    const t = await createTenant();
    const [soon, later, none] = [await endpoint(t.accountId), await endpoint(t.accountId), await endpoint(t.accountId)];
    for (let i = 0; i < 2; i++) await storeDemandEvent(t.accountId, `next_due_${i}`);
    const base = Date.now();
    const at = (s: number) => new Date(base + s * 1_000);
    // Two of `soon`'s: the earlier counts. `none`'s: one held, one finished.
    const set = `UPDATE deliveries SET next_attempt_at = $2 WHERE id = (SELECT id FROM deliveries WHERE endpoint_id = $1 ORDER BY id LIMIT 1 OFFSET $3)`;
    await testDb().query(set, [soon, at(30), 0]);
    await testDb().query(set, [soon, at(60), 1]);
    await testDb().query(`UPDATE deliveries SET next_attempt_at = $2 WHERE endpoint_id = $1`, [later, at(90)]);
    await testDb().query(
      `UPDATE deliveries SET held_since = now(), next_attempt_at = $2 WHERE id = (SELECT id FROM deliveries WHERE endpoint_id = $1 ORDER BY id LIMIT 1)`,
      [none, at(10)],
    );
    await testDb().query(`UPDATE deliveries SET status = 'success', next_attempt_at = NULL WHERE endpoint_id = $1 AND held_since IS NULL`, [
      none,
    ]);
    const { db, statements } = counting(testDb());
    expect(await nextDueAtFor(db, [later, none, soon, later])).toEqual([at(90), null, at(30), at(90)]);
    expect(statements()).toBe(1);
  });

  it('is planned once per connection, not at every call, whether asked for one endpoint or many', async () => {
    const t = await createTenant();
    const ids = [await endpoint(t.accountId), await endpoint(t.accountId)];
    const one = createPool(inject('databaseUrl'), 1);
    try {
      for (let i = 0; i < 8; i++) await nextDueAtFor(one, i % 2 ? ids : ids.slice(0, 1));
      const { rows } = await one.query(`SELECT generic_plans::int AS generic FROM pg_prepared_statements WHERE name = 'next_due_at_for'`);
      expect(rows[0].generic).toBeGreaterThan(0);
    } finally {
      await one.end();
    }
  });
});

describe('a session’s report', () => {
  it('next due time, deliveries owed and the healthy session’s record, in one statement', async () => {
    const t = await createTenant();
    const id = await endpoint(t.accountId);
    for (let i = 0; i < 3; i++) await storeDemandEvent(t.accountId, `report_${i}`);
    const later = new Date(Date.now() + 60_000);
    await testDb().query(`UPDATE deliveries SET next_attempt_at = $2 WHERE endpoint_id = $1`, [id, later]);
    const observedAt = new Date();
    const lastSuccessAt = new Date(Date.now() - 5_000);
    const { db, statements } = counting(testDb());
    const report = await reportSession(db, id, { lastSuccessAt, lastResponseCode: 204 }, observedAt);
    expect(report).toEqual({ nextDueAt: later, owed: 3, healthRecorded: true });
    expect(statements()).toBe(1);
    const { rows } = await testDb().query(`SELECT last_success_at, last_response_code, next_attempt_at FROM endpoints WHERE id = $1`, [id]);
    expect(rows[0]).toEqual({ last_success_at: lastSuccessAt, last_response_code: 204, next_attempt_at: later });
  });

  it('no record without a session of successes, on an endpoint no longer healthy, or verified after the session’s time', async () => {
    const t = await createTenant();
    const [plain, degraded, reverified] = [
      await endpoint(t.accountId),
      await endpoint(t.accountId, { health: 'degraded', streak: 1 }),
      await endpoint(t.accountId),
    ];
    const observedAt = new Date(Date.now() - 10_000);
    await testDb().query(`UPDATE endpoints SET verified_at = now() WHERE id = $1`, [reverified]);
    const success = { lastSuccessAt: new Date(), lastResponseCode: 200 };
    expect(await reportSession(testDb(), plain, null, observedAt)).toEqual({ nextDueAt: null, owed: 0, healthRecorded: false });
    expect((await reportSession(testDb(), degraded, success, observedAt)).healthRecorded).toBe(false);
    expect((await reportSession(testDb(), reverified, success, observedAt)).healthRecorded).toBe(false);
    expect(await shown(plain)).toEqual({ at: null, code: null });
    expect(await shown(degraded)).toEqual({ at: null, code: null });
    expect(await shown(reverified)).toEqual({ at: null, code: null });
  });

  /** The endpoint's session lease held by `owner`, as a direct session's take leaves it. */
  const leased = (id: string, owner: string) =>
    testDb().query(`UPDATE endpoints SET session_owner = $2, session_until = now() + interval '10 seconds' WHERE id = $1`, [id, owner]);
  const leaseOf = async (id: string) =>
    (await testDb().query(`SELECT session_owner, handover_at FROM endpoints WHERE id = $1`, [id])).rows[0] as {
      session_owner: string | null;
      handover_at: Date | null;
    };

  it('of a direct session: the report, the healthy record and the lease given back in one statement, telling of work due that nobody holds', async () => {
    const t = await createTenant();
    const id = await endpoint(t.accountId);
    await leased(id, 'direct/ends');
    await storeDemandEvent(t.accountId, 'direct_end_later');
    const later = new Date(Date.now() + 60_000);
    await testDb().query(`UPDATE deliveries SET next_attempt_at = $2 WHERE endpoint_id = $1`, [id, later]);
    await storeDemandEvent(t.accountId, 'direct_end_due'); // due now, and nobody holds it
    const lastSuccessAt = new Date(Date.now() - 5_000);
    const { db, statements } = counting(testDb());
    const ended = await endDirectSession(db, id, 'direct/ends', {
      healthy: { lastSuccessAt, lastResponseCode: 204 },
      hadOutcomes: true,
      observedAt: new Date(),
      lastPostAgoMs: 100,
    });
    expect(statements()).toBe(1);
    expect(ended.report).toMatchObject({ owed: 2, healthRecorded: true });
    expect(ended.report.nextDueAt!.getTime()).toBeLessThan(later.getTime());
    expect(ended.lease).toEqual({ due: true, accountId: t.accountId, handedOver: false });
    expect(await leaseOf(id)).toEqual({ session_owner: null, handover_at: null });
    const { rows } = await testDb().query(`SELECT last_success_at, last_response_code, next_attempt_at FROM endpoints WHERE id = $1`, [id]);
    expect(rows[0]).toEqual({ last_success_at: lastSuccessAt, last_response_code: 204, next_attempt_at: ended.report.nextDueAt });
  });

  it('of a direct session with outcomes it cannot record (a failure, a verification after it) hands over; one whose lease was taken records nothing', async () => {
    const t = await createTenant();
    const [failed, reverified, taken] = [await endpoint(t.accountId), await endpoint(t.accountId), await endpoint(t.accountId)];
    const observedAt = new Date(Date.now() - 10_000);
    const success = { lastSuccessAt: new Date(), lastResponseCode: 200 };
    for (const id of [failed, reverified]) await leased(id, 'direct/mine');
    await leased(taken, 'direct/other');
    await testDb().query(`UPDATE endpoints SET verified_at = now() WHERE id = $1`, [reverified]);
    const end = (id: string, healthy: typeof success | null) =>
      endDirectSession(testDb(), id, 'direct/mine', { healthy, hadOutcomes: true, observedAt, lastPostAgoMs: null });

    const afterFailure = await end(failed, null);
    expect(afterFailure.report.healthRecorded).toBe(false);
    expect(afterFailure.lease).toMatchObject({ due: false, handedOver: true });
    expect(await leaseOf(failed)).toMatchObject({ session_owner: null, handover_at: expect.any(Date) });

    const afterVerification = await end(reverified, success);
    expect(afterVerification.report.healthRecorded).toBe(false);
    expect(afterVerification.lease).toMatchObject({ handedOver: true });
    expect(await shown(reverified)).toEqual({ at: null, code: null });

    const lost = await end(taken, success);
    expect(lost).toMatchObject({ report: { healthRecorded: false }, lease: null });
    expect(await leaseOf(taken)).toEqual({ session_owner: 'direct/other', handover_at: null });
    expect(await shown(taken)).toEqual({ at: null, code: null });
  });
});
