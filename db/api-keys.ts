import pg from 'pg';
import { generateApiKey, type Environment, type Scope } from '../security/api-key.js';
import type { Queryable } from './pool.js';

export interface ApiKeyRecord {
  id: string;
  account_id: string;
  environment: Environment;
  scopes: Scope[];
  prefix: string;
  created_at: Date;
}

export async function insertApiKey(
  db: Queryable,
  k: { accountId: string; environment: Environment; scopes: Scope[]; hash: Buffer; prefix: string },
): Promise<ApiKeyRecord> {
  const { rows } = await db.query<ApiKeyRecord>(
    `INSERT INTO api_keys (account_id, environment, scopes, key_hash, prefix) VALUES ($1, $2, $3, $4, $5)
     RETURNING id, account_id, environment, scopes, prefix, created_at`,
    [k.accountId, k.environment, k.scopes, k.hash, k.prefix],
  );
  return rows[0]!;
}

/** The live key whose SHA-256 is `hash`: an index seek on a hash, never a comparison of key material. */
export async function findApiKeyByHash(db: Queryable, hash: Buffer): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRecord>(
    `SELECT id, account_id, environment, scopes, prefix, created_at FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
    [hash],
  );
  return rows[0];
}

/** Creates a key and returns it in clear: the only moment it exists outside the caller's hands. */
export async function issueApiKey(
  db: Queryable,
  k: { accountId: string; environment: Environment; scopes: Scope[] },
): Promise<ApiKeyRecord & { key: string }> {
  const { key, hash, prefix } = generateApiKey(k.environment);
  const record = await insertApiKey(db, { ...k, hash, prefix });
  return { ...record, key };
}

/** Revokes a key: refused from now on. Returns its hash (what caches are keyed by), or undefined when no live key has that id. */
export async function revokeApiKey(db: Queryable, id: string): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ key_hash: Buffer }>(
    `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING key_hash`,
    [id],
  );
  return rows[0]?.key_hash;
}

/** The channel on which migration 0007's triggers announce every committed change to api_keys. */
const API_KEY_CHANGES = 'api_key_changes';

/**
 * Listens, with a connection of its own, for committed changes to api_keys: `onChange` gets the
 * changed key's SHA-256 in hex, or '*' when the table was truncated. Resolves once listening;
 * `onLost` hears once that the connection is gone (changes from then on are not heard).
 */
export async function listenApiKeyChanges(
  databaseUrl: string,
  onChange: (hashHex: string) => void,
  onLost: (err: Error) => void,
): Promise<{ close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
  let closing = false;
  const lost = (err: Error) => {
    if (closing) return;
    closing = true;
    client.end().catch(() => {});
    onLost(err);
  };
  client.on('error', lost);
  client.on('end', () => lost(new Error('api key notification connection ended')));
  client.on('notification', (n) => {
    if (n.channel === API_KEY_CHANGES) onChange(n.payload ?? '*');
  });
  try {
    await client.connect();
    await client.query(`LISTEN ${API_KEY_CHANGES}`);
  } catch (err) {
    closing = true;
    await client.end().catch(() => {});
    throw err;
  }
  return {
    async close() {
      if (closing) return;
      closing = true;
      await client.end();
    },
  };
}
