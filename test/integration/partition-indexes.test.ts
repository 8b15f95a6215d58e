/**
 * The audit list's indexes by endpoint, ascending (migration 0035, replacing the descending ones
 * of 0001 and 0033), on real Postgres: created ON ONLY the parent, on the empty partitions by the
 * migration, on the partitions holding rows by the maintenance run (built CONCURRENTLY, attached,
 * the parent's index valid after the last, the index it replaces dropped then), rebuilt when a
 * build was interrupted, left to the process holding the build lock, and used by the lists.
 * Its own database: the test drops and re-adds the indexes, which every partition shares.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listDeliveries } from '../../src/db/deliveries.js';
import { listPartitions } from '../../src/db/delivery-partitions.js';
import { createPool } from '../../src/db/pool.js';
import { buildPartitionIndexes, dropReplacedIndexes, partitionIndexesToBuild } from '../../src/db/partition-indexes.js';
import { ensureDeliveryPartitions } from '../../src/worker/delivery-retention.js';
import { createTenant, insertTestEndpoint, type Tenant } from '../support/harness.js';
import { ownDatabase, type OwnDatabase } from '../support/own-database.js';

const INDEX = 'deliveries_endpoint_status_list';
const INDEXES = ['deliveries_endpoint_list', INDEX];
/** What 0035 replaces, as migrations 0001 and 0033 made them. */
const REPLACED = [
  'CREATE INDEX deliveries_endpoint_page ON deliveries (endpoint_id, created_at DESC, id DESC)',
  `CREATE INDEX deliveries_endpoint_status_page ON deliveries (endpoint_id, status, created_at DESC, id DESC) WHERE status <> 'success'`,
];
const MIGRATION = fs.readFileSync(
  path.join(import.meta.dirname, '../../src/db/migrations/0035_deliveries_ascending_list_indexes.sql'),
  'utf8',
);

let own: OwnDatabase;
let tenant: Tenant;
let endpointId: string;
/** The partitions of this week and the next, which the test fills. */
let filled: string[];

beforeAll(async () => {
  own = await ownDatabase('partition_indexes');
  tenant = await createTenant({ db: own.db });
  endpointId = await insertTestEndpoint(own.db, tenant.accountId);
  const parts = await listPartitions(own.db, 'deliveries');
  const nowMs = Date.now();
  filled = parts
    .filter((p) => p.lowerMs !== null && p.upperMs! > nowMs)
    .map((p) => p.name)
    .slice(0, 2);
});
afterAll(async () => {
  await own?.drop();
});

const parentValid = async (index = INDEX) =>
  (await own.db.query<{ valid: boolean }>(`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = $1::regclass`, [index])).rows[0]!
    .valid;
const indexExists = async (name: string) =>
  (await own.db.query<{ found: string | null }>(`SELECT to_regclass($1)::text AS found`, [name])).rows[0]!.found !== null;
/** The names maintenance gives each filled partition's indexes, in the order it builds them. */
const builtOnFilled = () => INDEXES.flatMap((index) => [...filled].sort().map((p) => `${p}_${index.slice('deliveries_'.length)}`));
/** The partitions whose own index is attached to the parent's, by name. */
const attached = async (index = INDEX) =>
  (
    await own.db.query<{ partition: string }>(
      `SELECT t.relname AS partition FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid JOIN pg_class t ON t.oid = x.indrelid
       WHERE i.inhparent = $1::regclass ORDER BY 1`,
      [index],
    )
  ).rows.map((r) => r.partition);
const allPartitions = async () => (await listPartitions(own.db, 'deliveries')).map((p) => p.name).sort();

/**
 * The indexes as before migration 0035, `n` deliveries of each status in each filled week, then
 * migration 0035 as a database holding them meets it.
 */
async function rowsThenMigration(n: number): Promise<void> {
  for (const index of INDEXES) await own.db.query(`DROP INDEX IF EXISTS ${index}`);
  for (const create of REPLACED) await own.db.query(create.replace('CREATE INDEX', 'CREATE INDEX IF NOT EXISTS'));
  for (const [i, part] of filled.entries()) {
    const lower = (await listPartitions(own.db, 'deliveries')).find((p) => p.name === part)!.lowerMs!;
    await own.db.query(
      `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, attempts, created_at)
       SELECT $1, $2, gen_random_uuid(), 'crm.demand.created', gen_random_uuid()::text, 'live', s, 1, $3::timestamptz + g * interval '1 second'
       FROM generate_series(1, $4) g, unnest(ARRAY['success', 'exhausted', 'failed']) s`,
      [tenant.accountId, endpointId, new Date(lower + 60_000 * (i + 1)), n],
    );
  }
  await own.db.query(MIGRATION);
}

describe('the ascending list indexes by endpoint (migration 0035)', () => {
  it('on a fresh database, every partition has them, the parent indexes are valid and the descending ones are gone; a week made later gets them when attached', async () => {
    for (const index of INDEXES) {
      expect(await parentValid(index)).toBe(true);
      expect(await attached(index)).toEqual(await allPartitions());
    }
    expect(await indexExists('deliveries_endpoint_page')).toBe(false);
    expect(await indexExists('deliveries_endpoint_status_page')).toBe(false);
    const report = await ensureDeliveryPartitions({ db: own.db, now: () => new Date(Date.now() + 70 * 86_400_000) });
    expect(report.created.length).toBeGreaterThan(0);
    expect(report.indexesBuilt).toEqual([]);
    expect(report.indexesReplaced).toBeUndefined();
    for (const index of INDEXES) expect(await attached(index)).toEqual(await allPartitions());
  });

  it('on partitions holding rows, the migration leaves them to maintenance, which builds and attaches each, then drops the descending ones; the lists read the new ones', async () => {
    await rowsThenMigration(50);
    for (const index of INDEXES) expect(await parentValid(index)).toBe(false);
    // The descending ones stay meanwhile: the audit list keeps an index.
    expect(await indexExists('deliveries_endpoint_page')).toBe(true);
    expect((await partitionIndexesToBuild(own.db)).map((j) => j.partition)).toEqual([...[...filled].sort(), ...[...filled].sort()]);
    // The empty partitions got theirs from the migration itself.
    expect((await attached()).length).toBe((await allPartitions()).length - filled.length);

    const report = await ensureDeliveryPartitions({ db: own.db });
    expect(report.indexesBuilt).toEqual(builtOnFilled());
    expect(report.indexesReplaced).toEqual(['deliveries_endpoint_page', 'deliveries_endpoint_status_page']);
    for (const index of INDEXES) {
      expect(await parentValid(index)).toBe(true);
      expect(await attached(index)).toEqual(await allPartitions());
    }
    expect(await indexExists('deliveries_endpoint_page')).toBe(false);
    expect(await indexExists('deliveries_endpoint_status_page')).toBe(false);
    expect(await buildPartitionIndexes(own.db)).toEqual([]);

    const page = await listDeliveries(own.db, tenant.accountId, { endpointId, status: 'exhausted' }, { limit: 20 });
    expect(page.length).toBe(21);
    expect(new Set(page.map((d) => d.status))).toEqual(new Set(['exhausted']));
    const plan = await own.db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM deliveries WHERE account_id = $1 AND endpoint_id = $2 AND status = 'exhausted' AND status <> 'success'
       ORDER BY created_at DESC, id DESC LIMIT 21`,
      [tenant.accountId, endpointId],
    );
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Index Scan Backward using \w+_endpoint_status_list/);
    const newest = await listDeliveries(own.db, tenant.accountId, { endpointId }, { limit: 20 });
    expect(newest.map((d) => d.created_at.getTime())).toEqual(newest.map((d) => d.created_at.getTime()).sort((a, b) => b - a));
    const byEndpoint = await own.db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM deliveries WHERE account_id = $1 AND endpoint_id = $2 ORDER BY created_at DESC, id DESC LIMIT 21`,
      [tenant.accountId, endpointId],
    );
    expect(byEndpoint.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Index Scan Backward using \w+_endpoint_list/);
  });

  it('a replaced index whose table lock is held elsewhere is left to the next run, not waited for', async () => {
    await rowsThenMigration(5);
    expect(await buildPartitionIndexes(own.db)).toEqual(builtOnFilled());
    const reader = await own.db.connect();
    try {
      // A long statement's lock on the table: the drop gives up instead of queueing every write behind it.
      await reader.query('BEGIN');
      await reader.query('LOCK TABLE deliveries IN ACCESS SHARE MODE');
      expect(await dropReplacedIndexes(own.db)).toEqual([]);
      expect(await indexExists('deliveries_endpoint_page')).toBe(true);
      await reader.query('COMMIT');
    } finally {
      reader.release();
    }
    expect(await dropReplacedIndexes(own.db)).toEqual(['deliveries_endpoint_page', 'deliveries_endpoint_status_page']);
    expect(await indexExists('deliveries_endpoint_page')).toBe(false);
  });

  it('the account-wide list by status pages as the endpoint’s list does, and leaves its connection planning sorts again', async () => {
    const one = createPool(own.url, 1);
    try {
      const all = await listDeliveries(one, tenant.accountId, { status: 'exhausted' }, { limit: 20 });
      const mine = await listDeliveries(one, tenant.accountId, { endpointId, status: 'exhausted' }, { limit: 20 });
      expect(all.map((d) => d.id)).toEqual(mine.map((d) => d.id));
      expect((await one.query<{ enable_sort: string }>('SHOW enable_sort')).rows).toEqual([{ enable_sort: 'on' }]);
      // A failed list leaves it on too.
      await expect(listDeliveries(one, tenant.accountId, { status: 'exhausted', eventType: '\u0000' }, { limit: 20 })).rejects.toThrow();
      expect((await one.query<{ enable_sort: string }>('SHOW enable_sort')).rows).toEqual([{ enable_sort: 'on' }]);
    } finally {
      await one.end();
    }
  });

  it('on a pool made without sorts, the account-wide list is the same page in one statement, no SET around it', async () => {
    const plain = createPool(own.url, 1);
    const sortless = createPool(own.url, 1, 0, { withoutSorts: true });
    const sent: string[] = [];
    sortless.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
        sent.push(typeof config === 'string' ? config : (config as { text: string }).text);
        return query(config, ...rest);
      };
    });
    try {
      const expected = await listDeliveries(plain, tenant.accountId, { status: 'exhausted' }, { limit: 20 });
      const page = await listDeliveries(sortless, tenant.accountId, { status: 'exhausted' }, { limit: 20 });
      expect(page.map((d) => d.id)).toEqual(expected.map((d) => d.id));
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(/^SELECT d\.\* FROM endpoints e/);
      expect((await sortless.query<{ enable_sort: string }>('SHOW enable_sort')).rows).toEqual([{ enable_sort: 'off' }]);
      expect((await plain.query<{ enable_sort: string }>('SHOW enable_sort')).rows).toEqual([{ enable_sort: 'on' }]);
    } finally {
      await plain.end();
      await sortless.end();
    }
  });

  it('a pool made without sorts keeps the startup options its database URL gives', async () => {
    const url = new URL(own.url);
    url.searchParams.set('options', '-c statement_timeout=1234');
    const sortless = createPool(url.toString(), 1, 0, { withoutSorts: true });
    try {
      const { rows } = await sortless.query(
        `SELECT current_setting('enable_sort') AS sort, current_setting('statement_timeout') AS timeout`,
      );
      expect(rows).toEqual([{ sort: 'off', timeout: '1234ms' }]);
    } finally {
      await sortless.end();
    }
  });

  it('the lists are prepared once per connection, and a column a later migration adds leaves them working', async () => {
    const one = createPool(own.url, 1);
    try {
      const before = await listDeliveries(one, tenant.accountId, { status: 'exhausted' }, { limit: 20 });
      const ofEndpoint = await listDeliveries(one, tenant.accountId, { endpointId }, { limit: 20 });
      await listDeliveries(one, tenant.accountId, { status: 'exhausted' }, { limit: 20 });
      const named = await one.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE 'list_deliveries_%'`,
      );
      expect(named.rows).toEqual([{ n: 2 }]);
      // A prepared SELECT * would now fail with "cached plan must not change result type".
      await own.db.query(`ALTER TABLE deliveries ADD COLUMN later_column int`);
      try {
        expect((await listDeliveries(one, tenant.accountId, { status: 'exhausted' }, { limit: 20 })).map((d) => d.id)).toEqual(
          before.map((d) => d.id),
        );
        expect((await listDeliveries(one, tenant.accountId, { endpointId }, { limit: 20 })).map((d) => d.id)).toEqual(
          ofEndpoint.map((d) => d.id),
        );
      } finally {
        await own.db.query(`ALTER TABLE deliveries DROP COLUMN later_column`);
      }
    } finally {
      await one.end();
    }
  });

  it('an index an interrupted build left invalid is dropped and built again', async () => {
    await rowsThenMigration(5);
    const [first] = await partitionIndexesToBuild(own.db);
    // What CREATE INDEX CONCURRENTLY leaves when it is cancelled: the index, marked invalid.
    await own.db.query(first!.create);
    await own.db.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, [first!.name]);
    expect(await buildPartitionIndexes(own.db)).toEqual(builtOnFilled());
    expect(await parentValid()).toBe(true);
    const { rows } = await own.db.query<{ valid: boolean }>(`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = $1::regclass`, [
      first!.name,
    ]);
    expect(rows).toEqual([{ valid: true }]);
  });

  it('builds through a pool of one connection: what it reads under the lock goes on the connection holding it', async () => {
    await rowsThenMigration(5);
    const one = createPool(own.url, 1);
    try {
      expect((await buildPartitionIndexes(one)).length).toBe(2 * filled.length);
    } finally {
      await one.end();
    }
    expect(await parentValid()).toBe(true);
  });

  it('while another process holds the build lock, a run builds nothing and leaves it to that one', async () => {
    await rowsThenMigration(5);
    const other = await own.db.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(hashtext('partition-indexes'))`);
      expect(await buildPartitionIndexes(own.db)).toEqual([]);
      expect(await parentValid()).toBe(false);
      await other.query(`SELECT pg_advisory_unlock(hashtext('partition-indexes'))`);
    } finally {
      other.release();
    }
    expect((await buildPartitionIndexes(own.db)).length).toBe(2 * filled.length);
    expect(await parentValid()).toBe(true);
  });
});
