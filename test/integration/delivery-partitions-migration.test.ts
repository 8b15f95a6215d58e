/**
 * Migration 0029 on a database that has deliveries: applied after 0028 to tables with rows, it
 * keeps every delivery and attempt as they were (the old tables become the partition before the
 * cutover, nothing copied), and what the old tables guaranteed still holds on the partitioned
 * ones: a delivery names an endpoint of its account, deleting a delivery deletes its attempts,
 * and an old delivery's new attempts are read with its old ones.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getDelivery, recordDeliveryAttempts } from '../../src/db/deliveries.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { successOf } from '../support/attempt-results.js';
import { scratchDatabaseBefore, type ScratchDatabase } from '../support/scratch-database.js';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await scratchDatabaseBefore(inject('databaseUrl'), '0029_');
  db = createPool(scratch.url, 2);
});
afterAll(async () => {
  await db?.end();
  await scratch?.drop();
});

const DELIVERIES = `SELECT to_jsonb(d) - 'tableoid' AS row FROM deliveries d ORDER BY id`;
const ATTEMPTS = `SELECT to_jsonb(a) - 'delivery_created_at' AS row FROM delivery_attempts a ORDER BY delivery_id, number`;

describe('migration 0029 on tables with rows', () => {
  it('keeps every delivery and attempt, in the legacy partition, and keeps their rules', async () => {
    const { rows: accounts } = await db.query<{ id: string }>(
      `INSERT INTO accounts (name, owner_email) VALUES ('a', 'o@example.com'), ('b', 'o@example.com') RETURNING id`,
    );
    const [a, b] = accounts.map((r) => r.id);
    const { rows: endpoints } = await db.query<{ id: string }>(
      `INSERT INTO endpoints (account_id, url, events, secret_ciphertext) VALUES ($1, 'https://public.example/a', '{crm}', '\\x00'),
         ($2, 'https://public.example/b', '{crm}', '\\x00') RETURNING id`,
      [a, b],
    );
    const [ea, eb] = endpoints.map((r) => r.id);
    // 600 deliveries over the past year in every status, 1 to 3 attempts each.
    await db.query(
      `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, attempts, next_attempt_at, terminal_reason, created_at)
       SELECT $1, $2, gen_random_uuid(), 'crm.demand.created', 'k' || g, 'live',
              (ARRAY['pending', 'success', 'failed', 'exhausted', 'limited'])[1 + g % 5], 1 + g % 3,
              CASE WHEN g % 5 IN (0, 2) THEN now() END, CASE WHEN g % 5 = 3 THEN 'hold_expired' END,
              now() - g * interval '14 hours'
       FROM generate_series(1, 600) g`,
      [a, ea],
    );
    await db.query(
      `INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, response_code, error, response_excerpt)
       SELECT d.id, n, d.created_at + n * interval '1 minute', 10 * n, CASE WHEN n < d.attempts THEN 503 ELSE 200 END,
              CASE WHEN n < d.attempts THEN 'non_2xx' END, 'excerpt ' || n
       FROM deliveries d, generate_series(1, d.attempts) n`,
    );
    const deliveries = (await db.query(DELIVERIES)).rows;
    const attempts = (await db.query(ATTEMPTS)).rows;
    expect(deliveries).toHaveLength(600);
    expect(attempts).toHaveLength(1200);

    await scratch.migrateRest();

    expect((await db.query(DELIVERIES)).rows).toEqual(deliveries);
    expect((await db.query(ATTEMPTS)).rows).toEqual(attempts);
    const { rows: where } = await db.query(
      `SELECT (SELECT array_agg(DISTINCT tableoid::regclass::text) FROM deliveries) AS d,
              (SELECT array_agg(DISTINCT tableoid::regclass::text) FROM delivery_attempts) AS a,
              (SELECT array_agg(DISTINCT delivery_created_at) FROM delivery_attempts) AS at`,
    );
    expect(where[0]).toEqual({ d: ['deliveries_legacy'], a: ['delivery_attempts_legacy'], at: [-Infinity] });
    const { rows: parts } = await db.query(`SELECT relkind FROM pg_class WHERE relname IN ('deliveries', 'delivery_attempts')`);
    expect(parts).toEqual([{ relkind: 'p' }, { relkind: 'p' }]);

    // A delivery still names an endpoint of its own account (0021's statement trigger, on the parent).
    await expect(
      db.query(
        `INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, status) VALUES ($1, $2, 't', 'x', 'pending')`,
        [a, eb],
      ),
    ).rejects.toMatchObject({ code: '23503' });
    // ...and never moves to another one (0021's row trigger, cloned to every partition).
    await expect(db.query(`UPDATE deliveries SET endpoint_id = $1 WHERE idempotency_key = 'k1'`, [eb])).rejects.toMatchObject({
      code: '23503',
    });

    // An old delivery's next attempt lands in its week (its created_at), and is read with its old ones.
    const { rows: old } = await db.query<{ id: string; attempts: number; created_at: Date }>(
      `SELECT id, attempts, created_at FROM deliveries WHERE status = 'failed' AND account_id = $1 ORDER BY created_at LIMIT 1`,
      [a],
    );
    const next = old[0]!.attempts + 1;
    await recordDeliveryAttempts(db, [successOf(old[0]!, next)]);
    const read = await getDelivery(db, a!, old[0]!.id);
    expect(read?.status).toBe('success');
    expect(read?.attempts_log.map((x) => x.number)).toEqual(Array.from({ length: next }, (_, i) => i + 1));

    // Deleting deliveries deletes their attempts (the trigger that replaced the foreign key).
    const { rowCount } = await db.query(`DELETE FROM deliveries WHERE account_id = $1 AND status = 'success'`, [a]);
    expect(rowCount).toBe(121);
    const { rows: orphans } = await db.query(
      `SELECT count(*)::int AS n FROM delivery_attempts a WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = a.delivery_id)`,
    );
    expect(orphans).toEqual([{ n: 0 }]);
    // 1200 and the one recorded above, less those of the 120 successes (1 to 3 each, 240) and of the one made a success.
    expect((await db.query(`SELECT count(*)::int AS n FROM delivery_attempts`)).rows).toEqual([{ n: 1201 - 240 - next }]);
  });
});
