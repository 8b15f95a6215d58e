/**
 * Postgres dies under a running API and outbox sender (SIGKILL of its own embedded server,
 * not the shared one): the process stays up, answers 503 with Retry-After meanwhile, and
 * recovers without a restart once the server is back on the same data and port.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { issueApiKey } from '../../src/db/api-keys.js';
import { createAccount } from '../../src/db/directory.js';
import { migrate } from '../../src/db/migrate.js';
import { enqueueNotification } from '../../src/db/plan-usage.js';
import { createPool, isDatabaseUnavailable, type Db } from '../../src/db/pool.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../../dev/embedded-postgres.js';
import { projectRoot } from '../../dev/tools.js';
import { ingestEvent, storeEvent } from '../../src/events/store-event.js';
import { SCOPES } from '../../src/security/api-key.js';
import { runOutboxSender, type Deliver } from '../../src/worker/outbox-sender.js';
import { eventually, startTestApi, type TestApi } from '../support/harness.js';

const dataDir = path.join(projectRoot, '.data', 'test', `pg-outage-${process.pid}-${Date.now()}`);
const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');

/** The server this file started and that is running now; undefined while it is killed. */
let server: RunningPostgres | undefined;
let url: string;
let db: Db;
let api: TestApi;
let accountId: string;
let key: string;
// An unheard 'error' event is thrown as an uncaught exception; vitest would report it, this names it in the test.
const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => uncaught.push(err);

function postmasterPid(): number | undefined {
  try {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

async function killPostgres(): Promise<void> {
  const pid = postmasterPid();
  if (!pid) throw new Error('postgres is not running');
  // Its stop() would wait for an exit that has already happened: forget it.
  server = undefined;
  process.kill(pid, 'SIGKILL');
  await eventually(async () => postmasterPid() === undefined, 5_000);
}

/** Starts the server again on the same data folder and port (startEmbeddedPostgres reuses both). */
async function startPostgres(): Promise<void> {
  // The killed server's backends exit once they notice; until then its shared memory is in use and a start fails.
  for (let attempt = 1; ; attempt++) {
    try {
      server = await startEmbeddedPostgres(dataDir);
      return;
    } catch (err) {
      if (attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  await startPostgres();
  url = server!.url;
  await migrate(url);
  db = createPool(url, 10);
  api = await startTestApi({ db });
  const account = await createAccount(db, { name: 'outage', ownerEmail: 'owner@example.com', plan: 'paid' });
  accountId = account.id;
  key = (await issueApiKey(db, { accountId, environment: 'live', scopes: [...SCOPES] })).key;
});

/** Cleanup steps must not hang on what a failed test left behind (an open request, a dead server). */
const bounded = (work: Promise<unknown>, ms = 10_000) => Promise.race([work.catch(() => {}), new Promise((r) => setTimeout(r, ms))]);

afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  if (api) await bounded(api.close());
  if (db) await bounded(db.end());
  if (server) await bounded(server.stop());
  // Whatever state a failure left: no server of this file outlives it.
  const pid = postmasterPid();
  if (pid) process.kill(pid, 'SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Polls until `check` passes, failing at once on an answer outside `allowed`, each answer within `answerMs`. */
async function until(path: string, want: number, opts: { allowed: number[]; withinMs: number; answerMs?: number }) {
  const deadline = Date.now() + opts.withinMs;
  for (;;) {
    const started = Date.now();
    const res = await api.request('GET', path, { key });
    expect(Date.now() - started, `${path} answered in time`).toBeLessThan(opts.answerMs ?? 7_000);
    expect(opts.allowed, `${path} answered ${res.status}: ${res.text}`).toContain(res.status);
    if (res.status === want) return res;
    if (Date.now() > deadline) throw new Error(`${path} did not answer ${want} within ${opts.withinMs} ms (last ${res.status})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('when Postgres dies', () => {
  it('the API stays up, answers 503 with Retry-After, and recovers by itself when Postgres is back', async () => {
    expect((await api.request('GET', '/healthz')).status).toBe(200);
    expect((await api.request('GET', '/api/v1/webhooks', { key })).status).toBe(200);
    // Idle clients in the pool, which lose their connections too.
    await Promise.all(Array.from({ length: 4 }, () => db.query('SELECT pg_sleep(0.05)')));

    // A create request holds a checked-out client inside its transaction, waiting on the Account's row lock.
    const blocker = new pg.Client({ connectionString: url });
    blocker.on('error', () => {});
    try {
      await blocker.connect();
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
      const creating = api.request('POST', '/api/v1/webhooks', { key, body: { url: 'https://public.example/hook', events: ['messages'] } });
      // Watched from the pool: inside the blocker's transaction pg_stat_activity would stay one snapshot.
      await eventually(
        async () =>
          (await db.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM accounts%FOR UPDATE%'`))
            .rowCount,
        10_000,
      );

      await killPostgres();
      const created = await creating;
      expect(created.status).toBe(503);
      expect(created.body.error.code).toBe('service_unavailable');
      expect(created.headers.get('retry-after')).toMatch(/^\d+$/);

      const health = await until('/healthz', 503, { allowed: [200, 503], withinMs: 5_000, answerMs: 3_000 });
      expect(health.body.error.message).toContain('postgres: down');
      expect(health.headers.get('retry-after')).toMatch(/^\d+$/);
      const list = await until('/api/v1/webhooks', 503, { allowed: [200, 503], withinMs: 5_000 });
      expect(list.body).toEqual({ error: { code: 'service_unavailable', message: expect.any(String) } });
      expect(list.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(uncaught).toEqual([]);
    } finally {
      await blocker.end().catch(() => {});
      if (!postmasterPid()) await startPostgres();
    }

    // Same app, same pool: nothing restarted but Postgres.
    await until('/healthz', 200, { allowed: [200, 503], withinMs: 10_000 });
    await until('/api/v1/webhooks', 200, { allowed: [200, 503], withinMs: 10_000 });
    const created = await api.request('POST', '/api/v1/webhooks', {
      key,
      body: { url: 'https://public.example/hook', events: ['messages'] },
    });
    expect(created.status).toBe(201);
    expect(uncaught).toEqual([]);
  });

  it('the outbox sender survives with a transaction open, keeps polling, and sends once Postgres is back', async () => {
    if (!postmasterPid()) await startPostgres();
    const enqueue = (name: string) =>
      enqueueNotification(db, {
        accountId,
        kind: 'endpoint_paused',
        dedupeKey: `outage:${name}:${Date.now()}`,
        payload: { to: `${name}@example.com`, endpoint_id: 'ep-1', url: 'https://example.com/h', failure_streak: 15 },
      });
    await enqueue('first');

    // The first delivery waits, inside the sender's transaction, until Postgres has been killed.
    let inside!: () => void;
    const reachedDelivery = new Promise<void>((r) => (inside = r));
    let resume!: () => void;
    const killed = new Promise<void>((r) => (resume = r));
    const sentTo: string[] = [];
    let held = false;
    const deliver: Deliver = async (row) => {
      if (!held) {
        held = true;
        inside();
        await killed;
      }
      sentTo.push(String(row.payload.to));
    };
    const stop = new AbortController();
    const loop = runOutboxSender(db, { from: 'test', deliver, intervalMs: 100, maxIntervalMs: 1_000, signal: stop.signal });
    try {
      await reachedDelivery;
      await killPostgres();
      resume();
      // Passes fail against the dead server for a while; the loop must still be running afterwards.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(uncaught).toEqual([]);
      await startPostgres();
      await enqueue('second');
      const sent = async () =>
        (await db.query(`SELECT count(*)::int AS n FROM notifications WHERE dedupe_key LIKE 'outage:%' AND sent_at IS NOT NULL`)).rows[0]
          .n === 2;
      await eventually(async () => sent().catch(() => false), 15_000);
      expect(sentTo).toContain('second@example.com');
      expect(uncaught).toEqual([]);
    } finally {
      stop.abort();
      await loop;
    }
  });

  it('ingest callers sharing a batch each get the "database unavailable" error, and the stream goes on once Postgres is back', async () => {
    if (!postmasterPid()) await startPostgres();
    const def = getEventDefinition('crm.demand.created')!;
    const demand = (id: string) =>
      ingestEvent({
        accountId,
        environment: 'live',
        def,
        data: def.data.parse({
          entity_type: 'demand',
          entity_id: id,
          before_data: null,
          after_data: { id, version: 1, status: 'open', contact_id: 'c', title: id },
          actor_user_id: null,
        }),
      });
    expect((await storeEvent(db, demand('before'))).created).toBe(true);
    await killPostgres();
    try {
      const results = await Promise.allSettled(['a', 'b', 'c'].map((id) => storeEvent(db, demand(id))));
      for (const r of results) {
        expect(r.status).toBe('rejected');
        expect(isDatabaseUnavailable((r as PromiseRejectedResult).reason), String((r as PromiseRejectedResult).reason)).toBe(true);
      }
      expect(uncaught).toEqual([]);
    } finally {
      await startPostgres();
    }
    const after = await eventually(async () => storeEvent(db, demand('after')).catch(() => undefined), 10_000);
    expect(after.created).toBe(true);
    const { rows } = await db.query(`SELECT cursor::int AS cursor FROM events WHERE account_id = $1 ORDER BY cursor`, [accountId]);
    expect(rows).toEqual([{ cursor: 1 }, { cursor: 2 }]);
  });
});
