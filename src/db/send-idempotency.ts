/**
 * Idempotency keys of sends: the first request with a key reserves it, its success records the
 * message, and a retry with the same key finds that message instead of sending again.
 */
import type { MessageRow } from './messaging.js';
import type { Queryable } from './pool.js';
import { merged } from '../core/merged.js';

/** A reservation without a message older than this was abandoned (a crash mid-send) and may be taken again. */
export const ABANDONED_AFTER_SECONDS = 60;

export type Reservation =
  | { state: 'reserved' }
  | { state: 'done'; requestHash: string; message: MessageRow & { channel: 'chatapp' | 'photoapp' } }
  | { state: 'in_flight'; requestHash: string }
  /** An earlier send with this key got no answer from the provider: it may have been sent. */
  | { state: 'outcome_unknown'; requestHash: string; since: Date };

interface Scope {
  accountId: string;
  environment: string;
  key: string;
}

export async function reserveIdempotencyKey(db: Queryable, k: Scope & { requestHash: string }): Promise<Reservation> {
  const inserted = await db.query(
    `INSERT INTO message_idempotency_keys (account_id, environment, key, request_hash) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING RETURNING key`,
    [k.accountId, k.environment, k.key, k.requestHash],
  );
  if (inserted.rowCount === 1) return { state: 'reserved' };
  // Taken: done, in flight, or abandoned (then taken over, by one request only, and only by the
  // same request: the key stays bound to its first body, another one is idempotency_key_reused).
  const retaken = await db.query(
    `UPDATE message_idempotency_keys SET reserved_at = now()
     WHERE account_id = $1 AND environment = $2 AND key = $3 AND message_id IS NULL AND outcome_unknown_at IS NULL
       AND request_hash = $4 AND reserved_at < now() - make_interval(secs => $5)
     RETURNING key`,
    [k.accountId, k.environment, k.key, k.requestHash, ABANDONED_AFTER_SECONDS],
  );
  if (retaken.rowCount === 1) return { state: 'reserved' };
  const { rows } = await db.query<{
    request_hash: string;
    outcome_unknown_at: Date | null;
    message: (MessageRow & { channel: 'chatapp' | 'photoapp' }) | null;
  }>(
    `SELECT k.request_hash, k.outcome_unknown_at,
            CASE WHEN m.id IS NULL THEN NULL ELSE to_jsonb(m) || jsonb_build_object('channel', ca.channel) END AS message
     FROM message_idempotency_keys k
     LEFT JOIN messages m ON m.id = k.message_id
     LEFT JOIN channel_accounts ca ON ca.id = m.channel_account_id
     WHERE k.account_id = $1 AND k.environment = $2 AND k.key = $3`,
    [k.accountId, k.environment, k.key],
  );
  const row = rows[0];
  if (row && !row.message && row.outcome_unknown_at) {
    return { state: 'outcome_unknown', requestHash: row.request_hash, since: row.outcome_unknown_at };
  }
  // Deleted between the two statements (a failed first send released it): in flight is the safe answer.
  if (!row?.message) return { state: 'in_flight', requestHash: row?.request_hash ?? k.requestHash };
  return { state: 'done', requestHash: row.request_hash, message: merged(row.message, { created_at: new Date(row.message.created_at) }) };
}

/** The send failed: the key is free again, so a retry sends. */
export async function releaseIdempotencyKey(db: Queryable, k: Scope): Promise<void> {
  await db.query(`DELETE FROM message_idempotency_keys WHERE account_id = $1 AND environment = $2 AND key = $3 AND message_id IS NULL`, [
    k.accountId,
    k.environment,
    k.key,
  ]);
}

/** The provider may have taken the send without answering: the key stays taken, for good. */
export async function markIdempotencyKeyUnknown(db: Queryable, k: Scope): Promise<void> {
  await db.query(
    `UPDATE message_idempotency_keys SET outcome_unknown_at = now()
     WHERE account_id = $1 AND environment = $2 AND key = $3 AND message_id IS NULL`,
    [k.accountId, k.environment, k.key],
  );
}

/** The send succeeded: in the transaction that registers the message. */
export async function completeIdempotencyKey(db: Queryable, k: Scope & { messageId: string }): Promise<void> {
  await db.query(`UPDATE message_idempotency_keys SET message_id = $4 WHERE account_id = $1 AND environment = $2 AND key = $3`, [
    k.accountId,
    k.environment,
    k.key,
    k.messageId,
  ]);
}
