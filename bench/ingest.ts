/**
 * Ingest benchmark alone: `npm run bench`'s ingest phase (storeEvent, group commit, 64 writers, one
 * stream, fan-out 10, 1 KiB events) without the rest of the stack, repeated, with what Postgres
 * spent on it: CPU of its process tree, commits, WAL records, full-page images and bytes. For
 * measuring server settings and the ingest statements one at a time.
 *
 *   npm run bench:ingest
 *   BENCH_ROUNDS=5 BENCH_EVENTS=5000 BENCH_WRITERS=64 BENCH_FANOUT=10 npm run bench:ingest
 *   BENCH_PG_SETTINGS='shared_buffers=512MB,wal_compression=lz4' npm run bench:ingest   # on top of the defaults
 *   BENCH_SQL='DROP INDEX deliveries_event' npm run bench:ingest    # a schema experiment, run after the migrations
 *   BENCH_CHECKPOINT=1 npm run bench:ingest    # a checkpoint before each round
 */
import path from 'node:path';
import pg from 'pg';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { createAccount } from '../src/db/directory.js';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { projectRoot } from '../dev/tools.js';
import { ingestEvent, storeEvent } from '../src/events/store-event.js';
import { demandData } from './demand-events.js';
import { childPid, cpuSeconds } from './processes.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const WRITERS = Number(process.env.BENCH_WRITERS ?? 64);
const FANOUT = Number(process.env.BENCH_FANOUT ?? 10);
/** Extra server settings, `name=value` separated by commas, on top of the ones dev/embedded-postgres.ts sets. */
const SETTINGS = Object.fromEntries(
  (process.env.BENCH_PG_SETTINGS ?? '')
    .split(',')
    .filter(Boolean)
    .map((s) => s.split('=') as [string, string]),
);
const def = getEventDefinition('crm.demand.created')!;

/** A fresh database on the server, dropped at the end. */
async function scratchDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `bench_ingest_${Date.now()}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

async function main() {
  const pg = await startEmbeddedPostgres(
    path.join(projectRoot, '.data', 'bench-ingest'),
    process.env.BENCH_PG_LOG ? (l) => console.error(l) : () => {},
    SETTINGS,
  );
  const postgresPid = childPid('postgres');
  if (!postgresPid) throw new Error('another process runs this Postgres: its CPU cannot be measured here');
  const database = await scratchDatabase(pg.url);
  try {
    await migrate(database.url);
    const db = createPool(database.url, 20);
    // An experiment's schema change (an index dropped, a default changed), after the migrations.
    if (process.env.BENCH_SQL) await db.query(process.env.BENCH_SQL);
    const account = await createAccount(db, { name: 'bench-ingest', ownerEmail: 'bench@example.com', plan: 'paid' });
    for (let i = 0; i < FANOUT; i++) {
      await db.query(
        `INSERT INTO endpoints (account_id, url, events, active, health_status, failure_streak, secret_ciphertext, verified_at)
         VALUES ($1, $2, '{crm}', true, 'healthy', 0, '\\x00', now())`,
        [account.id, `https://127.0.0.1:1/hook/${i}`],
      );
    }
    const shown = await db.query<{ name: string; setting: string }>(
      `SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name = ANY($1)`,
      [
        [
          'shared_buffers',
          'wal_buffers',
          'max_wal_size',
          'checkpoint_timeout',
          'commit_delay',
          'commit_siblings',
          'wal_compression',
          'wal_writer_delay',
          'synchronous_commit',
          'fsync',
          'full_page_writes',
          'io_method',
          ...Object.keys(SETTINGS),
        ],
      ],
    );
    console.log(shown.rows.map((r) => `${r.name}=${r.setting}`).join(' '));
    const stats = async () => {
      const { rows } = await db.query<{ commits: string; records: string; fpi: string; bytes: string }>(
        `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS commits,
                wal_records AS records, wal_fpi AS fpi, wal_bytes AS bytes FROM pg_stat_wal`,
      );
      return { ...rows[0]!, cpu: cpuSeconds({ postgres: postgresPid }) };
    };
    let serial = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      // What a checkpoint costs the writes after it (full-page images of every page first touched again).
      if (process.env.BENCH_CHECKPOINT) await db.query('CHECKPOINT');
      await db.query('SELECT pg_stat_force_next_flush()');
      const before = await stats();
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: WRITERS }, async () => {
          for (let n = next++; n < EVENTS; n = next++) {
            const entityId = `r${round}_${serial + n}`;
            const data = def.data.parse(process.env.BENCH_SMALL ? demandData(entityId, `c_${n}`, '') : demandData(entityId, `c_${n}`));
            await storeEvent(db, ingestEvent({ accountId: account.id, environment: 'live', def, data, contactRef: `c_${n}` }));
          }
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      serial += EVENTS;
      await new Promise((r) => setTimeout(r, 600)); // stats flush at most once a second per backend
      await db.query('SELECT pg_stat_force_next_flush()');
      const after = await stats();
      const rows = EVENTS * FANOUT;
      const pgCpu = after.cpu.postgres! - before.cpu.postgres!;
      const benchCpu = after.cpu.bench! - before.cpu.bench!;
      const d = (k: 'commits' | 'records' | 'fpi' | 'bytes') => Number(after[k]) - Number(before[k]);
      console.log(
        `round ${round}: ${Math.round(EVENTS / seconds)} events/s (${seconds.toFixed(2)} s); postgres ${pgCpu.toFixed(2)} CPU-s ` +
          `(${((pgCpu / rows) * 1e6).toFixed(1)} µs per delivery row), bench ${benchCpu.toFixed(2)}; commits ${d('commits')}; ` +
          `WAL ${d('records')} records, ${d('fpi')} FPI, ${(d('bytes') / 2 ** 20).toFixed(1)} MiB`,
      );
    }
    if (process.env.BENCH_EXPLAIN) {
      // The known-key look-up, explained on the stream as it is now, in variants.
      const keys = Array.from({ length: 32 }, (_, i) => `crm:demand:new_${i}:1`);
      const variants = {
        equality: `SELECT f.idempotency_key FROM unnest($3::text[]) AS w(key) CROSS JOIN LATERAL (SELECT idempotency_key FROM events
                     WHERE account_id = $1 AND environment = $2 AND idempotency_key = w.key LIMIT 1) f`,
        ordered: `SELECT f.idempotency_key FROM unnest($3::text[]) AS w(key) CROSS JOIN LATERAL (SELECT idempotency_key FROM events
                     WHERE account_id = $1 AND environment = $2 AND idempotency_key = w.key ORDER BY idempotency_key LIMIT 1) f`,
        row: `SELECT f.idempotency_key FROM unnest($3::text[]) AS w(key) CROSS JOIN LATERAL (SELECT account_id, environment, idempotency_key FROM events
                     WHERE (account_id, environment, idempotency_key) >= ($1, $2, w.key) ORDER BY account_id, environment, idempotency_key LIMIT 1) f
              WHERE f.account_id = $1 AND f.environment = $2 AND f.idempotency_key = w.key`,
      };
      for (const [name, sql] of Object.entries(variants)) {
        const plan = await db.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, [account.id, 'live', keys]);
        console.log(`--- ${name}\n` + plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n'));
      }
    }
    await db.end();
  } finally {
    await database.drop();
    await pg.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
