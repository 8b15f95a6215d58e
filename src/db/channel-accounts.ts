/**
 * Channel accounts as the API shows them, with what the provider last said about them: number
 * quality, tier and status (re-read on quality updates) and the photoapp token status.
 */
import type { PageKey } from '../core/paging.js';
import type { TokenStatus } from '../core/token-status.js';
import type { ChannelAccount } from './directory.js';
import { inPageOrder, keyset, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export interface ChannelAccountRow extends ChannelAccount {
  quality_rating: string | null;
  messaging_limit_tier: string | null;
  number_status: string | null;
  numbers_read_at: Date | null;
  token_status: TokenStatus | null;
  token_expires_at: Date | null;
  token_checked_at: Date | null;
  page_key: PageKey;
}

const COLUMNS = `*, ${pageKeyColumn()}`;

/** A channel account only when it belongs to the Account AND the environment of the key (else: not found). */
export async function getChannelAccountFor(
  db: Queryable,
  principal: { accountId: string; environment: string },
  id: string,
): Promise<ChannelAccountRow | undefined> {
  const { rows } = await db.query<ChannelAccountRow>(
    `SELECT ${COLUMNS} FROM channel_accounts WHERE id = $1 AND account_id = $2 AND environment = $3`,
    [id, principal.accountId, principal.environment],
  );
  return rows[0];
}

export async function listChannelAccounts(
  db: Queryable,
  principal: { accountId: string; environment: string },
  page: { limit: number; after?: PageKey; before?: PageKey; channel?: string; customerId?: string },
): Promise<ChannelAccountRow[]> {
  const params: unknown[] = [principal.accountId, principal.environment, page.limit + 1, page.channel ?? null, page.customerId ?? null];
  const ks = keyset(page, params);
  const { rows } = await db.query<ChannelAccountRow>(
    `SELECT ${COLUMNS} FROM channel_accounts
     WHERE account_id = $1 AND environment = $2 AND ($4::text IS NULL OR channel = $4) AND ($5::uuid IS NULL OR customer_id = $5)
       ${ks.clause ? `AND ${ks.clause}` : ''}
     ORDER BY created_at ${ks.order}, id ${ks.order} LIMIT $3`,
    params,
  );
  return inPageOrder(rows, ks);
}

export async function recordTokenStatus(db: Queryable, id: string, status: TokenStatus, expiresAt: Date | null): Promise<void> {
  await db.query(`UPDATE channel_accounts SET token_status = $2, token_expires_at = $3, token_checked_at = now() WHERE id = $1`, [
    id,
    status,
    expiresAt,
  ]);
}

export interface NumberHealth {
  id: string;
  quality_rating?: string | null;
  messaging_limit_tier?: string | null;
  status?: string | null;
}

/** Updates every chatapp channel account of the business account from a re-read of its numbers, in one statement. */
export async function recordNumberHealth(db: Queryable, wabaId: string, numbers: NumberHealth[]): Promise<number> {
  if (numbers.length === 0) return 0;
  const { rowCount } = await db.query(
    `UPDATE channel_accounts ca SET quality_rating = n.quality_rating, messaging_limit_tier = n.messaging_limit_tier,
       number_status = n.status, numbers_read_at = now()
     FROM jsonb_to_recordset($2::jsonb) AS n(id text, quality_rating text, messaging_limit_tier text, status text)
     WHERE ca.channel = 'chatapp' AND ca.waba_id = $1 AND ca.phone_number_id = n.id`,
    [
      wabaId,
      JSON.stringify(
        numbers.map((n) => ({
          id: n.id,
          quality_rating: n.quality_rating ?? null,
          messaging_limit_tier: n.messaging_limit_tier ?? null,
          status: n.status ?? null,
        })),
      ),
    ],
  );
  return rowCount ?? 0;
}

/** Every connected chatapp number (development: the local provider keeps nothing across restarts, so it is told these again). */
export async function listChatappNumbers(db: Queryable): Promise<Array<{ waba_id: string; phone_number_id: string; display: string }>> {
  const { rows } = await db.query<{ waba_id: string; phone_number_id: string; display: string }>(
    `SELECT waba_id, phone_number_id, display FROM channel_accounts
     WHERE channel = 'chatapp' AND waba_id IS NOT NULL AND phone_number_id IS NOT NULL ORDER BY created_at`,
  );
  return rows;
}
