/**
 * Group commit on real Postgres: concurrent storeEvent calls of one stream share transactions,
 * and every caller still gets what a transaction of its own would have given it.
 */
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { ingestEvent, storeEvent, type StoredEvent } from '../../src/events/store-event.js';
import { createTenant, eventually, testDb } from '../support/harness.js';

const def = getEventDefinition('crm.demand.created')!;

function demand(accountId: string, entityId: string, title = `Demand ${entityId}`) {
  const data = def.data.parse({
    entity_type: 'demand',
    entity_id: entityId,
    before_data: null,
    after_data: { id: entityId, version: 1, status: 'open', contact_id: 'c', title },
    actor_user_id: null,
  });
  return ingestEvent({ accountId, environment: 'live', def, data });
}

async function endpoint(accountId: string, health: 'healthy' | 'paused' | 'unverified' = 'healthy'): Promise<string> {
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status) VALUES ($1, 'https://public.example/h', '{crm}', '\\x00', $2) RETURNING id`,
    [accountId, health],
  );
  return rows[0]!.id;
}

const pools: Db[] = [];
const applicationNames = new Map<Db, string>();
const applicationNameOf = (db: Db) => applicationNames.get(db)!;
/**
 * A pool of its own (as another process would have: its own queues), counting the transactions it
 * commits: a COMMIT, or a batch appended in one autocommitted statement (events with their deliveries).
 */
function countingPool(): { db: Db; commits: () => number } {
  // Named, so that sessionsOf sees this pool's sessions only.
  const url = new URL(inject('databaseUrl'));
  url.searchParams.set('application_name', `group-commit-${pools.length}`);
  const db = createPool(url.toString(), 5);
  applicationNames.set(db, `group-commit-${pools.length}`);
  pools.push(db);
  let commits = 0;
  const commitsWork = (text: unknown) =>
    text === 'COMMIT' || (typeof text === 'string' && text.includes('INSERT INTO stream_heads AS h') && text.includes('WITH dl AS'));
  db.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: typeof query }).query = (...args: unknown[]) => {
      const text = typeof args[0] === 'object' && args[0] !== null ? (args[0] as { text?: unknown }).text : args[0];
      if (!commitsWork(text)) return query(...args);
      // pool.query passes a callback; a checked-out client's caller awaits the promise.
      const last = args[args.length - 1];
      if (typeof last === 'function')
        return query(...args.slice(0, -1), (err: unknown, r: unknown) => {
          if (!err) commits++;
          (last as (err: unknown, r: unknown) => void)(err, r);
        });
      return (query(...args) as Promise<unknown>).then((r) => {
        commits++;
        return r;
      });
    };
  });
  return { db, commits: () => commits };
}
afterAll(() => Promise.all(pools.map((p) => p.end())));

const cursors = async (accountId: string) =>
  (
    await testDb().query<{ cursor: string }>(`SELECT cursor FROM events WHERE account_id = $1 AND environment = 'live' ORDER BY cursor`, [
      accountId,
    ])
  ).rows.map((r) => Number(r.cursor));
const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const deliveryCount = async (accountId: string) =>
  (await testDb().query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1`, [accountId])).rows[0]!.n;

/** Runs `fn` while another session holds the stream's head (as a batch of another process would), then lets go. */
async function withHeadHeld<T>(accountId: string, fn: () => Promise<T>): Promise<T> {
  const blocker = new pg.Client({ connectionString: inject('databaseUrl') });
  await blocker.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM stream_heads WHERE account_id = $1 AND environment = 'live' FOR UPDATE`, [accountId]);
    const result = await fn();
    await blocker.query('COMMIT');
    return result;
  } finally {
    await blocker.end();
  }
}

/** The sessions of `db`'s pool: how many wait for a stream's head, and how many wrote deliveries in a transaction still open. */
async function sessionsOf(db: Db): Promise<{ waitingForHead: number; deliveriesWritten: number }> {
  const { rows } = await db.query<{ waiting: number; written: number }>(
    `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock' AND query LIKE '%stream_heads%')::int AS waiting,
            count(*) FILTER (WHERE state = 'idle in transaction' AND query LIKE 'INSERT INTO deliveries%')::int AS written
     FROM pg_stat_activity WHERE application_name = current_setting('application_name') AND pid <> pg_backend_pid()`,
  );
  return { waitingForHead: rows[0]!.waiting, deliveriesWritten: rows[0]!.written };
}

describe('group commit', () => {
  it('200 concurrent calls into one stream: cursors 1..200 without a gap, every event routed, far fewer transactions than events', async () => {
    const tenant = await createTenant();
    const endpoints = [await endpoint(tenant.accountId), await endpoint(tenant.accountId), await endpoint(tenant.accountId)];
    const { db, commits } = countingPool();
    const stored = await Promise.all(oneTo(200).map((n) => storeEvent(db, demand(tenant.accountId, `dem_${n}`))));

    expect(stored.every((s) => s.created)).toBe(true);
    expect(await cursors(tenant.accountId)).toEqual(oneTo(200));
    // Cursors follow the order the calls were made in.
    expect(stored.map((s) => Number(s.event.cursor))).toEqual(oneTo(200));
    for (const s of stored) {
      expect(s.deliveries.map((d) => d.endpointId).sort()).toEqual([...endpoints].sort());
      expect(s.deliveries.every((d) => d.status === 'pending' && !d.held)).toBe(true);
    }
    const { rows } = await testDb().query<{ endpoint_id: string; n: number; due: number }>(
      `SELECT endpoint_id, count(*)::int AS n, count(*) FILTER (WHERE next_attempt_at IS NOT NULL)::int AS due
       FROM deliveries WHERE account_id = $1 GROUP BY endpoint_id`,
      [tenant.accountId],
    );
    expect(rows.sort((a, b) => a.endpoint_id.localeCompare(b.endpoint_id))).toEqual(
      [...endpoints].sort().map((id) => ({ endpoint_id: id, n: 200, due: 200 })),
    );
    // 200 calls in one tick: one batch of them (a few at most on a slow machine), not 200 transactions.
    expect(commits()).toBeLessThan(10);
  });

  it('a lone call is stored at once, and calls arriving while a batch runs go together in the next', async () => {
    const tenant = await createTenant();
    const { db, commits } = countingPool();
    const first = storeEvent(db, demand(tenant.accountId, 'lone'));
    // The first batch is running (it started without waiting); these queue behind it.
    await new Promise((r) => setImmediate(r));
    const later = oneTo(30).map((n) => storeEvent(db, demand(tenant.accountId, `later_${n}`)));
    await Promise.all([first, ...later]);
    expect(commits()).toBe(2);
    expect(await cursors(tenant.accountId)).toEqual(oneTo(31));
  });

  it('twins in one batch store once: the later callers get created false and the same event, with no deliveries', async () => {
    const tenant = await createTenant();
    const endpointId = await endpoint(tenant.accountId);
    const calls = ['a', 'twin', 'b', 'twin', 'c', 'twin'].map((id) => storeEvent(testDb(), demand(tenant.accountId, id)));
    const stored = await Promise.all(calls);
    const twins = [stored[1]!, stored[3]!, stored[5]!];
    expect(twins.map((s) => s.created)).toEqual([true, false, false]);
    expect(new Set(twins.map((s) => s.event.id)).size).toBe(1);
    expect(twins.map((s) => s.deliveries.length)).toEqual([1, 0, 0]);
    expect(await cursors(tenant.accountId)).toEqual([1, 2, 3, 4]);
    const { rows } = await testDb().query(`SELECT endpoint_id FROM deliveries WHERE account_id = $1 AND idempotency_key = $2`, [
      tenant.accountId,
      twins[0]!.event.idempotency_key,
    ]);
    expect(rows).toEqual([{ endpoint_id: endpointId }]);

    // A repeat in a later batch is answered from the look-up, without a transaction.
    const { db, commits } = countingPool();
    const again = await Promise.all(['twin', 'a'].map((id) => storeEvent(db, demand(tenant.accountId, id))));
    expect(again.map((s) => [s.created, s.event.id, s.deliveries])).toEqual([
      [false, twins[0]!.event.id, []],
      [false, stored[0]!.event.id, []],
    ]);
    expect(commits()).toBe(0);
  });

  it('twins committed by another process meanwhile: the batch is redone without a hole in the cursors', async () => {
    const tenant = await createTenant();
    await endpoint(tenant.accountId);
    await storeEvent(testDb(), demand(tenant.accountId, 'first'));
    const a = countingPool();
    const b = countingPool();
    // Hold the stream's head so both batches have passed their look-up before either appends.
    const blocker = new pg.Client({ connectionString: inject('databaseUrl') });
    await blocker.connect();
    let results: PromiseSettledResult<StoredEvent>[];
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM stream_heads WHERE account_id = $1 AND environment = 'live' FOR UPDATE`, [tenant.accountId]);
      const calls = [
        ...['a1', 'shared', 'a2'].map((id) => storeEvent(a.db, demand(tenant.accountId, id))),
        ...['b1', 'shared', 'b2'].map((id) => storeEvent(b.db, demand(tenant.accountId, id))),
      ];
      await eventually(
        async () =>
          (
            await testDb().query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
               WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%stream_heads%' AND query NOT LIKE '%FOR UPDATE%'`,
            )
          ).rows[0]!.n === 2,
        10_000,
      );
      await blocker.query('COMMIT');
      results = await Promise.allSettled(calls);
    } finally {
      await blocker.end();
    }
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    const stored = results.map((r) => (r as PromiseFulfilledResult<StoredEvent>).value);
    const shared = [stored[1]!, stored[4]!];
    expect(shared.map((s) => s.created).sort()).toEqual([false, true]);
    expect(shared[0]!.event.id).toBe(shared[1]!.event.id);
    expect(stored.filter((s) => s.created)).toHaveLength(5);
    expect(await cursors(tenant.accountId)).toEqual(oneTo(6));
    // One of them committed at once; the other rolled back, looked again, and committed its other two.
    expect([a.commits(), b.commits()].sort()).toEqual([1, 1]);
    const { rows } = await testDb().query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1`, [
      tenant.accountId,
    ]);
    expect(rows[0]!.n).toBe(6);
  });

  it('an event Postgres refuses fails only its own caller; the batch around it is stored', async () => {
    const tenant = await createTenant();
    await endpoint(tenant.accountId);
    const { db } = countingPool();
    const results = await Promise.allSettled(
      oneTo(20).map((n) =>
        // A NUL character in its key: Postgres text refuses it, so the batch's insert fails.
        storeEvent(db, demand(tenant.accountId, n === 7 ? 'dem_\u0000' : `dem_${n}`)),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(oneTo(20).map((n) => (n === 7 ? 'rejected' : 'fulfilled')));
    expect(String((results[6] as PromiseRejectedResult).reason)).toMatch(/0x00/);
    expect(await cursors(tenant.accountId)).toEqual(oneTo(19));
    const { rows } = await testDb().query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1`, [
      tenant.accountId,
    ]);
    expect(rows[0]!.n).toBe(19);
    // The stream is not stuck: the next call goes through.
    expect((await storeEvent(db, demand(tenant.accountId, 'after'))).event.cursor).toBe('20');
  });

  it('two batches in flight: the second writes its deliveries while the first waits for the head, then takes the cursors after it', async () => {
    const tenant = await createTenant();
    const endpoints = [await endpoint(tenant.accountId), await endpoint(tenant.accountId)];
    await storeEvent(testDb(), demand(tenant.accountId, 'first'));
    const { db } = countingPool();
    const { first, second } = await withHeadHeld(tenant.accountId, async () => {
      const first = oneTo(20).map((n) => storeEvent(db, demand(tenant.accountId, `one_${n}`)));
      await new Promise((r) => setImmediate(r));
      // Arriving while the first batch runs, and enough of them: a batch of their own, beside it.
      const second = oneTo(20).map((n) => storeEvent(db, demand(tenant.accountId, `two_${n}`)));
      // One session waits for the head (the first batch); the other has written its deliveries
      // and waits for its turn in its transaction, without asking for the head before the first has it.
      await eventually(async () => {
        const sessions = await sessionsOf(db);
        return sessions.waitingForHead === 1 && sessions.deliveriesWritten === 1;
      }, 10_000);
      return { first, second };
    });
    const stored = await Promise.all([...first, ...second]);
    expect(stored.every((s) => s.created)).toBe(true);
    // In call order: the first batch's cursors, then the second's.
    expect(stored.map((s) => Number(s.event.cursor))).toEqual(oneTo(40).map((n) => n + 1));
    expect(await cursors(tenant.accountId)).toEqual(oneTo(41));
    for (const s of stored) expect(s.deliveries.map((d) => d.endpointId).sort()).toEqual([...endpoints].sort());
    expect(await deliveryCount(tenant.accountId)).toBe(41 * 2);
  });

  it('a twin in each of two batches in flight is stored once, by the earlier batch, without a hole in the cursors', async () => {
    const tenant = await createTenant();
    await endpoint(tenant.accountId);
    await storeEvent(testDb(), demand(tenant.accountId, 'first'));
    const { db } = countingPool();
    const calls = await withHeadHeld(tenant.accountId, async () => {
      const first = oneTo(20).map((n) => storeEvent(db, demand(tenant.accountId, n === 10 ? 'shared' : `one_${n}`)));
      await new Promise((r) => setImmediate(r));
      const second = oneTo(20).map((n) => storeEvent(db, demand(tenant.accountId, n === 5 ? 'shared' : `two_${n}`)));
      await eventually(async () => (await sessionsOf(db)).deliveriesWritten === 1, 10_000);
      return [...first, ...second];
    });
    const stored = await Promise.all(calls);
    const [mine, twin] = [stored[9]!, stored[24]!];
    expect([mine.created, twin.created]).toEqual([true, false]);
    expect(twin.event.id).toBe(mine.event.id);
    expect(twin.deliveries).toEqual([]);
    expect(stored.filter((s) => s.created)).toHaveLength(39);
    expect(await cursors(tenant.accountId)).toEqual(oneTo(40));
    // The second batch's deliveries of the twin were rolled back with its first try.
    expect(await deliveryCount(tenant.accountId)).toBe(40);
    // Still in call order, the twin left out.
    expect(stored.filter((s) => s.created).map((s) => Number(s.event.cursor))).toEqual(oneTo(39).map((n) => n + 1));
  });

  it("a failed batch's calls, retried alone, keep their cursors before those of the batch in flight after it", async () => {
    const tenant = await createTenant();
    await endpoint(tenant.accountId);
    await storeEvent(testDb(), demand(tenant.accountId, 'first'));
    const { db } = countingPool();
    const calls = await withHeadHeld(tenant.accountId, async () => {
      const first = oneTo(20).map((n) => storeEvent(db, demand(tenant.accountId, n === 7 ? 'one_\u0000' : `one_${n}`)));
      await new Promise((r) => setImmediate(r));
      const second = oneTo(20).map((n) => storeEvent(db, demand(tenant.accountId, `two_${n}`)));
      await eventually(async () => (await sessionsOf(db)).deliveriesWritten === 1, 10_000);
      return [...first, ...second];
    });
    const results = await Promise.allSettled(calls);
    expect(results.map((r) => r.status)).toEqual(oneTo(40).map((n) => (n === 7 ? 'rejected' : 'fulfilled')));
    const stored = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(stored.map((s) => Number(s.event.cursor))).toEqual(oneTo(39).map((n) => n + 1));
    expect(await cursors(tenant.accountId)).toEqual(oneTo(40));
    expect(await deliveryCount(tenant.accountId)).toBe(40);
  });

  it('a batch that waits long for its turn rolls back what it wrote and waits holding nothing, then takes the cursors after the batch before', async () => {
    const tenant = await createTenant();
    await endpoint(tenant.accountId);
    await storeEvent(testDb(), demand(tenant.accountId, 'first'));
    const { db } = countingPool();
    const calls = await withHeadHeld(tenant.accountId, async () => {
      const first = oneTo(20).map((n) => storeEvent(db, demand(tenant.accountId, `one_${n}`)));
      await new Promise((r) => setImmediate(r));
      const second = oneTo(20).map((n) => storeEvent(db, demand(tenant.accountId, `two_${n}`)));
      await eventually(async () => (await sessionsOf(db)).deliveriesWritten === 1, 10_000);
      // A second later (TURN_WAIT_MS) its transaction is gone: nothing of it can hold up another session.
      await eventually(async () => {
        const { rows } = await testDb().query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'`,
          [applicationNameOf(db)],
        );
        return rows[0]!.n === 0;
      }, 10_000);
      expect((await sessionsOf(db)).waitingForHead).toBe(1);
      return [...first, ...second];
    });
    const stored = await Promise.all(calls);
    expect(stored.map((s) => Number(s.event.cursor))).toEqual(oneTo(40).map((n) => n + 1));
    expect(await deliveryCount(tenant.accountId)).toBe(41);
  });

  it("a stream's first events arriving together, from two processes at once, start it at 1 without a gap", async () => {
    const tenant = await createTenant();
    const a = countingPool();
    const b = countingPool();
    const stored = await Promise.all(oneTo(40).map((n) => storeEvent(n % 2 ? a.db : b.db, demand(tenant.accountId, `first_${n}`))));
    expect(stored.every((s) => s.created)).toBe(true);
    expect(await cursors(tenant.accountId)).toEqual(oneTo(40));
  });
});
