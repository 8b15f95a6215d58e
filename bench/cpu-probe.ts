/**
 * CPU per delivery to one endpoint, repeated: the "end to end, 1 endpoint" phase of bench/run.ts
 * alone, run `--rounds=N` times on one stack (round 1 is the warm-up), each round's CPU per
 * delivery split by process tree and into user / system time.
 *
 *   npx tsx bench/cpu-probe.ts [--rounds=4] [--events=4000] [--endpoints=1] [--profile=api,worker] [--pgss] [--node=<arg>]...
 *
 * --endpoints=N: the Account has N endpoints, one per Customer, and the events go to them in turn
 *   (as the 100-endpoint phases of `npm run bench` and `--peer`).
 * --profile: CPU profiles of the API and worker, summarised over rounds 2.. (the warm ones).
 * --fresh-tenant: each round to an Account of its own, no ANALYZE between rounds (else one Account,
 *   analyzed after each round as autovacuum would have on a database older than a minute).
 * --pg=name=value: a Postgres setting for the run (ALTER SYSTEM), e.g. --pg=random_page_cost=1.1.
 * --pgss: pg_stat_statements (planning too) per round, and auto_explain of statements over 15 ms
 *   in .data/cpu-probe/postgres.log. --node=<flag>: a Node flag for the API and the worker.
 * Per process, the CPU of its threads by name: `main` (JavaScript), `node` (V8's compiler and
 * GC helpers), `tokio-runtime-w` (Temporal's core). A CPU profile's `writev` self time is mostly
 * time the process waited for a CPU inside that call (it woke its peer on loopback), not CPU.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';
import { apiCaller } from './api-client.js';
import { createBenchTenant } from './api-endpoints.js';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { freePort } from '../dev/ports.js';
import { startTemporalDevServer } from '../dev/temporal-servers.js';
import { makeLocalTls } from '../dev/tls.js';
import { projectRoot } from '../dev/tools.js';
import { childPid, startService } from './processes.js';
import { demandData, demandKey } from './demand-events.js';
import { connectReceiver } from './receiver-client.js';
import { mainThreadProfile, monoUs, summarizeProfile } from './profile-summary.js';
import { pct } from './percentile.js';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: string) =>
  argv
    .find((a) => a.startsWith(`--${name}=`))
    ?.split('=')
    .slice(1)
    .join('=') ?? dflt;
const ROUNDS = Number(opt('rounds', '4'));
const EVENTS = Number(opt('events', '4000'));
const ENDPOINTS = Number(opt('endpoints', '1'));
const PROFILE = opt('profile', '').split(',').filter(Boolean);
const NODE_ARGS = argv.filter((a) => a.startsWith('--node=')).map((a) => a.slice('--node='.length));
const PGSS = argv.includes('--pgss');
/** --pg=name=value: Postgres settings (ALTER SYSTEM, then a restart), e.g. --pg=random_page_cost=1.1. */
const PG_SETTINGS = argv.filter((a) => a.startsWith('--pg=')).map((a) => a.slice('--pg='.length).split('=') as [string, string]);
/** Each round publishes to an Account of its own, and nothing is analyzed between rounds (as in bench/run.ts). */
const FRESH = argv.includes('--fresh-tenant');
const CONCURRENCY = 16;
const dir = path.join(projectRoot, '.data', 'cpu-probe');
const def = getEventDefinition('crm.demand.created')!;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function ticks(root: number | undefined): { user: number; sys: number } {
  const procs = new Map<number, { ppid: number; user: number; sys: number }>();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const t = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const f = t.slice(t.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(e), { ppid: Number(f[1]), user: Number(f[11]) + Number(f[13]), sys: Number(f[12]) + Number(f[14]) });
    } catch {
      /* gone */
    }
  }
  const out = { user: 0, sys: 0 };
  const walk = (pid: number) => {
    const p = procs.get(pid);
    if (!p) return;
    out.user += p.user / 100;
    out.sys += p.sys / 100;
    for (const [c, q] of procs) if (q.ppid === pid) walk(c);
  };
  if (root) walk(root);
  return out;
}

/** CPU seconds of each thread of a process, by thread name (main thread: 'main'). */
function threads(pid: number | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (!pid) return out;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const t = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const comm = Number(tid) === pid ? 'main' : t.slice(t.indexOf('(') + 1, t.lastIndexOf(')')).replace(/[\d-]+$/, '');
      const f = t.slice(t.lastIndexOf(')') + 2).split(' ');
      out[comm] = (out[comm] ?? 0) + (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      /* gone */
    }
  }
  return out;
}

async function main() {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const cleanups: (() => Promise<unknown>)[] = [];
  const windows: { fromUs: number; toUs: number }[] = [];
  try {
    const startPg = async () => {
      const first = await startEmbeddedPostgres(path.join(dir, 'pg'));
      if (!PGSS && PG_SETTINGS.length === 0) return first;
      const c = new pg.Client({ connectionString: first.url });
      await c.connect();
      for (const [k, v] of PG_SETTINGS) await c.query(`ALTER SYSTEM SET ${k} = '${v}'`);
      if (PGSS)
        for (const [k, v] of [
          ['shared_preload_libraries', 'pg_stat_statements, auto_explain'],
          ['pg_stat_statements.track_planning', 'on'],
          ['auto_explain.log_min_duration', '15'],
          ['auto_explain.log_analyze', 'on'],
          ['auto_explain.log_buffers', 'on'],
          ['log_autovacuum_min_duration', '0'],
        ])
          await c.query(`ALTER SYSTEM SET ${k} = ${k === 'shared_preload_libraries' ? v : `'${v}'`}`);
      await c.end();
      await first.stop();
      const log = fs.createWriteStream(path.join(dir, 'postgres.log'));
      return startEmbeddedPostgres(path.join(dir, 'pg'), (line) => log.write(line + '\n'));
    };
    const [pgServer, temporal, tls] = await Promise.all([
      startPg(),
      startTemporalDevServer({ dbFile: path.join(dir, 'temporal.db'), logFile: path.join(dir, 'temporal.log') }),
      makeLocalTls(path.join(dir, 'tls'), 'bench'),
    ]);
    cleanups.push(
      () => pgServer.stop(),
      () => temporal.stop(),
    );
    const url = new URL(pgServer.url);
    const admin = new pg.Client({ connectionString: pgServer.url });
    await admin.connect();
    await admin.query('CREATE DATABASE probe');
    await admin.end();
    url.pathname = '/probe';
    const dbUrl = url.toString();
    await migrate(dbUrl);
    if (PGSS) {
      const c = new pg.Client({ connectionString: dbUrl });
      await c.connect();
      await c.query('CREATE EXTENSION pg_stat_statements');
      await c.end();
    }
    const db = createPool(dbUrl, 4);
    cleanups.push(() => db.end());
    const apiPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: dbUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: 'bench',
      SECRETS_ENCRYPTION_KEY: crypto.randomBytes(32).toString('base64'),
      WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8',
      NODE_EXTRA_CA_CERTS: tls.caFile,
      PORT: String(apiPort),
      RATE_LIMIT_BURST: '1000000000',
      RATE_LIMIT_PER_SECOND: '1000000000',
      ENDPOINT_LIMIT: String(ENDPOINTS + 10),
      DATA_DIR: dir,
      LOG_FORMAT: 'json',
    };
    const prof = (n: string) => (PROFILE.includes(n) ? ['--cpu-prof', `--cpu-prof-dir=${path.join(dir, 'profiles', n)}`] : []);
    const receiverService = await startService({
      name: 'receiver',
      entry: 'bench/receiver.ts',
      env: { ...process.env, NODE_OPTIONS: '' },
      logFile: path.join(dir, 'receiver.log'),
      ready: 'receiver ready',
      ipc: true,
    });
    cleanups.push(() => receiverService.stop());
    const workerService = await startService({
      name: 'worker',
      entry: 'src/worker/main.ts',
      env,
      nodeArgs: [...NODE_ARGS, ...prof('worker')],
      logFile: path.join(dir, 'worker.log'),
      ready: '"msg":"worker started"',
    });
    cleanups.push(() => workerService.stop());
    const apiService = await startService({
      name: 'api',
      entry: 'src/api/main.ts',
      env,
      nodeArgs: [...NODE_ARGS, ...prof('api')],
      logFile: path.join(dir, 'api.log'),
      ready: '"msg":"api listening"',
    });
    cleanups.push(() => apiService.stop());
    const receiver = await connectReceiver(receiverService, tls);
    const apiPool = new Pool(`http://127.0.0.1:${apiPort}`, { connections: 64, pipelining: 1 });
    cleanups.push(() => apiPool.close());
    const api = apiCaller(apiPool);

    /**
     * An Account with verified endpoints (one, or --endpoints, one per Customer): the one of every
     * round, or one per round with --fresh-tenant. Its key, and the Customers events go to in turn.
     */
    const makeTenant = async (n: number) => {
      const t = await createBenchTenant(db, api, receiver, {
        name: `probe ${n}`,
        endpoints: ENDPOINTS,
        perCustomer: ENDPOINTS > 1,
        pathPrefix: `h/${n}`,
      });
      return { key: t.key, customers: t.customerIds };
    };
    const keys = FRESH ? await Promise.all(Array.from({ length: ROUNDS }, (_, i) => makeTenant(i + 1))) : [await makeTenant(1)];
    await sleep(2000);

    const roots = () => ({
      api: apiService.child.pid,
      worker: workerService.child.pid,
      receiver: receiverService.child.pid,
      postgres: childPid('postgres'),
      temporal: childPid('temporal'),
    });
    const commits = async () =>
      Number((await db.query(`SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()`)).rows[0].n);
    for (let r = 1; r <= ROUNDS; r++) {
      const { key, customers } = keys[FRESH ? r - 1 : 0]!;
      const sentAt = new Map<string, number>();
      const fromUs = monoUs();
      if (PGSS) await db.query('SELECT pg_stat_statements_reset()');
      const c0 = await commits();
      const th0 = { api: threads(apiService.child.pid), worker: threads(workerService.child.pid) };
      const t0s = Object.fromEntries(Object.entries(roots()).map(([k, p]) => [k, ticks(p)]));
      let next = 0;
      const start = now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let n = next++; n < EVENTS; n = next++) {
            const id = `r${r}_${n}`;
            sentAt.set(demandKey(id), now());
            const customer = customers.length ? { customer_id: customers[n % customers.length] } : {};
            const res = await api('POST', '/api/v1/events', key, { type: def.type, data: demandData(id, `c_${n}`), ...customer });
            if (res.status !== 201) throw new Error(`publish ${res.status}`);
          }
        }),
      );
      while ([...sentAt.keys()].some((k) => !receiver.arrivals.has(k))) await sleep(20);
      if (r > 1) windows.push({ fromUs, toUs: monoUs() });
      const th1 = { api: threads(apiService.child.pid), worker: threads(workerService.child.pid) };
      const t1s = Object.fromEntries(Object.entries(roots()).map(([k, p]) => [k, ticks(p)]));
      const last = Math.max(...[...sentAt.keys()].map((k) => receiver.arrivals.get(k)!));
      const lat = [...sentAt].map(([k, t]) => receiver.arrivals.get(k)! - t).sort((a, b) => a - b);
      await sleep(1100);
      const c1 = await commits();
      // As autovacuum would have by now on a database older than a minute (see FINDINGS: the
      // known-key look-up scans the stream on the cursor index while events has no statistics).
      if (!FRESH) await db.query('ANALYZE');
      const per = (k: string) => {
        const u = ((t1s[k]!.user - t0s[k]!.user) * 1000) / EVENTS;
        const s = ((t1s[k]!.sys - t0s[k]!.sys) * 1000) / EVENTS;
        return `${k} ${(u + s).toFixed(3)} (u ${u.toFixed(3)} s ${s.toFixed(3)})`;
      };
      const svc = ['api', 'worker', 'postgres', 'temporal'].reduce(
        (sum, k) => sum + ((t1s[k]!.user - t0s[k]!.user + t1s[k]!.sys - t0s[k]!.sys) * 1000) / EVENTS,
        0,
      );
      console.log(
        `round ${r}: ${Math.round(EVENTS / ((last - start) / 1000))}/s p50 ${pct(lat, 50).toFixed(1)} p99 ${pct(lat, 99).toFixed(1)} ms; ` +
          `service ${svc.toFixed(3)} ms/delivery; ${['api', 'worker', 'postgres', 'temporal', 'receiver'].map(per).join('; ')}; ` +
          `commits ${c1 - c0}; load ${os.loadavg()[0]!.toFixed(2)}`,
      );
      for (const k of ['api', 'worker'] as const)
        console.log(
          `  ${k} threads (ms/delivery): ` +
            Object.keys(th1[k])
              .map((n) => [n, ((th1[k][n]! - (th0[k][n] ?? 0)) * 1000) / EVENTS] as const)
              .filter(([, v]) => v > 0)
              .map(([n, v]) => `${n} ${v.toFixed(3)}`)
              .join(', '),
        );
      if (PGSS) {
        const { rows } = await db.query(
          `SELECT calls, round(total_exec_time::numeric, 0) AS exec_ms, round(total_plan_time::numeric, 0) AS plan_ms, plans,
                  round(shared_blks_hit::numeric / greatest(calls, 1), 1) AS hit_per_call, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS q
           FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 12`,
        );
        console.table(rows);
      }
    }
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  }
  for (const n of PROFILE) {
    const file = mainThreadProfile(path.join(dir, 'profiles', n))!;
    fs.writeFileSync(path.join(dir, `${n}-windows.json`), JSON.stringify(windows));
    console.log(`\n${n}: ${file}\n${summarizeProfile(file, windows, 35)}`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
