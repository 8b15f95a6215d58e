/** Fixtures of the client-kit tests. */
import crypto from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { testDb } from './harness.js';

/** A pool on the test database whose tables live in a schema of their own, so receivers in parallel files never share rows. */
export async function isolatedPool(): Promise<pg.Pool> {
  const schema = `kit_${crypto.randomBytes(4).toString('hex')}`;
  await testDb().query(`CREATE SCHEMA ${schema}`);
  return new pg.Pool({ connectionString: inject('databaseUrl'), max: 25, options: `-c search_path=${schema}` });
}

/** A distinct publishable event per `n` (its idempotency key is crm:demand:dem_kit_<n>:1). */
export function demandEvent(n: number | string) {
  const id = `dem_kit_${n}`;
  return {
    type: 'crm.demand.created',
    data: {
      entity_type: 'demand',
      entity_id: id,
      before_data: null,
      after_data: { id, version: 1, status: 'open', contact_id: 'c_kit', title: 'Quote' },
      actor_user_id: null,
    },
  };
}
