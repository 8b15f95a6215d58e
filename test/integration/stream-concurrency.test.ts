/**
 * The stream under concurrent writers: cursors are contiguous, and a reader that has seen
 * cursor N+1 has seen N (no event commits "behind" a reader).
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { readStream } from '../../src/db/events.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { ingestEvent, storeEvent } from '../../src/events/store-event.js';
import { createTenant, testDb } from '../support/harness.js';

const def = getEventDefinition('crm.demand.created')!;

function demand(n: number) {
  const data = def.data.parse({
    entity_type: 'demand',
    entity_id: `dem_${n}`,
    before_data: null,
    after_data: { id: `dem_${n}`, version: 1, status: 'open', contact_id: 'c1', title: `Demand ${n}` },
    actor_user_id: null,
  });
  return { data, refs: {} };
}

const pools: Db[] = [];
afterAll(() => Promise.all(pools.map((p) => p.end())));

/** `total` events from `writers` writers on each of `dbs` (a pool each, as a process each), while a reader follows the stream. */
async function writeWhileReading(dbs: Db[], writers: number, total: number) {
  const tenant = await createTenant();
  const db = testDb();
  let next = 0;
  const write = async (writer: Db) => {
    for (let n = next++; n < total; n = next++) {
      const { data, refs } = demand(n);
      await storeEvent(writer, ingestEvent({ accountId: tenant.accountId, environment: 'live', def, data, refs }));
    }
  };

  // A reader tails the stream while the writers run; every page must continue exactly where the last ended.
  let writing = true;
  const seen: number[] = [];
  const reader = (async () => {
    let after = '0';
    while (writing || seen.length < total) {
      const { rows } = await readStream(db, tenant.accountId, 'live', after, 100);
      for (const r of rows) seen.push(Number(r.cursor));
      if (rows.length) after = String(rows[rows.length - 1]!.cursor);
      else await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await Promise.all(dbs.flatMap((writer) => Array.from({ length: writers }, () => write(writer))));
  writing = false;
  await reader;

  expect(seen).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  const { rows } = await db.query(
    `SELECT count(DISTINCT idempotency_key)::int AS keys, max(cursor)::int AS max FROM events WHERE account_id = $1`,
    [tenant.accountId],
  );
  expect(rows[0]).toEqual({ keys: total, max: total });
  // Repeating a call returns the same page.
  const a = await readStream(db, tenant.accountId, 'live', '1500', 100);
  const b = await readStream(db, tenant.accountId, 'live', '1500', 100);
  expect(a.rows.map((r) => r.id)).toEqual(b.rows.map((r) => r.id));
}

describe('stream cursors under concurrency', () => {
  it('thousands of events from concurrent writers walk without a gap or a repeat, while a reader follows', async () => {
    await writeWhileReading([testDb()], 8, 2000);
  });

  it('the same with two batches in flight in each of two pools, as two processes have (a batcher per pool; 64 writers each)', async () => {
    const dbs = [createPool(inject('databaseUrl'), 4), createPool(inject('databaseUrl'), 4)];
    pools.push(...dbs);
    // How many batches of each pool appended their events after waiting for the one before them (appendWholeEvents).
    const overlapped = dbs.map((db) => {
      const seen = { n: 0 };
      db.on('connect', (client) => {
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as unknown as { query: typeof query }).query = (...args: unknown[]) => {
          if ((args[0] as { name?: string } | null)?.name === 'append_whole_events') seen.n++;
          return query(...args);
        };
      });
      return seen;
    });
    await writeWhileReading(dbs, 64, 4000);
    for (const seen of overlapped) expect(seen.n).toBeGreaterThan(0);
  });
});
