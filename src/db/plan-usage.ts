/** Free-plan counters and the notification outbox. */
import type { Queryable } from './pool.js';

/** Counts `by` more forwarded received messages in the month; returns the new count. */
export async function countReceived(tx: Queryable, accountId: string, month: string, by = 1): Promise<number> {
  const { rows } = await tx.query<{ received_count: number }>(
    `INSERT INTO plan_usage (account_id, month, received_count) VALUES ($1, $2, $3)
     ON CONFLICT (account_id, month) DO UPDATE SET received_count = plan_usage.received_count + $3
     RETURNING received_count`,
    [accountId, month, by],
  );
  return rows[0]!.received_count;
}

/** Queues a notification unless one with the same key exists: each is sent once. */
export async function enqueueNotification(
  tx: Queryable,
  n: { accountId: string; kind: string; dedupeKey: string; payload: Record<string, unknown> },
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO notifications (account_id, kind, dedupe_key, payload) VALUES ($1, $2, $3, $4) ON CONFLICT (dedupe_key) DO NOTHING`,
    [n.accountId, n.kind, n.dedupeKey, n.payload],
  );
  return rowCount === 1;
}

export interface OutboxRow {
  id: string;
  kind: string;
  payload: Record<string, unknown>;
}

/** Locks up to `limit` unsent notifications, oldest first; SKIP LOCKED lets any number of senders run. */
export async function claimUnsentNotifications(tx: Queryable, limit: number): Promise<OutboxRow[]> {
  const { rows } = await tx.query<OutboxRow>(
    `SELECT id, kind, payload FROM notifications WHERE sent_at IS NULL ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

export async function markNotificationSent(tx: Queryable, id: string): Promise<void> {
  await tx.query(`UPDATE notifications SET sent_at = now() WHERE id = $1`, [id]);
}
