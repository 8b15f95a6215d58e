/**
 * The worker's attempt recorder on real Postgres: a batch whose statement fails is tried again, so
 * a POST already sent is recorded instead of sent a second time; one that keeps failing is given
 * up within its bound, and the sessions waiting on it go on.
 */
import { describe, expect, it } from 'vitest';
import { createAttemptRecorder } from '../../src/delivery/attempt-recorder.js';
import type { Db } from '../../src/db/pool.js';
import { testDb } from '../support/harness.js';
import { beforeEachQuery } from '../support/hooked-pool.js';
import { successOf } from '../support/attempt-results.js';
import { sessionTestBed } from '../support/session-test-bed.js';

const bed = sessionTestBed('recorder');

/** The pool, its first `failures` record statements failing as a lost connection would; `tries()` counts them. */
function failingRecords(failures: number): { db: Db; tries: () => number } {
  let tries = 0;
  const db = beforeEachQuery(async (_, name) => {
    if (name === 'record_delivery_attempts' && tries++ < failures) throw new Error('Connection terminated unexpectedly');
  });
  return { db, tries: () => tries };
}

async function delivery(id: string) {
  const { rows } = await testDb().query<{ status: string; attempts: number; recorded: number }>(
    `SELECT d.status, d.attempts, (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS recorded
       FROM deliveries d WHERE d.id = $1`,
    [id],
  );
  return rows[0];
}

describe('attempt recorder', () => {
  it('records a batch whose statement failed twice on its third try, before its session goes on', async () => {
    const e = await bed.endpointWithBacklog(1);
    const { rows } = await testDb().query<{ id: string; created_at: Date }>(
      `SELECT id, created_at FROM deliveries WHERE endpoint_id = $1`,
      [e.id],
    );
    const { db, tries } = failingRecords(2);
    await createAttemptRecorder(db).add(successOf(rows[0]!));
    expect(tries()).toBe(3);
    expect(await delivery(rows[0]!.id)).toEqual({ status: 'success', attempts: 1, recorded: 1 });
  });

  it('gives up a batch that keeps failing once its retries are spent, and the session waiting on it goes on', async () => {
    const e = await bed.endpointWithBacklog(1);
    const { rows } = await testDb().query<{ id: string; created_at: Date }>(
      `SELECT id, created_at FROM deliveries WHERE endpoint_id = $1`,
      [e.id],
    );
    const { db, tries } = failingRecords(1_000);
    await createAttemptRecorder(db, { retryForMs: 300 }).add(successOf(rows[0]!));
    // Waits of 50 and 100 ms fit in 300 ms, the 200 ms after them does not: three tries at most
    // (two when a busy machine ran the first wait late).
    expect(tries()).toBeGreaterThanOrEqual(2);
    expect(tries()).toBeLessThanOrEqual(3);
    expect(await delivery(rows[0]!.id)).toEqual({ status: 'pending', attempts: 0, recorded: 0 });
  });
});
