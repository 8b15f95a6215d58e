/**
 * Migration 0029 on a filled database, and the plans of the hot statements on partitioned
 * deliveries (docs/scaling.md, "Partitions and retention").
 *
 *   npx tsx bench/partition-migration.ts <postgres server url> [deliveries, default 1000000]
 *
 * 1. Migrates a new database to 0028, fills `deliveries` (2 attempts each) over the past 90 days,
 *    then applies 0029's two steps while a writer inserts one delivery every 5 ms: prints each
 *    step's time and the writer's longest wait (how long inserts were blocked).
 * 2. On a second database, migrated fresh, with the weeks of the past 90 days as partitions
 *    (the empty legacy partition replaced) and the same rows spread over them: the partitions
 *    each hot statement's plan touches, the claim's lease and an attempt's record among them (the
 *    product's own statements, on 16 deliveries due in different weeks).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import pg, { type PoolClient } from 'pg';
import { periodStart, PARTITION_PERIOD_MS } from '../src/core/delivery-partitions.js';
import { claimWithEndpointsFor, recordDeliveryAttempts } from '../src/db/deliveries.js';
import { migrate } from '../src/db/migrate.js';
import type { Queryable } from '../src/db/pool.js';
import { explaining, success, type Plan } from './explain.js';

const [, , serverArg, rowsArg] = process.argv;
if (!serverArg) throw new Error('usage: npx tsx bench/partition-migration.ts <postgres server url> [deliveries]');
const server: string = serverArg;
const rows = Number(rowsArg ?? 1_000_000);
const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'db', 'migrations');
const files = fs.readdirSync(dir).sort();
const before0029 = files.findIndex((f) => f.startsWith('0029_'));

async function freshDb(prefix: string): Promise<string> {
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  const name = `${prefix}_${crypto.randomBytes(3).toString('hex')}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

async function fill(db: pg.Client, n: number): Promise<{ account: string; endpoints: string[] }> {
  const { rows: a } = await db.query(`INSERT INTO accounts (name, owner_email) VALUES ('bench', 'o@example.com') RETURNING id`);
  const account = a[0].id as string;
  const { rows: e } = await db.query(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext)
     SELECT $1, 'https://public.example/' || g, '{crm}', '\\x00' FROM generate_series(1, 20) g RETURNING id`,
    [account],
  );
  const endpoints = e.map((r) => r.id as string);
  // 90 days back to now, 20 endpoints, one in 50 still open.
  await db.query(
    `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, attempts, next_attempt_at, created_at)
     SELECT $1, ($2::uuid[])[1 + g % 20], gen_random_uuid(), 'crm.demand.created', 'k' || g, 'live',
            CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'success' END, 2, CASE WHEN g % 50 = 0 THEN now() + interval '1 hour' END,
            now() - (g::float8 / $3) * interval '89 days'
     FROM generate_series(1, $3) g`,
    [account, endpoints, n],
  );
  return { account, endpoints };
}

async function fillAttempts(db: pg.Client, withCreatedAt: boolean): Promise<void> {
  await db.query(
    `INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, response_code, error${withCreatedAt ? ', delivery_created_at' : ''})
     SELECT d.id, n, d.created_at, 20, CASE n WHEN 1 THEN 503 ELSE 200 END, CASE n WHEN 1 THEN 'non_2xx' END${withCreatedAt ? ', d.created_at' : ''}
     FROM deliveries d, generate_series(1, 2) n`,
  );
}

async function migrationUnderLoad(): Promise<void> {
  const url = await freshDb('bench_part_mig');
  await runner({ databaseUrl: url, dir, direction: 'up', count: before0029, migrationsTable: 'schema_migrations', log: () => {} });
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  let t = performance.now();
  const { account, endpoints } = await fill(db, rows);
  await fillAttempts(db, false);
  await db.query('VACUUM ANALYZE');
  const size = (
    await db.query(`SELECT pg_size_pretty(pg_total_relation_size('deliveries') + pg_total_relation_size('delivery_attempts')) AS s`)
  ).rows[0].s;
  console.log(`filled ${rows} deliveries, ${2 * rows} attempts (${size} with indexes) in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  // The writer: one insert every 5 ms, each timed.
  const writer = new pg.Client({ connectionString: url });
  await writer.connect();
  let writing = true;
  let longest = 0;
  let inserts = 0;
  const writes = (async () => {
    while (writing) {
      const t0 = performance.now();
      await writer.query(
        `INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, status) VALUES ($1, $2, 't', 'w', 'pending')`,
        [account, endpoints[0]],
      );
      longest = Math.max(longest, performance.now() - t0);
      inserts++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await new Promise((r) => setTimeout(r, 500));
  for (const step of files.slice(before0029, before0029 + 2)) {
    longest = 0;
    t = performance.now();
    await runner({ databaseUrl: url, dir, direction: 'up', count: 1, migrationsTable: 'schema_migrations', log: () => {} });
    console.log(`${step}: ${(performance.now() - t).toFixed(0)} ms; longest insert meanwhile ${longest.toFixed(0)} ms`);
  }
  writing = false;
  await writes;
  console.log(`${inserts} inserts during the migration, all committed`);
  await writer.end();
  await db.end();
}

/** The partitions in a plan (scans naming one), those it ran (not `never executed`), and those pruned at run time. */
function touched(plan: string): string {
  const scans = plan.split('\n').filter((l) => /on deliver(?:ies|y_attempts)_(?:p\d{8}|legacy)/.test(l));
  const ran = scans.filter((l) => !l.includes('never executed'));
  const removed = [...plan.matchAll(/Subplans Removed: (\d+)/g)].map((m) => m[1]).join('+');
  const keys = scans.filter((l) => /_pkey on /.test(l));
  const byKey =
    keys.length > 0 ? ` (a primary key searched in ${keys.filter((l) => !l.includes('never executed')).length} of ${keys.length})` : '';
  return `${scans.length} partition(s) planned, ${ran.length} scanned${byKey}${removed ? `, ${removed} pruned at run time` : ''}`;
}

async function plans(): Promise<void> {
  const url = await freshDb('bench_part_plan');
  await migrate(url);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  // The past 13 weeks as partitions, in place of the (empty) legacy one.
  await db.query(`ALTER TABLE delivery_attempts DETACH PARTITION delivery_attempts_legacy`);
  await db.query(`ALTER TABLE deliveries DETACH PARTITION deliveries_legacy`);
  await db.query(`DROP TABLE delivery_attempts_legacy, deliveries_legacy`);
  const first = periodStart(Date.now() - 91 * 86_400_000);
  for (let w = first; w <= Date.now(); w += PARTITION_PERIOD_MS)
    await db.query(`SELECT create_delivery_partitions($1, $2)`, [new Date(w), new Date(w + PARTITION_PERIOD_MS)]);
  const { account, endpoints } = await fill(db, rows);
  await fillAttempts(db, true);
  await db.query('VACUUM ANALYZE');
  const count = (await db.query(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'deliveries'::regclass`)).rows[0].n;
  console.log(`\n${count} weekly partitions, ${rows} deliveries`);
  const { rows: one } = await db.query(`SELECT id, created_at FROM deliveries WHERE endpoint_id = $1 ORDER BY created_at DESC LIMIT 1`, [
    endpoints[3],
  ]);
  const cases: [string, string, unknown[]][] = [
    [
      'audit list, first page (account)',
      `SELECT * FROM deliveries WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT 51`,
      [account],
    ],
    [
      'audit list, a later page (account, keyset)',
      `SELECT * FROM deliveries WHERE account_id = $1 AND (created_at, id) < ($2, $3) ORDER BY created_at DESC, id DESC LIMIT 51`,
      [account, new Date(Date.now() - 30 * 86_400_000), one[0].id],
    ],
    [
      'endpoint page',
      `SELECT * FROM deliveries WHERE account_id = $1 AND endpoint_id = $2 ORDER BY created_at DESC, id DESC LIMIT 51`,
      [account, endpoints[3]],
    ],
    [
      'due deliveries of an endpoint (the claim)',
      `SELECT id FROM deliveries WHERE endpoint_id = $1 AND status IN ('pending', 'failed') AND event_id IS NOT NULL AND held_since IS NULL
       AND next_attempt_at <= now() + interval '2 hours' ORDER BY next_attempt_at, created_at LIMIT 32`,
      [endpoints[3]],
    ],
    ['a delivery by id', `SELECT * FROM deliveries WHERE id = $1 AND account_id = $2`, [one[0].id, account]],
    [
      'its attempts',
      `SELECT * FROM delivery_attempts WHERE delivery_id = $1 AND delivery_created_at < $2::timestamptz + interval '1 millisecond' ORDER BY number`,
      [one[0].id, one[0].created_at],
    ],
    [
      'retention: open deliveries past the window',
      `SELECT count(*) FROM deliveries WHERE created_at <= now() - interval '80 days' AND status IN ('pending', 'failed') AND event_id IS NOT NULL`,
      [],
    ],
  ];
  const show = (label: string, plan: string) => {
    const exec = /Execution Time: ([\d.]+)/.exec(plan)?.[1];
    const planning = /Planning Time: ([\d.]+)/.exec(plan)?.[1];
    console.log(`${label}: ${touched(plan)}; planning ${planning} ms, execution ${exec} ms`);
    if (process.env.SHOW_PLANS) console.log(plan);
  };
  for (const [label, sql, values] of cases) {
    const { rows: p } = await db.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, values);
    show(label, p.map((r) => r['QUERY PLAN']).join('\n'));
  }
  // The claim and the record as the worker runs them, on the open deliveries of one endpoint (one in
  // 50 of its rows, due within the hour, spread over the weeks), in a transaction rolled back.
  const due = new Date(Date.now() + 2 * 3_600_000);
  await db.query('BEGIN');
  show(
    'the claim (16 due, its lease of each)',
    await explained(db, (q) => claimWithEndpointsFor(q, [{ endpointId: endpoints[0]!, now: due, limit: 16, owner: 'bench' }], 60_000)),
  );
  const [claimed] = await claimWithEndpointsFor(
    db as unknown as Queryable,
    [{ endpointId: endpoints[0]!, now: due, limit: 16, owner: 'bench' }],
    60_000,
  );
  const results = claimed!.deliveries.map((d) => success(d, d.attempts + 1));
  const weeks = new Set(claimed!.deliveries.map((d) => periodStart(d.created_at.getTime()))).size;
  show(
    `the record of ${results.length} attempts (of deliveries in ${weeks} weeks)`,
    await explained(db, (q) => recordDeliveryAttempts(q, results)),
  );
  await db.query('ROLLBACK');
  await db.end();
}

/** The plan of the one statement `run` sends, EXPLAIN ANALYZEd on `db` (which it also executes). */
async function explained(db: pg.Client, run: (q: Queryable) => Promise<unknown>): Promise<string> {
  const into: Plan[] = [];
  await run(explaining(db as unknown as PoolClient, into));
  return into[0]!.plan;
}

await migrationUnderLoad();
await plans();
