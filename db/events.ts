/** The append-only event stream, per Account and environment. */
import type { Queryable } from './pool.js';

export type Environment = 'live' | 'sandbox';

export interface EventRow {
  id: string;
  account_id: string;
  environment: Environment;
  /** bigint, as a decimal string */
  cursor: string;
  type: string;
  idempotency_key: string;
  customer_id: string | null;
  channel: string | null;
  channel_account_id: string | null;
  channel_account: { id: string; channel: string; display: string } | null;
  external_id: string | null;
  message_id: string | null;
  message_resource_id: string | null;
  contact_ref: string | null;
  data: Record<string, unknown>;
  stream_data: Record<string, unknown>;
  occurred_at: Date;
  created_at: Date;
}

export type NewEvent = Omit<EventRow, 'id' | 'cursor' | 'created_at'>;

/** Creates the stream's head row on first use; a no-op once it exists. */
export async function ensureStreamHead(tx: Queryable, accountId: string, environment: Environment): Promise<void> {
  await tx.query(`INSERT INTO stream_heads (account_id, environment, last_cursor) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING`, [
    accountId,
    environment,
  ]);
}

export async function findEventByKey(
  db: Queryable,
  accountId: string,
  environment: Environment,
  key: string,
): Promise<EventRow | undefined> {
  const { rows } = await db.query<EventRow>(`SELECT * FROM events WHERE account_id = $1 AND environment = $2 AND idempotency_key = $3`, [
    accountId,
    environment,
    key,
  ]);
  return rows[0];
}

/**
 * Appends an event at the next cursor. Incrementing the head takes its row lock, held until
 * commit: writers of one stream are serialized, so cursors commit in order and without
 * holes, and a reader that saw cursor N+1 could already see N.
 * Returns undefined when the head does not exist yet or the idempotency key is taken; the
 * caller then rolls back, which also returns the cursor.
 */
export async function appendEvent(tx: Queryable, e: NewEvent): Promise<EventRow | undefined> {
  const { rows } = await tx.query<EventRow>(
    `WITH head AS (
       UPDATE stream_heads SET last_cursor = last_cursor + 1 WHERE account_id = $1 AND environment = $2 RETURNING last_cursor
     )
     INSERT INTO events (account_id, environment, cursor, type, idempotency_key, customer_id, channel, channel_account_id, channel_account,
                         external_id, message_id, message_resource_id, contact_ref, data, stream_data, occurred_at)
     SELECT $1, $2, head.last_cursor, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 FROM head
     ON CONFLICT (account_id, environment, idempotency_key) DO NOTHING
     RETURNING *`,
    [
      e.account_id,
      e.environment,
      e.type,
      e.idempotency_key,
      e.customer_id,
      e.channel,
      e.channel_account_id,
      e.channel_account,
      e.external_id,
      e.message_id,
      e.message_resource_id,
      e.contact_ref,
      e.data,
      e.stream_data,
      e.occurred_at,
    ],
  );
  return rows[0];
}

/** One page of the stream: an index seek on (account, environment, cursor), whatever the position. */
export async function readStream(
  db: Queryable,
  accountId: string,
  environment: Environment,
  after: string,
  limit: number,
): Promise<{ rows: EventRow[]; hasMore: boolean }> {
  const { rows } = await db.query<EventRow>(
    `SELECT * FROM events WHERE account_id = $1 AND environment = $2 AND cursor > $3 ORDER BY cursor LIMIT $4`,
    [accountId, environment, after, limit + 1],
  );
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

/**
 * Removes events in one statement and ends their undelivered deliveries as `event_deleted`.
 * The cursors of other events do not move.
 */
export async function deleteEventsWhere(
  tx: Queryable,
  where: { accountId: string; contactRef?: string; channelAccountId?: string },
): Promise<number> {
  const params: unknown[] = [where.accountId];
  let filter: string;
  if (where.contactRef !== undefined) {
    params.push(where.contactRef);
    filter = 'contact_ref = $2';
  } else if (where.channelAccountId !== undefined) {
    params.push(where.channelAccountId);
    filter = 'channel_account_id = $2';
  } else throw new Error('deleteEventsWhere needs a filter');
  const { rows } = await tx.query<{ n: number }>(
    `WITH gone AS (DELETE FROM events WHERE account_id = $1 AND ${filter} RETURNING id),
          -- Runs to completion whether or not the outer query reads it (Postgres runs every data-modifying CTE).
          closed AS (
            UPDATE deliveries SET status = 'exhausted', terminal_reason = 'event_deleted', next_attempt_at = NULL, updated_at = now()
            WHERE event_id IN (SELECT id FROM gone) AND status IN ('pending', 'failed') RETURNING 1
          )
     SELECT (SELECT count(*) FROM gone)::int AS n`,
    params,
  );
  return rows[0]!.n;
}
