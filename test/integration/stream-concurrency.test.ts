/**
 * The stream under concurrent writers: cursors are contiguous, and a reader that has seen
 * cursor N+1 has seen N (no event commits "behind" a reader).
 */
import { describe, expect, it } from 'vitest';
import { getEventDefinition } from '../../core/catalog/index.js';
import { readStream } from '../../db/events.js';
import { ingestEvent, storeEvent } from '../../ingest/store-event.js';
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

describe('stream cursors under concurrency', () => {
  it('thousands of events from concurrent writers walk without a gap or a repeat, while a reader follows', async () => {
    const tenant = await createTenant();
    const db = testDb();
    const total = 2000;
    const writers = 8;
    let next = 0;
    const write = async () => {
      for (let n = next++; n < total; n = next++) {
        const { data, refs } = demand(n);
        await storeEvent(db, ingestEvent({ accountId: tenant.accountId, environment: 'live', def, data, refs }));
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
    await Promise.all(Array.from({ length: writers }, write));
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
  });
});
