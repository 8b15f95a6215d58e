/**
 * What the deliveries' foreign key guaranteed, checked once per statement since migration 0021:
 * a statement's deliveries all name endpoints of their own Account or none is written; an
 * endpoint's deletion and a delivery's insert exclude each other (the endpoints a transaction's
 * deliveries name stay locked until it ends); deleting an endpoint deletes its deliveries; the
 * keys never change.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createTenant, eventually, testDb } from '../support/harness.js';

async function endpoint(accountId: string): Promise<string> {
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status) VALUES ($1, 'https://public.example/h', '{crm}', '\\x00', 'healthy') RETURNING id`,
    [accountId],
  );
  return rows[0]!.id;
}

/** Deliveries for (account, endpoint) pairs, in one statement. */
const INSERT = `INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, status)
  SELECT a, e, 'crm.demand.created', 'k', 'pending' FROM unnest($1::uuid[], $2::uuid[]) AS p(a, e)`;

const deliveriesOf = async (endpointId: string) =>
  (await testDb().query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = $1`, [endpointId])).rows[0]!.n;

const clients: pg.Client[] = [];
async function session(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: inject('databaseUrl') });
  await c.connect();
  clients.push(c);
  return c;
}
afterAll(() => Promise.all(clients.map((c) => c.end())));

describe('deliveries name endpoints of their own Account', () => {
  it('refuses a whole statement when one of its deliveries names another Account’s endpoint, or none', async () => {
    const [mine, theirs] = [await createTenant(), await createTenant()];
    const [a, b, their] = [await endpoint(mine.accountId), await endpoint(mine.accountId), await endpoint(theirs.accountId)];
    await testDb().query(INSERT, [
      [mine.accountId, mine.accountId, mine.accountId],
      [a, b, a],
    ]);
    expect([await deliveriesOf(a), await deliveriesOf(b)]).toEqual([2, 1]);
    for (const stray of [their, crypto.randomUUID()]) {
      await expect(
        testDb().query(INSERT, [
          [mine.accountId, mine.accountId],
          [b, stray],
        ]),
      ).rejects.toMatchObject({ code: '23503' });
    }
    expect([await deliveriesOf(b), await deliveriesOf(their)]).toEqual([1, 0]);
  });

  it('an endpoint deleted while a transaction writes deliveries to it: the deletion waits, then takes them', async () => {
    const t = await createTenant();
    const id = await endpoint(t.accountId);
    const [writer, deleter] = [await session(), await session()];
    await writer.query('BEGIN');
    await writer.query(INSERT, [[t.accountId], [id]]);
    let deleted = false;
    const deletion = deleter.query(`DELETE FROM endpoints WHERE id = $1`, [id]).then(() => (deleted = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(deleted).toBe(false);
    await writer.query('COMMIT');
    await deletion;
    expect(await deliveriesOf(id)).toBe(0);
  });

  it('a delivery written while an endpoint’s deletion is uncommitted waits for it, then is refused', async () => {
    const t = await createTenant();
    const id = await endpoint(t.accountId);
    const [writer, deleter] = [await session(), await session()];
    await deleter.query('BEGIN');
    await deleter.query(`DELETE FROM endpoints WHERE id = $1`, [id]);
    const pid = async (c: pg.Client) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const [writerPid, deleterPid] = [await pid(writer), await pid(deleter)];
    let settled = false;
    const write = writer
      .query(INSERT, [[t.accountId], [id]])
      .then(
        () => 'written',
        (err: { code?: string }) => err.code,
      )
      .finally(() => (settled = true));
    // It waits: Postgres shows the writer blocked by the deleter's uncommitted transaction.
    await eventually(async () => {
      const { rows } = await testDb().query<{ blockers: number[] }>('SELECT pg_blocking_pids($1) AS blockers', [writerPid]);
      return rows[0]!.blockers.includes(deleterPid);
    });
    expect(settled).toBe(false);
    await deleter.query('COMMIT');
    expect(await write).toBe('23503');
    expect(await deliveriesOf(id)).toBe(0);
  });

  it('neither a delivery’s keys nor an endpoint’s change', async () => {
    const t = await createTenant();
    const [a, b] = [await endpoint(t.accountId), await endpoint(t.accountId)];
    await testDb().query(INSERT, [[t.accountId], [a]]);
    await expect(testDb().query(`UPDATE deliveries SET endpoint_id = $2 WHERE endpoint_id = $1`, [a, b])).rejects.toMatchObject({
      code: '23503',
    });
    await expect(testDb().query(`UPDATE endpoints SET id = gen_random_uuid() WHERE id = $1`, [a])).rejects.toMatchObject({
      code: '23503',
    });
    // Setting them to what they are is no change.
    await testDb().query(`UPDATE deliveries SET endpoint_id = endpoint_id WHERE endpoint_id = $1`, [a]);
    expect(await deliveriesOf(a)).toBe(1);
  });
});
