/**
 * Contacts as the API reads and edits them. A contact has no environment of its own: it is its
 * channel account's, so every query here joins channel_accounts and filters by the key's
 * environment as well as its Account.
 */
import type { PageKey } from '../core/paging.js';
import { inPageOrder, keyset, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export interface Scope {
  accountId: string;
  environment: 'live' | 'sandbox';
}

export interface ContactRow {
  id: string;
  account_id: string;
  channel_account_id: string;
  channel: 'chatapp' | 'photoapp';
  environment: 'live' | 'sandbox';
  channel_display: string;
  phone_number_id: string | null;
  customer_id: string | null;
  wa_id: string;
  user_id: string | null;
  username: string | null;
  phone: string | null;
  profile_name: string | null;
  metadata: Record<string, unknown>;
  stage_id: string | null;
  stage_key: string | null;
  stage_label: string | null;
  created_at: Date;
  updated_at: Date;
  page_key: PageKey;
}

const SELECT = `SELECT c.*, ca.channel, ca.environment, ca.display AS channel_display, ca.phone_number_id, ca.customer_id,
    s.key AS stage_key, s.label AS stage_label, ${pageKeyColumn('c')}
  FROM contacts c
  JOIN channel_accounts ca ON ca.id = c.channel_account_id
  LEFT JOIN stages s ON s.id = c.stage_id`;

/**
 * The contact when it is the Account's and in the key's environment. `forUpdate` locks its row
 * first and reads it after: a locking read that waited re-checks only the locked row, and its
 * join to stages would still show the stage of the older version.
 */
export async function getContact(
  db: Queryable,
  scope: Scope,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<ContactRow | undefined> {
  if (opts.forUpdate) await db.query(`SELECT 1 FROM contacts WHERE id = $1 AND account_id = $2 FOR UPDATE`, [id, scope.accountId]);
  const { rows } = await db.query<ContactRow>(`${SELECT} WHERE c.id = $1 AND c.account_id = $2 AND ca.environment = $3`, [
    id,
    scope.accountId,
    scope.environment,
  ]);
  return rows[0];
}

export interface ContactFilter {
  channelAccountId?: string;
  stageKey?: string;
  waId?: string;
}

/** Newest first, keyset-paged like the delivery list. */
export async function listContacts(
  db: Queryable,
  scope: Scope,
  filter: ContactFilter,
  page: { limit: number; after?: PageKey; before?: PageKey },
): Promise<ContactRow[]> {
  const params: unknown[] = [scope.accountId, scope.environment, page.limit + 1];
  const where = ['c.account_id = $1', 'ca.environment = $2'];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (filter.channelAccountId) add('c.channel_account_id = ?', filter.channelAccountId);
  if (filter.stageKey) add('s.key = ?', filter.stageKey);
  if (filter.waId) add('c.wa_id = ?', filter.waId);
  const ks = keyset(page, params, 'c.', 'newest-first');
  if (ks.clause) where.push(ks.clause);
  const { rows } = await db.query<ContactRow>(
    `${SELECT} WHERE ${where.join(' AND ')} ORDER BY c.created_at ${ks.order}, c.id ${ks.order} LIMIT $3`,
    params,
  );
  return inPageOrder(rows, ks);
}

export interface ContactChanges {
  profileName?: string | null;
  metadata?: Record<string, unknown>;
  /** null: out of the funnel. */
  stageId?: string | null;
}

/** Writes the given fields; updated_at moves by trigger when something really changed. */
export async function updateContact(db: Queryable, id: string, c: ContactChanges): Promise<void> {
  const sets: string[] = [];
  const params: unknown[] = [id];
  const set = (column: string, value: unknown) => {
    params.push(value);
    sets.push(`${column} = $${params.length}`);
  };
  if (c.profileName !== undefined) set('profile_name', c.profileName);
  if (c.metadata !== undefined) set('metadata', JSON.stringify(c.metadata));
  if (c.stageId !== undefined) set('stage_id', c.stageId);
  if (sets.length === 0) return;
  await db.query(`UPDATE contacts SET ${sets.join(', ')} WHERE id = $1`, params);
}
