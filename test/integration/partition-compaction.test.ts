/**
 * Compaction of a week of deliveries written no more, on real Postgres: its indexes, bloated by
 * the recorded outcomes' second entries, rebuilt smaller with REINDEX CONCURRENTLY, still attached
 * to the parent's indexes and read by the audit list; recorded once, each week once; a leftover of
 * an interrupted rebuild dropped first; left to another process holding the lock of index work;
 * forgotten when retention drops the week. Its own database: the test reindexes a shared week.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPACT_AFTER_MS } from '../../src/core/delivery-partitions.js';
import { listDeliveries } from '../../src/db/deliveries.js';
import { listPartitions } from '../../src/db/delivery-partitions.js';
import { compactClosedPartition } from '../../src/db/partition-compaction.js';
import { applyDeliveryRetention, ensureDeliveryPartitions } from '../../src/worker/delivery-retention.js';
import { createTenant, insertTestEndpoint, type Tenant } from '../support/harness.js';
import { ownDatabase, type OwnDatabase } from '../support/own-database.js';

let own: OwnDatabase;
let tenant: Tenant;
let endpointId: string;
/** The first week made ahead (migration 0029's legacy partition holds the current one), which the test fills and then treats as long ended. */
let week: { name: string; lowerMs: number; upperMs: number };

beforeAll(async () => {
  own = await ownDatabase('partition_compaction');
  tenant = await createTenant({ db: own.db });
  endpointId = await insertTestEndpoint(own.db, tenant.accountId);
  const nowMs = Date.now();
  const ahead = (await listPartitions(own.db, 'deliveries')).find((p) => p.lowerMs !== null && p.upperMs !== null && p.upperMs > nowMs)!;
  week = { name: ahead.name, lowerMs: ahead.lowerMs!, upperMs: ahead.upperMs! };
  // 5,000 deliveries sent, then each recorded a success twice (updates that change the status: not
  // HOT), and the dead versions vacuumed: what a written week's indexes look like.
  await own.db.query(
    `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, attempts, next_attempt_at, created_at)
     SELECT $1, $2, gen_random_uuid(), 'crm.demand.created', 'k' || g, 'live', 'pending', 0, now(), $3::timestamptz + g * interval '10 ms'
     FROM generate_series(1, 5000) g`,
    [tenant.accountId, endpointId, new Date(week.lowerMs)],
  );
  await own.db.query(`UPDATE deliveries SET status = 'failed', attempts = 1 WHERE endpoint_id = $1`, [endpointId]);
  await own.db.query(`UPDATE deliveries SET status = 'success', attempts = 2, next_attempt_at = NULL WHERE endpoint_id = $1`, [endpointId]);
  await own.db.query(`VACUUM deliveries`);
});
afterAll(async () => {
  await own?.drop();
});

const compactions = async () =>
  (await own.db.query<{ partition: string }>(`SELECT partition FROM delivery_partition_compactions ORDER BY partition`)).rows.map(
    (r) => r.partition,
  );
const dueAt = () => week.upperMs + COMPACT_AFTER_MS;

describe('compaction of a week written no more', () => {
  it('is not due before COMPACT_AFTER_MS past the week’s end', async () => {
    expect((await ensureDeliveryPartitions({ db: own.db, now: () => new Date(dueAt() - 1) })).compacted?.partition).not.toBe(week.name);
    expect(await compactions()).not.toContain(week.name);
  });

  it('while another process holds the lock of index work, a run leaves the week to it', async () => {
    const other = await own.db.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(hashtext('partition-indexes'))`);
      expect(await compactClosedPartition(own.db, dueAt())).toBeUndefined();
      await other.query(`SELECT pg_advisory_unlock(hashtext('partition-indexes'))`);
    } finally {
      other.release();
    }
    expect(await compactions()).not.toContain(week.name);
  });

  it('rebuilds the week’s indexes smaller, drops an interrupted rebuild’s leftover first, and the audit list reads the rebuilt ones', async () => {
    // What REINDEX CONCURRENTLY leaves when it is cancelled: a new index, invalid, named *_ccnew.
    await own.db.query(`CREATE INDEX "${week.name}_endpoint_list_ccnew" ON "${week.name}" (endpoint_id)`);
    await own.db.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, [`"${week.name}_endpoint_list_ccnew"`]);

    const report = await ensureDeliveryPartitions({ db: own.db, now: () => new Date(dueAt()) });
    expect(report.compacted?.partition).toBe(week.name);
    expect(report.compacted!.indexBytesAfter).toBeLessThan(report.compacted!.indexBytesBefore);
    expect(await compactions()).toContain(week.name);
    const leftovers = await own.db.query(`SELECT 1 FROM pg_class WHERE relname LIKE $1`, [`${week.name}%ccnew%`]);
    expect(leftovers.rowCount).toBe(0);

    // The rebuilt indexes are the parent's still: valid, and the list pages newest first on them.
    const parents = await own.db.query<{ name: string; valid: boolean }>(
      `SELECT c.relname AS name, x.indisvalid AS valid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
       WHERE x.indrelid = 'deliveries'::regclass ORDER BY 1`,
    );
    expect(parents.rows.length).toBeGreaterThan(0);
    expect(parents.rows.every((r) => r.valid)).toBe(true);
    const attached = await own.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
       WHERE x.indrelid = $1::regclass AND i.inhparent = 'deliveries_endpoint_list'::regclass`,
      [`"${week.name}"`],
    );
    expect(attached.rows).toEqual([{ n: 1 }]);
    const page = await listDeliveries(own.db, tenant.accountId, { endpointId }, { limit: 50 });
    expect(page.map((d) => d.idempotency_key).slice(0, 3)).toEqual(['k5000', 'k4999', 'k4998']);
  });

  it('compacts each week once: the next run takes the next week due', async () => {
    const next = await compactClosedPartition(own.db, dueAt());
    expect(next?.partition).not.toBe(week.name);
    expect((await compactions()).filter((p) => p === week.name)).toHaveLength(1);
  });

  it('forgets a week’s compaction when retention drops the week', async () => {
    const report = await applyDeliveryRetention({ db: own.db, retentionDays: 1, now: () => new Date(week.upperMs + 2 * 86_400_000) });
    expect(report.dropped).toContain(week.name);
    expect(await compactions()).not.toContain(week.name);
  });
});
