/**
 * The waits bench:scale makes before it measures, so a figure is what the data costs and not what
 * the previous phase left running: the shape idle before end to end and the reads (nothing owed,
 * no statement running but ours, no delivery session open, the load average coming down), and the
 * writes of a fill on disk before end to end (a CHECKPOINT, then the kernel's dirty pages written
 * back). Each is bounded and says what it waited for.
 */
import fs from 'node:fs';
import os from 'node:os';
import type pg from 'pg';
import { OWED } from '../src/db/deliveries.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const secondsSince = (t0: number) => (Date.now() - t0) / 1000;

export interface IdleWait {
  seconds: number;
  /** Deliveries owed (pending or failed) and statements running other than ours, when the wait began and ended. */
  owed: [number, number];
  active: [number, number];
  /** Delivery sessions open (a lease held, or a round handed over to its workflow), when the wait began and ended. */
  sessions: [number, number];
  /** 1-minute load average when the wait began and ended. */
  load: [number, number];
  /** Whether every condition was met, or the bound was reached first. */
  settled: boolean;
}

/** Deliveries still owed (every Account's: the fill's are all terminal, so these are the bench tenants'). */
async function owedDeliveries(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE ${OWED}`);
  return rows[0]!.n;
}

/**
 * Endpoints with a delivery session open or a round handed over to their workflow. A round that
 * starts while the last round's sessions end (their linger) hands its first deliveries to the
 * workflows; one that starts after goes straight to new sessions: a round waits for none open.
 */
async function openSessions(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM endpoints WHERE (session_owner IS NOT NULL AND session_until >= now()) OR handover_at IS NOT NULL`,
  );
  return rows[0]!.n;
}

/** Statements running on the server now, of every database (Temporal's too), other than this one. */
async function activeStatements(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
  );
  return rows[0]!.n;
}

/**
 * Waits (at most `maxSeconds`) until no delivery is owed and no other statement runs in three
 * samples in a row, a second apart, and the 1-minute load average is at most `loadPerCpu` per CPU.
 */
export async function waitForIdleShape(db: pg.Pool, maxSeconds = 60, loadPerCpu = 0.5): Promise<IdleWait> {
  const t0 = Date.now();
  const loadLimit = loadPerCpu * os.cpus().length;
  const sample = async () => ({
    owed: await owedDeliveries(db),
    active: await activeStatements(db),
    sessions: await openSessions(db),
    load: os.loadavg()[0]!,
  });
  const first = await sample();
  let last = first;
  let quietSamples = 0;
  for (;;) {
    quietSamples = last.owed === 0 && last.active === 0 && last.sessions === 0 ? quietSamples + 1 : 0;
    const settled = quietSamples >= 3 && last.load <= loadLimit;
    if (settled || secondsSince(t0) >= maxSeconds)
      return {
        seconds: secondsSince(t0),
        owed: [first.owed, last.owed],
        active: [first.active, last.active],
        sessions: [first.sessions, last.sessions],
        load: [first.load, last.load],
        settled,
      };
    await sleep(1_000);
    last = await sample();
  }
}

export const idleWaitLine = (w: IdleWait) =>
  `${w.seconds.toFixed(0)} s${w.settled ? '' : ' (bound reached)'}: owed ${w.owed[0]} → ${w.owed[1]}, ` +
  `other statements running ${w.active[0]} → ${w.active[1]}, sessions open ${w.sessions[0]} → ${w.sessions[1]}, ` +
  `load ${w.load[0].toFixed(2)} → ${w.load[1].toFixed(2)}`;

export interface WritesSettled {
  checkpointSeconds: number;
  seconds: number;
  /** The kernel's Dirty + Writeback, MiB, after the CHECKPOINT and when the wait ended. */
  dirtyMiB: [number, number];
  settled: boolean;
}

/** Dirty + Writeback of /proc/meminfo, MiB: what the kernel still has to write to disk (NaN off Linux). */
export function kernelDirtyMiB(): number {
  try {
    const meminfo = fs.readFileSync('/proc/meminfo', 'utf8');
    const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(meminfo)?.[1] ?? NaN);
    return (kib('Dirty') + kib('Writeback')) / 1024;
  } catch {
    return NaN;
  }
}

/**
 * A CHECKPOINT (the fill's pages out of shared buffers), then a wait (at most `maxSeconds`) until
 * the kernel's dirty and writeback pages are below `belowMiB`: the disk is no longer busy with
 * what the fill wrote when the next phase starts.
 */
export async function settleWrites(db: pg.Pool, maxSeconds = 300, belowMiB = 64): Promise<WritesSettled> {
  const c0 = Date.now();
  await db.query('CHECKPOINT');
  const checkpointSeconds = secondsSince(c0);
  const t0 = Date.now();
  const first = kernelDirtyMiB();
  let last = first;
  while (!(last < belowMiB) && !Number.isNaN(last) && secondsSince(t0) < maxSeconds) {
    await sleep(1_000);
    last = kernelDirtyMiB();
  }
  return { checkpointSeconds, seconds: secondsSince(t0), dirtyMiB: [first, last], settled: last < belowMiB };
}

export const writesSettledLine = (w: WritesSettled) =>
  `CHECKPOINT ${w.checkpointSeconds.toFixed(1)} s, then ${w.seconds.toFixed(0)} s${w.settled ? '' : ' (bound reached)'} ` +
  `for the kernel's dirty + writeback pages: ${w.dirtyMiB[0].toFixed(0)} → ${w.dirtyMiB[1].toFixed(0)} MiB`;
