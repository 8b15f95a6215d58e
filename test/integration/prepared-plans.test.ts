/**
 * The statements a sparse endpoint's delivery runs once each (its session's lease, the reason a
 * lease was refused, the record of its one attempt) keep one plan per connection: Postgres plans
 * a prepared statement's first five runs for their parameters, then keeps its generic plan only
 * if that costs no more than theirs. Asked with one request each, the lease was planned at every
 * call on a table of endpoints as a deployment's are (analyzed, its rows updated many times over),
 * as it was in `npm run bench -- --peer --statements`, where the one-attempt record was too (this
 * table does not reproduce the record's).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { recordDeliveryAttempts } from '../../src/db/deliveries.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { takeDirectSessionLeases } from '../../src/db/session-leases.js';
import { successOf } from '../support/attempt-results.js';
import { scratchDatabaseBefore, type ScratchDatabase } from '../support/scratch-database.js';

let scratch: ScratchDatabase;
let one: Db;
let endpoints: string[];

beforeAll(async () => {
  scratch = await scratchDatabaseBefore(inject('databaseUrl'), '0034_');
  await scratch.migrateRest();
  const { rows: a } = await scratch.db.query<{ id: string }>(
    `INSERT INTO accounts (name, owner_email) VALUES ('a', 'o@example.com') RETURNING id`,
  );
  const { rows: e } = await scratch.db.query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status, verified_at)
     SELECT $1, 'https://public.example/' || g, '{crm}', '\\x00', 'healthy', now() FROM generate_series(1, 100) g RETURNING id`,
    [a[0]!.id],
  );
  endpoints = e.map((r) => r.id);
  await scratch.db.query(
    `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, next_attempt_at)
     SELECT $1, $2, gen_random_uuid(), 'crm.demand.created', 'k' || g, 'live', 'pending', now() FROM generate_series(1, 2000) g`,
    [a[0]!.id, endpoints[0]],
  );
  // Rows updated many times over, as every lease and health record updates a deployment's (left to
  // autovacuum, which this test server does not wait for).
  for (let i = 0; i < 40; i++) await scratch.db.query(`UPDATE endpoints SET session_paced_at = now()`);
  for (let i = 0; i < 5; i++) await scratch.db.query(`UPDATE deliveries SET updated_at = now()`);
  await scratch.db.query('ANALYZE');
  // One connection: prepared statements and their plans are per connection.
  one = createPool(scratch.url, 1);
});
afterAll(async () => {
  await one?.end();
  await scratch?.drop();
});

async function plansOf(name: string): Promise<{ generic: number; custom: number }> {
  const { rows } = await one.query<{ generic: number; custom: number }>(
    `SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = $1`,
    [name],
  );
  return rows[0]!;
}

describe('plans kept per connection', () => {
  it("a direct session's lease, taken and refused, one endpoint at a time", async () => {
    for (let i = 0; i < 8; i++) {
      const endpointId = endpoints[1 + i]!;
      const [taken] = await takeDirectSessionLeases(one, [{ endpointId, owner: `a${i}` }], 10_000, 60_000);
      const [refused] = await takeDirectSessionLeases(one, [{ endpointId, owner: `b${i}` }], 10_000, 60_000);
      expect([taken!.granted, refused!.granted]).toEqual([true, false]);
    }
    // Sixteen takes, eight of them refused and asked why: past the five custom plans, the generic one.
    expect(await plansOf('take_direct_session_leases')).toEqual({ generic: 11, custom: 5 });
    expect(await plansOf('why_direct_session_leases_refused')).toEqual({ generic: 3, custom: 5 });
  });

  it("an attempt's record, one at a time", async () => {
    const { rows } = await one.query<{ id: string; created_at: Date }>(`SELECT id, created_at FROM deliveries ORDER BY id LIMIT 8`);
    for (const d of rows) await recordDeliveryAttempts(one, [successOf(d)]);
    expect(await plansOf('record_delivery_attempts')).toEqual({ generic: 3, custom: 5 });
    const { rows: done } = await one.query<{ n: number }>(`SELECT count(*)::int AS n FROM delivery_attempts`);
    expect(done[0]!.n).toBe(8);
  });
});
