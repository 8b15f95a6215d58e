/**
 * The shared per-key token buckets (migration 0017): a lease takes tokens in one statement, the
 * refill computed there by Postgres's clock (src/core/rate-lease.ts `bucketLevel` and `grantOf`, in SQL).
 */
import type { Queryable } from './pool.js';

// $3 capacity, $4 refill per second. `now()` is one instant for the whole statement; a lease that
// waited on the row lock can find `updated_at` after it, hence GREATEST: no refill is counted twice.
const LEVEL = `LEAST($3::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - b.updated_at)) * $4::float8)`;
// $2 the tokens asked for.
const grant = (level: string) => `LEAST($2::int, FLOOR(GREATEST(LEAST(${level}, 1), (${level}) / 2)))::int`;

const LEASE_SQL = `
  INSERT INTO api_key_rate_buckets AS b (key_id, tokens, last_grant, updated_at)
  VALUES ($1, $3::float8 - ${grant('$3::float8')}, ${grant('$3::float8')}, now())
  ON CONFLICT (key_id) DO UPDATE SET
    tokens = ${LEVEL} - ${grant(LEVEL)},
    last_grant = ${grant(LEVEL)},
    updated_at = GREATEST(b.updated_at, now())
  RETURNING last_grant AS granted, tokens AS level`;

/**
 * Takes up to `want` tokens from the key's bucket (created full on first use). `level` is what
 * is left after the grant: the Retry-After when nothing was granted.
 */
export async function leaseRateTokens(
  db: Queryable,
  l: { keyId: string; want: number; capacity: number; perSecond: number },
): Promise<{ granted: number; level: number }> {
  const { rows } = await db.query<{ granted: number; level: number }>({
    name: 'lease_rate_tokens',
    text: LEASE_SQL,
    values: [l.keyId, l.want, l.capacity, l.perSecond],
  });
  return rows[0]!;
}

/** Gives unspent leased tokens back, several keys in one statement. */
export async function returnRateTokens(db: Queryable, capacity: number, returns: Map<string, number>): Promise<void> {
  if (returns.size === 0) return;
  await db.query(
    `UPDATE api_key_rate_buckets b SET tokens = LEAST($3::float8, b.tokens + r.n)
     FROM unnest($1::uuid[], $2::float8[]) AS r (key_id, n) WHERE b.key_id = r.key_id`,
    [[...returns.keys()], [...returns.values()], capacity],
  );
}
