/**
 * The per-key rate limit holds across API processes sharing one Postgres: several app instances,
 * each with its own limiter (as separate processes would have), hammer one key at once.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bucketLevel, grantOf, LEASE_MS } from '../../src/core/rate-lease.js';
import { fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApp } from '../../src/api/app.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../src/api/errors.js';
import { createRateLimiter, type RateLimiter } from '../../src/api/rate-limiter.js';
import { issueApiKey, revokeApiKey } from '../../src/db/api-keys.js';
import { createPool } from '../../src/db/pool.js';
import { leaseRateTokens } from '../../src/db/rate-buckets.js';
import { SCOPES } from '../../src/security/api-key.js';
import { createTenant, eventually, startTestApi, testDb, type Tenant, type TestApi } from '../support/harness.js';

const LIMIT = { capacity: 20, refillPerSecond: 10 };
const PROCESSES = 3;
let apis: TestApi[];
let tenant: Tenant;

beforeAll(async () => {
  apis = await Promise.all(Array.from({ length: PROCESSES }, () => startTestApi({ rateLimit: LIMIT })));
  tenant = await createTenant();
});
afterAll(() => Promise.all(apis.map((a) => a.close())));

const newKey = () => issueApiKey(testDb(), { accountId: tenant.accountId, environment: 'live', scopes: [...SCOPES] });
const get = (api: TestApi, key: string) => api.request('GET', '/api/v1/event_types', { key });

/** `loops` concurrent request loops per app on one key for `ms`; counts by status. */
async function hammer(key: string, ms: number, loops = 6) {
  const statuses = new Map<number, number>();
  const refusals: { code: string; retryAfter: string | null }[] = [];
  const started = performance.now();
  const until = started + ms;
  await Promise.all(
    apis.flatMap((api) =>
      Array.from({ length: loops }, async () => {
        while (performance.now() < until) {
          const res = await get(api, key);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 429) refusals.push({ code: res.body.error.code, retryAfter: res.headers.get('retry-after') });
        }
      }),
    ),
  );
  return { statuses, refusals, elapsedSeconds: (performance.now() - started) / 1000 };
}

describe('one rate limit across API processes', () => {
  it('lets through no more than capacity + refill × elapsed in all, and about that much', async () => {
    const { key } = await newKey();
    const { statuses, refusals, elapsedSeconds } = await hammer(key, 2_500);
    const allowed = statuses.get(200) ?? 0;
    const bound = LIMIT.capacity + LIMIT.refillPerSecond * elapsedSeconds;
    // Each process with a bucket of its own would let through PROCESSES times this.
    expect(allowed).toBeLessThanOrEqual(bound);
    // Tokens are not lost on the way: only what is leased and unspent at the end is missing.
    expect(allowed).toBeGreaterThanOrEqual(0.6 * bound);
    expect([...statuses.keys()].sort()).toEqual([200, 429]);
    // The 429 is the same as it always was.
    for (const r of refusals) {
      expect(r.code).toBe('rate_limited');
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
  });

  it('another key, of the same Account or another, has a bucket of its own; a revoked key is refused as unknown', async () => {
    const hammered = await newKey();
    const sibling = await newKey();
    const other = await createTenant();
    // Spend the hammered key's bucket: every process is refused.
    for (const api of apis) {
      let refused = false;
      for (let i = 0; i < 50 && !refused; i++) {
        const burst = await Promise.all(Array.from({ length: 10 }, () => get(api, hammered.key)));
        refused = burst.some((r) => r.status === 429);
      }
      expect(refused).toBe(true);
    }
    for (const api of apis) {
      expect((await get(api, sibling.key)).status).toBe(200);
      expect((await get(api, other.key)).status).toBe(200);
    }
    await revokeApiKey(testDb(), hammered.id);
    // Each process hears of the revocation milliseconds after its commit (src/api/api-key-cache.ts).
    for (const api of apis) await eventually(async () => (await get(api, hammered.key)).status === 401, 5_000);
    // Its replacement starts with a full bucket.
    const replacement = await newKey();
    const burst = await Promise.all(Array.from({ length: LIMIT.capacity }, (_, i) => get(apis[i % PROCESSES]!, replacement.key)));
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(LIMIT.capacity / 2);
  });

  it('an idle process gives its unspent tokens back for the others', async () => {
    // Almost no refill: every token counted is one of the burst. Limiters as the API processes use them.
    const slow = { capacity: 16, refillPerSecond: 0.001 };
    let clockA = Date.now();
    const a = createRateLimiter(testDb(), { ...slow, now: () => clockA });
    const [b, c, d] = [0, 1, 2].map(() => createRateLimiter(testDb(), slow));
    const allowed = async (limiter: RateLimiter, keyId: string) => (await limiter.take(keyId)).allowed;
    try {
      const { id } = await newKey();
      // The second lease, asked for 1 ms after the first, is of two tokens: a keeps one unspent.
      expect(await allowed(a, id)).toBe(true);
      clockA += 1;
      expect(await allowed(a, id)).toBe(true);
      let allowedB = 0;
      while (await allowed(b!, id)) allowedB++;
      expect(allowedB).toBe(slow.capacity - 3);
      expect(await allowed(c!, id)).toBe(false);
      // a stays idle past its lease's life: its next sweep gives the token back. (c, having found
      // the bucket empty, would not ask again before its next token is due: with this refill, never.)
      clockA += LEASE_MS;
      await eventually(
        async () => (await testDb().query(`SELECT tokens FROM api_key_rate_buckets WHERE key_id = $1`, [id])).rows[0].tokens >= 1,
        5_000,
      );
      expect(await allowed(d!, id)).toBe(true);
      expect(await allowed(d!, id)).toBe(false);
    } finally {
      await Promise.all([a, b!, c!, d!].map((x) => x.close()));
    }
  });
});

describe('one rate limit across real processes', () => {
  it('several processes, each with its own limiter, let through no more than one limit', async () => {
    const { id } = await newKey();
    const limit = { capacity: 30, perSecond: 20 };
    const children = Array.from({ length: PROCESSES }, () =>
      startChild({ KEY_ID: id, CAPACITY: limit.capacity, PER_SECOND: limit.perSecond, DURATION_MS: 2_000, CONCURRENCY: 4 }),
    );
    await Promise.all(children.map((c) => c.ready));
    const startAt = Date.now() + 200;
    for (const c of children) c.child.send(startAt);
    const results = await Promise.all(children.map((c) => c.result));
    const allowed = results.reduce((n, r) => n + r.allowed, 0);
    const elapsedSeconds = (Math.max(...results.map((r) => r.endedAt)) - startAt) / 1000;
    const bound = limit.capacity + limit.perSecond * elapsedSeconds;
    expect(allowed).toBeLessThanOrEqual(bound);
    expect(allowed).toBeGreaterThanOrEqual(0.6 * bound);
    // Each was refused at some point: none got a limit of its own.
    for (const r of results) expect(r.refused).toBeGreaterThan(0);
  }, 60_000);
});

type ChildResult = { allowed: number; refused: number; endedAt: number };

/** test/support/rate-limit-process-main.ts in a child process: `ready` once it can start, `result` at the end. */
function startChild(vars: Record<string, string | number>) {
  const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'support', 'rate-limit-process-main.ts');
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: inject('databaseUrl'), LOG_LEVEL: 'warn' };
  for (const [k, v] of Object.entries(vars)) env[k] = String(v);
  const child = fork(entry, [], { env, execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const messages: unknown[] = [];
  const waiters: (() => void)[] = [];
  child.on('message', (m) => {
    messages.push(m);
    waiters.splice(0).forEach((w) => w());
  });
  const nth = (n: number) =>
    new Promise<unknown>((resolve, reject) => {
      const check = () => (messages.length > n ? resolve(messages[n]) : waiters.push(check));
      child.once('exit', (code) => reject(new Error(`rate limit child exited (${code})`)));
      check();
    });
  return { child, ready: nth(0), result: nth(1) as Promise<ChildResult> };
}

describe('the lease statement', () => {
  it('computes the refill and the grant as src/core/rate-lease.ts does', async () => {
    const db = testDb();
    const { id } = await newKey();
    const first = await leaseRateTokens(db, { keyId: id, want: 5, capacity: 100, perSecond: 20 });
    expect(first).toEqual({ granted: 5, level: 95 });
    for (const [tokens, agoMs, want] of [
      [0, 100, 12],
      [3.5, 0, 12],
      [0.2, 10, 3],
      [90, 10_000, 12],
    ] as const) {
      await db.query(`UPDATE api_key_rate_buckets SET tokens = $2, updated_at = now() - make_interval(secs => $3) WHERE key_id = $1`, [
        id,
        tokens,
        agoMs / 1000,
      ]);
      const { granted, level } = await leaseRateTokens(db, { keyId: id, want, capacity: 100, perSecond: 20 });
      const expected = bucketLevel(tokens, agoMs, 100, 20);
      // The statement runs a few ms after the UPDATE: that much more refill.
      expect(granted).toBe(grantOf(expected, want));
      expect(level + granted).toBeGreaterThanOrEqual(expected);
      expect(level + granted).toBeLessThan(expected + 20 * 0.5);
    }
  });

  it('concurrent leases from many connections never take more than capacity + refill × elapsed', async () => {
    const pool = createPool(inject('databaseUrl'), 10);
    try {
      const { id } = await newKey();
      const limit = { capacity: 30, perSecond: 50 };
      const started = performance.now();
      let granted = 0;
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          for (let i = 0; i < 30; i++) {
            const lease = await leaseRateTokens(pool, { keyId: id, want: 3, ...limit });
            granted += lease.granted;
          }
        }),
      );
      const elapsedSeconds = (performance.now() - started) / 1000;
      expect(granted).toBeLessThanOrEqual(limit.capacity + limit.perSecond * elapsedSeconds);
      expect(granted).toBeGreaterThanOrEqual(limit.capacity);
    } finally {
      await pool.end();
    }
  });
});

describe('when Postgres cannot be reached', () => {
  it('a publish fails as it would have without the limiter: 503 with Retry-After', async () => {
    const dead = createPool('postgres://nobody@127.0.0.1:1/none', 2);
    const { key } = await newKey();
    // The key is known from memory (its process's key cache); every lease and the publish itself meet the dead pool.
    expect((await get(apis[0]!, key)).status).toBe(200);
    const server = createApp({ ...apis[0]!.deps, db: dead }).listen(0, '127.0.0.1');
    try {
      await new Promise((r) => server.once('listening', r));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/events`;
      const after_data = { id: 'dem_1', version: 1, status: 'open', contact_id: 'c', title: 'Demand' };
      const data = { entity_type: 'demand', entity_id: 'dem_1', before_data: null, after_data, actor_user_id: null };
      const publish = () =>
        fetch(url, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'crm.demand.created', data }),
        });
      for (let i = 0; i < 3; i++) {
        const res = await publish();
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({ error: { code: 'service_unavailable', message: expect.any(String) } });
        expect(res.headers.get('retry-after')).toBe(String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      }
    } finally {
      server.close();
      server.closeAllConnections();
      await dead.end();
    }
  });

  it('limits per process without waiting, so the request reaches its handler and fails as it would have', async () => {
    const dead = createPool('postgres://nobody@127.0.0.1:1/none', 2);
    try {
      const limiter = createRateLimiter(dead, { capacity: 3, refillPerSecond: 1 });
      const verdicts = [];
      verdicts.push(await limiter.take('00000000-0000-0000-0000-000000000001'));
      // No request waits on Postgres once it is known unreachable (a lease in the background looks
      // whether it is back): each verdict comes before the event loop turns, so no I/O was awaited.
      const turned = Symbol('the event loop turned');
      for (let i = 0; i < 3; i++) {
        const verdict = await Promise.race([
          limiter.take('00000000-0000-0000-0000-000000000001'),
          new Promise<typeof turned>((resolve) => setImmediate(() => resolve(turned))),
        ]);
        expect(verdict).not.toBe(turned);
        if (verdict !== turned) verdicts.push(verdict);
      }
      expect(verdicts.map((v) => v.allowed)).toEqual([true, true, true, false]);
      expect(verdicts[3]).toEqual({ allowed: false, retryAfterSeconds: 1 });
      await limiter.close();
    } finally {
      await dead.end();
    }
  });
});
