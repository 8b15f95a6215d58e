import { generateApiKey, type Environment, type Scope } from '../security/api-key.js';
import type { Queryable } from './pool.js';
import { merged } from '../core/merged.js';

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
  const record = await insertApiKey(db, merged(k, { hash, prefix }));
  return merged(record, { key });
}

/** Revokes a key: refused from now on. Returns its hash (what caches are keyed by), or undefined when no live key has that id. */
export async function revokeApiKey(db: Queryable, id: string): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ key_hash: Buffer }>(
    `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING key_hash`,
    [id],
  );
  return rows[0]?.key_hash;
}

/**
 * The channel on which migration 0007's triggers announce every committed change to api_keys:
 * the changed key's SHA-256 in hex, or '*' when the table was truncated.
 */
export const API_KEY_CHANGES = 'api_key_changes';
