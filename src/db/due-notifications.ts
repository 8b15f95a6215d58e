import type { AccountId, EndpointId } from '../core/ids.js';
/**
 * "Deliveries are due for these endpoints", from whoever stores them to the workers, by
 * Postgres NOTIFY. A hint only: Postgres stays the queue, and a notification lost (no worker
 * listening, a dropped connection) is made good by the workers' sweep for due work.
 */
import crypto from 'node:crypto';
import type { Queryable } from './pool.js';

export interface DueEndpoint {
  endpointId: EndpointId;
  accountId: AccountId;
}

/** Postgres truncates identifiers, channel names included, at 63 bytes, and refuses longer ones in NOTIFY. */
const MAX_CHANNEL_BYTES = 63;

/**
 * The channel of one deployment (its task queue): deployments that share a database do not wake
 * each other. A task queue too long for a channel name is named by its hash.
 */
export function dueChannel(taskQueue: string): string {
  const readable = `deliveries_due:${taskQueue}`;
  if (Buffer.byteLength(readable) <= MAX_CHANNEL_BYTES) return readable;
  return `deliveries_due:${crypto.createHash('sha256').update(taskQueue).digest('hex').slice(0, 40)}`;
}

/**
 * Endpoints per notification: "endpoint:account" is 73 bytes, a payload at most 7,999. Each
 * notification wakes every listening worker, so a window's endpoints go in as few as fit: at a
 * hundred endpoints, one per endpoint cost an idle worker 0.12 ms of CPU per delivery (one
 * wake-up per notification), against 0.05 at one endpoint.
 */
const ENDPOINTS_PER_NOTIFICATION = 100;

/** The payloads naming `due`: "endpoint:account" pairs joined by commas, a hundred at most in each. */
export function duePayloads(due: readonly DueEndpoint[]): string[] {
  const payloads: string[] = [];
  for (let i = 0; i < due.length; i += ENDPOINTS_PER_NOTIFICATION)
    payloads.push(
      due
        .slice(i, i + ENDPOINTS_PER_NOTIFICATION)
        .map((d) => `${d.endpointId}:${d.accountId}`)
        .join(','),
    );
  return payloads;
}

export async function notifyDue(db: Queryable, channel: string, due: readonly DueEndpoint[]): Promise<void> {
  if (due.length === 0) return;
  // Prepared once per connection: every publish batch sends one.
  await db.query({
    name: 'notify_due',
    text: `SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload`,
    values: [channel, duePayloads(due)],
  });
}

/**
 * The endpoints a notification names; none for anything else on the channel. Also reads the
 * one-endpoint form ("endpoint account") an API process of the release before sends during a
 * rolling upgrade; a worker of that release reads nothing in the new form (no space), and its
 * sweep finds that work instead.
 */
export function parseDuePayload(payload: string | undefined): DueEndpoint[] {
  if (!payload) return [];
  const pairs = payload.includes(' ') ? [payload.split(' ')] : payload.split(',').map((pair) => pair.split(':'));
  return pairs
    .filter(([endpointId, accountId]) => endpointId && accountId)
    .map(([endpointId, accountId]) => ({ endpointId: endpointId as EndpointId, accountId: accountId as AccountId }));
}

/**
 * Endpoints with work due for a while that nobody has taken: due at least `olderThanMs` ago,
 * not held, not leased, the endpoint sending and healthy (a failing endpoint's workflow keeps
 * its own timer). What a lost notification leaves behind.
 */
export async function findOverdueEndpoints(db: Queryable, olderThanMs: number, limit = 1000): Promise<DueEndpoint[]> {
  const { rows } = await db.query<{ endpoint_id: EndpointId; account_id: AccountId }>(
    `SELECT e.id AS endpoint_id, e.account_id FROM endpoints e
     WHERE e.deleted_at IS NULL AND e.active AND e.health_status = 'healthy' AND e.failure_streak = 0
       AND EXISTS (
         SELECT 1 FROM deliveries d
         WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'failed') AND d.event_id IS NOT NULL AND d.held_since IS NULL
           AND d.next_attempt_at <= now() - make_interval(secs => $1::double precision / 1000)
           AND (d.leased_until IS NULL OR d.leased_until < now())
       )
     LIMIT $2`,
    [olderThanMs, limit],
  );
  return rows.map((r) => ({ endpointId: r.endpoint_id, accountId: r.account_id }));
}
