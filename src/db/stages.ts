/** Funnel stages of an Account (configuration: creating, listing or deleting them emits nothing by itself). */
import { DomainError } from '../core/domain-error.js';
import type { PageKey } from '../core/paging.js';
import { inPageOrder, keyset, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export interface StageRow {
  id: string;
  account_id: string;
  key: string;
  label: string;
  position: number;
  created_at: Date;
  page_key: PageKey;
}

/** The stage as events and contacts show it. */
export interface StageRef {
  id: string;
  key: string;
  label: string;
}

const COLUMNS = `*, ${pageKeyColumn()}`;

/**
 * Appends a stage at the end of the funnel. The Account's row lock orders concurrent creations,
 * so positions follow creation order and the list (by created_at) is the funnel's order.
 */
export async function insertStage(db: Queryable, s: { accountId: string; key: string; label: string }): Promise<StageRow> {
  // NO KEY UPDATE: serializes stage creations without blocking the Account's other writers (their foreign keys).
  await db.query(`SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE`, [s.accountId]);
  const { rows } = await db.query<StageRow>(
    `INSERT INTO stages (account_id, key, label, position)
     SELECT $1, $2, $3, coalesce(max(position), 0) + 1 FROM stages WHERE account_id = $1
     ON CONFLICT (account_id, key) DO NOTHING RETURNING ${COLUMNS}`,
    [s.accountId, s.key, s.label],
  );
  if (!rows[0]) throw new DomainError(409, 'stage_exists', `a stage with key "${s.key}" already exists`);
  return rows[0];
}

export async function listStages(
  db: Queryable,
  accountId: string,
  page: { limit: number; after?: PageKey; before?: PageKey },
): Promise<StageRow[]> {
  const params: unknown[] = [accountId, page.limit + 1];
  const ks = keyset(page, params);
  const { rows } = await db.query<StageRow>(
    `SELECT ${COLUMNS} FROM stages WHERE account_id = $1 ${ks.clause ? `AND ${ks.clause}` : ''} ORDER BY created_at ${ks.order}, id ${ks.order} LIMIT $2`,
    params,
  );
  return inPageOrder(rows, ks);
}

/**
 * The Account's stage with that key. `share` keeps it from being deleted until the caller's
 * transaction ends (a contact moving onto it must not land on a stage that is going away).
 */
export async function findStageByKey(
  db: Queryable,
  accountId: string,
  key: string,
  opts: { share?: boolean } = {},
): Promise<StageRow | undefined> {
  const { rows } = await db.query<StageRow>(
    `SELECT ${COLUMNS} FROM stages WHERE account_id = $1 AND key = $2${opts.share ? ' FOR KEY SHARE' : ''}`,
    [accountId, key],
  );
  return rows[0];
}

/** A stage's place in the funnel; undefined when it is gone. */
export async function stagePosition(db: Queryable, id: string): Promise<number | undefined> {
  const { rows } = await db.query<{ position: number }>(`SELECT position FROM stages WHERE id = $1`, [id]);
  return rows[0]?.position;
}

/** Locks the stage for its deletion; undefined when it is not the Account's. */
export async function lockStage(db: Queryable, accountId: string, id: string): Promise<StageRow | undefined> {
  const { rows } = await db.query<StageRow>(`SELECT ${COLUMNS} FROM stages WHERE id = $1 AND account_id = $2 FOR UPDATE`, [id, accountId]);
  return rows[0];
}

/** Contacts still on the stage, whatever their environment (their channel account's). */
export async function contactsOnStage(db: Queryable, stageId: string): Promise<{ id: string; environment: 'live' | 'sandbox' }[]> {
  const { rows } = await db.query<{ id: string; environment: 'live' | 'sandbox' }>(
    `SELECT c.id, ca.environment FROM contacts c JOIN channel_accounts ca ON ca.id = c.channel_account_id
     WHERE c.stage_id = $1 ORDER BY c.id`,
    [stageId],
  );
  return rows;
}

/** Removes the stage; refused by the foreign key while a contact is still on it. */
export async function deleteStage(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM stages WHERE id = $1`, [id]);
}
