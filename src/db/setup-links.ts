import type { AccountId } from '../core/ids.js';
/** Setup links: a Customer's way into the provider's embedded signup (DECISIONS "Setup links"). */
import type { PageKey } from '../core/paging.js';
import type { Environment } from './events.js';
import { inPageOrder, keyset, type Page, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export type ConnectionMode = 'dedicated' | 'coexistence';
/** What a link connects: a chatapp number (the embedded signup) or a photoapp account (the provider's login). */
export type SetupLinkChannel = 'chatapp' | 'photoapp';

export interface SetupLinkRow {
  id: string;
  account_id: AccountId;
  customer_id: string;
  environment: Environment;
  channel: SetupLinkChannel;
  connection_mode: ConnectionMode;
  expires_at: Date;
  completed_at: Date | null;
  created_at: Date;
  page_key: PageKey;
}

const COLUMNS = `id, account_id, customer_id, environment, channel, connection_mode, expires_at, completed_at, created_at,
  ${pageKeyColumn()}`;

export async function insertSetupLink(
  db: Queryable,
  l: {
    accountId: string;
    customerId: string;
    environment: Environment;
    channel: SetupLinkChannel;
    connectionMode: ConnectionMode;
    tokenHash: Buffer;
    expiresAt: Date;
  },
): Promise<SetupLinkRow> {
  const { rows } = await db.query<SetupLinkRow>(
    `INSERT INTO setup_links (account_id, customer_id, environment, channel, connection_mode, token_hash, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
    [l.accountId, l.customerId, l.environment, l.channel, l.connectionMode, l.tokenHash, l.expiresAt],
  );
  return rows[0]!;
}

/** The links of one Customer made with keys of one environment: a sandbox key never sees live links. */
export async function listSetupLinks(
  db: Queryable,
  f: { accountId: string; customerId: string; environment: Environment },
  page: Page,
): Promise<SetupLinkRow[]> {
  const params: unknown[] = [f.accountId, f.customerId, f.environment, page.limit + 1];
  const ks = keyset(page, params);
  const { rows } = await db.query<SetupLinkRow>(
    `SELECT ${COLUMNS} FROM setup_links WHERE account_id = $1 AND customer_id = $2 AND environment = $3 ${ks.clause ? `AND ${ks.clause}` : ''}
     ORDER BY created_at ${ks.order}, id ${ks.order} LIMIT $4`,
    params,
  );
  return inPageOrder(rows, ks);
}

/** The link a token opens, whoever's it is: the token is the credential of the public signup route. */
export async function findSetupLinkByTokenHash(db: Queryable, tokenHash: Buffer): Promise<SetupLinkRow | undefined> {
  const { rows } = await db.query<SetupLinkRow>(`SELECT ${COLUMNS} FROM setup_links WHERE token_hash = $1`, [tokenHash]);
  return rows[0];
}

/** The first completion is kept; a repeated one leaves it. */
export async function markSetupLinkCompleted(db: Queryable, id: string, at: Date): Promise<void> {
  await db.query(`UPDATE setup_links SET completed_at = coalesce(completed_at, $2) WHERE id = $1`, [id, at]);
}
