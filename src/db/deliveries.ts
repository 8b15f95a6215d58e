import type { EveryFieldListed } from './column-lists.js';
import crypto from 'node:crypto';
import type { EndpointId } from '../core/ids.js';
import { DomainError, notFound } from '../core/domain-error.js';
import { pacingApplies } from '../core/delivery-timing.js';
import type { PageKey } from '../core/paging.js';
import type { AttemptError } from '../core/health.js';
import { merged } from '../core/merged.js';
import { countEndedSql, countLimitedDeliveries } from './endpoint-hourly-stats.js';
import { encodedPayloadsJson } from './payload-bytes.js';
import { eventColumnsOf, type EventRow, type TableRow } from './events.js';
import {
  endpointColumnsAs,
  endpointFromColumns,
  healthySessionUpdate,
  sendsNowSql,
  type EndpointRow,
  type HealthStatus,
} from './endpoints.js';
import { inPageOrder, keyset, pageKeyColumn } from './keyset.js';
import pg from 'pg';
import { plansWithoutSorts, withClient, type Queryable } from './pool.js';
import { ONE_ROW_ESTIMATE } from './row-estimates.js';

export const DELIVERY_STATUSES = ['pending', 'success', 'failed', 'exhausted', 'limited'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryRow {
  id: string;
  account_id: string;
  endpoint_id: EndpointId;
  event_id: string | null;
  event_type: string;
  idempotency_key: string;
  environment: 'live' | 'sandbox' | null;
  status: DeliveryStatus;
  attempts: number;
  response_code: number | null;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  terminal_reason: string | null;
  held_since: Date | null;
  created_at: Date;
  updated_at: Date;
  page_key: PageKey;
}

export interface AttemptRow {
  number: number;
  started_at: Date;
  duration_ms: number;
  response_code: number | null;
  error: AttemptError | null;
  response_excerpt: string | null;
}

/**
 * A delivery's columns, named: the lists are prepared statements, and `*` would let a column a later
 * migration adds change a prepared result's type (Postgres refuses that: "cached plan must not change result type").
 */
const DELIVERY_COLUMNS = [
  'id',
  'account_id',
  'endpoint_id',
  'event_id',
  'event_type',
  'idempotency_key',
  'environment',
  'status',
  'attempts',
  'response_code',
  'last_attempt_at',
  'next_attempt_at',
  'terminal_reason',
  'held_since',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof DeliveryRow)[];
const everyDeliveryColumn: EveryFieldListed<DeliveryRow, (typeof DELIVERY_COLUMNS)[number], 'page_key'> = true;
void everyDeliveryColumn;
const COLUMNS = `${DELIVERY_COLUMNS.join(', ')}, ${pageKeyColumn()}`;

/**
 * A delivery the engine still owes: open, and of an event. A `webhook.test` row (no event) is
 * the record of a synchronous send, so no engine path (claim, hold, release, expiry, closing)
 * may ever change it, even when that send failed.
 */
export const OWED = `status IN ('pending', 'failed') AND event_id IS NOT NULL`;

export interface AttemptRecord {
  startedAt: Date;
  durationMs: number;
  responseCode: number | null;
  error: AttemptError | null;
  responseExcerpt: string | null;
}

/** A `webhook.test` send: one delivery row with its single attempt, terminal at once. */
export async function recordTestDelivery(
  db: Queryable,
  t: { id: string; accountId: string; endpointId: string; attempt: AttemptRecord },
): Promise<DeliveryRow> {
  const status: DeliveryStatus = t.attempt.error ? 'failed' : 'success';
  // The id was chosen before the POST: it went out as the send's webhook-id.
  const { rows } = await db.query<DeliveryRow>(
    `INSERT INTO deliveries (id, account_id, endpoint_id, event_type, idempotency_key, environment, status, attempts, response_code, last_attempt_at)
     VALUES ($6, $1, $2::uuid, 'webhook.test', 'test:' || $2::text, NULL, $3, 1, $4, $5) RETURNING ${COLUMNS}`,
    [t.accountId, t.endpointId, status, t.attempt.responseCode, t.attempt.startedAt, t.id],
  );
  const delivery = rows[0]!;
  await insertAttempt(db, delivery, 1, t.attempt);
  return delivery;
}

/**
 * An attempt is stored in its delivery's week (partitioned on the delivery's created_at, migration
 * 0029), read from the row in SQL: a JS Date would drop its microseconds, and the rollup trigger
 * (0030) finds the delivery by (id, created_at).
 */
export async function insertAttempt(
  db: Queryable,
  delivery: { id: string; created_at: Date },
  number: number,
  a: AttemptRecord,
): Promise<void> {
  await db.query(
    `INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, response_code, error, response_excerpt, delivery_created_at)
     SELECT d.id, $2, $3, $4, $5, $6, $7, d.created_at FROM deliveries d
     WHERE d.id = $1 AND d.created_at BETWEEN $8::timestamptz - interval '1 millisecond' AND $8::timestamptz + interval '1 millisecond'`,
    [delivery.id, number, a.startedAt, a.durationMs, a.responseCode, a.error, a.responseExcerpt, delivery.created_at],
  );
}

export interface DeliveryFilter {
  endpointId?: string;
  status?: DeliveryStatus;
  eventType?: string;
}

/** Newest first, keyset-paged, always within one account. */
export async function listDeliveries(
  db: Queryable,
  accountId: string,
  filter: DeliveryFilter,
  page: { limit: number; after?: PageKey; before?: PageKey },
): Promise<DeliveryRow[]> {
  const params: unknown[] = [accountId, page.limit + 1];
  const where = ['account_id = $1'];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (filter.endpointId) add('endpoint_id = ?', filter.endpointId);
  if (filter.status) add('status = ?', filter.status);
  // Said as a literal so the plan may use the partial deliveries_endpoint_status_list (migration 0035) whatever the parameter.
  if (filter.status && filter.status !== 'success') where.push(`status <> 'success'`);
  if (filter.eventType) add('event_type = ?', filter.eventType);
  const ks = keyset(page, params, '', 'newest-first');
  if (ks.clause) where.push(ks.clause);
  const order = `created_at ${ks.order}, id ${ks.order}`;
  if (filter.endpointId) {
    const { rows } = await db.query<DeliveryRow>(
      prepared(`SELECT ${COLUMNS} FROM deliveries WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT $2`, params),
    );
    return inPageOrder(rows, ks);
  }
  // No index leads with the account (migration 0031: it was about a sixth of a delivery's bytes): the first
  // rows of each of its endpoints (deleted ones too: their deliveries stay listed), on the endpoint's
  // list index (deliveries_endpoint_list), merged. A page reads at most (endpoints x page size) rows.
  const { rows } = await withoutSorts(db, (q) =>
    q.query<DeliveryRow>(
      prepared(
        `SELECT d.* FROM endpoints e
         CROSS JOIN LATERAL (SELECT ${COLUMNS} FROM deliveries WHERE endpoint_id = e.id AND ${where.join(' AND ')} ORDER BY ${order} LIMIT $2) d
         WHERE e.account_id = $1 ORDER BY d.created_at ${ks.order}, d.id ${ks.order} LIMIT $2`,
        params,
      ),
    ),
  );
  return inPageOrder(rows, ks);
}

/**
 * A list's statement, prepared once per connection under a name of its text (one per combination
 * of filters and paging direction): planning the account-wide list over a dozen weekly partitions
 * took longer than running it (0.8 ms of its 1.8 ms, 100,000 deliveries), every page.
 */
function prepared(text: string, values: unknown[]): pg.QueryConfig {
  return { name: `list_deliveries_${crypto.createHash('sha1').update(text).digest('hex').slice(0, 16)}`, text, values };
}

/**
 * Runs `fn` with sorts priced out of the plan (enable_sort off), on one connection, then back on.
 * The account-wide list plans each endpoint's part once for any endpoint, from the average
 * endpoint's rows: for a status an endpoint has thousands of, it chose to read them all and sort
 * them (26 ms at 20 million deliveries) over reading its weeks newest first and stopping at the page
 * (0.6 ms). Without sorts it takes the second; the outer merge of the endpoints' pages still sorts.
 * A session setting, not SET LOCAL, so a caller's transaction is neither begun nor ended here. The
 * API lists on a pool whose connections start without sorts (ApiDeps.auditDb), and skips both.
 */
async function withoutSorts<T>(db: Queryable, fn: (q: Queryable) => Promise<T>): Promise<T> {
  // A pool made for it plans without sorts already: one round trip instead of three.
  if (plansWithoutSorts(db)) return fn(db);
  if (db instanceof pg.Pool) return withClient(db, (client) => withoutSorts(client, fn));
  await db.query('SET enable_sort = off');
  let result: T;
  try {
    result = await fn(db);
  } catch (err) {
    // In a caller's transaction the failure aborted it, and its rollback undoes the SET: the error is the news.
    await db.query('RESET enable_sort').catch(() => {});
    throw err;
  }
  await db.query('RESET enable_sort');
  return result;
}

export async function getDelivery(
  db: Queryable,
  accountId: string,
  id: string,
): Promise<(DeliveryRow & { attempts_log: AttemptRow[] }) | undefined> {
  // Prepared, as the lists are: each plans over every weekly partition (the id names no week).
  const { rows } = await db.query<DeliveryRow>({
    name: 'get_delivery',
    text: `SELECT ${COLUMNS} FROM deliveries WHERE id = $1 AND account_id = $2`,
    values: [id, accountId],
  });
  const delivery = rows[0];
  if (!delivery) return undefined;
  // Its attempts name its created_at (or -infinity, from before migration 0029): later weeks are
  // pruned. A millisecond on: a Date has lost the timestamp's microseconds.
  const { rows: attempts } = await db.query<AttemptRow>({
    name: 'get_delivery_attempts',
    text: `SELECT number, started_at, duration_ms, response_code, error, response_excerpt FROM delivery_attempts
     WHERE delivery_id = $1 AND delivery_created_at < $2::timestamptz + interval '1 millisecond' ORDER BY number`,
    values: [id, delivery.created_at],
  });
  return merged(delivery, { attempts_log: attempts });
}

export interface EndpointPacingRow {
  id: string;
  active: boolean;
  health_status: HealthStatus;
  failure_streak: number;
  last_failure_at: Date | null;
  deleted_at: Date | null;
  /** The owed delivery the endpoint's next POST takes, in the claim's order (`claimWithEndpoint`). */
  first_in_line: string | null;
}

/**
 * What a delivery's truthful next attempt depends on, for the endpoints of a page of deliveries (one
 * statement): only those of its open deliveries of events (`pacingApplies`), none for a page of a
 * terminal status.
 */
export async function endpointPacing(
  db: Queryable,
  deliveries: readonly Pick<DeliveryRow, 'endpoint_id' | 'status' | 'event_id'>[],
): Promise<Map<string, EndpointPacingRow>> {
  const endpointIds = deliveries
    .filter((d) => pacingApplies({ status: d.status, hasEvent: d.event_id !== null }))
    .map((d) => d.endpoint_id);
  if (endpointIds.length === 0) return new Map();
  // Prepared: it comes with every page of the audit list, and plans over every weekly partition.
  const { rows } = await db.query<EndpointPacingRow>({
    name: 'endpoint_pacing',
    text: `SELECT e.id, e.active, e.health_status, e.failure_streak, e.last_failure_at, e.deleted_at,
            (SELECT d.id FROM deliveries d
              WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'failed') AND d.event_id IS NOT NULL -- OWED
                AND d.held_since IS NULL AND d.next_attempt_at IS NOT NULL
              ORDER BY d.next_attempt_at, d.created_at LIMIT 1) AS first_in_line
     FROM endpoints e WHERE e.id = ANY($1::uuid[])`,
    values: [[...new Set(endpointIds)]],
  });
  return new Map(rows.map((r) => [r.id, r]));
}

/** Ends every not-yet-delivered delivery of an endpoint with an auditable reason. Returns how many. */
export async function exhaustOpenDeliveries(db: Queryable, endpointId: string, reason: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH ended AS (
       UPDATE deliveries SET status = 'exhausted', terminal_reason = $2, next_attempt_at = NULL, leased_until = NULL, lease_owner = NULL, updated_at = now()
       WHERE endpoint_id = $1 AND ${OWED} RETURNING account_id, endpoint_id
     ), ${countEndedSql('ended', 'exhausted')}
     SELECT count(*)::int AS n FROM ended`,
    [endpointId, reason],
  );
  return rows[0]!.n;
}

export interface NewEventDelivery {
  endpointId: EndpointId;
  status: 'pending' | 'limited';
  held: boolean;
}

/** A freshly stored event and the deliveries it routes to. */
export interface EventDeliveries {
  eventId: string;
  eventType: string;
  idempotencyKey: string;
  deliveries: NewEventDelivery[];
}

/**
 * The deliveries of freshly stored events of one stream, in one statement, in the same
 * transaction as the events.
 */
export async function insertBatchDeliveries(
  tx: Queryable,
  stream: { accountId: string; environment: 'live' | 'sandbox' },
  events: EventDeliveries[],
): Promise<void> {
  const rows = events.flatMap((e, index) => e.deliveries.map((d) => merged(d, { n: index + 1 })));
  if (rows.length === 0) return;
  await tx.query({
    // Prepared once per connection: a batch of the ingest's hot path (store-event.ts) runs it.
    name: 'insert_batch_deliveries',
    // The event's columns travel once per event and are joined by its position (n), not once per
    // delivery: at fan-out 10 they were most of the statement's bytes, escaped, sent and parsed.
    text: `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, next_attempt_at, held_since, terminal_reason)
     SELECT $1, d.endpoint_id, ev.id, ev.type, ev.idempotency_key, $2, d.status,
            CASE WHEN d.status = 'pending' AND NOT d.held THEN now() END,
            -- A held delivery gets no due time; its hold is started by the endpoint's workflow, on the
            -- workflow's clock, which is the one its 14-day expiry is measured with.
            NULL::timestamptz,
            CASE WHEN d.status = 'limited' THEN 'free_plan_limit' END
     FROM unnest($6::int[], $7::uuid[], $8::text[], $9::boolean[]) AS d(n, endpoint_id, status, held)
     JOIN unnest($3::uuid[], $4::text[], $5::text[]) WITH ORDINALITY AS ev(id, type, idempotency_key, n) ON ev.n = d.n`,
    values: [
      stream.accountId,
      stream.environment,
      events.map((e) => e.eventId),
      events.map((e) => e.eventType),
      events.map((e) => e.idempotencyKey),
      rows.map((r) => r.n),
      rows.map((r) => r.endpointId),
      rows.map((r) => r.status),
      rows.map((r) => r.held),
    ],
  });
  await countLimitedDeliveries(
    tx,
    stream.accountId,
    rows.filter((r) => r.status === 'limited').map((r) => r.endpointId),
  );
}

/** The deliveries of one freshly stored event, in the same transaction as the event. */
export async function insertEventDeliveries(
  tx: Queryable,
  e: { accountId: string; eventId: string; eventType: string; idempotencyKey: string; environment: 'live' | 'sandbox' },
  deliveries: NewEventDelivery[],
): Promise<void> {
  await insertBatchDeliveries(tx, e, [merged(e, { deliveries })]);
}

/**
 * What a POST needs of a claimed delivery's event (src/core/webhook-body.ts): not the contact
 * references nor an older event's stream copy, which every claim would otherwise read and send for nothing.
 */
const CLAIMED_EVENT_COLUMNS = [
  'id',
  'type',
  'customer_id',
  'environment',
  'channel',
  'channel_account',
  'external_id',
  'payload',
] as const satisfies readonly (keyof TableRow)[];
export type ClaimedEvent = Pick<EventRow, Exclude<(typeof CLAIMED_EVENT_COLUMNS)[number], 'payload'>> & {
  /** The payload as stored (src/db/payload-bytes.ts). */
  payload: Buffer;
  /**
   * The payload's JSON text exactly as `JSON.stringify` of its data wrote it, when that is certain
   * (encodedPayloadsJson): a body can then be built around it unparsed (src/core/webhook-body.ts).
   */
  dataJson: Buffer | undefined;
};
const claimedEventColumnsOf = (alias: string): string => eventColumnsOf(alias, CLAIMED_EVENT_COLUMNS);

function claimedEventOf(row: Record<string, unknown>, dataJson: Buffer | undefined): ClaimedEvent | null {
  if (!row.id) return null;
  const event: Record<string, unknown> = {};
  for (const c of CLAIMED_EVENT_COLUMNS) event[c] = row[c];
  event.dataJson = dataJson;
  return event as unknown as ClaimedEvent;
}

/** Each claimed row's payload JSON, the compressed ones inflated together (one zlib handle a claim, not one a delivery). */
const claimedPayloadsJson = (rows: readonly Record<string, unknown>[]): (Buffer | undefined)[] =>
  encodedPayloadsJson(rows.map((r) => (r.id ? (r.payload as Buffer) : undefined)));

/** A claim's row: the delivery's columns prefixed `delivery_`, its event's (claimedEventColumnsOf) as they are. */
type ClaimedRow = Record<string, unknown> & {
  delivery_id: string;
  delivery_event_id: string | null;
  delivery_event_type: string;
  delivery_idempotency_key: string;
  delivery_attempts: number;
  delivery_created_at: Date;
};

function claimedDeliveryOf(row: ClaimedRow, dataJson: Buffer | undefined): ClaimedDelivery {
  return {
    id: row.delivery_id,
    event_id: row.delivery_event_id,
    event_type: row.delivery_event_type,
    idempotency_key: row.delivery_idempotency_key,
    attempts: row.delivery_attempts,
    created_at: row.delivery_created_at,
    event: claimedEventOf(row, dataJson),
  };
}

export interface ClaimedDelivery {
  id: string;
  event_id: string | null;
  event_type: string;
  idempotency_key: string;
  attempts: number;
  /** Its week (to the millisecond: a JS Date): its attempt's record looks in that partition only. */
  created_at: Date;
  /** The event as it is at the claim; null when it is gone (deleted since it was stored). */
  event: ClaimedEvent | null;
}

/**
 * Leases the due deliveries of an endpoint to one session (`owner`), earliest first, so one
 * poison event cannot block the rest, and returns them with their events, in one statement.
 * `now` is the scheduler's clock (the workflow's), not the database's. The same statement reads
 * the endpoint as committed when the claim ran (undefined when nothing was claimed): it spares
 * the POSTs that start at once after the claim a read of their own.
 */
export async function claimWithEndpoint(
  db: Queryable,
  endpointId: string,
  now: Date,
  limit: number,
  leaseMs: number,
  owner: string,
): Promise<{ deliveries: ClaimedDelivery[]; endpoint: EndpointRow | undefined }> {
  const { rows } = await db.query<ClaimedRow>({
    // Prepared once per connection: Postgres planned this statement longer than it ran it.
    name: 'claim_due_deliveries',
    text: `WITH due AS (
       SELECT id, created_at FROM deliveries
       WHERE endpoint_id = $1 AND ${OWED} AND held_since IS NULL
         AND next_attempt_at <= $2 AND (leased_until IS NULL OR leased_until < $2)
       ORDER BY next_attempt_at, created_at
       LIMIT $3
       FOR UPDATE SKIP LOCKED
     ), claimed AS (
       UPDATE deliveries d SET leased_until = $2::timestamptz + make_interval(secs => $4::double precision / 1000), lease_owner = $5
       -- By its week too, so the update searches one partition's primary key, not every week's.
       FROM due WHERE d.id = due.id AND d.created_at = due.created_at
       RETURNING d.id AS delivery_id, d.event_id AS delivery_event_id, d.event_type AS delivery_event_type,
                 d.idempotency_key AS delivery_idempotency_key, d.attempts AS delivery_attempts, d.next_attempt_at AS delivery_next_attempt_at,
                 d.created_at AS delivery_created_at
     )
     SELECT c.delivery_id, c.delivery_event_id, c.delivery_event_type, c.delivery_idempotency_key, c.delivery_attempts, c.delivery_created_at,
            ${claimedEventColumnsOf('ev')}, ${endpointColumnsAs('ep', 'endpoint_')}
     FROM (SELECT *, row_number() OVER (ORDER BY delivery_next_attempt_at) AS n FROM claimed) c
     LEFT JOIN events ev ON ev.id = c.delivery_event_id
     -- The endpoint once, on the first row.
     LEFT JOIN endpoints ep ON ep.id = $1 AND c.n = 1
     ORDER BY c.n`,
    values: [endpointId, now, limit, leaseMs, owner],
  });
  const json = claimedPayloadsJson(rows);
  const deliveries = rows.map((row, i) => claimedDeliveryOf(row, json[i]));
  return { deliveries, endpoint: rows[0] ? endpointFromColumns(rows[0], 'endpoint_') : undefined };
}

export interface ClaimRequest {
  endpointId: string;
  now: Date;
  limit: number;
  owner: string;
  /** How long the claimed deliveries are leased; the claim's `leaseMs` when unset. */
  leaseMs?: number;
}

/** What one request of a shared claim got: its deliveries, and its endpoint as the claim read it when it got any. */
export interface ClaimedWithEndpoint {
  deliveries: ClaimedDelivery[];
  endpoint: EndpointRow | undefined;
}

/**
 * `claimWithEndpoint`'s claim for several sessions in one statement (a worker's sessions of many
 * endpoints claim together): each request gets up to its `limit` of its endpoint's due deliveries,
 * earliest first, leased to its `owner`, with its endpoint as committed when the statement began
 * (read once, on the request's first row, and only for a request that got deliveries). Two
 * requests of one endpoint never get the same delivery.
 */
export async function claimWithEndpointsFor(db: Queryable, reqs: readonly ClaimRequest[], leaseMs: number): Promise<ClaimedWithEndpoint[]> {
  // Prepared, and planned once (below).
  const { rows } = await db.query<ClaimedRow & { delivery_lease_owner: string }>({
    name: 'claim_due_deliveries_for',
    text: `WITH req AS (
       SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::int[], $4::text[], $5::float8[])
         WITH ORDINALITY AS r(endpoint_id, at, lim, owner, lease_ms, n)
       -- One plan kept per connection, whatever the number of requests (src/db/row-estimates.ts).
       WHERE ${ONE_ROW_ESTIMATE}
     ), due AS (
       SELECT DISTINCT ON (pick.id) pick.id, pick.created_at, req.at, req.owner, req.lease_ms FROM req CROSS JOIN LATERAL (
         SELECT id, next_attempt_at, created_at FROM deliveries
         WHERE endpoint_id = req.endpoint_id AND ${OWED} AND held_since IS NULL
           AND next_attempt_at <= req.at AND (leased_until IS NULL OR leased_until < req.at)
         ORDER BY next_attempt_at, created_at
         LIMIT req.lim
         FOR UPDATE SKIP LOCKED
       ) pick
     ), claimed AS (
       UPDATE deliveries d SET leased_until = due.at + make_interval(secs => due.lease_ms / 1000), lease_owner = due.owner
       -- By its week too, so the update searches one partition's primary key, not every week's.
       FROM due WHERE d.id = due.id AND d.created_at = due.created_at
       RETURNING d.id AS delivery_id, d.event_id AS delivery_event_id, d.event_type AS delivery_event_type,
                 d.idempotency_key AS delivery_idempotency_key, d.attempts AS delivery_attempts, d.endpoint_id AS delivery_endpoint_id,
                 d.lease_owner AS delivery_lease_owner, d.next_attempt_at AS delivery_next_attempt_at, d.created_at AS delivery_created_at
     )
     SELECT c.delivery_id, c.delivery_event_id, c.delivery_event_type, c.delivery_idempotency_key, c.delivery_attempts, c.delivery_created_at,
            c.delivery_lease_owner,
            ${claimedEventColumnsOf('ev')}, ${endpointColumnsAs('ep', 'endpoint_')}
     FROM (SELECT *, row_number() OVER (PARTITION BY delivery_lease_owner ORDER BY delivery_next_attempt_at, delivery_created_at) AS n
           FROM claimed) c
     LEFT JOIN events ev ON ev.id = c.delivery_event_id
     -- Each request's endpoint once, on its first row.
     LEFT JOIN endpoints ep ON ep.id = c.delivery_endpoint_id AND c.n = 1
     ORDER BY c.delivery_next_attempt_at, c.delivery_created_at`,
    values: [
      reqs.map((r) => r.endpointId),
      reqs.map((r) => r.now),
      reqs.map((r) => r.limit),
      reqs.map((r) => r.owner),
      reqs.map((r) => r.leaseMs ?? leaseMs),
    ],
  });
  const byOwner = new Map<string, ClaimedWithEndpoint>(reqs.map((r) => [r.owner, { deliveries: [], endpoint: undefined }]));
  const json = claimedPayloadsJson(rows);
  for (const [i, row] of rows.entries()) {
    const got = byOwner.get(row.delivery_lease_owner);
    if (!got) continue;
    got.deliveries.push(claimedDeliveryOf(row, json[i]));
    got.endpoint ??= endpointFromColumns(row, 'endpoint_');
  }
  return reqs.map((r) => byOwner.get(r.owner)!);
}

/**
 * Gives back what a round leased and did not record: the deliveries it never attempted (it
 * stopped early), or, on a retry of the round, the POSTs its lost attempt had in flight.
 */
export async function releaseLeases(db: Queryable, owner: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries SET leased_until = NULL, lease_owner = NULL WHERE lease_owner = $1 AND leased_until IS NOT NULL`,
    [owner],
  );
  return rowCount ?? 0;
}

/** The event of a claimed delivery is gone (deleted after the claim): the delivery ends with it. */
export async function closeForDeletedEvent(db: Queryable, id: string): Promise<void> {
  await db.query(
    `WITH closed AS (
       UPDATE deliveries SET status = 'exhausted', terminal_reason = 'event_deleted', leased_until = NULL, lease_owner = NULL, updated_at = now()
       WHERE id = $1 RETURNING account_id, endpoint_id, old.status AS was
     ),
     -- Already ended by the event's deletion (deleteEventsWhere), which counted it.
     ended AS (SELECT account_id, endpoint_id FROM closed WHERE was <> 'exhausted'), ${countEndedSql('ended', 'exhausted')}
     SELECT 1`,
    [id],
  );
}

export interface AttemptResult {
  id: string;
  /** The delivery's created_at as its claim read it (ClaimedDelivery.created_at). */
  createdAt: Date;
  number: number;
  attempt: AttemptRecord;
  success: boolean;
  nextAttemptAt: Date | null;
}

/**
 * Records attempts and their effect on their deliveries, any number in one statement (so
 * atomically, in one round trip). An attempt already on record (a POST repeated after a lost
 * lease) keeps its first row; the delivery takes the latest outcome.
 */
export async function recordDeliveryAttempts(db: Queryable, results: readonly AttemptResult[]): Promise<void> {
  if (results.length === 0) return;
  await db.query({
    name: 'record_delivery_attempts',
    text: `WITH result AS (
       SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::int[], $8::text[], $9::text[], $10::timestamptz[])
         WITH ORDINALITY AS r(id, number, status, response_code, started_at, next_attempt_at, duration_ms, error, response_excerpt, created_at, n)
       -- One plan kept per connection, whatever the batch's size (src/db/row-estimates.ts).
       WHERE ${ONE_ROW_ESTIMATE}
     ), delivery AS (
       UPDATE deliveries d SET status = r.status, attempts = r.number, response_code = r.response_code, last_attempt_at = r.started_at,
         next_attempt_at = r.next_attempt_at, leased_until = NULL, lease_owner = NULL, updated_at = now()
       -- In its week only: one partition's primary key searched, not every week's (its created_at came
       -- through JS, to the millisecond, hence the range; the id decides).
       FROM result r WHERE d.id = r.id
         AND d.created_at BETWEEN r.created_at - interval '1 millisecond' AND r.created_at + interval '1 millisecond'
       RETURNING d.id, d.created_at
     )
     -- In the delivery's week (attempts are partitioned on its created_at, which the update returns).
     INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, response_code, error, response_excerpt, delivery_created_at)
     SELECT r.id, r.number, r.started_at, r.duration_ms, r.response_code, r.error, r.response_excerpt, d.created_at
     FROM result r JOIN delivery d ON d.id = r.id
     -- Each partition's primary key (delivery_id, number): the first record of an attempt stays.
     ON CONFLICT DO NOTHING`,
    values: [
      results.map((r) => r.id),
      results.map((r) => r.number),
      results.map((r) => (r.success ? 'success' : 'failed')),
      results.map((r) => r.attempt.responseCode),
      results.map((r) => r.attempt.startedAt),
      results.map((r) => r.nextAttemptAt),
      results.map((r) => Math.round(r.attempt.durationMs)),
      results.map((r) => r.attempt.error),
      results.map((r) => r.attempt.responseExcerpt),
      results.map((r) => r.createdAt),
    ],
  });
}

/**
 * When the next open, unheld delivery of the endpoint `$1` is due (a leased one when its lease
 * ends), as `at`; null when none is. It looks at the 64 earliest only, in index order, so it costs
 * the same at any backlog: only a lease on all 64 of them (lost rounds not yet retried) could make
 * it answer later than the truth, and a retried round releases its leases at once.
 */
const nextDueSql = (endpointId: string) => `SELECT min(greatest(next_attempt_at, coalesce(leased_until, next_attempt_at))) AS at FROM (
  SELECT next_attempt_at, leased_until FROM deliveries
  WHERE endpoint_id = ${endpointId} AND ${OWED} AND held_since IS NULL AND next_attempt_at IS NOT NULL
  ORDER BY next_attempt_at LIMIT 64
) earliest`;
/** nextDueSql of the endpoint `$1`. */
export const NEXT_DUE_SQL = nextDueSql('$1');

/**
 * When each endpoint's earliest delivery not yet due comes due, in their order: the waiting
 * sessions of a worker ask in one statement (a session's report reads it with the rest:
 * `reportSession`). A hundred sessions starting together each asked in a statement of their own,
 * and the claims and records of the same worker queued behind them for a connection.
 */
export async function nextDueAtFor(db: Queryable, endpointIds: string[]): Promise<(Date | null)[]> {
  // Prepared (a lingering session asks it while it waits): one plan, on the due index.
  const { rows } = await db.query<{ at: Date | null }>({
    name: 'next_due_at_for',
    text: `SELECT (${nextDueSql('r.id')}) AS at FROM unnest($1::uuid[]) WITH ORDINALITY AS r(id, n)
           WHERE ${ONE_ROW_ESTIMATE} ORDER BY r.n`,
    values: [endpointIds],
  });
  return rows.map((r) => r.at);
}

/**
 * Holds every open delivery of the endpoint (paused, inactive or unverified); a hold already running
 * keeps its start. Only while the endpoint, as committed now, does not send: the workflow asks from
 * its own view, which may be older (a new endpoint's first pass read it unverified just before a
 * test send verified it), and a hold then kept the deliveries a direct session was sending out of
 * that session's report, so the workflow was left with no retry time for their failures.
 *
 * A delivery a session holds keeps its lease: the session's record ends it, or its end gives back
 * what it did not send (a session stops before a POST once its endpoint no longer sends). Cleared
 * here, a release that came before the record made a POST in flight due to another session, which
 * sent it again.
 */
export async function holdOpenDeliveries(db: Queryable, endpointId: string, now: Date): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries SET held_since = $2, updated_at = now()
     WHERE endpoint_id = $1 AND ${OWED} AND held_since IS NULL
       AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.id = $1 AND e.deleted_at IS NULL AND ${sendsNowSql('e')})`,
    [endpointId, now],
  );
  return rowCount ?? 0;
}

/** The endpoint sends again: held deliveries resume, due at once unless their own retry time is later. */
export async function releaseHeldDeliveries(db: Queryable, endpointId: string, now: Date): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries SET held_since = NULL, next_attempt_at = greatest(coalesce(next_attempt_at, $2), $2), updated_at = now()
     WHERE endpoint_id = $1 AND ${OWED} AND (held_since IS NOT NULL OR next_attempt_at IS NULL)`,
    [endpointId, now],
  );
  return rowCount ?? 0;
}

/**
 * Ends holds older than `holdMs` as `exhausted` / `hold_expired`. A hold counts from the
 * later of the delivery's creation and the start of the hold. Returns when the next one expires.
 */
export async function expireHeldDeliveries(
  db: Queryable,
  endpointId: string,
  now: Date,
  holdMs: number,
): Promise<{ expired: number; nextExpiryAt: Date | null; held: number }> {
  const { rows: ended } = await db.query<{ n: number }>(
    `WITH ended AS (
       UPDATE deliveries SET status = 'exhausted', terminal_reason = 'hold_expired', next_attempt_at = NULL, updated_at = now()
       WHERE endpoint_id = $1 AND ${OWED} AND held_since IS NOT NULL
         AND greatest(held_since, created_at) + make_interval(secs => $3::double precision / 1000) <= $2
       RETURNING account_id, endpoint_id
     ), ${countEndedSql('ended', 'exhausted')}
     SELECT count(*)::int AS n FROM ended`,
    [endpointId, now, holdMs],
  );
  const { rows } = await db.query<{ at: Date | null; held: number }>(
    `SELECT min(greatest(held_since, created_at)) + make_interval(secs => $2::double precision / 1000) AS at, count(*)::int AS held
     FROM deliveries WHERE endpoint_id = $1 AND ${OWED} AND held_since IS NOT NULL`,
    [endpointId, holdMs],
  );
  return { expired: ended[0]!.n, nextExpiryAt: rows[0]!.at, held: rows[0]!.held };
}

/** Counting stops here: the workflow's story says "10000+" rather than scan a huge backlog. */
export const OWED_COUNT_CAP = 10_000;

/** How many deliveries the endpoint `$1` owes and does not hold (up to OWED_COUNT_CAP), as `n`. */
export const OWED_COUNT_SQL = `SELECT count(*)::int AS n FROM (
  SELECT 1 FROM deliveries WHERE endpoint_id = $1 AND ${OWED} AND held_since IS NULL LIMIT ${OWED_COUNT_CAP}
) owed`;

export interface SessionReport {
  nextDueAt: Date | null;
  owed: number;
  healthRecorded: boolean;
}

/**
 * What a delivery session reports at its end, in one statement instead of three: its next due
 * time (as `nextDueAtFor` reads it), the count of what it owes and, for a session of successes
 * only (`healthy` given), its record of health (`healthySessionUpdate`, src/db/endpoints.ts) with
 * that next due time, all in the same snapshot.
 */
export async function reportSession(
  db: Queryable,
  endpointId: string,
  healthy: { lastSuccessAt: Date; lastResponseCode: number | null } | null,
  observedAt: Date,
): Promise<SessionReport> {
  const { rows } = await db.query<{ at: Date | null; owed: number; recorded: number }>({
    name: 'report_session',
    text: `WITH due AS (${NEXT_DUE_SQL}), owed AS (${OWED_COUNT_SQL}), healthy AS (
       ${healthySessionUpdate({ id: '$1', lastSuccessAt: '$2', lastResponseCode: '$3', nextAttemptAt: '(SELECT at FROM due)', observedAt: '$4' })}
         AND $2::timestamptz IS NOT NULL
       RETURNING 1
     )
     SELECT (SELECT at FROM due) AS at, (SELECT n FROM owed) AS owed, (SELECT count(*) FROM healthy)::int AS recorded`,
    values: [endpointId, healthy?.lastSuccessAt ?? null, healthy?.lastResponseCode ?? null, observedAt],
  });
  const r = rows[0]!;
  return { nextDueAt: r.at, owed: r.owed, healthRecorded: r.recorded === 1 };
}

/** A session is POSTing the delivery right now: its lease runs (the record of the attempt clears it). */
const NOT_IN_FLIGHT = `(leased_until IS NULL OR leased_until < now())`;
const RESENDABLE = `status IN ('limited', 'exhausted', 'failed') AND event_id IS NOT NULL`;

/**
 * Manual resend: a limited, exhausted or failed delivery is due again at once. Test sends cannot be
 * resent, nor a delivery whose POST is in flight: clearing its lease would let another session
 * claim it and POST it twice, and its outcome is recorded within the attempt's timeout anyway.
 */
export async function resendDelivery(db: Queryable, accountId: string, id: string): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(
    `UPDATE deliveries SET status = 'pending', terminal_reason = NULL, next_attempt_at = now(), held_since = NULL, leased_until = NULL, lease_owner = NULL, updated_at = now()
     WHERE id = $1 AND account_id = $2 AND ${RESENDABLE} AND ${NOT_IN_FLIGHT}
     RETURNING ${COLUMNS}`,
    [id, accountId],
  );
  if (rows[0]) return rows[0];
  const { rows: existing } = await db.query<{ in_flight: boolean }>(
    `SELECT ${RESENDABLE} AND NOT ${NOT_IN_FLIGHT} AS in_flight FROM deliveries WHERE id = $1 AND account_id = $2`,
    [id, accountId],
  );
  if (!existing[0]) throw notFound('delivery');
  if (existing[0].in_flight) {
    throw new DomainError(409, 'delivery_in_flight', 'an attempt of this delivery is being sent; resend it once its outcome is recorded');
  }
  throw new DomainError(409, 'not_resendable', 'only limited, exhausted or failed deliveries of events can be resent');
}

/** What a bulk recovery may put back to `pending` (DECISIONS, manual resend, in bulk). */
export const RECOVERABLE_STATUSES = ['failed', 'exhausted', 'limited'] as const;
export type RecoverableStatus = (typeof RECOVERABLE_STATUSES)[number];

export interface Recovery {
  accountId: string;
  endpointId: string;
  /** The key's environment: a key never changes the other environment's deliveries. */
  environment: 'live' | 'sandbox';
  /** Inclusive window on the delivery's created_at. */
  since: Date;
  until: Date;
  statuses: readonly RecoverableStatus[];
}

/**
 * Bulk recovery: every delivery of the endpoint in the window with one of `statuses` is due again
 * at once, as `resendDelivery` does for one. Never a test send (no event), never one that ended
 * because its endpoint or event was deleted, never one a session is sending right now (its
 * outcome is about to be recorded; clearing its lease would let it be claimed and POSTed twice).
 * Recovered rows are `pending`, so a repeat finds nothing more. Returns how many.
 */
export async function recoverDeliveries(db: Queryable, r: Recovery): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries SET status = 'pending', terminal_reason = NULL, next_attempt_at = now(), held_since = NULL,
       leased_until = NULL, lease_owner = NULL, updated_at = now()
     WHERE account_id = $1 AND endpoint_id = $2 AND environment = $3 AND event_id IS NOT NULL
       AND created_at >= $4 AND created_at <= $5 AND status = ANY($6::text[])
       AND (status <> 'exhausted' OR terminal_reason IS NULL OR terminal_reason NOT IN ('endpoint_deleted', 'event_deleted'))
       AND ${NOT_IN_FLIGHT}`,
    [r.accountId, r.endpointId, r.environment, r.since, r.until, [...r.statuses]],
  );
  return rowCount ?? 0;
}
