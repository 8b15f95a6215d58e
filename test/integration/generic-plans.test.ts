/**
 * A pool made with `genericPlans` (the worker's): its connections plan each prepared statement
 * once, for any parameters, where a plain pool's plan the first five runs of each for theirs;
 * the statements answer the same on both.
 */
import { afterEach, describe, expect, inject, it } from 'vitest';
import { reportSession } from '../../src/db/deliveries.js';
import { createPool, NIL_UUID, type Db } from '../../src/db/pool.js';

const pools: Db[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
});

function pool(opts: Parameters<typeof createPool>[3] = {}, url = inject('databaseUrl')): Db {
  const made = createPool(url, 1, 0, opts);
  pools.push(made);
  return made;
}

/** How a session's report (a prepared statement over the partitioned deliveries) was planned on `db`'s one connection. */
async function reportPlans(db: Db): Promise<{ generic_plans: string; custom_plans: string }[]> {
  const { rows } = await db.query<{ generic_plans: string; custom_plans: string }>(
    `SELECT generic_plans::text, custom_plans::text FROM pg_prepared_statements WHERE name = 'report_session'`,
  );
  return rows;
}

describe('generic plans', () => {
  it("a worker's pool plans a session's report once for any endpoint; a plain pool plans each of its first runs", async () => {
    const worker = pool({ genericPlans: true });
    const plain = pool();
    const endpoints = [NIL_UUID, '00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002'];
    for (const id of endpoints) {
      const [a, b] = await Promise.all([reportSession(worker, id, null, new Date()), reportSession(plain, id, null, new Date())]);
      expect(a).toEqual(b);
      expect(a).toEqual({ nextDueAt: null, owed: 0, healthRecorded: false });
    }
    expect(await reportPlans(worker)).toEqual([{ generic_plans: '3', custom_plans: '0' }]);
    expect(await reportPlans(plain)).toEqual([{ generic_plans: '0', custom_plans: '3' }]);
    expect((await worker.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode')).rows).toEqual([
      { plan_cache_mode: 'force_generic_plan' },
    ]);
  });

  it("keeps the other startup options: the URL's and a pool's without sorts", async () => {
    const url = new URL(inject('databaseUrl'));
    url.searchParams.set('options', '-c statement_timeout=1234');
    const both = pool({ genericPlans: true, withoutSorts: true }, url.toString());
    const { rows } = await both.query(
      `SELECT current_setting('plan_cache_mode') AS plans, current_setting('enable_sort') AS sort, current_setting('statement_timeout') AS timeout`,
    );
    expect(rows).toEqual([{ plans: 'force_generic_plan', sort: 'off', timeout: '1234ms' }]);
  });
});
