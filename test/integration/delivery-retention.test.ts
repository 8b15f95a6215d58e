/**
 * Delivery retention on real Postgres (DECISIONS, "Retention and growth"): weekly partitions are
 * there ahead of time, a delivery past DELIVERY_RETENTION_DAYS leaves with its week's partition
 * (never by row DELETE), one still open is first ended `retention_expired` and stays in the audit
 * list until its week goes, and deletions that remove deliveries row by row still work across
 * weeks. Its own database, on a clock moved months ahead: the drops see every row of it.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { periodsToCreate, periodStart, partitionSuffix, PARTITION_PERIOD_MS } from '../../src/core/delivery-partitions.js';
import { insertAttempt } from '../../src/db/deliveries.js';
import { listPartitions } from '../../src/db/delivery-partitions.js';
import { deleteEventsWhere } from '../../src/db/events.js';
import { applyDeliveryRetention, ensureDeliveryPartitions } from '../../src/worker/delivery-retention.js';
import { createTenant, insertTestEndpoint, startTestApi, testDb, type Tenant, type TestApi } from '../support/harness.js';
import { ownDatabase, type OwnDatabase } from '../support/own-database.js';

const DAY = 86_400_000;
const WEEK = PARTITION_PERIOD_MS;
/** Every week of deliveries: room for the claim's HOT update, and vacuum following the churn of the written week (0032). */
const WEEK_OPTIONS = ['fillfactor=80', 'autovacuum_vacuum_scale_factor=0.02'];

let own: OwnDatabase;
let api: TestApi;
let tenant: Tenant;
/** Where migration 0029's legacy partition ends and the weekly ones begin. */
let cutover: number;

beforeAll(async () => {
  own = await ownDatabase('retention');
  [api, tenant] = await Promise.all([startTestApi({ db: own.db }), createTenant({ db: own.db })]);
  const legacy = (await listPartitions(own.db, 'deliveries')).find((p) => p.lowerMs === null)!;
  cutover = legacy.upperMs!;
});
afterAll(async () => {
  await api?.close();
  await own?.drop();
});

const endpoint = () => insertTestEndpoint(own.db, tenant.accountId);

/** A delivery created at `createdAt` (in that week's partition), with one failed attempt. */
async function delivery(
  endpointId: string,
  createdAt: number,
  o: { status?: 'pending' | 'failed' | 'success'; eventId?: string } = {},
): Promise<string> {
  const { rows } = await own.db.query<{ id: string; created_at: Date }>(
    `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, attempts, next_attempt_at, created_at)
     VALUES ($1, $2, $3, 'crm.demand.created', gen_random_uuid()::text, 'live', $4, 1, CASE WHEN $4 <> 'success' THEN $5::timestamptz END, $5)
     RETURNING id, created_at`,
    [tenant.accountId, endpointId, o.eventId ?? crypto.randomUUID(), o.status ?? 'failed', new Date(createdAt)],
  );
  await insertAttempt(own.db, rows[0]!, 1, {
    startedAt: new Date(createdAt + 1000),
    durationMs: 12,
    responseCode: 503,
    error: 'non_2xx',
    responseExcerpt: null,
  });
  return rows[0]!.id;
}

const get = (id: string) => api.request('GET', `/api/v1/webhook_deliveries/${id}`, { key: tenant.key });
const listed = async (endpointId: string) =>
  (await api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=100`, { key: tenant.key })).body.data as {
    id: string;
    status: string;
    terminal_reason: string | null;
  }[];
const names = async () => [
  ...(await listPartitions(own.db, 'deliveries')).map((p) => p.name),
  ...(await listPartitions(own.db, 'delivery_attempts')).map((p) => p.name),
];

describe('delivery partitions', () => {
  it('after the migrations, this week and the four after it are covered, by deliveries and attempts alike, with room for HOT updates and vacuum at 2 % dead', async () => {
    for (const parent of ['deliveries', 'delivery_attempts'] as const) {
      const parts = await listPartitions(testDb(), parent);
      expect(periodsToCreate(parts, Date.now()), parent).toEqual([]);
      expect(parts.length, parent).toBeGreaterThanOrEqual(5);
    }
    const { rows } = await testDb().query<{ relname: string; reloptions: string[] | null }>(
      `SELECT c.relname, c.reloptions FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'deliveries'::regclass`,
    );
    expect(rows.map((r) => r.reloptions)).toEqual(rows.map(() => WEEK_OPTIONS));
  });

  it('a run months later makes the weeks around its own now and drops none it should keep', async () => {
    const later = cutover + 200 * DAY;
    const report = await ensureDeliveryPartitions({ db: own.db, now: () => new Date(later) });
    const first = periodStart(later);
    expect(report.created).toEqual([0, 1, 2, 3, 4].map((i) => new Date(first + i * WEEK).toISOString().slice(0, 10)));
    expect(await names()).toContain(`deliveries_${partitionSuffix(first + 4 * WEEK)}`);
    expect(await names()).toContain(`delivery_attempts_${partitionSuffix(first + 4 * WEEK)}`);
    const { rows } = await own.db.query<{ reloptions: string[] | null }>(`SELECT reloptions FROM pg_class WHERE relname = $1`, [
      `deliveries_${partitionSuffix(first + 4 * WEEK)}`,
    ]);
    expect(rows.map((r) => r.reloptions)).toEqual([WEEK_OPTIONS]);
    // Again: nothing more to make.
    expect((await ensureDeliveryPartitions({ db: own.db, now: () => new Date(later) })).created).toEqual([]);
  });
});

describe('deliveries past the retention window', () => {
  it('deleting an endpoint deletes its deliveries and their attempts in every week (the statement trigger that replaced the attempts’ foreign key)', async () => {
    const id = await endpoint();
    const keep = await endpoint();
    const inLegacy = await delivery(id, cutover - DAY);
    const inWeek = await delivery(id, cutover + WEEK + DAY);
    const kept = await delivery(keep, cutover + WEEK + DAY, { status: 'success' });
    await own.db.query(`DELETE FROM endpoints WHERE id = $1`, [id]);
    const { rows } = await own.db.query<{ delivery_id: string }>(
      `SELECT delivery_id FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])`,
      [[inLegacy, inWeek, kept]],
    );
    expect(rows.map((r) => r.delivery_id)).toEqual([kept]);
    expect((await own.db.query(`SELECT id FROM deliveries WHERE id = ANY($1::uuid[])`, [[inLegacy, inWeek, kept]])).rows).toEqual([
      { id: kept },
    ]);
  });

  it('deleting a contact’s events ends their open deliveries in every week (event_deleted)', async () => {
    const id = await endpoint();
    const eventId = crypto.randomUUID();
    await own.db.query(
      `INSERT INTO events (id, account_id, environment, cursor, type, idempotency_key, contact_refs, payload, occurred_at)
       VALUES ($1, $2, 'live', 1, 'crm.demand.created', 'k-retention-1', ARRAY['contact-r1'], convert_to('{}', 'UTF8'), now())`,
      [eventId, tenant.accountId],
    );
    const old = await delivery(id, cutover - DAY, { eventId });
    const newer = await delivery(id, cutover + 2 * WEEK, { eventId });
    expect(await deleteEventsWhere(own.db, { accountId: tenant.accountId, contactRef: 'contact-r1' })).toBe(1);
    const { rows } = await own.db.query(
      `SELECT id, status, terminal_reason FROM deliveries WHERE id = ANY($1::uuid[]) ORDER BY created_at`,
      [[old, newer]],
    );
    expect(rows).toEqual([
      { id: old, status: 'exhausted', terminal_reason: 'event_deleted' },
      { id: newer, status: 'exhausted', terminal_reason: 'event_deleted' },
    ]);
  });

  it('an open delivery ends retention_expired and stays listed until its week is dropped, then is 404 like an unknown id; newer ones stay', async () => {
    const id = await endpoint();
    const legacyDone = await delivery(id, cutover - DAY, { status: 'success' });
    const openInDroppedWeek = await delivery(id, cutover + WEEK + DAY);
    const openInKeptWeek = await delivery(id, cutover + 3 * WEEK + DAY, { status: 'pending' });
    const newer = await delivery(id, cutover + 3 * WEEK + 3 * DAY);
    // 90 days after the second day of week 4: weeks 1-3 and the legacy partition are wholly past.
    const now = cutover + 3 * WEEK + 2 * DAY + 90 * DAY;
    expect((await get(legacyDone)).status).toBe(200);

    const first = await applyDeliveryRetention({ db: own.db, retentionDays: 90, now: () => new Date(now) });
    expect(first.retentionDays).toBe(90);
    // Both open ones past the window were closed (one of them then left with its week).
    expect(first.closed).toBe(2);
    const week = (i: number) => partitionSuffix(cutover + i * WEEK);
    expect([...first.dropped].sort()).toEqual(
      [
        'deliveries_legacy',
        'delivery_attempts_legacy',
        ...[0, 1, 2].flatMap((i) => [`deliveries_${week(i)}`, `delivery_attempts_${week(i)}`]),
      ].sort(),
    );
    expect(await names()).toContain(`deliveries_${week(3)}`);

    expect((await get(legacyDone)).status).toBe(404);
    expect((await get(openInDroppedWeek)).status).toBe(404);
    expect((await get(openInDroppedWeek)).body).toEqual((await get(crypto.randomUUID())).body);
    const closed = await get(openInKeptWeek);
    expect(closed.status).toBe(200);
    expect(closed.body.data).toMatchObject({ status: 'exhausted', terminal_reason: 'retention_expired' });
    expect(closed.body.data.attempts_log).toHaveLength(1);
    expect((await listed(id)).map((d) => [d.id, d.status, d.terminal_reason])).toEqual([
      [newer, 'failed', null],
      [openInKeptWeek, 'exhausted', 'retention_expired'],
    ]);
    // Closed means never claimed again: nothing of it is due.
    const { rows: due } = await own.db.query(`SELECT next_attempt_at FROM deliveries WHERE id = $1`, [openInKeptWeek]);
    expect(due).toEqual([{ next_attempt_at: null }]);

    // One week later its week is past too, with the newer one of the same week (closed first).
    const second = await applyDeliveryRetention({ db: own.db, retentionDays: 90, now: () => new Date(now + WEEK) });
    expect(second.closed).toBe(1);
    expect([...second.dropped].sort()).toEqual([`deliveries_${week(3)}`, `delivery_attempts_${week(3)}`]);
    expect((await get(openInKeptWeek)).status).toBe(404);
    expect(await listed(id)).toEqual([]);
  });
});
