/**
 * `npm run bench -- --peer` (issue #27): the project against the Svix open-source server on the
 * same machine, back to back, with the same client. Both are driven through their public REST API
 * alike: events of ~1 KiB published one per request by 16 publishers, to verified HTTPS endpoints
 * on the bench receiver (a child process that checks every signature, each system's own scheme),
 * until each has arrived once. Five phases per system, in this order after it starts:
 *
 *   cold: the first 5,000 deliveries after the start, 1 endpoint
 *   warm: 5,000 more to that endpoint
 *   100 endpoints, first contact: 5,000 spread over 100 endpoints (one per Customer; one per Svix
 *   application), created after the warm phase, once the machine is quiet again after their creation
 *   100 endpoints, warm: 5,000 more over the same hundred, a second later
 *   sparse: the same hundred, one event each every 7 s, 6 times (3 with --quick), paced rather
 *   than a closed loop: every delivery finds its endpoint idle, as most endpoints of a deployment do
 *
 * Figures per phase: deliveries/s (delivered / (last receipt - first publish)), latency publish ->
 * receipt at p50 and p99, duplicates, and the whole machine's busy CPU (/proc/stat) per delivery:
 * the client and receiver are in it and cost the same for both. The project runs its production
 * shape sized for two cores: 1 API and 2 worker processes (`--worker-processes=N` for another
 * count), Temporal server on Postgres.
 *
 * With --statements the project's Postgres keeps pg_stat_statements, and each phase's statements
 * (of every database on it, Temporal's too) are written to project/statements.txt beside the logs.
 *
 * With --profile the project's API and worker processes run with --cpu-prof, and each one's top
 * self time per phase is written to project/profiles/profiles.txt (bench/phase-profiles.ts).
 *
 * With --trace (or BENCH_TRACE=1) the project's processes record each delivery's hop times
 * (src/runtime/hop-trace.ts) and the hops of the deliveries at p50 and p99 are printed per phase
 * (bench/hop-breakdown.ts); the trace costs a little CPU, so its figures are not the comparison's.
 *
 * The Svix binary: --svix-bin=PATH, SVIX_BIN, or /tmp/svix-bin/svix-server. Without it the
 * project's column is printed alone, and the run still succeeds.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Pool } from 'undici';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { createPool } from '../src/db/pool.js';
import { startProductionShape } from '../dev/production-shape.js';
import { makeLocalTls } from '../dev/tls.js';
import { apiCaller } from './api-client.js';
import { createBenchTenant, eachOf } from './api-endpoints.js';
import { demandData, demandKey } from './demand-events.js';
import { hopBreakdown, printBreakdown, type Breakdown } from './hop-breakdown.js';
import { bareLoop, machine, machineBusyCpuSeconds, machineLine, waitForQuietMachine, type Machine } from './machine.js';
import { profileOption } from './phase-profiles.js';
import { startService } from './processes.js';
import { ensureBuilt, flag, shapeCpuSeconds } from './production-phase.js';
import { connectReceiver, type ReceiverHandle } from './receiver-client.js';
import { findSvixBinary, startSvix } from './svix-server.js';
import { enableStatementStats, phaseStatements, STATEMENT_STATS_SETTINGS } from './statements.js';
import { printColumns } from './table.js';
import { pct } from './percentile.js';

const PUBLISHERS = 16;
const MANY_ENDPOINTS = 100;
/** The sparse phase: each of the hundred endpoints one event every 7 s (longer than the project's 5 s session linger). */
const SPARSE = { everyMs: 7_000 };
/** 6 rounds (600 deliveries, 42 s) in a full run, 3 with --quick. */
const sparseRounds = (events: number) => (events >= 5_000 ? 6 : 3);
const def = getEventDefinition('crm.demand.created')!;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A phase's start, for telling a start-up tail from a steady one (`tailOf`). */
const EARLY_SHARE = 0.05;

/** Something recorded per phase of the project's run: its statements (--statements), its profile window (--profile). */
interface PhaseWatcher {
  start(): unknown;
  finish(phase: string, deliveries: number): unknown;
}

export interface PeerOptions {
  quick: boolean;
  argv: string[];
  dir: string;
  step: (what: string) => void;
  defer: (name: string, fn: () => Promise<unknown>) => void;
}

export interface PhaseFigures {
  events: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  duplicates: number;
  /** TLS connections the receiver accepted during the phase (one handshake each). */
  connections: number;
  /** Where the tail is: the share of the deliveries at or over p99 whose publish was among the phase's first 5 %, and the p99 of those after them. */
  tail: { earlyShare: number; p99AfterMs: number };
  cpuMsPerDelivery: number;
  /** The project's processes (api0, worker0, …, postgres, temporal): CPU ms per delivery of each. */
  cpuByProcess?: Record<string, number>;
  /** The same less what the machine spent idle over as long (the sparse phase, where the idle share is large). */
  aboveIdle?: { cpuMsPerDelivery: number; cpuByProcess?: Record<string, number> };
}
/** CPU seconds used so far by each of a system's processes, by name. */
type CpuProbe = () => Record<string, number>;
export const PHASES = ['cold', 'warm', 'manyFirst', 'manyWarm', 'sparse'] as const;
export type PhaseKey = (typeof PHASES)[number];
type Phases = Record<PhaseKey, PhaseFigures & { hops?: Breakdown }>;

/** Each phase as the tables name it, for a run of `events` per closed-loop phase. */
export function phaseLabels(events: number): Record<PhaseKey, string> {
  const n = events.toLocaleString('en-US');
  return {
    cold: `cold: first ${n} after start, 1 endpoint`,
    warm: `warm: ${n}, 1 endpoint`,
    manyFirst: `first contact: ${n} over ${MANY_ENDPOINTS} new endpoints`,
    manyWarm: `warm: ${n} more over the ${MANY_ENDPOINTS}`,
    sparse: `sparse: the ${MANY_ENDPOINTS}, one each every ${SPARSE.everyMs / 1000} s, ${sparseRounds(events)} times`,
  };
}
export interface SystemResult {
  system: string;
  startSeconds: number;
  phases?: Phases;
  error?: string;
}
export interface PeerResults {
  machine: Machine;
  events: number;
  peer?: SystemResult;
  peerMissing?: string;
  project: SystemResult;
  receiver: { badSignatures: number; unknownPaths: number; duplicates: number };
}

/** One publish: the event's entity id (its key at the receiver is demandKey of it), the target endpoint's index. */
type Publish = (entityId: string, target: number) => Promise<boolean>;

/** Runs fn(0..count-1), 8 at a time: setup requests, not measured. */

/** The same client for both: a closed loop of 16 publishers, one event per request, then every arrival. */
async function drive(
  receiver: ReceiverHandle,
  publish: Publish,
  tag: string,
  count: number,
  targets: number,
  traceDir?: string,
  cpuProbe?: CpuProbe,
): Promise<PhaseFigures & { hops?: Breakdown }> {
  const phase = await startPhase(receiver, cpuProbe);
  let failures = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: PUBLISHERS }, async () => {
      for (let n = next++; n < count; n = next++) {
        const entityId = `${tag}_${n}`;
        phase.sentAt.set(demandKey(entityId), now());
        if (!(await publish(entityId, n % targets))) failures++;
      }
    }),
  );
  if (failures) throw new Error(`${tag}: ${failures} publishes were not accepted`);
  return phase.end(tag, traceDir);
}

/**
 * The same client, paced: each of `targets` endpoints gets one event every `everyMs`, `rounds`
 * times, the endpoints' publishes spread evenly over each period. With a period longer than the
 * project's session linger (5 s), every delivery finds its endpoint with no session running: the
 * sparse traffic of most endpoints of a real deployment, where a session's start, end and report
 * are paid per delivery, not shared by a burst.
 */
async function drivePaced(
  receiver: ReceiverHandle,
  publish: Publish,
  tag: string,
  o: { targets: number; rounds: number; everyMs: number },
  traceDir?: string,
  cpuProbe?: CpuProbe,
): Promise<PhaseFigures & { hops?: Breakdown }> {
  // What the machine spends idle, measured first over one period, is a large share at this pace.
  const idle = await measureIdle(o.everyMs, cpuProbe);
  const phase = await startPhase(receiver, cpuProbe, idle);
  const published: Promise<boolean>[] = [];
  for (let r = 0; r < o.rounds; r++)
    for (let i = 0; i < o.targets; i++) {
      const due = phase.t0 + r * o.everyMs + (i * o.everyMs) / o.targets;
      await sleep(Math.max(0, due - now()));
      const entityId = `${tag}_${r}_${i}`;
      phase.sentAt.set(demandKey(entityId), now());
      published.push(publish(entityId, i));
    }
  const failures = (await Promise.all(published)).filter((ok) => !ok).length;
  if (failures) throw new Error(`${tag}: ${failures} publishes were not accepted`);
  return phase.end(tag, traceDir);
}

/** CPU seconds each process used between two probes. */
const processCpuSince = (before: Record<string, number> | undefined, after: Record<string, number> | undefined) =>
  before && after ? Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)])) : undefined;

/** CPU seconds a second, of the machine and of each process, while nothing is sent. */
interface IdleCpu {
  machine: number;
  byProcess?: Record<string, number>;
}

async function measureIdle(ms: number, cpuProbe?: CpuProbe): Promise<IdleCpu> {
  const [t0, cpu0, byProcess0] = [now(), machineBusyCpuSeconds(), cpuProbe?.()];
  await sleep(ms);
  const [seconds, cpu1, used] = [(now() - t0) / 1000, machineBusyCpuSeconds(), processCpuSince(byProcess0, cpuProbe?.())];
  return {
    machine: (cpu1 - cpu0) / seconds,
    byProcess: used && Object.fromEntries(Object.entries(used).map(([k, v]) => [k, v / seconds])),
  };
}

/**
 * A phase's clocks and counters from its first publish; `end` waits for every arrival and gives its
 * figures, and with `idle` those less what the machine spends idle over as long.
 */
async function startPhase(receiver: ReceiverHandle, cpuProbe?: CpuProbe, idle?: IdleCpu) {
  const before = await receiver.stats();
  const sentAt = new Map<string, number>();
  const t0 = now();
  const cpu0 = machineBusyCpuSeconds();
  const byProcess0 = cpuProbe?.();
  return {
    t0,
    sentAt,
    async end(tag: string, traceDir?: string): Promise<PhaseFigures & { hops?: Breakdown }> {
      const keys = [...sentAt.keys()];
      const count = keys.length;
      for (let missing = keys, progressAt = Date.now(); missing.length > 0;) {
        await sleep(20);
        const still = missing.filter((k) => !receiver.arrivals.has(k));
        if (still.length < missing.length) progressAt = Date.now();
        missing = still;
        if (Date.now() - progressAt > 90_000) throw new Error(`${tag}: ${missing.length} of ${keys.length} deliveries never arrived`);
      }
      const cpu = machineBusyCpuSeconds() - cpu0;
      const used = processCpuSince(byProcess0, cpuProbe?.());
      const seconds = (now() - t0) / 1000;
      const perDelivery = (cpuSeconds: number) => +((cpuSeconds * 1000) / count).toFixed(3);
      const byProcess = (less: (name: string) => number) =>
        used && Object.fromEntries(Object.entries(used).map(([k, v]) => [k, perDelivery(v - less(k))]));
      const cpuByProcess = byProcess(() => 0);
      const aboveIdle = idle && {
        cpuMsPerDelivery: perDelivery(cpu - idle.machine * seconds),
        cpuByProcess: byProcess((k) => (idle.byProcess?.[k] ?? 0) * seconds),
      };
      const last = Math.max(...keys.map((k) => receiver.arrivals.get(k)!));
      const latencyOf = (k: string) => receiver.arrivals.get(k)! - sentAt.get(k)!;
      const latency = keys.map(latencyOf).sort((a, b) => a - b);
      let hops: Breakdown | undefined;
      if (traceDir) {
        // The processes write their hop times every 200 ms.
        await sleep(600);
        const deliveries = keys.map((key) => ({ key, sent: sentAt.get(key)!, receipt: receiver.arrivals.get(key)! }));
        hops = hopBreakdown(traceDir, deliveries);
        // Each delivery's publish and receipt (wall-clock ms, as the processes' hop times), in publish order: for timelines the breakdown's medians hide.
        fs.writeFileSync(
          path.join(traceDir, `${tag}.deliveries.tsv`),
          deliveries.map((d) => `${d.sent.toFixed(2)}\t${d.receipt.toFixed(2)}\t${d.key}\n`).join(''),
        );
      }
      return {
        hops,
        events: count,
        perSecond: Math.round(count / ((last - t0) / 1000)),
        p50Ms: +pct(latency, 50).toFixed(1),
        p99Ms: +pct(latency, 99).toFixed(1),
        maxMs: +latency[latency.length - 1]!.toFixed(1),
        tail: tailOf(keys, sentAt, latencyOf),
        ...(await receiver.stats().then((after) => ({
          duplicates: after.duplicates - before.duplicates,
          connections: after.connections - before.connections,
        }))),
        cpuMsPerDelivery: perDelivery(cpu),
        cpuByProcess,
        aboveIdle,
      };
    },
  };
}

/**
 * Whether a phase's tail is its start or its whole length: of the deliveries at or over its p99,
 * the share published among its first 5 % (a start-up transient when near 1), and the p99 of the
 * deliveries published after those first 5 %.
 */
export function tailOf(keys: string[], sentAt: Map<string, number>, latencyOf: (key: string) => number): PhaseFigures['tail'] {
  const bySending = [...keys].sort((a, b) => sentAt.get(a)! - sentAt.get(b)!);
  const first = Math.ceil(bySending.length * EARLY_SHARE);
  const early = new Set(bySending.slice(0, first));
  const p99 = pct(
    keys.map(latencyOf).sort((a, b) => a - b),
    99,
  );
  const band = keys.filter((k) => latencyOf(k) >= p99);
  const after = bySending
    .slice(first)
    .map(latencyOf)
    .sort((a, b) => a - b);
  return {
    earlyShare: +(band.filter((k) => early.has(k)).length / band.length).toFixed(2),
    p99AfterMs: after.length ? +pct(after, 99).toFixed(1) : 0,
  };
}

/**
 * Cold and warm to one endpoint, then the 100 endpoints are created and, once the machine is quiet
 * again, driven twice: their first contact, then warm. Created only then, for both systems: the
 * project starts a workflow per endpoint, and a hundred of them setting up (Temporal, the workers)
 * inside the cold phase measured their setup as the cold deliveries' cost (1.8 s of the Temporal
 * server's CPU in one run). The first contact alone is no steady state: each endpoint's session
 * starts in it, and the worker that sent nothing to the one endpoint runs its sending code
 * unoptimised (its compiler and GC threads took 0.08 ms per delivery there, 0.004 warm).
 */
async function phases(
  receiver: ReceiverHandle,
  single: Publish,
  makeMany: () => Promise<Publish>,
  events: number,
  tag: string,
  step: (s: string) => void,
  traceDir?: string,
  cpuProbe?: CpuProbe,
  watchers: PhaseWatcher[] = [],
) {
  /** `run`, with what each watcher records of it (statements, a profile's window) under `name`. */
  const watched = async <T extends { events: number }>(name: string, run: () => Promise<T>): Promise<T> => {
    for (const w of watchers) await w.start();
    const figures = await run();
    for (const w of watchers) await w.finish(name, figures.events);
    return figures;
  };
  step(`  cold: the first ${events} deliveries after the start, 1 endpoint`);
  const cold = await watched('cold', () => drive(receiver, single, `${tag}c`, events, 1, traceDir, cpuProbe));
  await sleep(1_000);
  step(`  warm: ${events} more, 1 endpoint`);
  const warm = await watched('warm', () => drive(receiver, single, `${tag}w`, events, 1, traceDir, cpuProbe));
  step(`  creating ${MANY_ENDPOINTS} more endpoints`);
  const many = await makeMany();
  const quiet = await waitForQuietMachine();
  step(`  the machine ${quiet.settled ? 'was quiet after' : 'was still busy after'} ${quiet.seconds} s`);
  step(`  ${events} over ${MANY_ENDPOINTS} endpoints, their first contact`);
  const manyFirst = await watched('first contact', () => drive(receiver, many, `${tag}m`, events, MANY_ENDPOINTS, traceDir, cpuProbe));
  await sleep(1_000);
  step(`  ${events} more over the ${MANY_ENDPOINTS} endpoints`);
  const manyWarm = await watched('warm, 100', () => drive(receiver, many, `${tag}n`, events, MANY_ENDPOINTS, traceDir, cpuProbe));
  // Once the hundred's sessions have ended (the project's linger is 5 s), each endpoint's events come apart.
  await sleep(SPARSE.everyMs);
  step(`  the ${MANY_ENDPOINTS} endpoints, one event each every ${SPARSE.everyMs / 1000} s, ${sparseRounds(events)} times`);
  const sparse = await watched('sparse', () =>
    drivePaced(
      receiver,
      many,
      `${tag}s`,
      { targets: MANY_ENDPOINTS, rounds: sparseRounds(events), everyMs: SPARSE.everyMs },
      traceDir,
      cpuProbe,
    ),
  );
  return { cold, warm, manyFirst, manyWarm, sparse };
}

/** Svix: one application with one endpoint, and 100 applications with one endpoint each (its unit of a tenant's endpoint). */
async function measureSvix(
  o: PeerOptions,
  bin: string,
  tls: { caFile: string },
  receiver: ReceiverHandle,
  events: number,
): Promise<SystemResult> {
  const result: SystemResult = { system: `Svix OSS server (${bin})`, startSeconds: 0 };
  const t0 = Date.now();
  o.step(`starting the Svix server (${bin}) on an embedded Postgres of its own`);
  const svix = await startSvix({ bin, dir: path.join(o.dir, 'svix'), caFile: tls.caFile });
  o.defer('svix', () => svix.stop());
  try {
    result.startSeconds = +((Date.now() - t0) / 1000).toFixed(1);
    const apps: string[] = [];
    /** Applications `from` to `to - 1`, one endpoint each, their secrets given to the receiver. */
    const createApps = async (from: number, to: number) => {
      const secrets: Record<string, string> = {};
      await eachOf(to - from, async (n) => {
        const i = from + n;
        const app = await svix.call('POST', '/api/v1/app', { name: `bench-${i}` });
        const secret = `whsec_${crypto.randomBytes(24).toString('base64')}`;
        const urlPath = `/svix/${i}`;
        secrets[urlPath] = secret;
        await svix.call('POST', `/api/v1/app/${app.id}/endpoint`, { url: `https://127.0.0.1:${receiver.port}${urlPath}`, secret });
        apps[i] = app.id;
      });
      receiver.secrets(secrets);
    };
    o.step('  creating an application with one endpoint');
    await createApps(0, 1);
    const pool = new Pool(svix.url, { connections: PUBLISHERS, pipelining: 1 });
    const publishTo =
      (appOf: (target: number) => string): Publish =>
      async (entityId, target) => {
        const res = await pool.request({
          method: 'POST',
          path: `/api/v1/app/${appOf(target)}/msg?with_content=false`,
          headers: { authorization: `Bearer ${svix.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            eventType: def.type,
            payload: { type: def.type, data: demandData(entityId, `c_${entityId}`), bench_key: demandKey(entityId) },
          }),
        });
        await res.body.text();
        return res.statusCode >= 200 && res.statusCode < 300;
      };
    result.phases = await phases(
      receiver,
      publishTo(() => apps[0]!),
      async () => {
        await createApps(1, 1 + MANY_ENDPOINTS);
        return publishTo((t) => apps[1 + t]!);
      },
      events,
      'svix',
      o.step,
    );
    await pool.close();
  } catch (err) {
    result.error = (err as Error).message;
    console.error(err);
  } finally {
    o.step('stopping the Svix server');
    await svix.stop();
  }
  return result;
}

/** The project's production shape, 1 API + 2 workers: one endpoint of its own tenant, and 100 of another, one per Customer. */
async function measureProject(o: PeerOptions, tls: { caFile: string }, receiver: ReceiverHandle, events: number): Promise<SystemResult> {
  const apiProcesses = 1;
  // Two by default, as a deployment keeps for failover; `--worker-processes=N` measures another count.
  const workerProcesses = flag(o.argv, 'worker-processes', 2);
  const result: SystemResult = { system: `project, production shape: ${apiProcesses} API + ${workerProcesses} workers`, startSeconds: 0 };
  ensureBuilt(o.step);
  o.step(`starting the production shape: ${apiProcesses} API + ${workerProcesses} worker processes, Temporal server on Postgres`);
  const t0 = Date.now();
  const shapeDir = path.join(o.dir, 'project');
  fs.rmSync(shapeDir, { recursive: true, force: true });
  fs.mkdirSync(shapeDir, { recursive: true });
  fs.chmodSync(shapeDir, 0o755);
  const traceDir = o.argv.includes('--trace') || process.env.BENCH_TRACE === '1' ? path.join(shapeDir, 'trace') : undefined;
  const recordStatements = o.argv.includes('--statements');
  const profiles = profileOption(o.argv, path.join(shapeDir, 'profiles'));
  const shape = await startProductionShape({
    dataDir: shapeDir,
    apiProcesses,
    workerProcesses,
    env: {
      WEBHOOKS_DEV_MODE: '1',
      WEBHOOKS_DEV_CA_FILE: tls.caFile,
      // Svix OSS has no per-key rate limit.
      RATE_LIMIT_BURST: '1000000000',
      RATE_LIMIT_PER_SECOND: '1000000000',
      ENDPOINT_LIMIT: String(MANY_ENDPOINTS + 10),
      BENCH_TRACE_DIR: traceDir,
    },
    postgresSettings: recordStatements ? STATEMENT_STATS_SETTINGS : undefined,
    nodeArgs: profiles?.nodeArgs,
    say: (line) => o.step(`  ${line}`),
  });
  o.defer('production shape', () => shape.stop());
  const db = createPool(shape.databaseUrl, 4);
  let statements: ReturnType<typeof phaseStatements> | undefined;
  if (recordStatements) {
    await enableStatementStats(db);
    statements = phaseStatements(db, path.join(shapeDir, 'statements.txt'), { allDatabases: true });
  }
  const apiPool = new Pool(shape.apiUrl, { connections: PUBLISHERS, pipelining: 1 });
  try {
    result.startSeconds = +((Date.now() - t0) / 1000).toFixed(1);
    const api = apiCaller(apiPool);
    const tenant = async (name: string, endpoints: number) => {
      const { key, customerIds } = await createBenchTenant(db, api, receiver, {
        name: `bench-peer-${name}`,
        endpoints,
        perCustomer: endpoints > 1,
        pathPrefix: `project/${name}`,
      });
      const publish: Publish = async (entityId, target) => {
        const customerId = customerIds[target];
        const body = { type: def.type, data: demandData(entityId, `c_${entityId}`), ...(customerId ? { customer_id: customerId } : {}) };
        return (await api('POST', '/api/v1/events', key, body)).status === 201;
      };
      return publish;
    };
    o.step('  creating an endpoint, verified through the API');
    const single = await tenant('single', 1);
    // Each process on its own: which one a phase's CPU went to (the first contact's extra cost, a worker saturated).
    const cpuProbe: CpuProbe = () => shapeCpuSeconds(shape);
    // The hundred (one per Customer, verified through the API) once the one endpoint's phases are done.
    result.phases = await phases(
      receiver,
      single,
      () => tenant('many', MANY_ENDPOINTS),
      events,
      'proj',
      o.step,
      traceDir,
      cpuProbe,
      [statements, profiles?.watcher].filter((w) => w !== undefined),
    );
  } catch (err) {
    result.error = (err as Error).message;
    console.error(err);
  } finally {
    o.step('stopping the production shape');
    await apiPool.close();
    await db.end();
    await shape.stop();
  }
  // A process writes its profile as it exits.
  if (profiles) o.step(`  CPU profiles by phase: ${profiles.summarize()}`);
  return result;
}

export async function runPeerComparison(o: PeerOptions): Promise<PeerResults> {
  const events = o.quick ? 1_000 : 5_000;
  fs.mkdirSync(o.dir, { recursive: true });
  fs.chmodSync(o.dir, 0o755);
  const tls = await makeLocalTls(path.join(o.dir, 'tls'), 'bench');
  const receiverService = await startService({
    name: 'receiver',
    entry: 'bench/receiver.ts',
    env: { ...process.env, NODE_OPTIONS: '' },
    logFile: path.join(o.dir, 'receiver.log'),
    ready: 'receiver ready',
    ipc: true,
  });
  o.defer('receiver', () => receiverService.stop());
  const receiver = await connectReceiver(receiverService, { cert: tls.cert, key: tls.key });
  o.step('bare loop: signed 1 KiB POSTs straight to the receiver, 16 in flight (names the machine)');
  const bare = await bareLoop(receiver, tls.ca, o.quick ? 2 : 5);
  const m = machine(bare.perSecond);

  const bin = findSvixBinary(o.argv);
  let peer: SystemResult | undefined;
  let peerMissing: string | undefined;
  if (bin.found) peer = await measureSvix(o, bin.path, tls, receiver, events);
  else {
    peerMissing = `no Svix server binary at ${bin.path} (set SVIX_BIN or --svix-bin=PATH): the peer column is skipped`;
    console.error(peerMissing);
  }
  const project = await measureProject(o, tls, receiver, events);
  const { badSignatures, unknownPaths, duplicates } = await receiver.stats();
  return {
    machine: { ...m, loadavg: machine().loadavg },
    events,
    peer,
    peerMissing,
    project,
    receiver: { badSignatures, unknownPaths, duplicates },
  };
}

/** Side by side: the project, the peer, and project / peer (rate: higher is better; latency and CPU: lower is better). */
export function printPeerTable(r: PeerResults): void {
  const n = (x: number) => x.toLocaleString('en-US');
  const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? `${(a / b).toFixed(2)}×` : '');
  const rows: string[][] = [['phase', 'figure', 'project', 'Svix OSS', 'project / Svix']];
  const label = phaseLabels(r.events);
  for (const k of PHASES) {
    const a = r.project.phases?.[k];
    const b = r.peer?.phases?.[k];
    const cell = (f: PhaseFigures | undefined, fn: (f: PhaseFigures) => string) => (f ? fn(f) : r.peer ? 'failed' : '');
    rows.push(
      [label[k], 'deliveries/s', cell(a, (f) => n(f.perSecond)), cell(b, (f) => n(f.perSecond)), ratio(a?.perSecond, b?.perSecond)],
      ['', 'p50 publish → receipt', cell(a, (f) => `${f.p50Ms} ms`), cell(b, (f) => `${f.p50Ms} ms`), ratio(a?.p50Ms, b?.p50Ms)],
      ['', 'p99 publish → receipt', cell(a, (f) => `${f.p99Ms} ms`), cell(b, (f) => `${f.p99Ms} ms`), ratio(a?.p99Ms, b?.p99Ms)],
      [
        '',
        'machine CPU per delivery',
        cell(a, (f) => `${f.cpuMsPerDelivery} ms`),
        cell(b, (f) => `${f.cpuMsPerDelivery} ms`),
        ratio(a?.cpuMsPerDelivery, b?.cpuMsPerDelivery),
      ],
      [
        '',
        'p99 band published in first 5 %',
        cell(a, (f) => `${Math.round(f.tail.earlyShare * 100)} %`),
        cell(b, (f) => `${Math.round(f.tail.earlyShare * 100)} %`),
        '',
      ],
      [
        '',
        'p99 after the first 5 %',
        cell(a, (f) => `${f.tail.p99AfterMs} ms`),
        cell(b, (f) => `${f.tail.p99AfterMs} ms`),
        ratio(a?.tail.p99AfterMs, b?.tail.p99AfterMs),
      ],
      ['', 'duplicates', cell(a, (f) => String(f.duplicates)), cell(b, (f) => String(f.duplicates)), ''],
      [
        '',
        'connections opened',
        cell(a, (f) => String(f.connections)),
        cell(b, (f) => String(f.connections)),
        ratio(a?.connections, b?.connections),
      ],
    );
  }
  console.log('');
  console.log(`Side by side with the peer (${PUBLISHERS} publishers, ~1 KiB events, verified HTTPS endpoints, back to back in one run):`);
  printColumns(rows);
  console.log(machineLine(r.machine));
  if (r.peerMissing) console.log(r.peerMissing);
  if (r.peer?.error) console.log(`Svix FAILED: ${r.peer.error}`);
  if (r.project.error) console.log(`project FAILED: ${r.project.error}`);
  const byProcess = PHASES.flatMap((k) => {
    const c = r.project.phases?.[k].cpuByProcess;
    return c
      ? [
          `  ${label[k]}: ${Object.entries(c)
            .map(([name, ms]) => `${name} ${ms}`)
            .join(', ')}`,
        ]
      : [];
  });
  if (byProcess.length) console.log(['project, CPU ms per delivery by process (bench = the client):', ...byProcess].join('\n'));
  for (const k of PHASES) {
    const fig = (system: string, f: PhaseFigures | undefined) =>
      f?.aboveIdle
        ? [
            `  ${system}, ${label[k]}: machine ${f.aboveIdle.cpuMsPerDelivery}`,
            ...Object.entries(f.aboveIdle.cpuByProcess ?? {}).map(([name, ms]) => `${name} ${ms}`),
          ].join(', ')
        : undefined;
    const lines = [fig('project', r.project.phases?.[k]), fig('Svix', r.peer?.phases?.[k])].filter(Boolean);
    if (lines.length) console.log(["CPU ms per delivery above the idle machine's (measured over one period before):", ...lines].join('\n'));
  }
  for (const k of PHASES) {
    const hops = r.project.phases?.[k].hops;
    if (hops) printBreakdown(`project, ${label[k]}`, hops);
  }
  console.log(
    `started in: project ${r.project.startSeconds} s${r.peer ? `, Svix ${r.peer.startSeconds} s` : ''}; receiver: ${r.receiver.badSignatures} bad signatures, ${r.receiver.unknownPaths} unknown paths`,
  );
  console.log('');
}

export function peerOk(r: PeerResults): boolean {
  return !r.project.error && !r.peer?.error && r.receiver.badSignatures === 0 && r.receiver.unknownPaths === 0;
}
