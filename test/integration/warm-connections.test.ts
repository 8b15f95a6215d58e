/**
 * The connections a process opens at start (`warmConnections`): open at once, kept by the pool,
 * each with the caller's statements prepared; one that fails its warm-up is dropped, not kept.
 */
import type pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { claimWithEndpointsFor } from '../../src/db/deliveries.js';
import { createPool, NIL_UUID, warmConnections, type Db } from '../../src/db/pool.js';
let db: Db | undefined;
afterEach(async () => {
  await db?.end();
  db = undefined;
});

/** What each of the pool's connections has prepared, checking out as many as it holds at once. */
async function preparedPerConnection(pool: Db): Promise<{ pid: number; names: string[] }[]> {
  const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
  try {
    return await Promise.all(
      clients.map(async (c) => {
        const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        const names = (await c.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => r.name);
        return { pid, names };
      }),
    );
  } finally {
    clients.forEach((c) => c.release());
  }
}

describe('warmConnections', () => {
  it('opens the connections at once, keeps them in the pool, and prepares the claim on every one', async () => {
    db = createPool(inject('databaseUrl'), 10, 3);
    expect(db.totalCount).toBe(0);
    const claim = async (c: pg.PoolClient) =>
      void (await claimWithEndpointsFor(c, [{ endpointId: NIL_UUID, now: new Date(), limit: 1, owner: 'warm-up' }], 60_000));
    await warmConnections(db, 3, claim);
    expect(db.totalCount).toBe(3);
    expect(db.idleCount).toBe(3);
    const each = await preparedPerConnection(db);
    // The same three connections, not new ones: what was warmed is what the next callers get.
    expect(db.totalCount).toBe(3);
    expect(new Set(each.map((e) => e.pid)).size).toBe(3);
    for (const e of each) expect(e.names).toContain('claim_due_deliveries_for');
  });

  it('drops a connection whose warm-up failed and still resolves', async () => {
    db = createPool(inject('databaseUrl'), 10, 3);
    let calls = 0;
    await warmConnections(db, 3, async (c) => {
      if (calls++ === 0) await c.query('SELECT * FROM no_such_table');
    });
    expect(calls).toBe(3);
    expect(db.totalCount).toBe(2);
    // The pool still serves.
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
  });
});
