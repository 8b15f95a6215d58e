import type { AccountId } from '../core/ids.js';
/** CRM events decided inside a write's transaction, waiting to be stored in the stream (src/crm/outbox.ts). */
import type { ChannelAccount } from './directory.js';
import type { Queryable } from './pool.js';

export interface CrmOutboxRow {
  seq: string;
  account_id: AccountId;
  contact_id: string;
  type: string;
  data: Record<string, unknown>;
  refs: Record<string, unknown>;
  occurred_at: Date;
  /** The contact's channel account: the event's origin and environment. */
  channel_account: Pick<ChannelAccount, 'id' | 'channel' | 'display' | 'customer_id' | 'environment'>;
}

export async function enqueueCrmEvent(
  tx: Queryable,
  e: { accountId: string; contactId: string; type: string; data: Record<string, unknown>; refs: Record<string, unknown>; occurredAt: Date },
): Promise<void> {
  await tx.query(`INSERT INTO crm_outbox (account_id, contact_id, type, data, refs, occurred_at) VALUES ($1, $2, $3, $4, $5, $6)`, [
    e.accountId,
    e.contactId,
    e.type,
    JSON.stringify(e.data),
    JSON.stringify(e.refs),
    e.occurredAt,
  ]);
}

/** Waiting events, oldest first: of one contact, or (for the sweep) those waiting longer than `olderThanMs`. */
export async function pendingCrmEvents(
  db: Queryable,
  by: { contactId: string } | { olderThanMs: number; limit: number },
): Promise<CrmOutboxRow[]> {
  const where = 'contactId' in by ? 'o.contact_id = $1' : `o.created_at < now() - $1 * interval '1 millisecond'`;
  const params: unknown[] = 'contactId' in by ? [by.contactId] : [by.olderThanMs];
  const { rows } = await db.query<CrmOutboxRow>(
    `SELECT o.*, json_build_object('id', ca.id, 'channel', ca.channel, 'display', ca.display, 'customer_id', ca.customer_id,
       'environment', ca.environment) AS channel_account
     FROM crm_outbox o JOIN contacts c ON c.id = o.contact_id JOIN channel_accounts ca ON ca.id = c.channel_account_id
     WHERE ${where} ORDER BY o.seq${'limit' in by ? ` LIMIT ${Math.trunc(by.limit)}` : ''}`,
    params,
  );
  return rows;
}

export async function removeCrmEvent(db: Queryable, seq: string): Promise<void> {
  await db.query(`DELETE FROM crm_outbox WHERE seq = $1`, [seq]);
}
