/**
 * The oldest weekly partition dropped by the product's own retention (src/db/delivery-partitions.ts
 * `dropPartitionsPastRetention`), with a retention that makes exactly that week eligible, each of
 * its statements timed (detach of the attempts' week, its drop, detach of the deliveries' week, its
 * drop) and sampled from another connection while it runs: what it waited on and for whom, so the
 * figure says whether DETACH ... CONCURRENTLY waited for transactions in flight.
 */
import type pg from 'pg';
import { partitionsPastRetention } from '../src/core/delivery-partitions.js';
import { dropPartitionsPastRetention, listPartitions } from '../src/db/delivery-partitions.js';
import type { Queryable } from '../src/db/pool.js';

const DAY_MS = 86_400_000;
const SAMPLE_EVERY_MS = 20;

export interface DropStep {
  statement: string;
  ms: number;
  /** Samples taken while it ran, and how many of them it was waiting, by wait event (`Lock:virtualxid`…). */
  samples: number;
  waits: Record<string, number>;
  /** Who blocked it, as seen in the samples (backend type, state, start of the query), by how often. */
  blockers: Record<string, number>;
}

export interface RetentionDrop {
  retentionDays: number;
  dropped: string[];
  steps: DropStep[];
}

/** Whole days of retention under which the product's rule (`partitionsPastRetention`) drops the oldest week alone. */
export async function retentionForOldestWeek(db: Queryable, nowMs: number): Promise<number> {
  const weeks = await listPartitions(db, 'deliveries');
  const oldest = weeks.find((p) => p.upperMs !== null);
  if (!oldest) throw new Error('deliveries has no partition with an upper bound to drop');
  const days = Math.floor((nowMs - oldest.upperMs!) / DAY_MS);
  const past = days >= 1 ? partitionsPastRetention(weeks, nowMs, days) : [];
  if (past.length !== 1 || past[0] !== oldest) throw new Error(`no whole-day retention makes only ${oldest.name} eligible (${days} days)`);
  return days;
}

/**
 * Runs the product's retention drop on `db` with every statement timed and sampled. The product
 * takes a Queryable; the one given here forwards each statement to the pool and records it.
 */
export async function timedRetentionDrop(db: pg.Pool, nowMs: number): Promise<RetentionDrop> {
  const retentionDays = await retentionForOldestWeek(db, nowMs);
  const steps: DropStep[] = [];
  // Each sampler ends on its own after its statement: the next statement does not wait for it.
  const samplers: Promise<void>[] = [];
  const timed = {
    query: async (text: string, params?: unknown[]) => {
      const isDdl = /^\s*(ALTER TABLE .* DETACH PARTITION|DROP TABLE)/i.test(text);
      if (!isDdl) return db.query(text, params);
      const step: DropStep = { statement: text.replace(/\s+/g, ' ').trim(), ms: 0, samples: 0, waits: {}, blockers: {} };
      steps.push(step);
      let done = () => {};
      const finished = new Promise<void>((r) => (done = r));
      samplers.push(sampleUntil(db, text, step, finished));
      const t0 = performance.now();
      try {
        return await db.query(text, params);
      } finally {
        step.ms = performance.now() - t0;
        done();
      }
    },
  } as unknown as pg.Pool;
  const dropped = await dropPartitionsPastRetention(timed, nowMs, retentionDays);
  await Promise.all(samplers);
  return { retentionDays, dropped, steps };
}

/** Samples pg_stat_activity every SAMPLE_EVERY_MS until `finished`: the DDL's wait event and the backends blocking it. */
async function sampleUntil(db: pg.Pool, text: string, step: DropStep, finished: Promise<void>): Promise<void> {
  let running = true;
  void finished.then(() => (running = false));
  while (running) {
    const { rows } = await db.query<{ wait: string | null; blockers: string[] | null }>(
      `SELECT a.wait_event_type || ':' || a.wait_event AS wait,
              (SELECT array_agg(b.backend_type || ', ' || coalesce(b.state, '') || ', ' || left(regexp_replace(coalesce(b.query, ''), '\\s+', ' ', 'g'), 50))
               FROM pg_stat_activity b WHERE b.pid = ANY(pg_blocking_pids(a.pid))) AS blockers
       FROM pg_stat_activity a
       WHERE a.pid <> pg_backend_pid() AND a.state = 'active' AND a.query = $1
         AND a.wait_event_type IS DISTINCT FROM 'Client'`,
      [text],
    );
    for (const r of rows) {
      step.samples++;
      if (r.wait) step.waits[r.wait] = (step.waits[r.wait] ?? 0) + 1;
      for (const b of r.blockers ?? []) step.blockers[b] = (step.blockers[b] ?? 0) + 1;
    }
    await Promise.race([finished, new Promise((r) => setTimeout(r, SAMPLE_EVERY_MS))]);
  }
}

/** One line per statement: its time, what it waited on, and what that means for DETACH ... CONCURRENTLY. */
export function dropStepLines(drop: RetentionDrop): string[] {
  return drop.steps.map((s) => {
    const waited = Object.entries(s.waits).sort((a, b) => b[1] - a[1]);
    const waits = waited.map(([w, k]) => `${w} ${k}/${s.samples}`).join(', ');
    const blockers = Object.entries(s.blockers)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([b, k]) => `${k}× [${b}]`)
      .join('; ');
    const onSnapshots = (s.waits['Lock:virtualxid'] ?? 0) > s.samples / 2;
    const meaning = onSnapshots
      ? ' — most of it DETACH CONCURRENTLY waiting for transactions in flight (every snapshot that may see the partition)'
      : '';
    return (
      `${s.statement}: ${s.ms.toFixed(0)} ms` +
      (s.samples ? `; sampled ${s.samples}×, waiting: ${waits || 'never'}` : '') +
      (blockers ? `; blocked by ${blockers}` : '') +
      meaning
    );
  });
}
