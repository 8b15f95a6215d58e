/**
 * Bytes on disk per event and per delivery: N events of about 1 KiB stored through the real
 * ingest path (storeEvent) for an Account with one endpoint, delivered once each by the real
 * worker (endpoint workflows on the Temporal dev server) to a local HTTPS receiver that answers
 * 200, in rounds with a VACUUM after each (autovacuum's part in a running service: the space of
 * the row versions a delivery's claim and outcome left behind goes to the next round's rows);
 * then how much events, deliveries and delivery_attempts grew (heap, indexes and TOAST:
 * pg_total_relation_size, after less before), divided by the rows. The empty tables and the
 * weeks made ahead (a few hundred KiB, whatever the traffic) are printed apart: divided by
 * 20,000 rows they were 18 of a delivery's bytes. Then the same once the week is compacted, as
 * the maintenance run does to a week written no more (its indexes rebuilt).
 *
 *   npm run bench:bytes
 *   BENCH_EVENTS=5000 BENCH_ROUNDS=5 npm run bench:bytes
 *   BENCH_PAD=random npm run bench:bytes   # the 1 KiB padded with incompressible letters instead of the usual 'x'
 *   BENCH_SQL='DROP INDEX deliveries_event' npm run bench:bytes   # a schema experiment, run after the migrations
 */
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { generate } from 'selfsigned';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { createAccount } from '../src/db/directory.js';
import { dueChannel } from '../src/db/due-notifications.js';
import { createDueWakes } from '../src/events/due-wakes.js';
import { migrate } from '../src/db/migrate.js';
import { COMPACT_AFTER_MS, PARTITION_PERIOD_MS, PARTITIONS_AHEAD } from '../src/core/delivery-partitions.js';
import { ensurePartitionsAhead } from '../src/db/delivery-partitions.js';
import { compactClosedPartition } from '../src/db/partition-compaction.js';
import { createPool, type Queryable } from '../src/db/pool.js';
import type { Db } from './scale-fill.js';
import { tableGrowth } from './table-growth.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { startTemporalDevServer } from '../dev/temporal-servers.js';
import { projectRoot } from '../dev/tools.js';
import { ingestEvent, storeEvent } from '../src/events/store-event.js';
import { loadConfig } from '../src/runtime/config.js';
import { connectTemporal, endpointWorkflows } from '../src/delivery/workflow-client.js';
import { createSecretBox } from '../src/security/secret-box.js';
import { runWorker } from '../src/worker/main.js';
import { demandData } from './demand-events.js';
import { printColumns } from './table.js';
import { insertVerifiedEndpoints } from './verified-endpoints.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const def = getEventDefinition('crm.demand.created')!;
const dir = path.join(projectRoot, '.data', 'bench-storage-bytes');

/** Letters no LZ compressor shortens (deterministic), for BENCH_PAD=random: the worst case for TOAST compression. */
function randomPad(length: number, seed: number): string {
  let x = seed || 1;
  let s = '';
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    s += String.fromCharCode(97 + ((x >>> 0) % 26));
  }
  return s;
}

function eventData(n: number) {
  const entityId = `dem_${String(n).padStart(6, '0')}`;
  const usual = demandData(entityId, `c_${n}`);
  if (process.env.BENCH_PAD !== 'random') return usual;
  return demandData(entityId, `c_${n}`, randomPad(usual.after_data.description.length, n + 1));
}

const TABLES = ['events', 'deliveries', 'delivery_attempts'] as const;
type Table = (typeof TABLES)[number];
interface Sizes {
  heap: number;
  indexes: number;
  toast: number;
  total: number;
}

/**
 * Each table's bytes (heap, indexes, TOAST), summed over a partitioned table's partitions
 * (tableGrowth, as the scale bench reads them), and each index's, keyed `table.index`.
 */
async function storageSizes(db: Db): Promise<{ tables: Record<Table, Sizes>; indexes: Map<string, number> }> {
  const growth = await tableGrowth(db);
  const tables = Object.fromEntries(
    TABLES.map((name) => {
      const g = growth.find((t) => t.table === name)!;
      return [name, { heap: g.heapBytes - g.toastBytes, indexes: g.indexBytes, toast: g.toastBytes, total: g.heapBytes + g.indexBytes }];
    }),
  ) as Record<Table, Sizes>;
  const { rows: indexes } = await db.query<{ name: string; bytes: string }>(
    `SELECT i.tablename || '.' || i.indexname AS name,
            coalesce((SELECT sum(pg_relation_size(p.relid)) FROM pg_partition_tree(format('%I', i.indexname)::regclass) p),
                     pg_relation_size(format('%I', i.indexname))) AS bytes
     FROM pg_indexes i WHERE i.tablename = ANY($1::text[]) ORDER BY 1`,
    [TABLES],
  );
  return { tables, indexes: new Map(indexes.map((i) => [i.name, Number(i.bytes)])) };
}

async function rowCounts(db: Queryable): Promise<Record<Table, number>> {
  const counts = await Promise.all(
    TABLES.map(async (name) => [name, (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${name}`)).rows[0]!.n] as const),
  );
  return Object.fromEntries(counts) as Record<Table, number>;
}

async function main() {
  fs.mkdirSync(dir, { recursive: true });
  const ca = await generate([{ name: 'commonName', value: 'bench CA' }], {
    keySize: 2048,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, critical: true },
    ],
  });
  const leaf = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    ca: { key: ca.private, cert: ca.cert },
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  fs.writeFileSync(path.join(dir, 'ca.pem'), ca.cert);
  process.env.NODE_EXTRA_CA_CERTS = path.join(dir, 'ca.pem');
  const receiver = https.createServer({ key: leaf.private, cert: leaf.cert }, (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end('ok'));
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const port = (receiver.address() as AddressInfo).port;

  fs.rmSync(path.join(dir, 'pg'), { recursive: true, force: true });
  const pg = await startEmbeddedPostgres(path.join(dir, 'pg'));
  const temporal = await startTemporalDevServer();
  await migrate(pg.url);
  const db = createPool(pg.url, 20);
  if (process.env.BENCH_SQL) await db.query(process.env.BENCH_SQL);
  const encryptionKey = Buffer.alloc(32, 7).toString('base64');
  const config = {
    ...loadConfig({}),
    databaseUrl: pg.url,
    temporalAddress: temporal.address,
    encryptionKey,
    allowPrivateCidrs: ['127.0.0.0/8'],
    taskQueue: 'bench-bytes',
  };
  const stopWorker = new AbortController();
  const worker = runWorker(config, { signal: stopWorker.signal });
  const { connection, client } = await connectTemporal(temporal.address, 'default');
  const workflows = endpointWorkflows(client, config.taskQueue);
  try {
    const account = await createAccount(db, { name: 'bench-bytes', ownerEmail: 'bench@example.com', plan: 'paid' });
    const [endpointId] = await insertVerifiedEndpoints(db, { box: createSecretBox(encryptionKey), workflows }, account.id, [
      `https://127.0.0.1:${port}/hook`,
    ]);
    // The weeks ahead made now, so that none made by the worker's maintenance meanwhile counts as growth.
    await ensurePartitionsAhead(db, Date.now());
    const before = await storageSizes(db);
    // Woken as the API wakes it, so deliveries are sent while later events are stored.
    const wakes = createDueWakes(db, dueChannel(config.taskQueue));
    const perRound = Math.ceil(EVENTS / ROUNDS);
    for (let round = 0; round * perRound < EVENTS; round++) {
      const end = Math.min(EVENTS, (round + 1) * perRound);
      let next = round * perRound;
      // 16 writers, so their events share transactions (group commit), as concurrent ingest does.
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let n = next++; n < end; n = next++) {
            const data = def.data.parse(eventData(n));
            await storeEvent(db, ingestEvent({ accountId: account.id, environment: 'live', def, data, contactRef: `c_${n}` }));
            wakes.add(endpointId!, account.id);
          }
        }),
      );
      await wakes.flush();
      for (;;) {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1 AND status = 'success'`,
          [account.id],
        );
        if (rows[0]!.n >= end) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      await db.query('VACUUM (ANALYZE) events, deliveries, delivery_attempts');
    }
    const after = await storageSizes(db);
    const rows = await rowCounts(db);
    const grew = (table: Table, part: keyof Sizes) => after.tables[table][part] - before.tables[table][part];
    const per = (bytes: number, n: number) => (bytes / n).toFixed(0);
    const table = [['table', 'rows', 'heap B/row', 'indexes B/row', 'TOAST B/row', 'total B/row', 'total MiB', 'empty KiB']];
    for (const name of TABLES) {
      const n = rows[name];
      table.push([
        name,
        String(n),
        per(grew(name, 'heap'), n),
        per(grew(name, 'indexes'), n),
        per(grew(name, 'toast'), n),
        per(grew(name, 'total'), n),
        (after.tables[name].total / 2 ** 20).toFixed(1),
        (before.tables[name].total / 1024).toFixed(0),
      ]);
    }
    console.log('\nGrowth per row: the sizes after the rows were stored, less those before (the empty tables, and the weeks made ahead).');
    printColumns(table);
    console.log('');
    printColumns([
      ['index', 'B/row'],
      ...[...after.indexes].map(([name, bytes]) => [name, per(bytes - (before.indexes.get(name) ?? 0), rows[name.split('.')[0] as Table])]),
    ]);
    // A claim's update is HOT when its page has room (the lease columns are in no index); an outcome's never is.
    const updates = await db.query<{ updates: string; hot: string }>(
      `SELECT sum(n_tup_upd) AS updates, sum(n_tup_hot_upd) AS hot FROM pg_stat_user_tables
       WHERE relid IN (SELECT relid FROM pg_partition_tree('deliveries'))`,
    );
    const { updates: upd, hot } = updates.rows[0]!;
    console.log(`\ndeliveries: ${upd} updates, ${hot} of them HOT (${((100 * Number(hot)) / Math.max(1, Number(upd))).toFixed(0)} %)`);
    const total = (name: Table) => grew(name, 'total');
    const sample = JSON.stringify(eventData(0)).length;
    console.log(
      `\n${EVENTS} events of ${sample} B of JSON data in ${ROUNDS} rounds (pad: ${process.env.BENCH_PAD === 'random' ? 'random letters' : "'x'"}), one endpoint, one attempt each:`,
    );
    console.log(`  per event:    ${(total('events') / EVENTS).toFixed(0)} B (events)`);
    console.log(
      `  per delivery: ${((total('deliveries') + total('delivery_attempts')) / EVENTS).toFixed(0)} B (deliveries + delivery_attempts)`,
    );
    console.log(
      `  together:     ${((total('events') + total('deliveries') + total('delivery_attempts')) / EVENTS).toFixed(0)} B per event delivered once`,
    );
    // The maintenance run's own compaction (src/db/partition-compaction.ts), one week a call, on a
    // clock past the due date of every week there is, the weeks ahead included.
    const pastEveryWeek = Date.now() + (PARTITIONS_AHEAD + 2) * PARTITION_PERIOD_MS + COMPACT_AFTER_MS;
    while (await compactClosedPartition(db, pastEveryWeek));
    const compacted = await storageSizes(db);
    const compactedGrowth = (name: Table) => compacted.tables[name].total - before.tables[name].total;
    console.log(
      `  per delivery, its week compacted: ${((compactedGrowth('deliveries') + compactedGrowth('delivery_attempts')) / EVENTS).toFixed(0)} B ` +
        `(the deliveries' indexes ${per(compacted.tables.deliveries.indexes - before.tables.deliveries.indexes, rows.deliveries)} B a row)`,
    );
    const empty = TABLES.reduce((sum, name) => sum + before.tables[name].total, 0);
    console.log(
      `  before them:  ${(empty / 1024).toFixed(0)} KiB of empty tables and partitions (${(empty / EVENTS).toFixed(0)} B per event at this count, less at any real one)`,
    );
    const cpus = os.cpus();
    console.log(`machine: ${cpus[0]?.model ?? 'unknown CPU'}, ${cpus.length} cores, Node ${process.version}`);
  } finally {
    stopWorker.abort();
    await worker;
    await connection.close();
    await db.end();
    await temporal.stop();
    await pg.stop();
    receiver.close();
  }
}

await main();
process.exit(0);
