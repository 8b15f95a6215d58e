/** Broadcasts and their recipients (DECISIONS "Broadcasts"). */
import type { PageKey } from '../core/paging.js';
import type { Environment } from './events.js';
import { inPageOrder, keyset, type Page, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export type BroadcastStatus = 'draft' | 'sending' | 'sent';
export type RecipientStatus = 'pending' | 'sending' | 'sent' | 'failed';

export interface BroadcastCounts {
  total: number;
  pending: number;
  sending: number;
  sent: number;
  failed: number;
}

export interface BroadcastRow {
  id: string;
  account_id: string;
  channel_account_id: string;
  environment: Environment;
  name: string | null;
  template_name: string;
  template_language: string;
  /** Key of the stage a reply promotes its contact to; null when replies promote nobody. */
  reply_stage: string | null;
  status: BroadcastStatus;
  sent_at: Date | null;
  created_at: Date;
  updated_at: Date;
  counts: BroadcastCounts;
  page_key: PageKey;
}

export interface RecipientRow {
  id: string;
  broadcast_id: string;
  to_recipient: string;
  components: Record<string, unknown>[] | null;
  status: RecipientStatus;
  message_id: string | null;
  failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
  page_key: PageKey;
}

/** A broadcast with its recipients counted by status, read in the same statement. */
const BROADCAST = `SELECT b.*, ${pageKeyColumn('b')},
  (SELECT s.key FROM stages s WHERE s.id = b.reply_stage_id) AS reply_stage,
  (SELECT json_build_object('total', count(*), 'pending', count(*) FILTER (WHERE r.status = 'pending'),
     'sending', count(*) FILTER (WHERE r.status = 'sending'), 'sent', count(*) FILTER (WHERE r.status = 'sent'), 'failed', count(*) FILTER (WHERE r.status = 'failed'))
   FROM broadcast_recipients r WHERE r.broadcast_id = b.id) AS counts
  FROM broadcasts b`;

const RECIPIENT_COLUMNS = `*, ${pageKeyColumn()}`;

export async function insertBroadcast(
  db: Queryable,
  b: {
    accountId: string;
    channelAccountId: string;
    environment: Environment;
    name: string | null;
    templateName: string;
    templateLanguage: string;
    replyStageId: string | null;
  },
): Promise<BroadcastRow> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO broadcasts (account_id, channel_account_id, environment, name, template_name, template_language, reply_stage_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
    [b.accountId, b.channelAccountId, b.environment, b.name, b.templateName, b.templateLanguage, b.replyStageId],
  );
  return (await getBroadcast(db, { accountId: b.accountId, environment: b.environment }, rows[0]!.id))!;
}

/** The broadcast when it belongs to the key's Account and environment. */
export async function getBroadcast(
  db: Queryable,
  owner: { accountId: string; environment: Environment },
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<BroadcastRow | undefined> {
  if (opts.forUpdate) {
    const { rowCount } = await db.query(`SELECT 1 FROM broadcasts WHERE id = $1 AND account_id = $2 AND environment = $3 FOR UPDATE`, [
      id,
      owner.accountId,
      owner.environment,
    ]);
    if (!rowCount) return undefined;
  }
  const { rows } = await db.query<BroadcastRow>(`${BROADCAST} WHERE b.id = $1 AND b.account_id = $2 AND b.environment = $3`, [
    id,
    owner.accountId,
    owner.environment,
  ]);
  return rows[0];
}

export async function listBroadcasts(
  db: Queryable,
  f: { accountId: string; environment: Environment; channelAccountId?: string; status?: BroadcastStatus },
  page: Page,
): Promise<BroadcastRow[]> {
  const params: unknown[] = [f.accountId, f.environment, page.limit + 1];
  const where = ['b.account_id = $1', 'b.environment = $2'];
  if (f.channelAccountId !== undefined) {
    params.push(f.channelAccountId);
    where.push(`b.channel_account_id = $${params.length}`);
  }
  if (f.status !== undefined) {
    params.push(f.status);
    where.push(`b.status = $${params.length}`);
  }
  const ks = keyset(page, params, 'b.');
  if (ks.clause) where.push(ks.clause);
  const { rows } = await db.query<BroadcastRow>(
    `${BROADCAST} WHERE ${where.join(' AND ')} ORDER BY b.created_at ${ks.order}, b.id ${ks.order} LIMIT $3`,
    params,
  );
  return inPageOrder(rows, ks);
}

/**
 * Adds recipients once each: a number the broadcast already has is skipped (also when a
 * concurrent call adds it first). Returns how many were added.
 */
export async function addRecipients(
  tx: Queryable,
  broadcastId: string,
  recipients: { toRecipient: string; components: Record<string, unknown>[] | null }[],
): Promise<number> {
  if (recipients.length === 0) return 0;
  const { rowCount } = await tx.query(
    `INSERT INTO broadcast_recipients (broadcast_id, to_recipient, components)
     SELECT $1, r.to_recipient, r.components
     FROM jsonb_to_recordset($2::jsonb) AS r(to_recipient text, components jsonb)
     ON CONFLICT (broadcast_id, to_recipient) DO NOTHING`,
    [broadcastId, JSON.stringify(recipients.map((r) => ({ to_recipient: r.toRecipient, components: r.components })))],
  );
  return rowCount ?? 0;
}

/** draft → sending (a broadcast already sending stays so: its send resumes). False once it is sent. */
export async function startSending(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE broadcasts SET status = 'sending', updated_at = now() WHERE id = $1 AND status IN ('draft', 'sending')`,
    [id],
  );
  return rowCount === 1;
}

/** sending → sent, when no recipient is left to send (pending, or claimed by a send still running). */
export async function finishSendingIfDone(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE broadcasts SET status = 'sent', sent_at = now(), updated_at = now()
     WHERE id = $1 AND status = 'sending'
       AND NOT EXISTS (SELECT 1 FROM broadcast_recipients WHERE broadcast_id = $1 AND status IN ('pending', 'sending'))`,
    [id],
  );
}

/** A claim older than this belongs to a sender that died (a send takes seconds at most): it may be taken again. */
export const ABANDONED_CLAIM_SECONDS = 300;

/**
 * Claims the next recipient to send for this sender: a pending one, or one whose claim was
 * abandoned. Concurrent sends of one broadcast claim different recipients, so nobody gets the
 * template twice (and a retaken one is sent with the same idempotency key: src/channels/outbound/broadcast-send.ts).
 */
export async function claimNextRecipient(db: Queryable, broadcastId: string): Promise<RecipientRow | undefined> {
  const { rows } = await db.query<RecipientRow>(
    `UPDATE broadcast_recipients SET status = 'sending', updated_at = now()
     WHERE id = (SELECT id FROM broadcast_recipients
                 WHERE broadcast_id = $1
                   AND (status = 'pending' OR (status = 'sending' AND updated_at < now() - make_interval(secs => $2)))
                 ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING ${RECIPIENT_COLUMNS}`,
    [broadcastId, ABANDONED_CLAIM_SECONDS],
  );
  return rows[0];
}

/** A recipient's outcome: its message (sent), the refusal (failed), or back to pending (the provider could not be reached). */
export async function recordRecipientOutcome(
  db: Queryable,
  id: string,
  outcome: { status: 'sent'; messageId: string } | { status: 'failed'; reason: string } | { status: 'pending' },
): Promise<void> {
  await db.query(`UPDATE broadcast_recipients SET status = $2, message_id = $3, failure_reason = $4, updated_at = now() WHERE id = $1`, [
    id,
    outcome.status,
    outcome.status === 'sent' ? outcome.messageId : null,
    outcome.status === 'failed' ? outcome.reason : null,
  ]);
}

/** Names the broadcast on the message it sent, so a reply can be traced back to it. */
export async function tagMessageWithBroadcast(db: Queryable, messageId: string, broadcastId: string): Promise<void> {
  await db.query(`UPDATE messages SET broadcast_id = $2 WHERE id = $1`, [messageId, broadcastId]);
}

export async function listRecipients(
  db: Queryable,
  broadcastId: string,
  f: { status?: RecipientStatus },
  page: Page,
): Promise<RecipientRow[]> {
  const params: unknown[] = [broadcastId, page.limit + 1];
  const where = ['broadcast_id = $1'];
  if (f.status !== undefined) {
    params.push(f.status);
    where.push(`status = $${params.length}`);
  }
  const ks = keyset(page, params);
  if (ks.clause) where.push(ks.clause);
  const { rows } = await db.query<RecipientRow>(
    `SELECT ${RECIPIENT_COLUMNS} FROM broadcast_recipients WHERE ${where.join(' AND ')} ORDER BY created_at ${ks.order}, id ${ks.order} LIMIT $2`,
    params,
  );
  return inPageOrder(rows, ks);
}

/**
 * The reply stage of the broadcast that sent the message replied to; undefined when there is
 * none. Whether it lies further down the funnel than the contact's stage is decided under the
 * contact's row lock (applyContactEdit's `onlyForward`), not here.
 */
export async function replyStageOf(
  db: Queryable,
  r: { channelAccountId: string; repliedToExternalId: string },
): Promise<string | undefined> {
  const { rows } = await db.query<{ key: string }>(
    `SELECT s.key FROM messages m
       JOIN broadcasts b ON b.id = m.broadcast_id
       JOIN stages s ON s.id = b.reply_stage_id
     WHERE m.channel_account_id = $1 AND m.external_id = $2 AND m.direction = 'outbound'`,
    [r.channelAccountId, r.repliedToExternalId],
  );
  return rows[0]?.key;
}

/**
 * Inside the promotion's transaction: true for the first claim of this reply message, false once
 * it was handled (a concurrent claim waits for the first one's commit, then finds it).
 */
export async function claimReplyPromotion(db: Queryable, replyMessageId: string): Promise<boolean> {
  const { rowCount } = await db.query(`INSERT INTO broadcast_reply_promotions (reply_message_id) VALUES ($1) ON CONFLICT DO NOTHING`, [
    replyMessageId,
  ]);
  return rowCount === 1;
}
