/**
 * What one statement costs after a quiet spell: a round trip to an idle Postgres backend, timed and
 * its CPU counted, back to back and after gaps of 1 ms to half a second. At 14 deliveries a second
 * (the sparse phase of `npm run bench -- --peer`) every process on a delivery's path has been idle
 * for tens of milliseconds when it is woken, and this says what that costs each statement.
 *
 *   npm run bench:quiet-round-trips
 *   npm run bench:quiet-round-trips -- --gaps=0,10,70 --calls=200
 *
 * Each gap is a setTimeout, as the services wait on their sockets. CPU is each thread's time on a
 * CPU from /proc/<pid>/schedstat (nanoseconds): this process's main thread (the client: pg's
 * protocol and the timer) and the connection's backend.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { projectRoot } from '../dev/tools.js';
import { machine, machineLine } from './machine.js';
import { pct } from './percentile.js';
import { flag } from './production-phase.js';
import { printColumns } from './table.js';

const argv = process.argv.slice(2);
const GAPS_MS = (argv.find((a) => a.startsWith('--gaps='))?.split('=')[1] ?? '0,1,10,70,500').split(',').map(Number);
/** Calls per gap: enough for a median, few enough that a half-second gap takes under a minute. */
const callsFor = (gapMs: number) => flag(argv, 'calls', Math.max(40, Math.min(1_000, Math.round(20_000 / Math.max(gapMs, 1)))));

/** Nanoseconds the main thread of `pid` has run on a CPU (Linux's schedstat), or NaN where there is none. */
function onCpuNs(pid: number): number {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return NaN;
  }
}

interface Probe {
  name: string;
  run(c: pg.Client): Promise<unknown>;
}

const PROBES: Probe[] = [
  { name: 'SELECT 1', run: (c) => c.query({ name: 'select_one', text: 'SELECT 1' }) },
  // A write that commits: the backend writes its WAL and waits for its flush (synchronous_commit on).
  { name: 'UPDATE, committed', run: (c) => c.query({ name: 'bump', text: 'UPDATE quiet_round_trips SET n = n + 1 WHERE id = 1' }) },
  {
    name: 'two SELECT 1 in a row',
    run: async (c) => {
      await c.query({ name: 'select_one', text: 'SELECT 1' });
      await c.query({ name: 'select_one', text: 'SELECT 1' });
    },
  },
];

async function measure(c: pg.Client, backendPid: number, probe: Probe, gapMs: number) {
  const calls = callsFor(gapMs);
  const ms: number[] = [];
  let clientNs = 0;
  let backendNs = 0;
  for (let i = 0; i < calls; i++) {
    if (gapMs > 0) await sleep(gapMs);
    const client0 = onCpuNs(process.pid);
    const backend0 = onCpuNs(backendPid);
    const t0 = performance.now();
    await probe.run(c);
    ms.push(performance.now() - t0);
    clientNs += onCpuNs(process.pid) - client0;
    backendNs += onCpuNs(backendPid) - backend0;
  }
  ms.sort((a, b) => a - b);
  return { calls, p50: pct(ms, 50), p90: pct(ms, 90), clientMs: clientNs / calls / 1e6, backendMs: backendNs / calls / 1e6 };
}

async function main() {
  const server = await startEmbeddedPostgres(path.join(projectRoot, '.data', 'bench-quiet-round-trips'));
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  try {
    await c.query('CREATE TABLE IF NOT EXISTS quiet_round_trips (id int PRIMARY KEY, n bigint NOT NULL)');
    await c.query('INSERT INTO quiet_round_trips VALUES (1, 0) ON CONFLICT DO NOTHING');
    const backendPid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const rows: string[][] = [];
    const baseline = new Map<string, number>();
    for (const gapMs of GAPS_MS) {
      for (const probe of PROBES) {
        const m = await measure(c, backendPid, probe, gapMs);
        if (!baseline.has(probe.name)) baseline.set(probe.name, m.p50);
        rows.push([
          probe.name,
          `${gapMs} ms`,
          String(m.calls),
          `${m.p50.toFixed(3)} ms`,
          `${m.p90.toFixed(3)} ms`,
          `${(m.p50 / baseline.get(probe.name)!).toFixed(2)}×`,
          `${m.clientMs.toFixed(3)} ms`,
          `${m.backendMs.toFixed(3)} ms`,
        ]);
      }
    }
    printColumns([
      ['statement', 'quiet before each', 'calls', 'p50', 'p90', 'p50 / first gap', 'client CPU a call', 'backend CPU a call'],
      ...rows,
    ]);
    console.log(machineLine(machine()));
  } finally {
    await c.end();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
