/**
 * API keys looked up recently, so a busy key costs one Postgres lookup per TTL instead of one
 * per request (the lookup was a round trip, its parse and its promise chain on every request).
 *
 * Revocation stays immediate:
 * - Migration 0007's triggers announce every committed change to `api_keys` (a revocation, new
 *   scopes, the Account deleted, from any process or by hand in SQL) on a channel this process
 *   listens to; the key is forgotten when the notification arrives, milliseconds after the commit.
 * - The cache is used only while that connection listens. Before it does, and while it is lost,
 *   every request is looked up in Postgres as before; the cache is emptied when it goes down and
 *   again when it comes back, so no change made meanwhile can be missed.
 * - `revoke` in this process forgets the key before it resolves.
 * - An entry is used for at most `ttlMs` (API_KEY_CACHE_TTL_MS, 10 s) after its lookup whatever
 *   happens: the bound for a change that announces nothing (triggers disabled) or a listening
 *   connection that died without the network telling it.
 *
 * Only keys that exist are kept: an unknown key is looked up every time, so a key created a
 * moment ago works at once and guessed keys cannot fill the cache. At most `maxEntries`, the
 * oldest dropped first. Concurrent requests with the same uncached key share one lookup.
 */
import { API_KEY_CHANGES, findApiKeyByHash, revokeApiKey, type ApiKeyRecord } from '../db/api-keys.js';
import { keepListening } from '../db/notification-listener.js';
import type { Db } from '../db/pool.js';

export const API_KEY_CACHE_TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;

export interface ApiKeyCache {
  /** The live key whose SHA-256 is `hash`, as findApiKeyByHash answers it. */
  find(hash: Buffer): Promise<ApiKeyRecord | undefined>;
  /** Revokes a key in Postgres and forgets it here; false when no live key has that id. */
  revoke(keyId: string): Promise<boolean>;
  /** True while changes are heard, so the cache is in use. */
  readonly listening: boolean;
  /** Resolves once listening, or after the first failed try (it keeps trying on its own). */
  ready: Promise<void>;
  close(): Promise<void>;
}

export function createApiKeyCache(
  db: Db,
  opts: {
    /** Where to listen for changes; the pool's own connection string when unset. */
    databaseUrl?: string;
    ttlMs?: number;
    maxEntries?: number;
    now?: () => number;
  } = {},
): ApiKeyCache {
  const ttlMs = opts.ttlMs ?? API_KEY_CACHE_TTL_MS;
  const maxEntries = opts.maxEntries ?? MAX_ENTRIES;
  const now = opts.now ?? Date.now;
  const databaseUrl = opts.databaseUrl ?? db.options.connectionString;

  const entries = new Map<string, { record: ApiKeyRecord; expiresAt: number }>();
  const pending = new Map<string, { lookup?: Promise<ApiKeyRecord | undefined> }>();
  let listening = false;
  // Bumped by every invalidation: a lookup that started before one keeps its answer to itself.
  let generation = 0;

  function forget(hashHex: string) {
    generation++;
    if (hashHex === '*') {
      entries.clear();
      pending.clear();
    } else {
      entries.delete(hashHex);
      pending.delete(hashHex);
    }
  }

  async function find(hash: Buffer): Promise<ApiKeyRecord | undefined> {
    if (!listening || ttlMs <= 0) return findApiKeyByHash(db, hash);
    const hex = hash.toString('hex');
    const hit = entries.get(hex);
    if (hit) {
      if (hit.expiresAt > now()) return hit.record;
      entries.delete(hex);
    }
    const shared = pending.get(hex)?.lookup;
    if (shared) return shared;
    const startedIn = generation;
    const slot: { lookup?: Promise<ApiKeyRecord | undefined> } = {};
    slot.lookup = (async () => {
      try {
        const record = await findApiKeyByHash(db, hash);
        if (record && listening && startedIn === generation) {
          // Shared by the requests that use it until it expires: nobody may change it.
          Object.freeze(record.scopes);
          Object.freeze(record);
          if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
          entries.set(hex, { record, expiresAt: now() + ttlMs });
        }
        return record;
      } finally {
        if (pending.get(hex) === slot) pending.delete(hex);
      }
    })();
    pending.set(hex, slot);
    return slot.lookup;
  }

  // Without a connection string there is nothing to listen with: every key is looked up.
  const listener =
    databaseUrl && ttlMs > 0
      ? listenForChanges(databaseUrl, forget, (up) => {
          listening = up;
        })
      : null;

  return {
    find,
    async revoke(keyId) {
      const hash = await revokeApiKey(db, keyId);
      if (hash) forget(hash.toString('hex'));
      return hash !== undefined;
    },
    get listening() {
      return listening;
    },
    ready: listener?.ready ?? Promise.resolve(),
    async close() {
      listening = false;
      forget('*');
      await listener?.close();
    },
  };
}

/** Hears API key changes; while not hearing them (at start, after a lost connection) every key is looked up. */
function listenForChanges(databaseUrl: string, forget: (hashHex: string) => void, setListening: (up: boolean) => void) {
  return keepListening({
    databaseUrl,
    channel: API_KEY_CHANGES,
    what: 'API key changes',
    onNotification: (hashHex) => forget(hashHex ?? '*'),
    // Changes made while nobody listened were not heard: start from nothing.
    onUp: () => {
      forget('*');
      setListening(true);
    },
    // Until listening again, every key is looked up.
    onDown: () => {
      setListening(false);
      forget('*');
    },
  });
}
