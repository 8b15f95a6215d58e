/**
 * Per-endpoint hourly rollups (migration 0030) on real Postgres: kept by the paths that record
 * attempts and end deliveries, equal to a count of the raw rows, read by the stats route, removed
 * with their endpoint and by retention, and backfilled by the migration.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { HOLD_MS } from '../../src/core/health.js';
import { LEASE_MS } from '../../src/core/runtime-limits.js';
import {
  claimWithEndpointsFor,
  closeForDeletedEvent,
  exhaustOpenDeliveries,
  expireHeldDeliveries,
  holdOpenDeliveries,
  recordDeliveryAttempts,
  type AttemptResult,
} from '../../src/db/deliveries.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { deleteEventsWhere } from '../../src/db/events.js';
import { deleteRollupsBefore } from '../../src/db/endpoint-hourly-stats.js';
import { createAttemptRecorder } from '../../src/delivery/attempt-recorder.js';
import { runDeliverySession } from '../../src/delivery/delivery-session.js';
import { createSessionRegistry } from '../../src/delivery/session-registry.js';
import { ingestEvent, storeEvent } from '../../src/events/store-event.js';
import { samples } from '../support/catalog-samples.js';
import { createTenant, testDb } from '../support/harness.js';
import { scratchDatabaseBefore } from '../support/scratch-database.js';
import { sessionTestBed } from '../support/session-test-bed.js';

const bed = sessionTestBed('rollups');

/** One delivery session of the endpoint, as the worker runs it: claims, POSTs, records through the batching recorder. */
async function deliverDue(endpointId: string) {
  return runDeliverySession(
    {
      db: testDb(),
      secretBox: bed.api.deps.secretBox,
      httpClient: bed.httpClient,
      sessions: createSessionRegistry(),
      recorder: createAttemptRecorder(testDb()),
      concurrency: 4,
      lingerMs: 0,
      maxSessionMs: 30_000,
      claim: async (req) => (await claimWithEndpointsFor(testDb(), [req], LEASE_MS))[0]!,
    },
    { endpointId, owner: `rollups/${crypto.randomUUID()}`, clock: Date.now, limit: 100, signal: new AbortController().signal },
  );
}

/** The failed deliveries of the endpoint are due again now (their retry time come). */
async function retryNow(endpointId: string): Promise<void> {
  await testDb().query(`UPDATE deliveries SET next_attempt_at = now() WHERE endpoint_id = $1 AND status = 'failed'`, [endpointId]);
}

interface Hourly {
  endpoint_id: string;
  hour: string;
  ok: number;
  failed: number;
  ms: number;
  exhausted: number;
  limited: number;
}

const byKey = (a: Hourly, b: Hourly) => `${a.endpoint_id}${a.hour}`.localeCompare(`${b.endpoint_id}${b.hour}`);

/** The rollups of the endpoints, every counter. */
async function rollupsOf(endpointIds: string[]): Promise<Hourly[]> {
  const { rows } = await testDb().query<Hourly>(
    `SELECT endpoint_id, hour::text, attempts_succeeded AS ok, attempts_failed AS failed, attempt_ms_total::int AS ms,
            deliveries_exhausted AS exhausted, deliveries_limited AS limited
     FROM endpoint_hourly_stats WHERE endpoint_id = ANY($1::uuid[])`,
    [endpointIds],
  );
  return rows.sort(byKey);
}

/** The same, counted from the raw rows: attempts by the hour they started, exhausted deliveries by their last update, limited by creation. */
async function rawCountsOf(db: pg.Pool | pg.Client, endpointIds: string[]): Promise<Hourly[]> {
  const { rows } = await db.query<Hourly>(
    `SELECT endpoint_id, hour::text, sum(ok)::int AS ok, sum(failed)::int AS failed, sum(ms)::int AS ms,
            sum(exhausted)::int AS exhausted, sum(limited)::int AS limited
     FROM (
       SELECT d.endpoint_id, date_trunc('hour', a.started_at, 'UTC') AS hour, (a.error IS NULL)::int AS ok, (a.error IS NOT NULL)::int AS failed,
              a.duration_ms AS ms, 0 AS exhausted, 0 AS limited
       FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = ANY($1::uuid[])
       UNION ALL
       SELECT endpoint_id, date_trunc('hour', updated_at, 'UTC'), 0, 0, 0, 1, 0 FROM deliveries WHERE status = 'exhausted' AND endpoint_id = ANY($1::uuid[])
       UNION ALL
       SELECT endpoint_id, date_trunc('hour', created_at, 'UTC'), 0, 0, 0, 0, 1 FROM deliveries WHERE status = 'limited' AND endpoint_id = ANY($1::uuid[])
     ) raw GROUP BY endpoint_id, hour`,
    [endpointIds],
  );
  return rows.sort(byKey);
}

const total = (rows: Hourly[], k: keyof Omit<Hourly, 'endpoint_id' | 'hour'>) => rows.reduce((n, r) => n + r[k], 0);

/** A Free-plan Account past its month's cap, with an endpoint for its received messages: what it receives is `limited`. */
async function limitedEndpoint(): Promise<{ endpointId: string; receive: (n: number) => Promise<void> }> {
  const tenant = await createTenant({ plan: 'free', createdAt: new Date('2026-10-02T00:00:00Z') });
  const channelAccount = await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    channel: 'chatapp',
    display: '+1',
    phoneNumberId: `rollup-${tenant.accountId}`,
  });
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status) VALUES ($1, 'https://public.example/h', '{messages}', '\\x00', 'healthy') RETURNING id`,
    [tenant.accountId],
  );
  const def = getEventDefinition('chatapp.message.received')!;
  const sample = samples['chatapp.message.received']!.data as { message: Record<string, unknown> };
  return {
    endpointId: rows[0]!.id,
    async receive(n) {
      const now = new Date();
      const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
      await testDb().query(
        `INSERT INTO plan_usage (account_id, month, received_count) VALUES ($1, $2, 10000) ON CONFLICT (account_id, month) DO NOTHING`,
        [tenant.accountId, month],
      );
      for (let i = 0; i < n; i++) {
        const id = `wamid.rollup.${crypto.randomUUID()}`;
        const data = def.data.parse({ ...sample, message: { ...sample.message, id, external_id: id } });
        const stored = await storeEvent(
          testDb(),
          ingestEvent({ accountId: tenant.accountId, environment: 'live', def, data, channelAccount, externalId: id }),
          now,
        );
        expect(stored.deliveries.map((d) => d.status)).toEqual(['limited']);
      }
    },
  };
}

/** An endpoint of an Account of its own with `n` deliveries of events about one contact. */
async function contactEndpoint(n: number): Promise<{ endpointId: string; accountId: string; contactRef: string }> {
  const tenant = await createTenant();
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status) VALUES ($1, 'https://public.example/h', '{crm}', '\\x00', 'healthy') RETURNING id`,
    [tenant.accountId],
  );
  const def = getEventDefinition('crm.demand.created')!;
  const contactRef = `contact-${crypto.randomUUID()}`;
  for (let i = 0; i < n; i++) {
    const data = def.data.parse({
      entity_type: 'demand',
      entity_id: `d${i}`,
      before_data: null,
      after_data: { id: `d${i}`, version: 1, status: 'open', contact_id: contactRef, title: 'Demand' },
      actor_user_id: null,
    });
    await storeEvent(testDb(), ingestEvent({ accountId: tenant.accountId, environment: 'live', def, data, contactRef }));
  }
  return { endpointId: rows[0]!.id, accountId: tenant.accountId, contactRef };
}

describe('endpoint hourly rollups', () => {
  it('equal a count of the raw rows after successes, failures, retries, test sends, exhausted (hold, endpoint, event) and limited deliveries', async () => {
    // Fails every other POST, then, retried, delivers the rest.
    const flaky = await bed.endpointWithBacklog(6);
    bed.receiver.replyOn(flaky.prefix, { status: 503, body: 'down' });
    await deliverDue(flaky.id);
    bed.receiver.replyOn(flaky.prefix, null);
    bed.receiver.reply({ status: 200 }, { status: 503 }, { status: 200 });
    await retryNow(flaky.id);
    await deliverDue(flaky.id);
    bed.receiver.reply({ status: 200 });
    await retryNow(flaky.id);
    await deliverDue(flaky.id);
    const test = await bed.api.request('POST', `/api/v1/webhooks/${flaky.id}/test`, { key: bed.tenant.key });
    expect(test.status).toBe(200);

    // Held past 14 days, then ended by the hold's expiry (on the workflow's clock).
    const held = await bed.endpointWithBacklog(3);
    // Deactivated first: a hold comes only while the endpoint does not send.
    await testDb().query(`UPDATE endpoints SET active = false WHERE id = $1`, [held.id]);
    await holdOpenDeliveries(testDb(), held.id, new Date());
    const expired = await expireHeldDeliveries(testDb(), held.id, new Date(Date.now() + HOLD_MS + 60_000), HOLD_MS);
    expect(expired.expired).toBe(3);

    // Deleted with two owed: they end `endpoint_deleted`; one event deleted under a claim ends once, however often it is closed.
    const deleted = await bed.endpointWithBacklog(3);
    const { rows: one } = await testDb().query<{ id: string }>(`SELECT id FROM deliveries WHERE endpoint_id = $1 LIMIT 1`, [deleted.id]);
    await closeForDeletedEvent(testDb(), one[0]!.id);
    await closeForDeletedEvent(testDb(), one[0]!.id);
    expect(await exhaustOpenDeliveries(testDb(), deleted.id, 'endpoint_deleted')).toBe(2);

    // The contact's events deleted: their owed deliveries end `event_deleted`.
    const contact = await contactEndpoint(2);
    expect(await deleteEventsWhere(testDb(), { accountId: contact.accountId, contactRef: contact.contactRef })).toBe(2);

    const limited = await limitedEndpoint();
    await limited.receive(2);

    const ids = [flaky.id, held.id, deleted.id, contact.endpointId, limited.endpointId];
    const rollups = await rollupsOf(ids);
    expect(rollups).toEqual(await rawCountsOf(testDb(), ids));
    // The workload did what it says: failures, then every delivery (so retries) and the test send delivered.
    const flakyRows = rollups.filter((r) => r.endpoint_id === flaky.id);
    expect(total(flakyRows, 'failed')).toBeGreaterThanOrEqual(2);
    expect(total(flakyRows, 'ok')).toBe(7);
    expect(
      [held.id, deleted.id, contact.endpointId, limited.endpointId].map((id) => rollups.filter((r) => r.endpoint_id === id)),
    ).toMatchObject([[{ exhausted: 3, ok: 0, failed: 0 }], [{ exhausted: 3, ok: 0, failed: 0 }], [{ exhausted: 2 }], [{ limited: 2 }]]);
  });

  it('add up under concurrent batches of one endpoint-hour, and count an attempt recorded twice (a lost lease) once', async () => {
    const e = await bed.endpointWithBacklog(80);
    const { rows } = await testDb().query<{ id: string; created_at: Date }>(
      `SELECT id, created_at FROM deliveries WHERE endpoint_id = $1`,
      [e.id],
    );
    const startedAt = new Date();
    const result = ({ id, created_at }: { id: string; created_at: Date }, i: number): AttemptResult => ({
      id,
      createdAt: created_at,
      number: 1,
      attempt: {
        startedAt,
        durationMs: 10 + i,
        responseCode: i % 4 === 0 ? 503 : 200,
        error: i % 4 === 0 ? 'non_2xx' : null,
        responseExcerpt: null,
      },
      success: i % 4 !== 0,
      nextAttemptAt: null,
    });
    const results = rows.map((r, i) => result(r, i));
    // Eight batches of ten at once, each repeated once in full (the same attempts again).
    const batches = Array.from({ length: 8 }, (_, b) => results.slice(b * 10, b * 10 + 10));
    await Promise.all([...batches, ...batches].map((batch) => recordDeliveryAttempts(testDb(), batch)));
    const rollups = await rollupsOf([e.id]);
    expect(rollups).toEqual(await rawCountsOf(testDb(), [e.id]));
    expect(rollups).toMatchObject([{ ok: 60, failed: 20, ms: results.reduce((n, r) => n + r.attempt.durationMs, 0) }]);
  });

  it('are what the stats route answers: it reads no delivery', async () => {
    const e = await bed.endpointWithBacklog(2);
    bed.receiver.replyOn(e.prefix, { status: 503 });
    await deliverDue(e.id);
    bed.receiver.replyOn(e.prefix, null);
    await retryNow(e.id);
    await deliverDue(e.id);
    const before = await bed.api.request('GET', `/api/v1/webhooks/${e.id}/stats`, { key: bed.tenant.key });
    const sum = (k: string) => before.body.data.hours.reduce((n: number, h: Record<string, number>) => n + h[k]!, 0);
    expect([sum('successes'), sum('failures')]).toEqual([2, 2]);
    expect(before.body.data.hours.at(-1)).toMatchObject({ mean_duration_ms: expect.any(Number) });

    // The endpoint's raw history gone, the answer is the same.
    await testDb().query(`DELETE FROM deliveries WHERE endpoint_id = $1`, [e.id]);
    const after = await bed.api.request('GET', `/api/v1/webhooks/${e.id}/stats`, { key: bed.tenant.key });
    expect(after.body).toEqual(before.body);
  });

  it("are never another Account's: its endpoint id is 404 however much history it has", async () => {
    const other = await createTenant();
    const theirs = await bed.api.request('POST', '/api/v1/webhooks', {
      key: other.key,
      body: { url: 'https://public.example/hooks', events: ['crm'] },
    });
    await testDb().query(
      `INSERT INTO endpoint_hourly_stats (account_id, endpoint_id, hour, attempts_succeeded) VALUES ($1, $2, date_trunc('hour', now(), 'UTC'), 5)`,
      [other.accountId, theirs.body.data.id],
    );
    const res = await bed.api.request('GET', `/api/v1/webhooks/${theirs.body.data.id}/stats`, { key: bed.tenant.key });
    expect([res.status, res.body.error.code]).toEqual([404, 'not_found']);
    const own = await bed.api.request('GET', `/api/v1/webhooks/${theirs.body.data.id}/stats`, { key: other.key });
    expect(own.body.data.hours.reduce((n: number, h: { successes: number }) => n + h.successes, 0)).toBe(5);
  });

  it('stay with a soft-deleted endpoint (its stats 404) and go with a hard-deleted one', async () => {
    const e = await bed.endpointWithBacklog(1);
    await deliverDue(e.id);
    const count = async () =>
      (await testDb().query(`SELECT count(*)::int AS n FROM endpoint_hourly_stats WHERE endpoint_id = $1`, [e.id])).rows[0].n as number;
    expect(await count()).toBe(1);
    expect((await bed.api.request('DELETE', `/api/v1/webhooks/${e.id}`, { key: bed.tenant.key })).status).toBe(204);
    expect(await count()).toBe(1);
    expect((await bed.api.request('GET', `/api/v1/webhooks/${e.id}/stats`, { key: bed.tenant.key })).status).toBe(404);
    await testDb().query(`DELETE FROM endpoints WHERE id = $1`, [e.id]);
    expect(await count()).toBe(0);
  });

  it('older than the retention cutoff are removed, the rest kept', async () => {
    const e = await bed.endpointWithBacklog(0);
    const cutoff = new Date(Date.now() - 90 * 86_400_000);
    cutoff.setUTCMinutes(0, 0, 0);
    await testDb().query(
      `INSERT INTO endpoint_hourly_stats (account_id, endpoint_id, hour, attempts_succeeded)
       SELECT $1, $2, $3::timestamptz + h * interval '1 hour', 1 FROM generate_series(-2, 1) AS h`,
      [bed.tenant.accountId, e.id, cutoff],
    );
    expect(await deleteRollupsBefore(testDb(), cutoff)).toBeGreaterThanOrEqual(2);
    const { rows } = await testDb().query<{ hour: Date }>(`SELECT hour FROM endpoint_hourly_stats WHERE endpoint_id = $1 ORDER BY hour`, [
      e.id,
    ]);
    expect(rows.map((r) => r.hour.getTime())).toEqual([cutoff.getTime(), cutoff.getTime() + 3_600_000]);
  });
});

describe('migration 0030', () => {
  it('backfills the rollups from the history already stored', async () => {
    const scratch = await scratchDatabaseBefore(inject('databaseUrl'), '0030_');
    const db = scratch.db;
    try {
      const { rows: acct } = await db.query(`INSERT INTO accounts (name, owner_email) VALUES ('a', 'o@example.com') RETURNING id`);
      const { rows: ep } = await db.query(
        `INSERT INTO endpoints (account_id, url, events, secret_ciphertext) VALUES ($1, 'https://public.example/h', '{crm}', '\\x00') RETURNING id`,
        [acct[0].id],
      );
      const endpointId: string = ep[0].id;
      // Two days of history: a delivery an hour, every third failing once first, every fifth exhausted, every seventh limited.
      await db.query(
        `WITH d AS (
           INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, environment, status, created_at, updated_at)
           SELECT $1, $2, 't', 'k' || h, 'live',
                  CASE WHEN h % 7 = 0 THEN 'limited' WHEN h % 5 = 0 THEN 'exhausted' ELSE 'success' END,
                  now() - h * interval '1 hour', now() - h * interval '1 hour' + interval '20 minutes'
           FROM generate_series(1, 48) AS h RETURNING id, status, created_at, idempotency_key
         )
         INSERT INTO delivery_attempts (delivery_id, delivery_created_at, number, started_at, duration_ms, error)
         SELECT id, created_at, n, created_at + n * interval '1 minute', 10 * n, CASE WHEN n = 1 AND substr(idempotency_key, 2)::int % 3 = 0 THEN 'non_2xx' END
         FROM d CROSS JOIN generate_series(1, 2) AS n
         WHERE status = 'success' AND (n = 1 OR substr(idempotency_key, 2)::int % 3 = 0)`,
        [acct[0].id, endpointId],
      );
      await scratch.migrateRest();
      const rollups = await db.query<Hourly>(
        `SELECT endpoint_id, hour::text, attempts_succeeded AS ok, attempts_failed AS failed, attempt_ms_total::int AS ms,
                deliveries_exhausted AS exhausted, deliveries_limited AS limited FROM endpoint_hourly_stats`,
      );
      const raw = await rawCountsOf(db, [endpointId]);
      expect(rollups.rows.sort(byKey)).toEqual(raw);
      expect([total(raw, 'ok'), total(raw, 'failed'), total(raw, 'exhausted'), total(raw, 'limited')]).toEqual([34, 11, 8, 6]);
    } finally {
      await scratch.drop();
    }
  });
});
