/**
 * Bytes on disk per event and per delivery: N events of about 1 KiB stored through the real
 * ingest path (storeEvent) for an Account with one endpoint, delivered once each by the real
 * worker (endpoint workflows on the Temporal dev server) to a local HTTPS receiver that answers
 * 200, in rounds with a VACUUM after each (autovacuum's part in a running service: the space of
 * the row versions a delivery's claim and outcome left behind goes to the next round's rows);
 * then the size of events, deliveries and delivery_attempts (heap, indexes and TOAST:
 * pg_total_relation_size), divided by the rows.
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
import { dueChannel, notifyDue } from '../src/db/due-notifications.js';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
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
          }
        }),
      );
      await notifyDue(db, dueChannel(config.taskQueue), [{ endpointId: endpointId!, accountId: account.id }]);
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
    const { rows } = await db.query<{ name: string; rows: string; heap: string; indexes: string; toast: string; total: string }>(
      // Summed over a partitioned table's partitions (pg_partition_tree; none for a plain table: the table).
      `SELECT t.name, (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I', t.name), false, true, '')))[1]::text AS rows,
              sum(pg_relation_size(r.id)) AS heap, sum(pg_indexes_size(r.id)) AS indexes,
              sum(pg_total_relation_size(r.id) - pg_relation_size(r.id) - pg_indexes_size(r.id)) AS toast,
              sum(pg_total_relation_size(r.id)) AS total
       FROM unnest(ARRAY['events', 'deliveries', 'delivery_attempts']) WITH ORDINALITY AS t(name, i)
       LEFT JOIN LATERAL pg_partition_tree(t.name::regclass) p ON true
       CROSS JOIN LATERAL (SELECT coalesce(p.relid, t.name::regclass) AS id) r
       GROUP BY t.name, t.i ORDER BY t.i`,
    );
    const per = (bytes: string, n: number) => (Number(bytes) / n).toFixed(0);
    const table = [['table', 'rows', 'heap B/row', 'indexes B/row', 'TOAST B/row', 'total B/row', 'total MiB']];
    for (const r of rows) {
      const n = Number(r.rows);
      table.push([
        r.name,
        String(n),
        per(r.heap, n),
        per(r.indexes, n),
        per(r.toast, n),
        per(r.total, n),
        (Number(r.total) / 2 ** 20).toFixed(1),
      ]);
    }
    console.log('');
    printColumns(table);
    // Where the index bytes go: each index of the three tables, per row of its table.
    const indexes = await db.query<{ table: string; index: string; bytes: string }>(
      `SELECT i.tablename AS table, i.indexname AS index,
              coalesce((SELECT sum(pg_relation_size(p.relid)) FROM pg_partition_tree(format('%I', i.indexname)::regclass) p),
                       pg_relation_size(format('%I', i.indexname))) AS bytes
       FROM pg_indexes i WHERE i.tablename IN ('events', 'deliveries', 'delivery_attempts') ORDER BY i.tablename, i.indexname`,
    );
    const rowsOf = (name: string) => Number(rows.find((r) => r.name === name)!.rows);
    console.log('');
    printColumns([
      ['index', 'B/row'],
      ...indexes.rows.map((i) => [`${i.table}.${i.index}`, (Number(i.bytes) / rowsOf(i.table)).toFixed(0)]),
    ]);
    const total = (name: string) => Number(rows.find((r) => r.name === name)!.total);
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
