/**
 * The benchmark's phase on the production shape (issue #15): what users will run, measured in
 * the same run as the development-shape phases, once those are stopped and the machine is idle
 * again. dev/production-shape.ts brings up embedded Postgres (always: DATABASE_URL is not used
 * here), a real Temporal server on it, N compiled API processes on one port and M compiled
 * workers; the bench's own receiver (a child process) verifies every signature. Measured: end to
 * end to one endpoint and to many (16 publishers of ~1 KiB events, one per request), and CPU per
 * delivery per component.
 *
 * Runs the compiled code: dist/ is rebuilt (`npm run build`) when a source file is newer than it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { apiCaller, type ApiCall } from './api-client.js';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { createPool } from '../src/db/pool.js';
import { startProductionShape, type ProductionShape } from '../dev/production-shape.js';
import { makeLocalTls } from '../dev/tls.js';
import { projectRoot } from '../dev/tools.js';
import { demandData, demandKey } from './demand-events.js';
import { childPid, cpuSeconds, startService } from './processes.js';
import { connectReceiver, type ReceiverHandle } from './receiver-client.js';
import { enableStatementStats, phaseStatements, STATEMENT_STATS_SETTINGS } from './statements.js';
import { bareLoop, machine, machineLine } from './machine.js';
import { createBenchTenant, type BenchTenant } from './api-endpoints.js';
import { printColumns } from './table.js';
import { pct } from './percentile.js';

export interface ProductionPhaseOptions {
  quick: boolean;
  /** The bench's command-line arguments: `--api-processes=N`, `--worker-processes=M`. */
  argv: string[];
  /** The phase's folder (Postgres data, Temporal's configuration, logs). */
  dir: string;
  step: (what: string) => void;
  /** Registers a stop with the bench's clean-up, so Ctrl-C stops the shape too. */
  defer: (name: string, fn: () => Promise<unknown>) => void;
}

interface Latency {
  p50: number;
  p99: number;
  max: number;
}
interface Measured {
  events: number;
  perSecond: number;
  latencyMs: Latency;
  /** CPU ms per delivery per component during the phase; `total` is API + worker + Postgres + Temporal. */
  cpuMsPerDelivery: Record<string, number>;
  cpuSeconds: Record<string, number>;
  seconds: number;
}
export interface ProductionResults {
  apiProcesses: number;
  workerProcesses: number;
  build: string;
  startSeconds: number;
  /** os.loadavg() as the phase starts and ends: the figures are only as good as the machine was idle. */
  loadavgBefore: number[];
  loadavgAfter: number[];
  /** The bare loop to this phase's receiver (a few seconds, before the shape starts): names the machine with the figures. */
  barePerSecond?: number;
  e2e1?: Measured;
  e2eMany?: Measured & { endpoints: number };
  receiver?: { requests: number; badSignatures: number; unknownPaths: number; duplicates: number };
  error?: string;
}

const PUBLISHERS = 16;
const def = getEventDefinition('crm.demand.created')!;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** `--name=N` of `argv` as a positive whole number; `fallback` when absent or not one. */
export const flag = (argv: string[], name: string, fallback: number) => {
  const v = argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  return v && Number(v) > 0 ? Math.floor(Number(v)) : fallback;
};

/** CPU seconds used so far by each process of `shape` (api0, api1, …, worker0, …, postgres, temporal; the Web UI left out) and by this one (bench). */
export function shapeCpuSeconds(shape: ProductionShape): Record<string, number> {
  // The shape's own postmaster: with two shapes (bench:scale's empty twin) the bench has two.
  const roots: Record<string, number | undefined> = { postgres: shape.postgres?.pid ?? childPid('postgres'), temporal: shape.temporal.pid };
  shape.apis.forEach((p, i) => (roots[`api${i}`] = p.pid));
  shape.workers.forEach((p, i) => (roots[`worker${i}`] = p.pid));
  return cpuSeconds(roots);
}

/** Runs `npm run build` when dist/ is missing or older than a file it is built from; says which. */
export function ensureBuilt(step: (what: string) => void): string {
  const stamp = path.join(projectRoot, 'dist', 'workflow-bundle.js');
  const builtAt = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
  const include = (
    JSON.parse(fs.readFileSync(path.join(projectRoot, 'tsconfig.build.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as {
      include: string[];
    }
  ).include;
  const sources = execFileSync('git', ['ls-files', '--', ...include, 'console'], { cwd: projectRoot, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  const stale = sources.find((f) => fs.existsSync(path.join(projectRoot, f)) && fs.statSync(path.join(projectRoot, f)).mtimeMs > builtAt);
  if (!stale) return 'dist/ up to date';
  step(`npm run build (${builtAt ? `${stale} is newer than dist/` : 'no dist/ yet'})`);
  const t0 = Date.now();
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: projectRoot, stdio: ['ignore', process.stderr, process.stderr] });
  return `built in ${((Date.now() - t0) / 1000).toFixed(0)} s`;
}

/** Runs fn(0..count-1), 8 at a time: setup requests, not measured. */

export async function runProductionPhase(opts: ProductionPhaseOptions): Promise<ProductionResults> {
  const apiProcesses = flag(opts.argv, 'api-processes', 2);
  const workerProcesses = flag(opts.argv, 'worker-processes', 2);
  const load = () => os.loadavg().map((l) => +l.toFixed(2));
  const out: ProductionResults = { apiProcesses, workerProcesses, build: '', startSeconds: 0, loadavgBefore: load(), loadavgAfter: [] };
  const stops: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const fn of stops.splice(0).reverse()) await fn().catch(() => {});
  };
  opts.defer('production shape', stopAll);
  try {
    out.build = ensureBuilt(opts.step);
    await measure(opts, out, stops);
  } catch (err) {
    out.error = (err as Error).message;
    console.error(err);
  } finally {
    out.loadavgAfter = load();
    opts.step('stopping the production shape');
    await stopAll();
  }
  return out;
}

export interface ShapeBenchStart {
  /** The shape's folder (emptied first): Postgres data, Temporal's configuration, logs. */
  dir: string;
  step: (what: string) => void;
  apiProcesses: number;
  workerProcesses: number;
  /** Endpoints one Account may have (ENDPOINT_LIMIT). */
  endpointLimit: number;
  /** Loads pg_stat_statements and records each phase's statements in dir/statements.txt. */
  statements?: boolean;
  /** Stops pushed here are the caller's to run, in reverse. */
  stops: (() => Promise<unknown>)[];
  /** A bare loop to the receiver this long before the shape starts: the machine's line with the figures. */
  bareLoopSeconds?: number;
}

/**
 * The bench's receiver (a child process) and the production shape with embedded Postgres
 * (always: DATABASE_URL is not used, so no bench rows or Temporal databases land on that server,
 * and its CPU is counted), with a pool on its database and a ShapeBench against it.
 */
export async function startShapeBench(o: ShapeBenchStart) {
  fs.rmSync(o.dir, { recursive: true, force: true });
  fs.mkdirSync(o.dir, { recursive: true });
  // Embedded Postgres runs as a `postgres` user when the bench runs as root: it must reach its folder.
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
  o.stops.push(() => receiverService.stop());
  const receiver = await connectReceiver(receiverService, tls);
  const barePerSecond = o.bareLoopSeconds ? (await bareLoop(receiver, tls.ca, o.bareLoopSeconds)).perSecond : undefined;

  o.step(`starting the production shape: Postgres, Temporal server, ${o.apiProcesses} API and ${o.workerProcesses} worker processes`);
  const t0 = Date.now();
  const shape = await startProductionShape({
    dataDir: o.dir,
    apiProcesses: o.apiProcesses,
    workerProcesses: o.workerProcesses,
    postgresSettings: o.statements ? STATEMENT_STATS_SETTINGS : undefined,
    env: {
      // The receiver is on loopback with the bench's own CA: dev mode lets both through, as in test/cluster.
      WEBHOOKS_DEV_MODE: '1',
      WEBHOOKS_DEV_CA_FILE: tls.caFile,
      RATE_LIMIT_BURST: '1000000000',
      RATE_LIMIT_PER_SECOND: '1000000000',
      ENDPOINT_LIMIT: String(o.endpointLimit),
    },
    say: (line) => o.step(`  ${line}`),
  });
  o.stops.push(() => shape.stop());
  const startSeconds = +((Date.now() - t0) / 1000).toFixed(1);

  const db = createPool(shape.databaseUrl, 8);
  o.stops.push(() => db.end());
  if (o.statements) await enableStatementStats(db);
  const apiPool = new Pool(shape.apiUrl, { connections: 64, pipelining: 1 });
  o.stops.push(() => apiPool.close());
  const api = apiCaller(apiPool);
  const recorder = o.statements ? phaseStatements(db, path.join(o.dir, 'statements.txt'), { allDatabases: true }) : undefined;
  return { shape, db, api, receiver, startSeconds, barePerSecond, bench: new ShapeBench(shape, db, api, receiver, recorder) };
}

async function measure(opts: ProductionPhaseOptions, out: ProductionResults, stops: (() => Promise<unknown>)[]): Promise<void> {
  const manyEndpoints = opts.quick ? 20 : 100;
  const size = opts.quick ? { events: 600, capSeconds: 3, warmup: 100 } : { events: 4_000, capSeconds: 20, warmup: 4_000 };
  const { receiver, bench, startSeconds, barePerSecond } = await startShapeBench({
    dir: opts.dir,
    step: opts.step,
    apiProcesses: out.apiProcesses,
    workerProcesses: out.workerProcesses,
    endpointLimit: manyEndpoints + 10,
    statements: opts.argv.includes('--statements'),
    stops,
    bareLoopSeconds: opts.quick ? 2 : 4,
  });
  out.startSeconds = startSeconds;
  out.barePerSecond = barePerSecond;

  opts.step(`creating tenants: 1 + ${manyEndpoints} (one per Customer) endpoints, verified through the API`);
  const [single, many] = await Promise.all([bench.tenant('single', 1), bench.tenant('many', manyEndpoints)]);
  opts.step('warming up (compiled code, connections, endpoint workflows)');
  await bench.publish(single, 'warm1', size.warmup, 30);
  await bench.publish(many, 'warmN', size.warmup, 30);
  await sleep(1_000);

  opts.step('production shape: end to end, 1 endpoint');
  out.e2e1 = await bench.phase('end to end, 1 endpoint', () => bench.publish(single, 'p1', size.events, size.capSeconds));
  await sleep(1_000);
  opts.step(`production shape: end to end, ${manyEndpoints} endpoints`);
  out.e2eMany = {
    ...(await bench.phase(`end to end, ${manyEndpoints} endpoints`, () => bench.publish(many, 'pN', size.events, size.capSeconds))),
    endpoints: manyEndpoints,
  };
  const { requests, badSignatures, unknownPaths, duplicates } = await receiver.stats();
  out.receiver = { requests, badSignatures, unknownPaths, duplicates };
}

export type Tenant = BenchTenant;

/** Tenants, publishers and CPU accounting against one running shape. */
export class ShapeBench {
  constructor(
    private shape: ProductionShape,
    private db: ReturnType<typeof createPool>,
    private api: ApiCall,
    private receiver: ReceiverHandle,
    /** With --statements: each phase's statements, of every database (Temporal's too). */
    private statements?: ReturnType<typeof phaseStatements>,
  ) {}

  /** An Account with a live key and `endpoints` verified endpoints, one per Customer when more than one. */
  async tenant(name: string, endpoints: number): Promise<Tenant> {
    return createBenchTenant(this.db, this.api, this.receiver, {
      name: `bench-prod-${name}`,
      endpoints,
      perCustomer: endpoints > 1,
      pathPrefix: `prod/${name}`,
    });
  }

  /** Closed loop: 16 publishers, one event per request, until `count` or the time cap; then every arrival. */
  async publish(t: Tenant, tag: string, count: number, capSeconds: number) {
    const sentAt = await this.send(t, tag, count, capSeconds);
    await this.allArrived([...sentAt.keys()], tag);
    const first = Math.min(...sentAt.values());
    const last = Math.max(...[...sentAt.keys()].map((k) => this.receiver.arrivals.get(k)!));
    const latency = this.latencies(sentAt)
      .map((l) => l.ms)
      .sort((a, b) => a - b);
    return {
      events: sentAt.size,
      perSecond: Math.round(sentAt.size / ((last - first) / 1000)),
      latencyMs: { p50: +pct(latency, 50).toFixed(1), p99: +pct(latency, 99).toFixed(1), max: +latency[latency.length - 1]!.toFixed(1) },
    };
  }

  /**
   * The publishing half of `publish`: 16 publishers until `count`, the time cap or `stop()`;
   * when each event was sent, by its idempotency key (what the receiver reports its arrival by).
   */
  async send(t: Tenant, tag: string, count: number, capSeconds: number, stop = () => false): Promise<Map<string, number>> {
    const sentAt = new Map<string, number>();
    let failures = 0;
    let next = 0;
    const until = now() + capSeconds * 1000;
    await Promise.all(
      Array.from({ length: PUBLISHERS }, async () => {
        for (let n = next++; n < count && now() < until && !stop(); n = next++) {
          const entityId = `${tag}_${n}`;
          const customerId = t.customerIds.length ? t.customerIds[n % t.customerIds.length] : undefined;
          const body = { type: def.type, data: demandData(entityId, `c_${n}`), ...(customerId ? { customer_id: customerId } : {}) };
          sentAt.set(demandKey(entityId), now());
          if ((await this.api('POST', '/api/v1/events', t.key, body)).status !== 201) failures++;
        }
      }),
    );
    if (failures) throw new Error(`${tag}: ${failures} publishes were not answered 201`);
    return sentAt;
  }

  /** Once every key of `sentAt` has arrived (`allArrived`): when each was sent and its latency, publish → receipt. */
  latencies(sentAt: Map<string, number>): { sentAt: number; ms: number }[] {
    return [...sentAt].map(([k, at]) => ({ sentAt: at, ms: this.receiver.arrivals.get(k)! - at }));
  }

  /**
   * Waits until every key has arrived at the receiver; fails when nothing new arrives for 90 s. Not
   * 30: when two cores are saturated the Temporal server's internal calls can time out (history to
   * matching), and it retries them with a backoff that has taken over 30 s; nothing is lost.
   */
  async allArrived(keys: string[], what: string): Promise<void> {
    let missing = keys.filter((k) => !this.receiver.arrivals.has(k));
    let progressAt = Date.now();
    while (missing.length > 0) {
      await sleep(50);
      const still = missing.filter((k) => !this.receiver.arrivals.has(k));
      if (still.length < missing.length) progressAt = Date.now();
      missing = still;
      if (Date.now() - progressAt > 90_000) throw new Error(`${what}: ${missing.length} of ${keys.length} deliveries never arrived`);
    }
  }

  /** CPU seconds of each component's processes (the Web UI left out): every API process, every worker, Postgres, Temporal. */
  cpu(): Record<string, number> {
    const raw = shapeCpuSeconds(this.shape);
    const sum = (prefix: string) => Object.entries(raw).reduce((s, [k, v]) => (/^\D+/.exec(k)![0] === prefix ? s + v : s), 0);
    return { api: sum('api'), worker: sum('worker'), postgres: raw.postgres!, temporal: raw.temporal!, bench: raw.bench! };
  }

  /** Runs a measurement and adds the CPU each component spent on it, in seconds and in ms per delivery. */
  async phase(name: string, fn: () => Promise<Omit<Measured, 'cpuMsPerDelivery' | 'cpuSeconds' | 'seconds'>>): Promise<Measured> {
    await this.statements?.start();
    const cpu0 = this.cpu();
    const t0 = Date.now();
    const r = await fn();
    const seconds = +((Date.now() - t0) / 1000).toFixed(2);
    const cpu1 = this.cpu();
    // Read after the CPU is taken: the read is not the phase's work.
    await this.statements?.finish(`production shape: ${name}`, r.events);
    const cpu = Object.fromEntries(Object.keys(cpu1).map((k) => [k, +(cpu1[k]! - cpu0[k]!).toFixed(2)]));
    const perDelivery = (s: number) => +((s * 1000) / r.events).toFixed(3);
    const components = ['api', 'worker', 'postgres', 'temporal'];
    const cpuMsPerDelivery = Object.fromEntries(components.map((k) => [k, perDelivery(cpu[k]!)]));
    cpuMsPerDelivery.total = perDelivery(components.reduce((s, k) => s + cpu[k]!, 0));
    return { ...r, cpuSeconds: cpu, cpuMsPerDelivery, seconds };
  }
}

/**
 * The phase's rows, in bench/run.ts's table style (figure, value, vs bare loop, target);
 * `barePerSecond` is the same run's bare loop (none when the phase ran alone).
 */
export function printProductionTable(r: ProductionResults, barePerSecond?: number): void {
  const n = (x: number) => x.toLocaleString('en-US');
  const lat = (l: Latency) => `p50 ${l.p50} / p99 ${l.p99} / max ${l.max} ms`;
  const ratio = (x: number) => (barePerSecond ? `${(x / barePerSecond).toFixed(3)}×` : '');
  const cpu = (m: Measured) =>
    `${m.cpuMsPerDelivery.total} ms (API ${m.cpuMsPerDelivery.api}, worker ${m.cpuMsPerDelivery.worker}, ` +
    `Postgres ${m.cpuMsPerDelivery.postgres}, Temporal ${m.cpuMsPerDelivery.temporal})`;
  const shape = `${r.apiProcesses} API + ${r.workerProcesses} worker processes, Temporal server on Postgres`;
  console.log(`Production shape (${shape}; ${r.build}; started in ${r.startSeconds} s):`);
  if (r.error) console.log(`  FAILED: ${r.error}`);
  const rows: [string, string, string, string][] = [['figure', 'value', 'vs bare loop', 'target']];
  if (r.e2e1)
    rows.push(
      [
        `end to end, 1 endpoint (${n(r.e2e1.events)} events, ${PUBLISHERS} publishers)`,
        `${n(r.e2e1.perSecond)} deliveries/s`,
        ratio(r.e2e1.perSecond),
        // Rate and CPU targets are ratios to the peer measured beside it (`-- --peer`): absolute ones do not travel between machines.
        '',
      ],
      ['  latency publish → receipt', lat(r.e2e1.latencyMs), '', 'p99 ≤ 100 ms'],
      ['  CPU per delivery (API + worker + Postgres + Temporal)', cpu(r.e2e1), '', ''],
    );
  if (r.e2eMany)
    rows.push(
      [
        `end to end, ${r.e2eMany.endpoints} endpoints (1 per Customer)`,
        `${n(r.e2eMany.perSecond)} deliveries/s`,
        ratio(r.e2eMany.perSecond),
        '',
      ],
      ['  latency publish → receipt', lat(r.e2eMany.latencyMs), '', r.e2eMany.endpoints === 100 ? 'p99 ≤ 300 ms' : ''],
      ['  CPU per delivery', cpu(r.e2eMany), '', ''],
    );
  if (r.receiver)
    rows.push([
      'receiver checks',
      `${n(r.receiver.requests)} requests, ${r.receiver.badSignatures} bad signatures, ${r.receiver.duplicates} duplicates`,
      '',
      '0, 0',
    ]);
  printColumns(rows);
  console.log(`  load average before ${r.loadavgBefore.join(' ')}, after ${r.loadavgAfter.join(' ')}`);
  console.log(`  ${machineLine(machine(barePerSecond ?? r.barePerSecond))}`);
  for (const [name, m] of [
    ['1 endpoint', r.e2e1],
    [`${r.e2eMany?.endpoints} endpoints`, r.e2eMany],
  ] as const)
    if (m)
      console.log(
        `  CPU seconds, ${name}: ${m.seconds} s, ${Object.entries(m.cpuSeconds)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')} (Web UI not counted)`,
      );
  console.log('');
}

/** Whether the phase's figures are trustworthy: it ran, every signature was good, nothing unknown arrived. */
export function productionOk(r: ProductionResults | undefined): boolean {
  return !r || (!r.error && r.receiver?.badSignatures === 0 && r.receiver.unknownPaths === 0);
}
