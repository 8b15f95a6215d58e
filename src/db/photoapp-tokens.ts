/**
 * Photoapp accounts' own access tokens (SPEC 3.4): stored sealed by the secret box
 * (src/security/secret-box.ts) in channel_account_tokens, never selected with the account, so
 * no API answer or log line built from a channel account row can carry one.
 */
import type { TokenStatus } from '../core/token-status.js';
import type { ChannelAccount } from './directory.js';
import type { Environment } from './events.js';
import { inTransaction, type Db, type Queryable } from './pool.js';

export interface TokenVerdict {
  status: TokenStatus;
  expiresAt: Date | null;
}

/** The sealed token of a channel account, or undefined when it has none (never connected through a link). */
export async function getPhotoappToken(db: Queryable, channelAccountId: string): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ token_ciphertext: Buffer }>(
    `SELECT token_ciphertext FROM channel_account_tokens WHERE channel_account_id = $1`,
    [channelAccountId],
  );
  return rows[0]?.token_ciphertext;
}

/** A token as an authorization gave it (not renewed yet). */
async function putToken(db: Queryable, id: string, ciphertext: Buffer): Promise<void> {
  await db.query(
    `INSERT INTO channel_account_tokens (channel_account_id, token_ciphertext) VALUES ($1, $2)
     ON CONFLICT (channel_account_id) DO UPDATE SET token_ciphertext = EXCLUDED.token_ciphertext, renewed_at = NULL, updated_at = now()`,
    [id, ciphertext],
  );
}

/** Stores a token for an account, its status left to the next read (tests and tools; a setup link uses connectPhotoappAccount). */
export async function storePhotoappToken(db: Queryable, channelAccountId: string, ciphertext: Buffer): Promise<void> {
  await putToken(db, channelAccountId, ciphertext);
}

/**
 * The channel account of an authorized photoapp account, with its new token: created for the
 * link's Account, Customer and environment, or, when that Account and environment already has
 * it, reconnected (Customer and display refreshed, the token replaced). One held by another
 * Account or environment is left alone: undefined.
 */
export async function connectPhotoappAccount(
  db: Db,
  a: {
    accountId: string;
    customerId: string;
    environment: Environment;
    providerAccountId: string;
    display: string;
    ciphertext: Buffer;
    verdict: TokenVerdict;
  },
): Promise<{ account: ChannelAccount; reconnected: boolean } | undefined> {
  return inTransaction(db, async (tx) => {
    // No unique index on provider_account_id (older rows may repeat one): two completions of the same account queue here.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('photoapp:' || $1, 0))`, [a.providerAccountId]);
    const { rows: found } = await tx.query<ChannelAccount>(
      `SELECT * FROM channel_accounts WHERE channel = 'photoapp' AND provider_account_id = $1 ORDER BY created_at LIMIT 1`,
      [a.providerAccountId],
    );
    const existing = found[0];
    if (existing && (existing.account_id !== a.accountId || existing.environment !== a.environment)) return undefined;
    const { rows } = existing
      ? await tx.query<ChannelAccount>(`UPDATE channel_accounts SET customer_id = $2, display = $3 WHERE id = $1 RETURNING *`, [
          existing.id,
          a.customerId,
          a.display,
        ])
      : await tx.query<ChannelAccount>(
          `INSERT INTO channel_accounts (account_id, customer_id, channel, display, provider_account_id, environment)
           VALUES ($1, $2, 'photoapp', $3, $4, $5) RETURNING *`,
          [a.accountId, a.customerId, a.display, a.providerAccountId, a.environment],
        );
    const account = rows[0]!;
    await putToken(tx, account.id, a.ciphertext);
    await putTokenStatus(tx, account.id, a.verdict);
    return { account, reconnected: Boolean(existing) };
  });
}

/**
 * Replaces a token by its renewal, only while the stored one is still `renewed` (a reconnect
 * that came in between keeps its own). False when it was not replaced.
 */
export async function storeRenewedToken(
  db: Db,
  channelAccountId: string,
  renewed: Buffer,
  next: Buffer,
  verdict: TokenVerdict,
): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    const { rowCount } = await tx.query(
      `UPDATE channel_account_tokens SET token_ciphertext = $3, renewed_at = now(), updated_at = now()
       WHERE channel_account_id = $1 AND token_ciphertext = $2`,
      [channelAccountId, renewed, next],
    );
    if (!rowCount) return false;
    await putTokenStatus(tx, channelAccountId, verdict);
    return true;
  });
}

async function putTokenStatus(db: Queryable, id: string, verdict: TokenVerdict): Promise<void> {
  await db.query(`UPDATE channel_accounts SET token_status = $2, token_expires_at = $3, token_checked_at = now() WHERE id = $1`, [
    id,
    verdict.status,
    verdict.expiresAt,
  ]);
}

/**
 * Records what a read with `used` said, unless the token changed meanwhile (renewed or
 * reconnected): a verdict on a replaced token says nothing about the account.
 */
export async function recordTokenVerdict(db: Queryable, channelAccountId: string, used: Buffer, verdict: TokenVerdict): Promise<void> {
  await db.query(
    `UPDATE channel_accounts ca SET token_status = $3, token_expires_at = $4, token_checked_at = now()
     FROM channel_account_tokens t WHERE ca.id = $1 AND t.channel_account_id = ca.id AND t.token_ciphertext = $2`,
    [channelAccountId, used, verdict.status, verdict.expiresAt],
  );
}

export interface TokenToMaintain {
  id: string;
  provider_account_id: string;
  token_ciphertext: Buffer;
  token_status: TokenStatus | null;
  token_expires_at: Date | null;
  token_checked_at: Date | null;
}

/**
 * The photoapp tokens maintenance should look at: usable ones ending before `renewBefore` (an
 * expired, invalid or revoked one waits for a reconnect) and any last checked before
 * `checkedBefore` (or never), soonest to end first, at most `limit`; of one Account with `accountId`.
 */
export async function photoappTokensToMaintain(
  db: Queryable,
  f: { renewBefore: Date; checkedBefore: Date; limit: number; accountId?: string },
): Promise<TokenToMaintain[]> {
  const { rows } = await db.query<TokenToMaintain>(
    `SELECT ca.id, ca.provider_account_id, t.token_ciphertext, ca.token_status, ca.token_expires_at, ca.token_checked_at
     FROM channel_account_tokens t JOIN channel_accounts ca ON ca.id = t.channel_account_id
     WHERE ca.channel = 'photoapp' AND ca.provider_account_id IS NOT NULL AND ($4::uuid IS NULL OR ca.account_id = $4)
       AND ((ca.token_expires_at < $1 AND coalesce(ca.token_status, 'unknown') NOT IN ('expired', 'invalid', 'revoked'))
         OR ca.token_checked_at IS NULL OR ca.token_checked_at < $2)
     ORDER BY ca.token_expires_at ASC NULLS LAST, ca.id LIMIT $3`,
    [f.renewBefore, f.checkedBefore, f.limit, f.accountId ?? null],
  );
  return rows;
}
