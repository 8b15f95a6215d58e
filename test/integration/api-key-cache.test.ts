/**
 * The API key cache (src/api/api-key-cache.ts) on real Postgres, through the real API: keys are
 * served from memory, yet a revocation is refused at once in this process, within the
 * notification's delay from any other connection, and within the TTL when nothing is announced.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject } from 'vitest';
import { createApiKeyCache } from '../../src/api/api-key-cache.js';
import { insertApiKey, issueApiKey } from '../../src/db/api-keys.js';
import { createAccount } from '../../src/db/directory.js';
import { generateApiKey, hashApiKey, SCOPES } from '../../src/security/api-key.js';
import { createTenant, eventually, startTestApi, testDb, type TestApi } from '../support/harness.js';

/** The cache's clock: only the TTL tests move it. */
let clock = 1_000_000;
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ apiKeyCache: { now: () => clock } });
});
afterAll(() => api.close());

const TTL_MS = 10_000;
const status = async (key: string) => (await api.request('GET', '/api/v1/events', { key })).status;

/** Runs SQL on a connection of its own, as another process would. `quiet`: with triggers off, so nothing is announced. */
async function elsewhere(sql: string, params: unknown[], opts: { quiet?: boolean } = {}): Promise<void> {
  const client = new pg.Client({ connectionString: inject('databaseUrl') });
  await client.connect();
  try {
    if (opts.quiet) await client.query(`SET session_replication_role = replica`);
    await client.query(sql, params);
  } finally {
    await client.end();
  }
}

async function newKey() {
  const tenant = await createTenant();
  const issued = await issueApiKey(testDb(), { accountId: tenant.accountId, environment: 'live', scopes: [...SCOPES] });
  expect(await status(issued.key)).toBe(200); // looked up once: cached from here on
  return { ...issued, accountId: tenant.accountId };
}

describe('API key cache', () => {
  it('serves a used key from memory: a change nobody announces is seen only after the TTL', async () => {
    const k = await newKey();
    await elsewhere(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [k.id], { quiet: true });
    expect(await status(k.key)).toBe(200);
    clock += TTL_MS - 1;
    expect(await status(k.key)).toBe(200);
    clock += 1;
    expect(await status(k.key)).toBe(401);
  });

  it('refuses a key revoked in this process at once', async () => {
    const k = await newKey();
    expect(await api.deps.apiKeys!.revoke(k.id)).toBe(true);
    expect(await status(k.key)).toBe(401);
    expect(await api.deps.apiKeys!.revoke(k.id)).toBe(false);
  });

  it('does not keep the answer of a lookup that a revocation in this process overtook', async () => {
    const k = await newKey();
    // The lookup reads the key while it is live, and answers only after the revocation.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const db = testDb();
    const gated = Object.create(db) as typeof db;
    gated.query = (async (...args: Parameters<typeof db.query>) => {
      const result = await (db.query as (...a: unknown[]) => Promise<unknown>)(...args);
      if (String(args[0]).includes('key_hash = $1')) await gate;
      return result;
    }) as typeof db.query;
    const cache = createApiKeyCache(gated, { now: () => clock });
    await cache.ready;
    try {
      expect(cache.listening).toBe(true);
      const hash = hashApiKey(k.key);
      const before = cache.find(hash);
      await new Promise((r) => setTimeout(r, 50)); // the read is done, its answer held at the gate
      expect(await cache.revoke(k.id)).toBe(true);
      open();
      expect((await before)?.id).toBe(k.id); // it started before the revocation
      expect(await cache.find(hash)).toBeUndefined();
    } finally {
      await cache.close();
    }
  });

  it('refuses a key revoked by another connection without waiting for the TTL', async () => {
    const k = await newKey();
    await elsewhere(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [k.id]);
    // The clock stands still: only the notification can make this happen.
    await eventually(async () => (await status(k.key)) === 401, 5_000);
  });

  it('refuses the keys of an Account deleted by another connection, and follows a scope change', async () => {
    const k = await newKey();
    await elsewhere(`UPDATE api_keys SET scopes = $2 WHERE id = $1`, [k.id, ['webhooks:read']]);
    await eventually(async () => (await status(k.key)) === 403, 5_000);
    await elsewhere(`DELETE FROM accounts WHERE id = $1`, [k.accountId]);
    await eventually(async () => (await status(k.key)) === 401, 5_000);
  });

  it('looks every key up while it cannot hear changes, and uses the cache again once it can', async () => {
    const k = await newKey();
    const other = await newKey();
    await elsewhere(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN api_key_changes'`,
      [],
    );
    await eventually(async () => !api.deps.apiKeys!.listening, 5_000);
    // Unannounced, and refused at once: nothing is served from memory while deaf.
    await elsewhere(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [k.id], { quiet: true });
    expect(await status(k.key)).toBe(401);
    await eventually(async () => api.deps.apiKeys!.listening, 10_000);
    expect(await status(other.key)).toBe(200);
    await elsewhere(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [other.id], { quiet: true });
    expect(await status(other.key)).toBe(200); // cached again
    clock += TTL_MS;
  });

  it('keeps no unknown key: a key that did not exist a moment ago works at once', async () => {
    const account = await createAccount(testDb(), { name: 'later', ownerEmail: 'o@example.com', plan: 'paid' });
    const { key, hash, prefix } = generateApiKey('live');
    expect(await status(key)).toBe(401);
    await insertApiKey(testDb(), { accountId: account.id, environment: 'live', scopes: [...SCOPES], hash, prefix });
    expect(await status(key)).toBe(200);
  });

  it('holds at most maxEntries keys, dropping the oldest', async () => {
    const cache = createApiKeyCache(testDb(), { maxEntries: 2, now: () => clock });
    await cache.ready;
    try {
      const keys = [await newKey(), await newKey(), await newKey()];
      for (const k of keys) expect((await cache.find(hashApiKey(k.key)))?.id).toBe(k.id);
      for (const k of keys) await elsewhere(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [k.id], { quiet: true });
      // The first was dropped for the third, so it is looked up again; the other two are still held.
      expect(await cache.find(hashApiKey(keys[0]!.key))).toBeUndefined();
      expect((await cache.find(hashApiKey(keys[1]!.key)))?.id).toBe(keys[1]!.id);
      expect((await cache.find(hashApiKey(keys[2]!.key)))?.id).toBe(keys[2]!.id);
    } finally {
      await cache.close();
    }
  });

  it('shares one lookup between concurrent requests with the same key', async () => {
    const k = await newKey();
    const db = testDb();
    const cache = createApiKeyCache(db, { now: () => clock });
    await cache.ready;
    const spy = vi.spyOn(db, 'query');
    try {
      const found = await Promise.all(Array.from({ length: 8 }, () => cache.find(hashApiKey(k.key))));
      expect(found.map((r) => r?.id)).toEqual(Array(8).fill(k.id));
      expect(spy).toHaveBeenCalledTimes(1);
      await cache.find(hashApiKey(k.key));
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
      await cache.close();
    }
  });
});
