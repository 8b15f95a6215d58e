/**
 * Delivery benchmark: events stored through the real ingest path are delivered by the real
 * worker (endpoint workflows on the Temporal dev server) to a local HTTPS receiver.
 * A backlog is stored first, then the endpoints are woken: prints how fast the backlog
 * drains (deliveries per second) and when each delivery went out after the wake-up.
 *
 *   npm run bench:deliveries
 *   BENCH_EVENTS=2000 BENCH_ENDPOINTS=1,20 npm run bench:deliveries
 */
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
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
import { insertVerifiedEndpoints } from './verified-endpoints.js';
import { endpointStateQuery, endpointWorkflowId } from '../src/workflows/endpoint-contract.js';
import { pct } from './percentile.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const ENDPOINT_COUNTS = (process.env.BENCH_ENDPOINTS ?? '1,20').split(',').map(Number);
const def = getEventDefinition('crm.demand.created')!;
const dir = path.join(projectRoot, '.data', 'bench-deliveries');

async function main() {
  fs.mkdirSync(dir, { recursive: true });
  // A private CA for the local receiver, trusted by the worker's HTTP client.
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

  const receivedAt: number[] = [];
  const receiver = https.createServer({ key: leaf.private, cert: leaf.cert }, (req, res) => {
    req.resume();
    req.on('end', () => {
      receivedAt.push(Date.now());
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const port = (receiver.address() as AddressInfo).port;

  const pg = process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, stop: async () => {} }
    : await startEmbeddedPostgres(path.join(dir, 'pg'));
  const temporal = await startTemporalDevServer();
  await migrate(pg.url);
  const db = createPool(pg.url, 20);
  const encryptionKey = Buffer.alloc(32, 7).toString('base64');
  const config = {
    ...loadConfig({}),
    databaseUrl: pg.url,
    temporalAddress: temporal.address,
    encryptionKey,
    allowPrivateCidrs: ['127.0.0.0/8'],
    taskQueue: 'bench',
  };
  const stopWorker = new AbortController();
  const worker = runWorker(config, { signal: stopWorker.signal });
  const { connection, client } = await connectTemporal(temporal.address, 'default');
  const workflows = endpointWorkflows(client, 'bench');
  const box = createSecretBox(encryptionKey);

  const results: string[] = [];
  for (const endpoints of ENDPOINT_COUNTS) {
    const account = await createAccount(db, { name: `bench-${endpoints}`, ownerEmail: 'bench@example.com', plan: 'paid' });
    const urls = Array.from({ length: endpoints }, (_, i) => `https://127.0.0.1:${port}/hook/${i}`);
    const ids = await insertVerifiedEndpoints(db, { box, workflows }, account.id, urls);
    const perEndpoint = Math.max(1, Math.round(EVENTS / endpoints));
    const total = perEndpoint * endpoints;
    // Let every workflow take its first look (the worker may still be starting) before the backlog exists.
    for (const id of ids) {
      const handle = client.workflow.getHandle(endpointWorkflowId(id));
      while ((await handle.query(endpointStateQuery)).changesSeen < 1) await new Promise((r) => setTimeout(r, 50));
    }
    // ...and finish it: that look ends with an empty delivery round.
    // Past the linger of the sessions the creation started, so the backlog waits for the wake-up.
    await new Promise((r) => setTimeout(r, config.deliveryLingerMs + 1_500));
    const before = receivedAt.length;
    // Store the backlog first, then wake: the drain measures delivery alone, not ingest.
    const ingestStarted = performance.now();
    let next = 0;
    const store = async () => {
      for (let n = next++; n < perEndpoint; n = next++) {
        const data = def.data.parse({
          entity_type: 'demand',
          entity_id: `dem_${n}`,
          before_data: null,
          after_data: { id: `dem_${n}`, version: 1, status: 'open', contact_id: 'c', title: 'bench' },
          actor_user_id: null,
        });
        await storeEvent(db, ingestEvent({ accountId: account.id, environment: 'live', def, data }));
      }
    };
    // 16 writers, so their events share transactions (group commit).
    await Promise.all(Array.from({ length: 16 }, store));
    const ingestSeconds = (performance.now() - ingestStarted) / 1000;
    const started = performance.now();
    const wokenAt = Date.now();
    // As ingest does after its commit: name the endpoints on the deployment's channel.
    await notifyDue(
      db,
      dueChannel('bench'),
      ids.map((endpointId) => ({ endpointId, accountId: account.id })),
    );
    for (;;) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1 AND status = 'success'`,
        [account.id],
      );
      if (rows[0]!.n >= total) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (performance.now() - started) / 1000;
    // When the receiver got each POST, counted from the wake-up.
    const ms = receivedAt
      .slice(before)
      .map((t) => t - wokenAt)
      .sort((a, b) => a - b);
    results.push(
      `${endpoints} endpoint(s) x ${perEndpoint} events: backlog of ${total} stored in ${ingestSeconds.toFixed(1)} s, drained in ${seconds.toFixed(1)} s = ` +
        `${Math.round(total / seconds)} deliveries/s; wake-to-received p50 ${pct(ms, 50).toFixed(0)} ms, p99 ${pct(ms, 99).toFixed(0)} ms; receiver got ${ms.length}`,
    );
  }
  console.log('');
  for (const line of results) console.log(line);

  stopWorker.abort();
  await worker;
  await connection.close();
  await db.end();
  await temporal.stop();
  await pg.stop();
  receiver.close();
}

await main();
process.exit(0);
