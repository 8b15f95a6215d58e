/**
 * The hot writes on the weekly partitions of `deliveries` find a delivery in its own week: a
 * claim's lease and an attempt's record search one partition's primary key, not every week's
 * (with 90 days kept that is 18 partitions, each searched for every delivery). Checked on the
 * plans Postgres ran (EXPLAIN ANALYZE inside a transaction rolled back).
 */
import { describe, expect, it } from 'vitest';
import { claimWithEndpointsFor, recordDeliveryAttempts } from '../../src/db/deliveries.js';
import type { Queryable } from '../../src/db/pool.js';
import { successOf } from '../support/attempt-results.js';
import { testDb } from '../support/harness.js';
import { sessionTestBed } from '../support/session-test-bed.js';

const bed = sessionTestBed('pruning');

/** The plan `run` makes Postgres execute (its one statement EXPLAIN ANALYZEd, then rolled back). */
async function executedPlan(run: (q: Queryable) => Promise<unknown>): Promise<string> {
  const client = await testDb().connect();
  let plan = '';
  const explaining = {
    async query(statement: { text: string; values?: unknown[] }) {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE) ${statement.text}`, statement.values);
      plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      return { rows: [], rowCount: 0 };
    },
  } as unknown as Queryable;
  try {
    await client.query('BEGIN');
    await run(explaining);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  return plan;
}

/** Primary-key searches of delivery partitions in `plan`: planned, and run at least once. */
function primaryKeySearches(plan: string): { planned: number; ran: number } {
  const scans = plan.split('\n').filter((l) => /Index (Only )?Scan using deliveries\w*_pkey on/.test(l));
  return { planned: scans.length, ran: scans.filter((l) => !l.includes('never executed')).length };
}

/** An endpoint with `backlog` deliveries due this week and older ones, done, in each week ahead. */
async function endpointAcrossWeeks(backlog: number): Promise<string> {
  const e = await bed.endpointWithBacklog(backlog);
  await testDb().query(
    `INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, environment, status, attempts, created_at)
     SELECT account_id, id, 'crm.demand.created', 'week-' || w, 'live', 'success', 1, now() + w * interval '7 days'
     FROM endpoints, generate_series(1, 3) w WHERE id = $1`,
    [e.id],
  );
  return e.id;
}

async function weeks(): Promise<number> {
  const { rows } = await testDb().query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'deliveries'::regclass`,
  );
  return rows[0]!.n;
}

describe('partition pruning of the hot writes', () => {
  it("a claim leases each delivery it picks by searching its week's primary key only", async () => {
    const endpointId = await endpointAcrossWeeks(3);
    const plan = await executedPlan((q) =>
      claimWithEndpointsFor(q, [{ endpointId, now: new Date(), limit: 10, owner: 'pruning' }], 10_000),
    );
    expect(plan).toMatch(/Update on deliveries/);
    expect(primaryKeySearches(plan)).toEqual({ planned: await weeks(), ran: 1 });
  });

  it("an attempt's record searches its delivery's week only, and lands", async () => {
    const endpointId = await endpointAcrossWeeks(2);
    const claimed = await bed.claimedByAnother(endpointId);
    expect(claimed).toHaveLength(2);
    const results = claimed.map((d) => successOf(d));
    const plan = await executedPlan((q) => recordDeliveryAttempts(q, results));
    expect(primaryKeySearches(plan)).toEqual({ planned: await weeks(), ran: 1 });

    // The claim's created_at (a JS Date, to the millisecond) still finds the row it names.
    await recordDeliveryAttempts(testDb(), results);
    const { rows } = await testDb().query<{ status: string; attempts: number; recorded: number }>(
      `SELECT d.status, d.attempts, (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS recorded
       FROM deliveries d WHERE d.id = ANY($1::uuid[])`,
      [claimed.map((d) => d.id)],
    );
    expect(rows).toEqual([
      { status: 'success', attempts: 1, recorded: 1 },
      { status: 'success', attempts: 1, recorded: 1 },
    ]);
  });
});
