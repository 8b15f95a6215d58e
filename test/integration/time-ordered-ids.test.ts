/**
 * Events and deliveries take time-ordered ids (UUIDv7, migration 0034 and src/db/row-id.ts), so
 * the indexes keyed by them grow at their right edge: those the API makes, those Postgres makes by
 * default, and a later row's id sorts after an earlier one's in both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demandEvent } from '../support/kit.js';
import { createTenant, insertTestEndpoint, startTestApi, testDb, type Tenant, type TestApi } from '../support/harness.js';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  [api, tenant] = await Promise.all([startTestApi(), createTenant()]);
});
afterAll(async () => {
  await api?.close();
});

const version = (id: string) => id[14];

describe('time-ordered ids', () => {
  it('events published one after another take version-7 ids in the order of their cursors', async () => {
    const ids: string[] = [];
    const cursors: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.request('POST', '/api/v1/events', {
        key: tenant.key,
        body: demandEvent(`ids_${i}`),
      });
      expect(res.status).toBe(201);
      ids.push(res.body.data.id);
      cursors.push(res.body.data.cursor);
      // UUIDv7 orders by the millisecond: the next one is made in a later one.
      await new Promise((r) => setTimeout(r, 3));
    }
    expect(ids.map(version)).toEqual(['7', '7', '7']);
    expect([...ids].sort()).toEqual(ids);
    expect(cursors.map(Number)).toEqual([...cursors.map(Number)].sort((a, b) => a - b));
  });

  it('a delivery and an event stored without an id get a version-7 one from the column default, later ones sorting after', async () => {
    const { rows: defaults } = await testDb().query<{ table: string; def: string }>(
      `SELECT c.relname AS table, pg_get_expr(d.adbin, d.adrelid) AS def
       FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
       WHERE c.relname IN ('events', 'deliveries') AND a.attname = 'id' ORDER BY 1`,
    );
    expect(defaults).toEqual([
      { table: 'deliveries', def: 'uuidv7()' },
      { table: 'events', def: 'uuidv7()' },
    ]);
    const endpointId = await insertTestEndpoint(testDb(), tenant.accountId);
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { rows } = await testDb().query<{ id: string }>(
        `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, attempts)
         VALUES ($1, $2, gen_random_uuid(), 'crm.demand.created', gen_random_uuid()::text, 'live', 'success', 1) RETURNING id`,
        [tenant.accountId, endpointId],
      );
      made.push(rows[0]!.id);
      await new Promise((r) => setTimeout(r, 3));
    }
    expect(made.map(version)).toEqual(['7', '7', '7']);
    expect([...made].sort()).toEqual(made);
  });
});
