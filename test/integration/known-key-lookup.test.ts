/**
 * The publish's known-key look-ups (findKnownKeysAndEndpoints, findEventsByKeys) probe the idempotency key index
 * once per key, however long the stream and whatever the statistics: a stream that grew since
 * the table's last ANALYZE once made each probe read the whole stream on the cursor index.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { findEventsByKeys, findKnownKeysAndEndpoints } from '../../src/db/events.js';
import { createTenant, testDb } from '../support/harness.js';

/** Blocks of `events` and its indexes this transaction has read so far (its own statistics, no other session's). */
const EVENT_BLOCKS = `SELECT sum(pg_stat_get_xact_blocks_fetched(oid))::int AS n FROM pg_class
  WHERE oid = 'events'::regclass OR oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'events'::regclass)`;

describe('known-key look-up', () => {
  const client = testDb().connect();
  afterAll(async () => (await client).release());

  it('reads a few blocks per key on a 15,000-event stream that no ANALYZE has seen, and finds the known keys and their events', async () => {
    const t = await createTenant();
    const db = testDb();
    // Events as the ingest writes them (keys and ~1 KiB payloads of its shape), in one statement.
    await db.query(
      `INSERT INTO events (account_id, environment, cursor, type, idempotency_key, payload, occurred_at)
       SELECT $1, 'live', g, 'crm.demand.created', 'crm:demand:dem_' || g || ':1', p, now()
       FROM generate_series(1, 15000) g, (SELECT convert_to(jsonb_build_object('description', repeat('x', 1000))::text, 'UTF8') AS p) pad`,
      [t.accountId],
    );
    const c = await client;
    const known = ['crm:demand:dem_7:1', 'crm:demand:dem_14999:1'];
    const keys = [...known, ...Array.from({ length: 32 }, (_, i) => `crm:demand:new_${i}:1`)];
    await c.query('BEGIN');
    try {
      const before = (await c.query<{ n: number }>(EVENT_BLOCKS)).rows[0]!.n;
      const found = await findKnownKeysAndEndpoints(c, t.accountId, 'live', keys, []);
      const read = (await c.query<{ n: number }>(EVENT_BLOCKS)).rows[0]!.n - before;
      expect(found.knownKeys.sort()).toEqual([...known].sort());
      // An index descent is 2-4 blocks (3 levels and the heap for visibility); a scan of the stream is thousands.
      expect(read).toBeLessThanOrEqual(keys.length * 6);
      // The events of known keys (a redelivery's answer), read the same way.
      const events = await findEventsByKeys(c, t.accountId, 'live', keys);
      const readEvents = (await c.query<{ n: number }>(EVENT_BLOCKS)).rows[0]!.n - before - read;
      expect([...events.keys()].sort()).toEqual([...known].sort());
      expect(events.get(known[0]!)?.cursor).toBe('7');
      expect(readEvents).toBeLessThanOrEqual(keys.length * 6);
    } finally {
      await c.query('ROLLBACK');
    }
  });
});
