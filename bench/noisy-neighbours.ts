import type { AccountId } from '../src/core/ids.js';
/**
 * Noisy-neighbours benchmark (issue 15, item 6): a fast endpoint's store→receipt latency alone,
 * beside 40 slow endpoints (their receiver answers after BENCH_SLOW_MS, 8 s by default) on the
 * SAME origin (same host and port, other paths), and on an origin of its own while the slow ones
 * are busy. Embedded Postgres, the Temporal dev server and the production worker (in this
 * process); events go through the real ingest path (storeEvent, then the due wake-up ingest sends).
 *
 *   npm run bench:neighbours
 *   BENCH_SAMPLES=100 BENCH_SLOW_MS=4000 BENCH_SLOW_ENDPOINTS=40 npm run bench:neighbours
 */
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { ORIGIN_CAP } from '../src/core/fair-share.js';
import { createAccount } from '../src/db/directory.js';
import { dueChannel } from '../src/db/due-notifications.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Db } from '../src/db/pool.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { startTemporalDevServer } from '../dev/temporal-servers.js';
import { makeLocalTls, type LocalTls } from '../dev/tls.js';
import { projectRoot } from '../dev/tools.js';
import { wakeFor } from '../src/events/deps.js';
import { createDueWakes, type DueWakes } from '../src/events/due-wakes.js';
import { ingestEvent, storeEvent } from '../src/events/store-event.js';
import { loadConfig } from '../src/runtime/config.js';
import { createSecretBox } from '../src/security/secret-box.js';
import { connectTemporal, endpointWorkflows, type EndpointWorkflows } from '../src/delivery/workflow-client.js';
import { runWorker } from '../src/worker/main.js';
import { insertVerifiedEndpoints } from './verified-endpoints.js';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const SLOW_MS = Number(process.env.BENCH_SLOW_MS ?? 8_000);
// More than the origin's cap (32), so that the slow POSTs alone can fill it.
const SLOW_ENDPOINTS = Number(process.env.BENCH_SLOW_ENDPOINTS ?? 40);
/** Events per slow endpoint: enough to keep them busy through both measured phases at one POST in flight each. */
const SLOW_EVENTS = Number(process.env.BENCH_SLOW_EVENTS ?? 4);
/** Events sent to the fast endpoint before each measured row. */
const WARM_UP = 20;
/** The worker's cap per origin. */
const CAP = ORIGIN_CAP;
const TASK_QUEUE = 'neighbours';
const dir = path.join(projectRoot, '.data', 'bench-neighbours');
const def = getEventDefinition('crm.demand.created')!;

/** An HTTPS receiver: paths under /slow/ answer after SLOW_MS; it notes when each tagged event arrived. */
async function receiver(tls: LocalTls) {
  const arrivals = new Map<string, number>();
  const held = { slow: 0 };
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const tag = /"entity_id":"([^"]+)"/.exec(Buffer.concat(chunks).toString())?.[1];
      if (tag) arrivals.set(tag, Date.now());
      if (!req.url?.startsWith('/slow/')) return void res.writeHead(200).end('ok');
      held.slow++;
      res.once('close', () => held.slow--);
      setTimeout(() => res.writeHead(200).end('ok'), SLOW_MS).unref();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, arrivals, held, server };
}
type Receiver = Awaited<ReturnType<typeof receiver>>;

interface Tenant {
  accountId: AccountId;
  endpointIds: string[];
}

async function tenant(db: Db, workflows: EndpointWorkflows, name: string, urls: string[]): Promise<Tenant> {
  const box = createSecretBox(Buffer.alloc(32, 7).toString('base64'));
  const account = await createAccount(db, { name, ownerEmail: 'bench@example.com', plan: 'paid' });
  const endpointIds = await insertVerifiedEndpoints(db, { box, workflows }, account.id, urls);
  return { accountId: account.id, endpointIds };
}

/** Stores one event of the tenant as ingest does (then wakes its endpoints); returns when it was published. */
async function publish(db: Db, wakes: DueWakes, t: Tenant, tag: string): Promise<number> {
  const publishedAt = Date.now();
  const data = def.data.parse({
    entity_type: 'demand',
    entity_id: tag,
    before_data: null,
    after_data: { id: tag, version: 1, status: 'open', contact_id: 'c', title: 'bench' },
    actor_user_id: null,
  });
  wakeFor({ db, wakes }, t.accountId, await storeEvent(db, ingestEvent({ accountId: t.accountId, environment: 'live', def, data })));
  return publishedAt;
}

async function arrival(r: Receiver, tag: string): Promise<number> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const at = r.arrivals.get(tag);
    if (at !== undefined) return at;
    if (Date.now() > deadline) throw new Error(`${tag} never arrived`);
    await new Promise((res) => setTimeout(res, 1));
  }
}

interface Phase {
  name: string;
  ms: number[];
  slowHeld: [number, number];
}

/** SAMPLES events to the fast tenant one after another (after WARM_UP unmeasured ones); publish→receipt each. */
async function measure(
  name: string,
  tags: string,
  to: { db: Db; wakes: DueWakes; fast: Tenant; r: Receiver; slowR: Receiver },
): Promise<Phase> {
  const { db, wakes, fast, r, slowR } = to;
  // Unmeasured: the wake-up of the endpoint's session, and the first runs of the code paths.
  for (let i = 0; i < WARM_UP; i++) {
    await publish(db, wakes, fast, `${tags}_warm_${i}`);
    await arrival(r, `${tags}_warm_${i}`);
  }
  const ms: number[] = [];
  let [low, high] = [Infinity, 0];
  for (let i = 0; i < SAMPLES; i++) {
    const tag = `${tags}_${i}`;
    const at = await publish(db, wakes, fast, tag);
    ms.push((await arrival(r, tag)) - at);
    [low, high] = [Math.min(low, slowR.held.slow), Math.max(high, slowR.held.slow)];
    await new Promise((res) => setTimeout(res, 5));
  }
  return { name, ms, slowHeld: [low, high] };
}

function row(p: Phase): string {
  const s = [...p.ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return `${p.name.padEnd(48)} ${String(at(0.5)).padStart(7)} ${String(at(0.99)).padStart(7)} ${String(s.at(-1)).padStart(7)}   ${p.slowHeld[0]}-${p.slowHeld[1]}`;
}

async function main() {
  fs.mkdirSync(dir, { recursive: true });
  const tls = await makeLocalTls(path.join(dir, 'tls'), 'neighbours');
  process.env.NODE_EXTRA_CA_CERTS = tls.caFile;
  const [shared, own] = [await receiver(tls), await receiver(tls)];
  const pg = process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, stop: async () => {} }
    : await startEmbeddedPostgres(path.join(dir, 'pg'));
  const temporal = await startTemporalDevServer();
  await migrate(pg.url);
  const db = createPool(pg.url, 20);
  const config = {
    ...loadConfig({}),
    databaseUrl: pg.url,
    temporalAddress: temporal.address,
    encryptionKey: Buffer.alloc(32, 7).toString('base64'),
    allowPrivateCidrs: ['127.0.0.0/8'],
    taskQueue: TASK_QUEUE,
  };
  const stopWorker = new AbortController();
  const worker = runWorker(config, { signal: stopWorker.signal });
  const { connection, client } = await connectTemporal(temporal.address, 'default');
  const workflows = endpointWorkflows(client, TASK_QUEUE);
  const wakes = createDueWakes(db, dueChannel(TASK_QUEUE));
  const run = Date.now().toString(36);
  const sharedUrl = (p: string) => `https://127.0.0.1:${shared.port}${p}`;

  const fast = await tenant(db, workflows, `fast-${run}`, [sharedUrl('/fast')]);
  const ownOrigin = await tenant(db, workflows, `own-${run}`, [`https://127.0.0.1:${own.port}/fast`]);
  const slow = await tenant(
    db,
    workflows,
    `slow-${run}`,
    Array.from({ length: SLOW_ENDPOINTS }, (_, n) => sharedUrl(`/slow/${n}`)),
  );
  // The workflows' first looks (the worker may still be starting) are over before anything is measured.
  await new Promise((r) => setTimeout(r, 3_000));

  const onShared = { db, wakes, fast, r: shared, slowR: shared };
  const phases = [await measure('alone', `${run}_alone`, onShared)];
  const slowStarted = Date.now();
  for (let e = 0; e < SLOW_EVENTS; e++) await publish(db, wakes, slow, `${run}_slow_${e}`);
  while (shared.held.slow < Math.min(CAP, SLOW_ENDPOINTS)) await new Promise((r) => setTimeout(r, 20));
  phases.push(await measure(`beside ${SLOW_ENDPOINTS} slow endpoints, same origin`, `${run}_beside`, onShared));
  phases.push(
    await measure(`own origin, ${SLOW_ENDPOINTS} slow endpoints busy elsewhere`, `${run}_own`, { ...onShared, fast: ownOrigin, r: own }),
  );

  const slowTotal = SLOW_ENDPOINTS * SLOW_EVENTS;
  const slowDone = async () =>
    (
      await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1 AND status = 'success'`, [
        slow.accountId,
      ])
    ).rows[0]!.n;
  while ((await slowDone()) < slowTotal && Date.now() - slowStarted < SLOW_EVENTS * SLOW_MS * 3)
    await new Promise((r) => setTimeout(r, 200));
  const slowSeconds = (Date.now() - slowStarted) / 1000;

  console.log('');
  console.log(`fast endpoint, publish→receipt (ms), ${SAMPLES} sequential events per row; slow receivers answer after ${SLOW_MS} ms`);
  console.log(`${''.padEnd(48)} ${'p50'.padStart(7)} ${'p99'.padStart(7)} ${'max'.padStart(7)}   slow POSTs held`);
  for (const p of phases) console.log(row(p));
  console.log(
    `slow endpoints: ${await slowDone()}/${slowTotal} deliveries in ${slowSeconds.toFixed(1)} s ` +
      `(a cap of ${CAP} POSTs in flight, shared: ${SLOW_EVENTS} x ${SLOW_MS / 1000} s each)`,
  );
  console.log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, ${os.cpus().length} cores`,
  );

  stopWorker.abort();
  await Promise.race([worker, new Promise((r) => setTimeout(r, 10_000))]);
  await wakes.flush();
  await connection.close();
  await db.end();
  await temporal.stop();
  await pg.stop();
  shared.server.close();
  own.server.close();
}

await main();
process.exit(0);
