/** Consent records of contacts: an append-only history (src/crm/consents.ts decides what emits). */
import type { PageKey } from '../core/paging.js';
import { inPageOrder, keyset, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export type ConsentPurpose = 'utility' | 'marketing';
export type ConsentState = 'granted' | 'revoked';
export type ConsentOrigin = 'manual' | 'import' | 'api' | 'keyword' | 'conversation_button';

export interface ConsentRow {
  id: string;
  account_id: string;
  contact_id: string;
  channel: 'chatapp' | 'photoapp';
  purpose: ConsentPurpose;
  state: ConsentState;
  origin: ConsentOrigin;
  evidence: string;
  changed: boolean;
  created_at: Date;
  page_key: PageKey;
}

const COLUMNS = `*, ${pageKeyColumn()}`;

/** The newest record of the contact for that channel and purpose: its current state. */
export async function currentConsent(
  db: Queryable,
  contactId: string,
  channel: string,
  purpose: ConsentPurpose,
): Promise<ConsentRow | undefined> {
  const { rows } = await db.query<ConsentRow>(
    `SELECT ${COLUMNS} FROM consent_records WHERE contact_id = $1 AND channel = $2 AND purpose = $3
     ORDER BY created_at DESC, id DESC LIMIT 1`,
    [contactId, channel, purpose],
  );
  return rows[0];
}

/** created_at is the clock at insert (not the transaction's start): the contact's row lock orders the records. */
export async function insertConsent(
  db: Queryable,
  c: Pick<ConsentRow, 'account_id' | 'contact_id' | 'channel' | 'purpose' | 'state' | 'origin' | 'evidence' | 'changed'>,
): Promise<ConsentRow> {
  const { rows } = await db.query<ConsentRow>(
    `INSERT INTO consent_records (account_id, contact_id, channel, purpose, state, origin, evidence, changed)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [c.account_id, c.contact_id, c.channel, c.purpose, c.state, c.origin, c.evidence, c.changed],
  );
  return rows[0]!;
}

/** A contact's history, newest first, keyset-paged like the delivery list. */
export async function listConsents(
  db: Queryable,
  contactId: string,
  page: { limit: number; after?: PageKey; before?: PageKey },
): Promise<ConsentRow[]> {
  const params: unknown[] = [contactId, page.limit + 1];
  const ks = keyset(page, params, '', 'newest-first');
  const { rows } = await db.query<ConsentRow>(
    `SELECT ${COLUMNS} FROM consent_records WHERE contact_id = $1 ${ks.clause ? `AND ${ks.clause}` : ''} ORDER BY created_at ${ks.order}, id ${ks.order} LIMIT $2`,
    params,
  );
  return inPageOrder(rows, ks);
}
