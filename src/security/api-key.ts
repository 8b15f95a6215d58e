import crypto from 'node:crypto';

export const SCOPES = [
  'webhooks:read',
  'webhooks:write',
  'events:read',
  'events:write',
  'contacts:read',
  'contacts:write',
  'messages:read',
  'messages:write',
  'account:read',
  // Creating setup links and syncing templates (a write of the Account's configuration, as webhooks:write is for endpoints).
  'account:write',
] as const;
export type Scope = (typeof SCOPES)[number];
export type Environment = 'live' | 'sandbox';

/** A new key: `wh_<env>_<32 random bytes base64url>`. Only its SHA-256 is stored. */
export function generateApiKey(environment: Environment): { key: string; hash: Buffer; prefix: string } {
  const key = `wh_${environment}_${crypto.randomBytes(32).toString('base64url')}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 12) };
}

/**
 * Keys carry 256 bits of entropy, so an unsalted SHA-256 is a safe lookup handle: the
 * database finds the row by hash, and the caller never compares key material itself.
 */
export function hashApiKey(key: string): Buffer {
  // One-shot: no Hash object per request (the API hashes the key of every request).
  return crypto.hash('sha256', key, 'buffer');
}
