/**
 * Stream benchmark: ingest throughput through the real store path, then the latency of a
 * 100-item page at the start and at the end of a stream of at least 1,000,000 events.
 *
 *   npm run bench:stream                      # embedded Postgres in .data/bench
 *   DATABASE_URL=... npm run bench:stream     # an existing server (a scratch database!)
 *   BENCH_INGEST=20000 BENCH_STREAM=1000000 BENCH_WRITERS=8 BENCH_READS=300
 */
import path from 'node:path';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { createAccount } from '../src/db/directory.js';
import { readStream } from '../src/db/events.js';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { projectRoot } from '../dev/tools.js';
import { ingestEvent, storeEvent } from '../src/events/store-event.js';
import { pct } from './percentile.js';

const INGEST = Number(process.env.BENCH_INGEST ?? 20_000);
const STREAM = Number(process.env.BENCH_STREAM ?? 1_000_000);
const WRITERS = Number(process.env.BENCH_WRITERS ?? 8);
const READS = Number(process.env.BENCH_READS ?? 300);

const def = getEventDefinition('crm.demand.created')!;

async function main() {
  const pg = process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, stop: async () => {} }
    : await startEmbeddedPostgres(path.join(projectRoot, '.data', 'bench'));
  await migrate(pg.url);
  const db = createPool(pg.url, WRITERS + 2);
  const account = await createAccount(db, { name: 'bench', ownerEmail: 'bench@example.com', plan: 'paid' });
  console.log(`account ${account.id}; ingest ${INGEST} events with ${WRITERS} writers, then fill to ${STREAM}`);

  // 1. Ingest through storeEvent: idempotency check, head lock, append, routing, one transaction each.
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      for (let n = next++; n < INGEST; n = next++) {
        const data = def.data.parse({
          entity_type: 'demand',
          entity_id: `dem_${n}`,
          before_data: null,
          after_data: { id: `dem_${n}`, version: 1, status: 'open', contact_id: 'c1', title: 'bench' },
          actor_user_id: null,
        });
        await storeEvent(db, ingestEvent({ accountId: account.id, environment: 'live', def, data }));
      }
    }),
  );
  const ingestSeconds = (performance.now() - started) / 1000;

  // 2. Fill the rest in bulk with SQL (same rows, same indexes), so reading can be measured at depth.
  const fillStarted = performance.now();
  const chunk = 100_000;
  for (let from = INGEST + 1; from <= STREAM; from += chunk) {
    const to = Math.min(STREAM, from + chunk - 1);
    await db.query(
      `INSERT INTO events (account_id, environment, cursor, type, idempotency_key, payload, occurred_at)
       SELECT $1, 'live', g, 'crm.demand.created', 'crm:demand:bulk_' || g || ':1',
              convert_to(jsonb_build_object('entity_type', 'demand', 'entity_id', 'bulk_' || g)::text, 'UTF8'), now()
       FROM generate_series($2::bigint, $3::bigint) g`,
      [account.id, from, to],
    );
  }
  await db.query(`UPDATE stream_heads SET last_cursor = $2 WHERE account_id = $1 AND environment = 'live'`, [
    account.id,
    Math.max(STREAM, INGEST),
  ]);
  await db.query('ANALYZE events');
  const fillSeconds = (performance.now() - fillStarted) / 1000;

  // 3. Page reads of 100 items at the start and at the end.
  async function measure(lo: number, hi: number): Promise<number[]> {
    const times: number[] = [];
    for (let i = 0; i < READS; i++) {
      const after = String(lo + Math.floor(Math.random() * (hi - lo)));
      const t = performance.now();
      const { rows } = await readStream(db, account.id, 'live', after, 100);
      times.push(performance.now() - t);
      if (rows.length !== 100) throw new Error(`page after ${after} had ${rows.length} items`);
    }
    return times.sort((a, b) => a - b);
  }
  const total = Math.max(STREAM, INGEST);
  await measure(0, 1000); // warm the cache and the connection pool
  const start = await measure(0, 10_000);
  const end = await measure(total - 10_100, total - 100);

  console.log('');
  console.log(
    `ingest (storeEvent, ${WRITERS} writers):  ${INGEST} events in ${ingestSeconds.toFixed(1)} s = ${Math.round(INGEST / ingestSeconds)} events/s`,
  );
  console.log(`bulk fill to ${total} events:           ${fillSeconds.toFixed(1)} s`);
  console.log(
    `100-item page at the start (after <10k): p50 ${pct(start, 50).toFixed(2)} ms, p99 ${pct(start, 99).toFixed(2)} ms (${READS} reads)`,
  );
  console.log(
    `100-item page at the end (last 10k):     p50 ${pct(end, 50).toFixed(2)} ms, p99 ${pct(end, 99).toFixed(2)} ms (${READS} reads)`,
  );

  await db.query('DELETE FROM accounts WHERE id = $1', [account.id]);
  await db.end();
  await pg.stop();
}

await main();
process.exit(0);
