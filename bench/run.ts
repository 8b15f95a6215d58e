import type { AccountId, EndpointId } from '../src/core/ids.js';
/**
 * The platform benchmark (issue #8): one run, one process tree. Embedded Postgres and the
 * Temporal dev server; the production API and worker entry points as child processes,
 * configured by environment like `npm run api` / `npm run worker`; an HTTPS receiver in a
 * child process that verifies every signature and reports every arrival.
 *
 *   npm run bench                  # full run, under 5 minutes
 *   npm run bench -- --quick       # smaller sizes, about 1.5 minutes with the production phase
 *   npm run bench -- --profile     # also CPU-profiles the API and worker (summary printed at the end)
 *   npm run bench -- --explain     # also EXPLAIN ANALYZE of the hot statements and an fsync experiment
 *   npm run bench -- --statements  # also each phase's statements (pg_stat_statements) in statements.txt beside the logs (production/statements.txt: every database, Temporal's too); with --peer, peer/project/statements.txt
 *   npm run bench -- --idle-for=20 # the fan-out endpoints idle 20 s, not 60 (10 with --quick), before their first delivery is timed
 *   npm run bench -- --idle        # also the idle cost of 10,000 verified endpoints (--idle=N for N): minutes
 *   DATABASE_URL=...               # a server to create a scratch database on, instead of embedded Postgres
 *   npm run bench -- --no-production                        # skips the production-shape phase
 *   npm run bench -- --production-only                      # the production-shape phase alone (no bare loop to compare with)
 *   npm run bench -- --api-processes=3 --worker-processes=2 # sizes it (2 and 2 by default)
 *   npm run bench -- --peer [--svix-bin=PATH] [--quick]      # only the project beside the Svix OSS server (bench/peer.ts)
 *   npm run bench -- --peer --runs=3   # three such runs back to back, then each ratio's median and how often each target held (bench/peer-summary.ts)
 *
 * Then, with all of that stopped, a phase on the production shape (bench/production-phase.ts):
 * Temporal server on Postgres, compiled API and worker processes (rebuilt when dist/ is stale),
 * end to end to 1 and 100 endpoints (20 with --quick) and CPU per delivery per component.
 *
 * Prints the tables, then one JSON line with every figure (the production phase's under `production`).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import pg from 'pg';
import { Pool } from 'undici';
import { apiCaller } from './api-client.js';
import { createBenchTenant, eachOf } from './api-endpoints.js';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { createAccount } from '../src/db/directory.js';
import { migrate } from '../src/db/migrate.js';
import { dueChannel, notifyDue } from '../src/db/due-notifications.js';
import { createPool } from '../src/db/pool.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { freePort } from '../dev/ports.js';
import { startTemporalDevServer } from '../dev/temporal-servers.js';
import { makeLocalTls } from '../dev/tls.js';
import { projectRoot } from '../dev/tools.js';
import { loadConfig } from '../src/runtime/config.js';
import { ingestEvent, storeEvent } from '../src/events/store-event.js';
import { endpointWorkflows } from '../src/delivery/workflow-client.js';
import { endpointWorkflowId } from '../src/workflows/endpoint-contract.js';
import { explainHotQueries } from './explain.js';
import { enableStatementStats, phaseStatements, STATEMENT_STATS_SETTINGS } from './statements.js';
import { endpointHistory, historyCost, historyTimeline, signalsAfter, wakeHops, type HistoryCost } from './history.js';
import { childPid, cpuSeconds, startService, treeMemory, type Service } from './processes.js';
import { mainThreadProfile, monoUs, summarizeProfile } from './profile-summary.js';
import { demandData, demandKey } from './demand-events.js';
import { bareLoop, machine, machineLine } from './machine.js';
import { peerOk, printPeerTable, runPeerComparison, type PeerResults } from './peer.js';
import { printPeerSummary } from './peer-summary.js';
import { flag, printProductionTable, productionOk, runProductionPhase } from './production-phase.js';
import { connectReceiver } from './receiver-client.js';
import { printColumns } from './table.js';
import { pct } from './percentile.js';

const args = new Set(process.argv.slice(2));
const QUICK = args.has('--quick');
const PROFILE = args.has('--profile');
const EXPLAIN = args.has('--explain');
const STATEMENTS = args.has('--statements');
/** How long the fan-out endpoints stay idle before the "first delivery after idle" phase (issue #15: a minute). */
const IDLE_FOR_SECONDS = Number([...args].find((a) => a.startsWith('--idle-for='))?.split('=')[1] ?? (QUICK ? 10 : 60));
/** Endpoints of the idle-cost phase (`--idle`, `--idle=N`); 0: no such phase. */
const IDLE_ENDPOINTS = ((a) => (a === undefined ? 0 : a === '--idle' ? 10_000 : Number(a.split('=')[1])))(
  [...args].find((a) => a === '--idle' || a.startsWith('--idle=')),
);
/** The worker's DELIVERY_LINGER_MS (its default): a session's activity is on record only once it has ended. */
const LINGER_MS = 5_000;
/** The window over which the tree's idle CPU is measured before the wake-ups, to be taken off their cost. */
const WAKE_BACKGROUND_MS = 3_000;
const OWED_OF_ACCOUNT = `SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1 AND status IN ('pending', 'failed') AND event_id IS NOT NULL`;
// Counts are upper bounds: each phase also stops at its time cap, so a slow machine still finishes in time (the figures say how many were done).
const SIZE = QUICK
  ? { bareSeconds: 2, e2eEvents: 600, e2eCapSeconds: 3, halfSeconds: 3, drain: 2_000, ingest: 5_000, storeCapSeconds: 3 }
  : { bareSeconds: 8, e2eEvents: 4_000, e2eCapSeconds: 20, halfSeconds: 10, drain: 20_000, ingest: 5_000, storeCapSeconds: 45 };
/** Deliveries of the warm-up before the timed phases (see there). */
const WARM_EVENTS = QUICK ? 1_000 : 4_000;
/** Publishing clients, bare-loop concurrency and ingest writers: the worker's 16 POSTs in flight. */
const CONCURRENCY = 16;
/**
 * Writers of the ingest phase. storeEvent commits the calls of one stream that wait together in
 * one transaction, so a batch is as large as the calls in flight: 64 is the publishes of a few API
 * processes at once.
 */
const INGEST_WRITERS = 64;
// 100 endpoints in the full run; --quick creates 20, since creating and verifying them is most of its set-up.
const FANOUT_ENDPOINTS = QUICK ? 20 : 100;
const INGEST_FANOUT = 10;
const TASK_QUEUE = 'bench';
const dir = path.join(projectRoot, '.data', 'bench-run');
const profileDir = path.join(dir, 'profiles');
const def = getEventDefinition('crm.demand.created')!;

/** Wall-clock ms with sub-ms resolution; the receiver uses the same clock. */
const now = () => performance.timeOrigin + performance.now();
/** path, with any leftover of an earlier run (SQLite's -wal and -shm beside it too) removed. */
function freshFile(file: string): string {
  for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(file + suffix, { force: true });
  return file;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Stack lifetime: everything started is pushed here and stopped in reverse, error or not.

const cleanups: { name: string; fn: () => Promise<unknown> }[] = [];
async function cleanUp() {
  for (const { name, fn } of cleanups.splice(0).reverse()) {
    await fn().catch((err) => console.error(`stopping ${name}: ${(err as Error).message}`));
  }
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping everything`);
    void cleanUp().finally(() => process.exit(130));
  });
}

/** A scratch database per run, so runs never see each other's rows; leftovers of crashed runs are dropped. */
async function scratchDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `bench_${Date.now()}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'bench\\_%'`);
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => {});
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Tenants, endpoints and events, through the real API.

interface Tenant {
  name: string;
  accountId: AccountId;
  key: string;
  endpointIds: EndpointId[];
  customerIds: string[];
}

async function main() {
  const startedAt = Date.now();
  const loadBefore = os.loadavg();
  fs.mkdirSync(dir, { recursive: true });
  const logFile = (name: string) => path.join(dir, `${name}.log`);
  for (const name of ['api', 'worker', 'receiver', 'temporal']) fs.rmSync(logFile(name), { force: true });
  if (PROFILE) {
    fs.rmSync(profileDir, { recursive: true, force: true });
    fs.mkdirSync(profileDir, { recursive: true });
  }
  console.error(`bench pid ${process.pid}, logs in ${dir}`);
  const step = (what: string) => console.error(`[${((Date.now() - startedAt) / 1000).toFixed(1).padStart(5)} s] ${what}`);
  const productionPhase = () =>
    runProductionPhase({
      quick: QUICK,
      argv: process.argv.slice(2),
      dir: path.join(dir, 'production'),
      step,
      defer: (name, fn) => cleanups.push({ name, fn }),
    });
  if (args.has('--peer')) {
    const runs = flag(process.argv.slice(2), 'runs', 1);
    const results: PeerResults[] = [];
    for (let i = 1; i <= runs; i++) {
      if (runs > 1) step(`run ${i} of ${runs}`);
      const peer = await runPeerComparison({
        quick: QUICK,
        argv: process.argv.slice(2),
        dir: path.join(dir, 'peer', ...(runs > 1 ? [`run-${i}`] : [])),
        step,
        defer: (name, fn) => cleanups.push({ name, fn }),
      });
      await cleanUp();
      printPeerTable(peer);
      console.log(JSON.stringify({ peer }));
      if (!peerOk(peer)) process.exitCode = 1;
      results.push(peer);
    }
    if (runs > 1) printPeerSummary(results);
    return;
  }
  if (args.has('--production-only')) {
    const production = await productionPhase();
    await cleanUp();
    printProductionTable(production);
    console.log(JSON.stringify({ production }));
    if (!productionOk(production)) process.exitCode = 1;
    return;
  }

  // ---- the stack
  step('starting Postgres, Temporal dev server, TLS');
  const started = await Promise.allSettled([
    process.env.DATABASE_URL
      ? Promise.resolve({ url: process.env.DATABASE_URL, stop: async () => {} })
      : STATEMENTS
        ? startEmbeddedPostgres(
            path.join(dir, 'pg'),
            (line) => fs.appendFileSync(logFile('postgres'), `${line}\n`),
            STATEMENT_STATS_SETTINGS,
          )
        : startEmbeddedPostgres(path.join(dir, 'pg')),
    // On a SQLite file like `npm start` (in memory it would hold every history in its heap); a fresh one per run.
    startTemporalDevServer({ dbFile: freshFile(path.join(dir, 'temporal.db')), logFile: logFile('temporal') }),
    makeLocalTls(path.join(dir, 'tls'), 'bench'),
  ]);
  // Whichever server did start is stopped, even when the other failed.
  if (started[0].status === 'fulfilled')
    cleanups.push({ name: 'postgres', fn: () => (started[0] as PromiseFulfilledResult<{ stop(): Promise<void> }>).value.stop() });
  if (started[1].status === 'fulfilled')
    cleanups.push({ name: 'temporal', fn: () => (started[1] as PromiseFulfilledResult<{ stop(): Promise<void> }>).value.stop() });
  for (const r of started) if (r.status === 'rejected') throw r.reason;
  const [pgServer, temporal, tls] = started.map((r) => (r as PromiseFulfilledResult<unknown>).value) as [
    { url: string },
    { address: string },
    Awaited<ReturnType<typeof makeLocalTls>>,
  ];
  const database = await scratchDatabase(pgServer.url);
  cleanups.push({ name: 'scratch database', fn: () => database.drop() });
  await migrate(database.url);
  const db = createPool(database.url, CONCURRENCY + 4);
  if (STATEMENTS) await enableStatementStats(db);
  const statements = STATEMENTS ? phaseStatements(db, path.join(dir, 'statements.txt')) : undefined;
  fs.rmSync(path.join(dir, 'statements.txt'), { force: true });
  cleanups.push({
    name: 'bench pool',
    fn: () => {
      // pool.end() resolves before its sockets close; the database's drop then ends them, which is no news.
      db.removeAllListeners('error').on('error', () => {});
      return db.end();
    },
  });

  const apiPort = await freePort();
  const sharedKey = crypto.randomBytes(32).toString('base64');
  const serviceEnv = (): NodeJS.ProcessEnv => ({
    ...process.env,
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    // One key for both: secrets sealed by the API are opened by the worker.
    SECRETS_ENCRYPTION_KEY: sharedKey,
    WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8',
    NODE_EXTRA_CA_CERTS: tls.caFile,
    PORT: String(apiPort),
    RATE_LIMIT_BURST: '1000000000',
    RATE_LIMIT_PER_SECOND: '1000000000',
    // 100 endpoints in one Account (one per Customer) for the fan-out measurement.
    ENDPOINT_LIMIT: String(FANOUT_ENDPOINTS + 10),
    DATA_DIR: dir,
    LOG_FORMAT: 'json',
  });
  // Node 20 refuses --cpu-prof in NODE_OPTIONS, so it goes on the command line.
  // A folder per service: tsx's module-hooks thread writes a profile of its own, with the same name if one is given.
  const profileArgs = (name: string) => (PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.join(profileDir, name)}`] : []);
  step('starting receiver, API and worker processes (the worker bundles its workflow code)');
  const receiverService = await startService({
    name: 'receiver',
    entry: 'bench/receiver.ts',
    env: { ...process.env, NODE_OPTIONS: '' },
    logFile: logFile('receiver'),
    ready: 'receiver ready',
    ipc: true,
  });
  cleanups.push({ name: 'receiver', fn: () => receiverService.stop() });
  // The worker bundles its workflow code for seconds; tenants are created meanwhile (endpoint workflows wait on the task queue).
  const workerStarting = startService({
    name: 'worker',
    entry: 'src/worker/main.ts',
    env: serviceEnv(),
    nodeArgs: profileArgs('worker'),
    logFile: logFile('worker'),
    ready: '"msg":"worker started"',
  });
  workerStarting.catch(() => {});
  const apiService = await startService({
    name: 'api',
    entry: 'src/api/main.ts',
    env: serviceEnv(),
    nodeArgs: profileArgs('api'),
    logFile: logFile('api'),
    ready: '"msg":"api listening"',
  });
  cleanups.push({ name: 'api', fn: () => apiService.stop() });
  let workerService: Service | undefined = undefined;
  cleanups.push({ name: 'worker', fn: async () => (workerService ?? (await workerStarting.catch(() => undefined)))?.stop() });
  const receiver = await connectReceiver(receiverService, tls);

  const connection = await Connection.connect({ address: temporal.address });
  cleanups.push({ name: 'temporal client', fn: () => connection.close() });
  const client = new Client({ connection });
  const apiPool = new Pool(`http://127.0.0.1:${apiPort}`, { connections: 64, pipelining: 1 });
  cleanups.push({ name: 'api client', fn: () => apiPool.close() });

  const cpuRoots = () => ({
    api: apiService.child.pid,
    worker: workerService?.child.pid,
    receiver: receiverService.child.pid,
    postgres: childPid('postgres'),
    temporal: childPid('temporal'),
  });

  const api = apiCaller(apiPool);

  /** An Account with a live key, `endpoints` endpoints created and verified through the API (one per Customer when `perCustomer`). */
  async function tenant(name: string, endpoints: number, perCustomer = false): Promise<Tenant> {
    const t = await createBenchTenant(db, api, receiver, { name: `bench-${name}`, endpoints, perCustomer, pathPrefix: `h/${name}` });
    return { name, accountId: t.accountId, key: t.key, endpointIds: t.endpointIds as EndpointId[], customerIds: t.customerIds };
  }

  /** Until each workflow has handled what it was told and waits on a timer (no activity or signal pending). */
  async function waitIdle(endpointIds: string[]) {
    const { EventType } = proto.temporal.api.enums.v1;
    const waiting = new Set([
      EventType.EVENT_TYPE_TIMER_STARTED,
      EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
      EventType.EVENT_TYPE_MARKER_RECORDED,
    ]);
    const deadline = Date.now() + 60_000;
    await eachOf(endpointIds.length, async (i) => {
      const id = endpointIds[i]!;
      for (;;) {
        const events = (await client.workflow.getHandle(endpointWorkflowId(id)).fetchHistory()).events ?? [];
        const types = events.map((e) => e.eventType);
        const lastTask = types.lastIndexOf(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
        if (lastTask >= 0 && types.slice(lastTask + 1).every((t) => waiting.has(t!))) break;
        if (Date.now() > deadline) throw new Error(`workflow of endpoint ${id} did not go idle`);
        await sleep(100);
      }
    });
  }

  /** Waits until every key has arrived at the receiver; fails when nothing new arrives for 30 s. */
  async function allArrived(keys: string[], what: string): Promise<void> {
    let missing = keys.filter((k) => !receiver.arrivals.has(k));
    let progressAt = Date.now();
    while (missing.length > 0) {
      await sleep(50);
      const still = missing.filter((k) => !receiver.arrivals.has(k));
      if (still.length < missing.length) progressAt = Date.now();
      missing = still;
      if (Date.now() - progressAt > 30_000)
        throw new Error(`${what}: ${missing.length} of ${keys.length} deliveries never arrived (e.g. ${missing[0]})`);
    }
  }

  /** How many deliveries of the Account Postgres recorded as delivered: every arrival must also be on record. */
  async function recordedSuccesses(accountId: string): Promise<number> {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1 AND status = 'success' AND event_id IS NOT NULL`,
      [accountId],
    );
    return rows[0]!.n;
  }

  async function pgCommits(): Promise<number> {
    const { rows } = await db.query<{ n: string }>(`SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()`);
    return Number(rows[0]!.n);
  }

  // ---- measurement phases: each records its wall-clock window (for histories), its monotonic one (for CPU profiles), and CPU use.
  interface Phase {
    name: string;
    fromMs: number;
    toMs: number;
    fromUs: number;
    toUs: number;
    cpu: Record<string, number>;
    pgCommits: number;
    tlsHandshakes: number;
  }
  const phases: Phase[] = [];
  async function phase<T>(name: string, fn: () => Promise<T>): Promise<T> {
    step(name);
    await sleep(300); // let the previous phase's stragglers settle
    const commits = await pgCommits();
    const handshakes = (await receiver.stats()).connections;
    await statements?.start();
    const cpu0 = cpuSeconds(cpuRoots());
    const p = { name, fromMs: Date.now(), fromUs: monoUs() } as Phase;
    const result = await fn();
    Object.assign(p, { toMs: Date.now(), toUs: monoUs() });
    const cpu1 = cpuSeconds(cpuRoots());
    p.cpu = Object.fromEntries(Object.keys(cpu1).map((k) => [k, +(cpu1[k]! - (cpu0[k] ?? 0)).toFixed(2)]));
    await sleep(1_100); // Postgres flushes a backend's statistics about once a second
    p.pgCommits = (await pgCommits()) - commits;
    if (statements) {
      const r = result as { events?: number; deliveries?: number } | undefined;
      await statements.finish(name, r?.events ?? r?.deliveries ?? 0);
    }
    p.tlsHandshakes = (await receiver.stats()).connections - handshakes;
    phases.push(p);
    return result;
  }

  /** Publishes through POST /api/v1/events: closed loop with CONCURRENCY clients, or open loop at `rate` per second. */
  async function publish(t: Tenant, tag: string, count: number, opts: { rate?: number } = {}) {
    const sentAt = new Map<string, number>();
    const callMs: number[] = [];
    let failures = 0;
    const one = async (n: number) => {
      const entityId = `${tag}_${n}`;
      const customerId = t.customerIds.length ? t.customerIds[n % t.customerIds.length] : undefined;
      const body = { type: def.type, data: demandData(entityId, `c_${n}`), ...(customerId ? { customer_id: customerId } : {}) };
      const t0 = now();
      sentAt.set(demandKey(entityId), t0);
      const res = await api('POST', '/api/v1/events', t.key, body);
      callMs.push(now() - t0);
      if (res.status !== 201) failures++;
    };
    if (opts.rate) {
      // Open loop: each publish starts on its schedule, whether or not earlier ones have answered.
      const inFlight: Promise<void>[] = [];
      const start = now();
      for (let n = 0; n < count; n++) {
        const due = start + (n * 1000) / opts.rate;
        const wait = due - now();
        if (wait > 1) await sleep(wait);
        inFlight.push(one(n));
      }
      await Promise.all(inFlight);
    } else {
      let next = 0;
      const until = now() + SIZE.e2eCapSeconds * 1000;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let n = next++; n < count && now() < until; n = next++) await one(n);
        }),
      );
    }
    if (failures) throw new Error(`${tag}: ${failures} publishes were not answered 201`);
    const published = sentAt.size;
    await allArrived([...sentAt.keys()], tag);
    const first = Math.min(...sentAt.values());
    const last = Math.max(...[...sentAt.keys()].map((k) => receiver.arrivals.get(k)!));
    const latency = [...sentAt].map(([k, t0]) => receiver.arrivals.get(k)! - t0).sort((a, b) => a - b);
    callMs.sort((a, b) => a - b);
    return {
      events: published,
      perSecond: Math.round(published / ((last - first) / 1000)),
      latencyMs: { p50: +pct(latency, 50).toFixed(1), p99: +pct(latency, 99).toFixed(1), max: +latency[latency.length - 1]!.toFixed(1) },
      publishCallMs: { p50: +pct(callMs, 50).toFixed(1), p99: +pct(callMs, 99).toFixed(1) },
    };
  }

  /** Stores events through the real ingest function (storeEvent, group commit) with `writers` concurrent callers; no wake-up. */
  async function store(t: Tenant, tag: string, count: number, writers = CONCURRENCY): Promise<{ keys: string[]; perSecond: number }> {
    const keys: string[] = [];
    let next = 0;
    const t0 = now();
    const until = t0 + SIZE.storeCapSeconds * 1000;
    await Promise.all(
      Array.from({ length: writers }, async () => {
        for (let n = next++; n < count && now() < until; n = next++) {
          const entityId = `${tag}_${n}`;
          keys.push(demandKey(entityId));
          await storeEvent(
            db,
            ingestEvent({
              accountId: t.accountId,
              environment: 'live',
              def,
              data: def.data.parse(demandData(entityId, `c_${n}`)),
              contactRef: `c_${n}`,
            }),
          );
        }
      }),
    );
    return { keys, perSecond: Math.round(keys.length / ((now() - t0) / 1000)) };
  }

  // ---- setup: tenants and their verified endpoints
  step(`creating tenants: 1 + ${FANOUT_ENDPOINTS} (one per Customer) + 1 + ${INGEST_FANOUT} + 1 endpoints, verified through the API`);
  const [single, fanout, drainT, ingestT, warmT] = await Promise.all([
    tenant('single', 1),
    tenant('fanout', FANOUT_ENDPOINTS, true),
    tenant('drain', 1),
    tenant('ingest', INGEST_FANOUT),
    tenant('warm', 1),
  ]);
  step('waiting for the worker, then for every endpoint workflow to be idle');
  workerService = await workerStarting;
  await waitIdle([...single.endpointIds, ...fanout.endpointIds, ...drainT.endpointIds, ...ingestT.endpointIds, ...warmT.endpointIds]);

  // ---- 1. bare loop: signed 1 KiB POSTs straight to the receiver, 16 in flight on keep-alive connections
  const bare = await phase('bare loop', () => bareLoop(receiver, tls.ca, SIZE.bareSeconds, CONCURRENCY));

  // ---- 2. end to end, 1 endpoint; 3. half load, open loop; then end to end to 100 endpoints.
  // Half load runs before the 100 endpoints: the wake-ups that phase leaves queued in the API
  // reach Temporal for seconds after its last delivery (measured below), and would be measured as latency.
  // The first thousands of deliveries after the processes start cost 0.2 ms more each in the API
  // and in the worker alike (V8 compiling the hot code: ~1,000 optimized functions in each), so
  // the figures are taken warm, as the production phase takes its own; the cold cost stays in
  // the CPU table as this phase's row. A tenant of its own, so the measured stream starts empty.
  await phase('warm-up, 1 endpoint (cold)', () => publish(warmT, 'warm', WARM_EVENTS));
  const e2e1 = await phase('end to end, 1 endpoint', () => publish(single, 'e1', SIZE.e2eEvents));
  const halfRate = Math.max(1, Math.round(e2e1.perSecond / 2));
  const half = await phase(`half load (${halfRate}/s), 1 endpoint`, () =>
    publish(single, 'half', Math.max(1, Math.round(halfRate * SIZE.halfSeconds)), { rate: halfRate }),
  );
  const e2e100 = await phase(`end to end, ${FANOUT_ENDPOINTS} endpoints`, () => publish(fanout, 'e100', SIZE.e2eEvents));

  // ---- 4. drain: a stored backlog, then one wake-up
  const drainStored = await store(drainT, 'drain', SIZE.drain);
  await sleep(500);
  const drain = await phase(`drain ${drainStored.keys.length} to 1 endpoint`, async () => {
    const t0 = now();
    await notifyDue(db, dueChannel(TASK_QUEUE), [{ endpointId: drainT.endpointIds[0]!, accountId: drainT.accountId }]);
    await allArrived(drainStored.keys, 'drain');
    const last = Math.max(...drainStored.keys.map((k) => receiver.arrivals.get(k)!));
    return { deliveries: drainStored.keys.length, perSecond: Math.round(drainStored.keys.length / ((last - t0) / 1000)) };
  });

  // ---- 5. ingest into one stream with fan-out 10 (deliveries stay pending: nobody is woken)
  const ingest = await phase(`ingest with fan-out ${INGEST_FANOUT}`, () => store(ingestT, 'ingest', SIZE.ingest, INGEST_WRITERS));

  // ---- 5c. the ingest phase's deliveries (events × fan-out, 50,000) are delivered now, before the
  // idle phase measures wake-ups on a quiet machine. Nobody was woken for them, so the workers' sweep
  // (every DUE_SWEEP_MS, for work overdue that long) woke them at some later moment, which could fall
  // in the idle phase: a 50,000-delivery drain then ran beside its 100 wake-ups (the 24 Nov 02:37
  // full run: 3,531 commits and 3.3 s of worker CPU in that phase for its 100 deliveries).
  step(`delivering the ingest phase's backlog before the idle phase`);
  await notifyDue(
    db,
    dueChannel(TASK_QUEUE),
    ingestT.endpointIds.map((endpointId) => ({ endpointId, accountId: ingestT.accountId })),
  );
  for (let owed = 1, t0 = Date.now(); owed > 0; await sleep(250)) {
    owed = (await db.query<{ n: number }>(OWED_OF_ACCOUNT, [ingestT.accountId])).rows[0]!.n;
    if (Date.now() - t0 > 180_000) throw new Error(`ingest backlog: ${owed} deliveries still owed after 3 minutes`);
  }
  // Its sessions linger, then end (a workflow task each), and Postgres vacuums what the drain
  // updated: both would count as the idle tree's own use, measured next.
  await sleep(LINGER_MS + 5_000);

  // ---- 6. the first delivery to each fan-out endpoint after it was idle (no session, its workflow
  // waiting on its timer): one event per endpoint, 100 ms apart so that each wake-up is alone, and
  // each wake-up's hops from the workflow's history (read once the sessions have lingered out).
  const e2e100EndMs = phases.find((p) => p.name.startsWith(`end to end, ${FANOUT_ENDPOINTS}`))!.toMs;
  const idleLeft = e2e100EndMs + LINGER_MS + IDLE_FOR_SECONDS * 1000 - Date.now() - WAKE_BACKGROUND_MS;
  if (idleLeft > 0) step(`letting the ${FANOUT_ENDPOINTS} endpoints idle ${IDLE_FOR_SECONDS} s (${(idleLeft / 1000).toFixed(0)} s left)`);
  await sleep(idleLeft);
  // What a wake-up costs, whole: the tree's CPU from the first publish until every session has
  // lingered out and its workflow gone back to its timer, less what the tree uses idle (measured
  // just before), per endpoint woken.
  const background = cpuSeconds(cpuRoots());
  await sleep(WAKE_BACKGROUND_MS);
  const beforeWakes = cpuSeconds(cpuRoots());
  const wakesFromMs = now();
  const firstAfterIdle = await phase(`first delivery after ${IDLE_FOR_SECONDS} s idle`, async () => {
    const sentAt = new Map<string, number>();
    for (const [i, customerId] of fanout.customerIds.entries()) {
      const entityId = `idle_${i}`;
      const t0 = now();
      sentAt.set(demandKey(entityId), t0);
      const res = await api('POST', '/api/v1/events', fanout.key, {
        type: def.type,
        data: demandData(entityId, 'c_idle'),
        customer_id: customerId,
      });
      if (res.status !== 201) throw new Error(`idle publish: ${res.status}`);
      await sleep(Math.max(0, t0 + 100 - now()));
    }
    await allArrived([...sentAt.keys()], 'first after idle');
    return sentAt;
  });
  await sleep(LINGER_MS + 1_500);
  const afterWakes = cpuSeconds(cpuRoots());
  const wakesMs = now() - wakesFromMs;
  const idleKeys = [...firstAfterIdle.keys()];
  const cpuPerWakeMs = Object.fromEntries(
    Object.keys(afterWakes)
      .filter((k) => k !== 'bench')
      .map((k) => {
        const idleRate = (beforeWakes[k]! - (background[k] ?? 0)) / WAKE_BACKGROUND_MS;
        const used = (afterWakes[k]! - (beforeWakes[k] ?? 0)) * 1000 - idleRate * 1000 * wakesMs;
        return [k, +Math.max(0, used / idleKeys.length).toFixed(1)];
      }),
  );
  const idleLatency = idleKeys.map((k) => receiver.arrivals.get(k)! - firstAfterIdle.get(k)!).sort((a, b) => a - b);
  const hops = (
    await Promise.all(
      fanout.endpointIds.map(async (id, i) => {
        const h = wakeHops((await endpointHistory(client, id)).events, Math.floor(firstAfterIdle.get(idleKeys[i]!)!));
        return (
          h && { ...h, sessionToReceiptMs: receiver.arrivals.get(idleKeys[i]!)! - firstAfterIdle.get(idleKeys[i]!)! - h.activityStartedMs }
        );
      }),
    )
  ).filter((h) => h !== null);
  const hopP = (name: keyof (typeof hops)[number]) => {
    const xs = hops.map((h) => h[name]).sort((a, b) => a - b);
    return { p50: +pct(xs, 50).toFixed(1), p99: +pct(xs, 99).toFixed(1) };
  };
  const idleFirst = {
    endpoints: idleKeys.length,
    cpuPerWakeMs,
    idleSeconds: IDLE_FOR_SECONDS,
    latencyMs: { p50: +pct(idleLatency, 50).toFixed(1), p99: +pct(idleLatency, 99).toFixed(1), max: +idleLatency.at(-1)!.toFixed(1) },
    hops: {
      traced: hops.length,
      toSignal: hopP('toSignalMs'),
      signalToTask: hopP('signalToTaskMs'),
      task: hopP('taskMs'),
      taskToActivity: hopP('taskToActivityMs'),
      sessionToReceipt: hopP('sessionToReceiptMs'),
    },
  };

  // ---- checks: every delivery on record, every signature good, nothing sent twice
  const receiverStats = await receiver.stats();
  const recorded = {
    single: await recordedSuccesses(single.accountId),
    fanout: await recordedSuccesses(fanout.accountId),
    drain: await recordedSuccesses(drainT.accountId),
  };
  const expected = { single: e2e1.events + half.events, fanout: e2e100.events + idleFirst.endpoints, drain: drain.deliveries };

  // ---- 5b. cost in Temporal, per phase
  step('reading workflow histories');
  const byName = (n: string) => phases.find((p) => p.name.startsWith(n))!;
  const singleHistory = await endpointHistory(client, single.endpointIds[0]!);
  const drainHistory = await endpointHistory(client, drainT.endpointIds[0]!);
  const fanoutHistories = await Promise.all(fanout.endpointIds.map((id) => endpointHistory(client, id)));
  fs.writeFileSync(path.join(dir, 'history-single.tsv'), historyTimeline(singleHistory.events, byName('end to end, 1 ').fromMs));
  fs.writeFileSync(path.join(dir, 'history-drain.tsv'), historyTimeline(drainHistory.events, byName('drain').fromMs));
  fs.writeFileSync(
    path.join(dir, 'history-fanout.tsv'),
    historyTimeline(fanoutHistories[0]!.events, byName(`end to end, ${FANOUT_ENDPOINTS}`).fromMs),
  );
  const costOf = (events: Parameters<typeof historyCost>[0], p: Phase) => historyCost(events, p.fromMs, p.toMs + 1_000);
  const sumCosts = (costs: HistoryCost[]): HistoryCost => ({
    events: costs.reduce((s, c) => s + c.events, 0),
    workflowTasks: costs.reduce((s, c) => s + c.workflowTasks, 0),
    signals: costs.reduce((s, c) => s + c.signals, 0),
    rounds: costs.reduce((s, c) => s + c.rounds, 0),
    activities: costs.reduce((s, c) => s + c.activities, 0),
    roundMsP50: costs.map((c) => c.roundMsP50).sort((a, b) => a - b)[Math.floor(costs.length / 2)]!,
    gapMsP50: costs.map((c) => c.gapMsP50).sort((a, b) => a - b)[Math.floor(costs.length / 2)]!,
    wakeToRoundMsP50: costs.map((c) => c.wakeToRoundMsP50).sort((a, b) => a - b)[Math.floor(costs.length / 2)]!,
  });
  const per1000 = (c: HistoryCost, deliveries: number) => ({
    ...c,
    deliveries,
    eventsPer1000: Math.round((c.events * 1000) / deliveries),
    workflowTasksPer1000: Math.round((c.workflowTasks * 1000) / deliveries),
    deliveriesPerRound: +(deliveries / Math.max(1, c.rounds)).toFixed(1),
  });
  // Wake signals the 100 endpoints' workflows got after that phase's last delivery: the API's queued wake-ups.
  const e2e100End = byName(`end to end, ${FANOUT_ENDPOINTS}`).toMs;
  // (Until the first-after-idle phase, whose wake-ups are its own.)
  const late = fanoutHistories.map((h) => signalsAfter(h.events, e2e100End, byName('first delivery after').fromMs));
  const lateWakes = {
    signals: late.reduce((s, l) => s + l.count, 0),
    lastAfterMs: Math.max(0, ...late.map((l) => (l.lastMs ?? e2e100End) - e2e100End)),
  };
  const cost = {
    e2e1: per1000(costOf(singleHistory.events, byName('end to end, 1 ')), e2e1.events),
    e2e100: per1000(sumCosts(fanoutHistories.map((h) => costOf(h.events, byName(`end to end, ${FANOUT_ENDPOINTS}`)))), e2e100.events),
    half: per1000(costOf(singleHistory.events, byName('half load')), half.events),
    drain: per1000(costOf(drainHistory.events, byName('drain')), drain.deliveries),
    runs: { single: singleHistory.runs, drain: drainHistory.runs },
    lateWakes,
  };

  // ---- 7. (--idle) what endpoints with nothing to deliver cost: verified endpoints inserted in one
  // statement, their workflows started as the API starts them (a 'verified' signal-with-start), then,
  // once the tree is quiet again, its CPU over a window and its memory.
  const idleCost = IDLE_ENDPOINTS > 0 ? await measureIdleCost(IDLE_ENDPOINTS) : undefined;
  async function measureIdleCost(count: number) {
    step(`idle cost: ${count} verified endpoints, their workflows started`);
    const account = await createAccount(db, { name: 'bench-idle', ownerEmail: 'bench@example.com', plan: 'paid' });
    // No POST is ever made: any sealed secret will do, the first tenant's.
    const { rows } = await db.query<{ id: EndpointId }>(
      `INSERT INTO endpoints (account_id, url, events, active, health_status, failure_streak, secret_ciphertext, verified_at)
       SELECT $1, $2 || g, ARRAY['crm'], true, 'healthy', 0, (SELECT secret_ciphertext FROM endpoints WHERE id = $3), now()
       FROM generate_series(1, $4) g RETURNING id`,
      [account.id, `https://127.0.0.1:${receiver.port}/idle/`, single.endpointIds[0], count],
    );
    const wf = endpointWorkflows(client, TASK_QUEUE);
    // The services' trees (the receiver's too); cpuSeconds also gives this process's own, which is left out.
    const services = cpuRoots;
    const treeCpu = () => {
      const { bench: _bench, ...trees } = cpuSeconds(services());
      return Object.values(trees).reduce((a, b) => a + b, 0);
    };
    const cpuStart = treeCpu();
    const t0 = now();
    let next = 0;
    // The dev server answers slowly while it starts thousands of workflows: a start that timed out is tried again.
    const start = async (id: EndpointId) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await wf.notify(id, account.id, 'verified');
        } catch (err) {
          if (attempt >= 10) throw err;
          await sleep(1_000);
        }
      }
    };
    // In waves the size of half the worker's workflow cache (WORKER_MAX_CACHED_WORKFLOWS), each let settle (its first runs done) before the
    // next: thousands of first runs at once evict one another from the cache, and every workflow task then
    // replays its history (measured: 3 first runs a second, 0.35 s of CPU each, with 2,000 at once).
    const cacheSize = loadConfig(serviceEnv()).workerMaxCachedWorkflows;
    const WAVE = cacheSize > 0 ? Math.max(1, Math.floor(cacheSize / 2)) : 500;
    const quietFor = async (maxMs: number) => {
      for (let last = treeCpu(), t = now(); now() - t < maxMs;) {
        await sleep(2_000);
        const cpu = treeCpu();
        if (cpu - last < 0.6) return;
        last = cpu;
      }
    };
    for (let waveEnd = WAVE; next < rows.length; waveEnd += WAVE) {
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < Math.min(waveEnd, rows.length)) await start(rows[next++]!.id);
        }),
      );
      await quietFor(60_000);
    }
    step(`  ${rows.length} workflows started in ${((now() - t0) / 1000).toFixed(1)} s; waiting for the tree to be quiet`);
    // Quiet: under 0.2 of a core over 5 s (a first run reads its endpoint and runs a session that lingers), 10 minutes at most.
    for (let last = cpuSeconds(services()); now() - t0 < 600_000;) {
      await sleep(5_000);
      const cpu = cpuSeconds(services());
      const used = Object.fromEntries(Object.keys(cpu).map((k) => [k, Math.round(((cpu[k]! - (last[k] ?? 0)) * 100) / 5)]));
      delete used.bench;
      step(`    % of a core over 5 s: ${JSON.stringify(used)}`);
      if (Object.values(used).reduce((a, b) => a + b, 0) < 20) break;
      last = cpu;
    }
    const settleSeconds = (now() - t0) / 1000;
    const settleCpu = treeCpu() - cpuStart;
    const windowSeconds = QUICK ? 20 : 60;
    step(`  quiet after ${settleSeconds.toFixed(0)} s; measuring ${windowSeconds} s of idle`);
    const before = cpuSeconds(services());
    const w0 = now();
    await sleep(windowSeconds * 1000);
    const after = cpuSeconds(services());
    const seconds = (now() - w0) / 1000;
    const memory = treeMemory(services());
    const percent = Object.fromEntries(Object.keys(after).map((k) => [k, +((100 * (after[k]! - (before[k] ?? 0))) / seconds).toFixed(2)]));
    delete percent.bench;
    const gib = (b: number) => +(b / 2 ** 30).toFixed(3);
    return {
      endpoints: rows.length,
      settleSeconds: +settleSeconds.toFixed(1),
      startCpuMsPerEndpoint: +((settleCpu * 1000) / rows.length).toFixed(2),
      windowSeconds: +seconds.toFixed(1),
      cpuPercentOfOneCore: +Object.values(percent)
        .reduce((a, b) => a + b, 0)
        .toFixed(2),
      cpuPercentByTree: percent,
      rssGiB: gib(Object.values(memory).reduce((a, m) => a + m.rss, 0)),
      pssGiB: gib(Object.values(memory).reduce((a, m) => a + m.pss, 0)),
      pssGiBByTree: Object.fromEntries(Object.entries(memory).map(([k, m]) => [k, gib(m.pss)])),
    };
  }

  // ---- optional diagnosis
  const explain = EXPLAIN
    ? (step('EXPLAIN ANALYZE of the hot statements'),
      await explainHotQueries(db, database.url, {
        ingestAccountId: ingestT.accountId,
        ingestEndpointId: ingestT.endpointIds[0]!,
        def,
        makeData: (id) => demandData(id, 'c_explain'),
        file: path.join(dir, 'explain.txt'),
      }))
    : undefined;

  const loadAfter = os.loadavg();
  const results = {
    quick: QUICK,
    machine: {
      cpuModel: machine().cpuModel,
      cpus: os.cpus().length,
      loadavgBefore: loadBefore.map((l) => +l.toFixed(2)),
      loadavgAfter: loadAfter.map((l) => +l.toFixed(2)),
    },
    bare: { ...bare, ratio: 1 },
    e2e1: { ...e2e1, ratio: +(e2e1.perSecond / bare.perSecond).toFixed(3) },
    e2e100: { ...e2e100, endpoints: FANOUT_ENDPOINTS, ratio: +(e2e100.perSecond / bare.perSecond).toFixed(3) },
    half: { ...half, rate: halfRate, ratio: +(half.perSecond / bare.perSecond).toFixed(3) },
    drain: { ...drain, ratio: +(drain.perSecond / bare.perSecond).toFixed(3), storedPerSecond: drainStored.perSecond },
    ingest: {
      events: ingest.keys.length,
      fanout: INGEST_FANOUT,
      writers: INGEST_WRITERS,
      perSecond: ingest.perSecond,
      ratio: +(ingest.perSecond / bare.perSecond).toFixed(3),
    },
    idleFirst,
    idleCost,
    cost,
    phases: phases.map((p) => ({
      name: p.name,
      startMs: p.fromMs - phases[0]!.fromMs,
      seconds: +((p.toMs - p.fromMs) / 1000).toFixed(2),
      cpuSeconds: p.cpu,
      pgCommits: p.pgCommits,
      tlsHandshakes: p.tlsHandshakes,
      // The monotonic window, for reading the CPU profiles of one phase (bench/profile-summary.ts).
      fromUs: p.fromUs,
      toUs: p.toUs,
    })),
    checks: { receiver: receiverStats, recorded, expected },
    explain,
  };

  // ---- stop the services first: their CPU profiles are written as they exit
  step('stopping');
  await cleanUp();

  // ---- the production shape, once the development shape is stopped (bench/production-phase.ts)
  const production = args.has('--no-production') ? undefined : await productionPhase();
  Object.assign(results, { production });

  printTable(results);
  if (production) printProductionTable(production, results.bare.perSecond);
  if (PROFILE) {
    const windows = phases
      .filter((p) => p.name !== 'bare loop' && !p.name.startsWith('warm-up'))
      .map((p) => ({ fromUs: p.fromUs, toUs: p.toUs }));
    for (const name of ['api', 'worker']) {
      const file = mainThreadProfile(path.join(profileDir, name));
      if (!file) console.log(`\n(no CPU profile written for ${name})`);
      else console.log(`\n${name}: top self time during the delivery phases (${file})\n${summarizeProfile(file, windows, 25)}`);
    }
  }
  console.log(JSON.stringify(results));
  const ok =
    productionOk(production) &&
    receiverStats.badSignatures === 0 &&
    receiverStats.unknownPaths === 0 &&
    Object.entries(expected).every(([k, v]) => recorded[k as keyof typeof recorded] === v);
  if (!ok) {
    console.error('CHECKS FAILED: see "checks" in the JSON line');
    process.exitCode = 1;
  }
}

type Results = Record<string, any>;
function printTable(r: Results) {
  const n = (x: number) => x.toLocaleString('en-US');
  const ratio = (x: number) => `${x.toFixed(3)}×`;
  const lat = (l: { p50: number; p99: number; max: number }) => `p50 ${l.p50} / p99 ${l.p99} / max ${l.max} ms`;
  const rows: [string, string, string, string][] = [
    ['figure', 'value', 'vs bare loop', 'target'],
    [`bare loop: signed 1 KiB POSTs to the receiver, ${CONCURRENCY} in flight`, `${n(r.bare.perSecond)} req/s`, ratio(1), ''],
    [
      `end to end, 1 endpoint (${n(r.e2e1.events)} events, ${CONCURRENCY} publishers)`,
      `${n(r.e2e1.perSecond)} deliveries/s`,
      ratio(r.e2e1.ratio),
      // Its speed target is a ratio to the peer's, measured beside it: `-- --peer`.
      '',
    ],
    ['  latency publish → receipt', lat(r.e2e1.latencyMs), '', ''],
    [`end to end, ${r.e2e100.endpoints} endpoints (1 per Customer)`, `${n(r.e2e100.perSecond)} deliveries/s`, ratio(r.e2e100.ratio), ''],
    ['  latency publish → receipt', lat(r.e2e100.latencyMs), '', ''],
    [
      `half load: ${r.half.rate}/s open loop, 1 endpoint`,
      `p50 ${r.half.latencyMs.p50} / p99 ${r.half.latencyMs.p99} ms`,
      '',
      'p50 < 20, p99 < 100 ms',
    ],
    ['  publish call alone (API answer)', `p50 ${r.half.publishCallMs.p50} / p99 ${r.half.publishCallMs.p99} ms`, '', ''],
    [`drain: stored backlog of ${n(r.drain.deliveries)}, 1 endpoint`, `${n(r.drain.perSecond)} deliveries/s`, ratio(r.drain.ratio), ''],
    [
      `ingest, one stream, fan-out ${r.ingest.fanout} (storeEvent, group commit, ${r.ingest.writers} writers)`,
      `${n(r.ingest.perSecond)} events/s`,
      ratio(r.ingest.ratio),
      // A ratio, as every speed target: an absolute rate does not travel between machines.
      '≥ 0.24×',
    ],
    [`  same, fan-out 1 (the drain backlog, ${CONCURRENCY} writers)`, `${n(r.drain.storedPerSecond)} events/s`, '', ''],
    [
      `first delivery after ${r.idleFirst.idleSeconds} s idle (${r.idleFirst.endpoints} endpoints, 1 each)`,
      lat(r.idleFirst.latencyMs),
      '',
      'p99 ≤ 100 ms',
    ],
    [
      '  hops p50 / p99: publish → signal, → workflow task, task, → session, session → receipt',
      // No wake-up in any history: direct sessions (DIRECT_SESSIONS) took them all, with no workflow task.
      r.idleFirst.hops.traced === 0
        ? 'none in the workflows: direct sessions'
        : ['toSignal', 'signalToTask', 'task', 'taskToActivity', 'sessionToReceipt']
            .map((h) => `${r.idleFirst.hops[h].p50}/${r.idleFirst.hops[h].p99}`)
            .join(', ') + ' ms',
      '',
      '',
    ],
    [
      '  CPU per wake-up, session lingering out included, idle tree taken off (ms)',
      Object.entries(r.idleFirst.cpuPerWakeMs)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
      '',
      '',
    ],
    [
      'history events / 1,000 deliveries (e2e, 1 endpoint)',
      `${n(r.cost.e2e1.eventsPer1000)} (${r.cost.e2e1.workflowTasksPer1000} workflow tasks)`,
      '',
      '< 50',
    ],
    ['  during drain', `${n(r.cost.drain.eventsPer1000)} (${r.cost.drain.workflowTasksPer1000} workflow tasks)`, '', '< 50'],
    ['  at half load', `${n(r.cost.half.eventsPer1000)} (${r.cost.half.workflowTasksPer1000} workflow tasks)`, '', '< 50'],
    [
      `  e2e, ${r.e2e100.endpoints} endpoints`,
      `${n(r.cost.e2e100.eventsPer1000)} (${r.cost.e2e100.workflowTasksPer1000} workflow tasks)`,
      '',
      '',
    ],
    [
      'deliveries per round (e2e 1 / half / drain)',
      `${r.cost.e2e1.deliveriesPerRound} / ${r.cost.half.deliveriesPerRound} / ${r.cost.drain.deliveriesPerRound}`,
      '',
      '',
    ],
    [
      'round p50, gap between rounds p50 (e2e 1 / drain)',
      `${r.cost.e2e1.roundMsP50} ms, ${r.cost.e2e1.gapMsP50} ms / ${r.cost.drain.roundMsP50} ms, ${r.cost.drain.gapMsP50} ms`,
      '',
      '',
    ],
    ['wake signal → round starts p50 (half load)', `${r.cost.half.wakeToRoundMsP50} ms`, '', ''],
    [
      `wake signals landing after the ${r.e2e100.endpoints}-endpoint phase ended`,
      `${n(r.cost.lateWakes.signals)}, the last ${(r.cost.lateWakes.lastAfterMs / 1000).toFixed(1)} s after`,
      '',
      '',
    ],
  ];
  if (r.idleCost)
    rows.push(
      [
        `idle cost: ${n(r.idleCost.endpoints)} verified endpoints, nothing to deliver (whole tree)`,
        `${r.idleCost.cpuPercentOfOneCore} % of a core, ${r.idleCost.pssGiB} GiB PSS (${r.idleCost.rssGiB} GiB RSS summed)`,
        '',
        '< 5 %, < 1.5 GiB',
      ],
      [
        '  by tree: % of a core; GiB PSS',
        `${Object.entries(r.idleCost.cpuPercentByTree)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}; ${Object.entries(r.idleCost.pssGiBByTree)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
        '',
        '',
      ],
      ['  starting them: quiet after, CPU per endpoint', `${r.idleCost.settleSeconds} s, ${r.idleCost.startCpuMsPerEndpoint} ms`, '', ''],
    );
  console.log('');
  printColumns(rows);
  console.log('');
  console.log('CPU seconds per phase (2 cores: at most 2 s per s), Postgres commits, TLS handshakes at the receiver:');
  for (const p of r.phases)
    console.log(
      `  ${p.name.padEnd(34)} ${String(p.seconds).padStart(6)} s  ${Object.entries(p.cpuSeconds)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}; ${p.pgCommits} commits; ${p.tlsHandshakes} handshakes`,
    );
  console.log(
    `load average before ${r.machine.loadavgBefore.join(' ')}, after ${r.machine.loadavgAfter.join(' ')} (${r.machine.cpus} cpus)`,
  );
  console.log(machineLine({ ...machine(r.bare.perSecond), loadavg: r.machine.loadavgAfter }));
  console.log('');
}

try {
  await main();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
process.exit();
