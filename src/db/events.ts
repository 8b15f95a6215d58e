/** The append-only event stream, per Account and environment. */
import type { EveryFieldListed } from './column-lists.js';
import type { RoutableEndpoint } from '../core/admission.js';
import { getEventDefinition, streamData, streamDataIsPayload } from '../core/catalog/index.js';
import { inJsonbKeyOrder } from '../core/jsonb-order.js';
import { merged } from '../core/merged.js';
import { decodePayload, encodePayload, encodedPayloadsJson } from './payload-bytes.js';
import type { Queryable } from './pool.js';
import { countEndedSql } from './endpoint-hourly-stats.js';

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
  /** Every contact the event carries (contact_ref among them): deleting any of them removes the event. */
  contact_refs: string[];
  /**
   * The payload, stored once (the `payload` column, src/db/payload-bytes.ts): webhook bodies are
   * built from it, the stream item's data derived from it. Keys in jsonb's order when read back.
   */
  data: Record<string, unknown>;
  /**
   * The stream item's data: derived from `data` (streamDataOf) by every function here that returns
   * rows. The column holds it only for events stored before migration 0031 that it could not derive.
   */
  stream_data: Record<string, unknown>;
  /** The contact and conversation a *.message.received item names; null for other types. */
  contact_id: string | null;
  conversation_id: string | null;
  occurred_at: Date;
  created_at: Date;
}

export type NewEvent = Omit<EventRow, 'id' | 'cursor' | 'created_at' | 'stream_data'>;

/** The stream item's data of an event, from its stored payload and ids (src/core/catalog streamData); a type no longer in the catalog keeps its payload. */
export function streamDataOf(
  e: Pick<EventRow, 'type' | 'data' | 'message_resource_id' | 'contact_id' | 'conversation_id'>,
): Record<string, unknown> {
  const def = getEventDefinition(e.type);
  if (!def) return { ...e.data };
  return streamData(def, e.data, { messageResourceId: e.message_resource_id, contactId: e.contact_id, conversationId: e.conversation_id });
}

/**
 * A row as read from the table: its payload decoded, and its stream item's data, the stored copy
 * of an older event or derived, its keys in jsonb's order as the copy had them (stream pages read as before).
 */
export function fromTable(row: TableRow): EventRow {
  // Field by field, not `{ ...rest, data }`: see src/core/merged.ts.
  const data = decodePayload(row.payload);
  return {
    id: row.id,
    account_id: row.account_id,
    environment: row.environment,
    cursor: row.cursor,
    type: row.type,
    idempotency_key: row.idempotency_key,
    customer_id: row.customer_id,
    channel: row.channel,
    channel_account_id: row.channel_account_id,
    channel_account: row.channel_account,
    external_id: row.external_id,
    message_id: row.message_id,
    message_resource_id: row.message_resource_id,
    contact_ref: row.contact_ref,
    contact_refs: row.contact_refs,
    data,
    stream_data: row.stream_data ?? derivedStreamData(row, data),
    contact_id: row.contact_id,
    conversation_id: row.conversation_id,
    occurred_at: row.occurred_at,
    created_at: row.created_at,
  };
}

/** The stream item's data of a row that keeps no copy of it, its keys in jsonb's order as the copy had them. */
function derivedStreamData(
  row: Pick<TableRow, 'type' | 'message_resource_id' | 'contact_id' | 'conversation_id'>,
  data: Record<string, unknown>,
): Record<string, unknown> {
  const derived = streamDataOf({
    type: row.type,
    data,
    message_resource_id: row.message_resource_id,
    contact_id: row.contact_id,
    conversation_id: row.conversation_id,
  });
  return inJsonbKeyOrder(derived) as Record<string, unknown>;
}

/** A row of the table as it is: the payload encoded, `stream_data` null unless an older event kept its copy. */
export type TableRow = Omit<EventRow, 'stream_data' | 'data'> & { payload: Buffer; stream_data: Record<string, unknown> | null };

/**
 * Every column of the table, named: statements prepared once per connection (pg's `name`) list
 * their columns, so a column a later migration adds cannot change a prepared result's type
 * (Postgres refuses that with "cached plan must not change result type").
 */
export const EVENT_COLUMNS = [
  'id',
  'account_id',
  'environment',
  'cursor',
  'type',
  'idempotency_key',
  'customer_id',
  'channel',
  'channel_account_id',
  'channel_account',
  'external_id',
  'message_id',
  'message_resource_id',
  'contact_ref',
  'contact_refs',
  'payload',
  'stream_data',
  'contact_id',
  'conversation_id',
  'occurred_at',
  'created_at',
] as const satisfies readonly (keyof TableRow)[];
const everyEventColumn: EveryFieldListed<TableRow, (typeof EVENT_COLUMNS)[number]> = true;
void everyEventColumn;
/** `columns` (EVENT_COLUMNS unless given) of the table or CTE `alias`, for a select list. */
export const eventColumnsOf = (alias: string, columns: readonly (keyof TableRow)[] = EVENT_COLUMNS): string =>
  columns.map((c) => `${alias}.${c}`).join(', ');

/** Creates the stream's head row on first use; a no-op once it exists. */
export async function ensureStreamHead(tx: Queryable, accountId: string, environment: Environment): Promise<void> {
  await tx.query(`INSERT INTO stream_heads (account_id, environment, last_cursor) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING`, [
    accountId,
    environment,
  ]);
}

/** The stream's events with any of `keys`, by key: one query for a whole batch. */
export async function findEventsByKeys(
  db: Queryable,
  accountId: string,
  environment: Environment,
  keys: string[],
): Promise<Map<string, EventRow>> {
  if (keys.length === 0) return new Map();
  // One probe of the idempotency key index per key, whatever the statistics (see findKnownKeysAndEndpoints).
  const { rows } = await db.query<TableRow>(
    `SELECT f.* FROM unnest($3::text[]) AS w(key)
     CROSS JOIN LATERAL (SELECT * FROM events WHERE (account_id, environment, idempotency_key) >= ($1::uuid, $2::text, w.key)
                         ORDER BY account_id, environment, idempotency_key LIMIT 1) f
     WHERE f.account_id = $1 AND f.environment = $2 AND f.idempotency_key = w.key`,
    [accountId, environment, keys],
  );
  return new Map(rows.map((r) => [r.idempotency_key, fromTable(r)]));
}

/** jsonb values go into jsonb[] as JSON text, so an array payload is not mistaken for a nested SQL array. */
const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));

/**
 * Appends events of one stream at the next cursors, in array order, in one statement: the head
 * moves by N and the events take the N cursors after it. Incrementing the head takes its row
 * lock, held until commit: writers of one stream are serialized, so cursors commit in order and
 * without holes, and a reader that saw cursor N+1 could already see N.
 * Returns the inserted rows. None when the head does not exist yet; fewer than given when an
 * idempotency key is taken (a twin committed meanwhile), which leaves a hole in the cursors: the
 * caller must then roll back, which also returns the cursors.
 */
export async function appendEvents(tx: Queryable, events: (NewEvent & { id?: string })[]): Promise<EventRow[]> {
  if (events.length === 0) return [];
  const { rows } = await tx.query<TableRow>(
    `WITH head AS (
       UPDATE stream_heads SET last_cursor = last_cursor + $3 WHERE account_id = $1 AND environment = $2 RETURNING last_cursor - $3 AS base
     )
     ${INSERT_EVENTS}
     RETURNING *`,
    eventParams(events),
  );
  return rows.map(fromTable);
}

/** Inserts the events of `eventParams` at the cursors after `head.base`, in array order; a taken key is skipped. */
const INSERT_EVENTS = `INSERT INTO events (id, account_id, environment, cursor, type, idempotency_key, customer_id, channel, channel_account_id, channel_account,
                         external_id, message_id, message_resource_id, contact_ref, contact_refs, payload, contact_id, conversation_id, occurred_at)
     SELECT coalesce(e.id, uuidv7()), $1, $2, head.base + e.n, e.type, e.idempotency_key, e.customer_id, e.channel, e.channel_account_id, e.channel_account,
            e.external_id, e.message_id, e.message_resource_id, e.contact_ref,
            -- A list per row travels as a JSON array: unnest would flatten a two-dimensional text[].
            ARRAY(SELECT jsonb_array_elements_text(e.contact_refs)), e.payload, e.contact_id, e.conversation_id, e.occurred_at
     FROM head,
          unnest($4::text[], $5::text[], $6::uuid[], $7::text[], $8::uuid[], $9::jsonb[], $10::text[], $11::text[], $12::uuid[], $13::text[],
                 $14::bytea[], $15::uuid[], $16::timestamptz[], $17::uuid[], $18::jsonb[], $19::uuid[])
            WITH ORDINALITY AS e(type, idempotency_key, customer_id, channel, channel_account_id, channel_account, external_id, message_id,
                                 message_resource_id, contact_ref, payload, contact_id, occurred_at, id, contact_refs, conversation_id, n)
     ORDER BY e.n
     ON CONFLICT (account_id, environment, idempotency_key) DO NOTHING`;

/** $1..$19 of INSERT_EVENTS: the stream, the count, then one array per column. */
function eventParams(events: (NewEvent & { id?: string })[]): unknown[] {
  const { account_id, environment } = events[0]!;
  if (events.some((e) => e.account_id !== account_id || e.environment !== environment)) {
    throw new Error('appendEvents: every event must belong to one stream');
  }
  const column = <K extends keyof NewEvent>(k: K) => events.map((e) => e[k]);
  return [
    account_id,
    environment,
    events.length,
    column('type'),
    column('idempotency_key'),
    column('customer_id'),
    column('channel'),
    column('channel_account_id'),
    events.map((e) => json(e.channel_account)),
    column('external_id'),
    column('message_id'),
    column('message_resource_id'),
    column('contact_ref'),
    events.map((e) => encodePayload(e.data)),
    column('contact_id'),
    column('occurred_at'),
    events.map((e) => e.id ?? null),
    events.map((e) => JSON.stringify(e.contact_refs)),
    column('conversation_id'),
  ];
}

/** A delivery to insert with its event: the event's id (chosen by the caller), the endpoint, and how it starts. */
export interface RoutedDelivery {
  eventId: string;
  eventType: string;
  idempotencyKey: string;
  endpointId: string;
  held: boolean;
}

/**
 * The stream's events among `keys`, and the Account's live endpoints that may route an event of
 * `customerIds` (an endpoint of another Customer never does: src/core/admission.ts), in one round trip.
 */
export async function findKnownKeysAndEndpoints(
  db: Queryable,
  accountId: string,
  environment: Environment,
  keys: string[],
  customerIds: readonly (string | null)[],
): Promise<{ knownKeys: string[]; endpoints: RoutableEndpoint[] }> {
  // One probe of the idempotency key index per key, whatever the statistics say. Written as an
  // equality (`idempotency_key = w.key`, or `= ANY($3)`), the planner could take the cursor index,
  // which leads with the same (account, environment) and is smaller, and filter the whole stream:
  // it does whenever the Account is newer than the table's last ANALYZE (both look like one row),
  // as for any new tenant's first minute (769 buffers and 3-6 ms a call in the 100-endpoint bench;
  // 110,848 buffers for 32 keys at 15,000 events, ingest falling from 4,300 to 380 events/s). A
  // row comparison in the unique index's own order, first row at or after the key, can be served
  // by no other index (4 buffers a key); the outer filter keeps exact matches. So it is also safe
  // to prepare. Endpoints of Customers not in the batch stay out: they cannot route its events.
  const { rows } = await db.query<{ known: string[] } & RoutableEndpoint>({
    name: 'known_keys_and_endpoints',
    text: `SELECT (SELECT ARRAY(SELECT f.idempotency_key FROM unnest($3::text[]) AS w(key)
                          CROSS JOIN LATERAL (SELECT account_id, environment, idempotency_key FROM events
                            WHERE (account_id, environment, idempotency_key) >= ($1::uuid, $2::text, w.key)
                            ORDER BY account_id, environment, idempotency_key LIMIT 1) f
                          WHERE f.account_id = $1 AND f.environment = $2 AND f.idempotency_key = w.key)) AS known,
            e.id, e.customer_id, e.events, e.active, e.health_status
     FROM (SELECT 1) one
     LEFT JOIN endpoints e ON e.account_id = $1 AND e.deleted_at IS NULL AND (e.customer_id IS NULL OR e.customer_id = ANY($4::uuid[]))`,
    values: [accountId, environment, keys, [...new Set(customerIds.filter((c): c is string => c !== null))]],
  });
  return {
    knownKeys: rows[0]!.known,
    endpoints: rows
      .filter((r) => r.id !== null)
      .map(({ id, customer_id, events, active, health_status }) => ({
        id,
        customer_id,
        events,
        active,
        health_status,
      })),
  };
}

/**
 * The head moved by $3 (created on first use) and the events inserted after it, then one row per
 * event: evaluated once, whatever ev holds, the `whole` column divides by zero when fewer events
 * went in than given (a key taken meanwhile), which would leave a hole in the cursors.
 * `after` names a CTE the head must wait for (its row lock is taken once that CTE is done), or none.
 */
const appendWholeSql = (after?: string, alsoSelect = '') => `head AS (
       INSERT INTO stream_heads AS h (account_id, environment, last_cursor)
       SELECT $1::uuid, $2::text, $3::bigint${after ? ` FROM (SELECT count(*) FROM ${after}) written` : ''}
       ON CONFLICT (account_id, environment) DO UPDATE SET last_cursor = h.last_cursor + EXCLUDED.last_cursor
       RETURNING last_cursor - $3 AS base
     ), ev AS (
       ${INSERT_EVENTS}
       RETURNING id, cursor, created_at
     )
     SELECT ev.id, ev.cursor, ev.created_at, 1 / ((SELECT count(*) FROM ev) = $3)::int AS whole${alsoSelect}
     FROM (SELECT 1) one LEFT JOIN ev ON true ORDER BY ev.cursor`;

/**
 * What Postgres chose (cursor, created_at) with what was given, in array order: the payloads do not
 * travel back to be parsed again (so the stream item's data has its keys in the order built).
 */
function withChosen(events: (NewEvent & { id: string })[], rows: Pick<EventRow, 'id' | 'cursor' | 'created_at'>[]): EventRow[] {
  const given = new Map(events.map((e) => [e.id, e]));
  return rows.map(({ id, cursor, created_at }) => {
    const e = given.get(id)!;
    return merged(e, { id, cursor, created_at, stream_data: streamDataOf(e) });
  });
}

/**
 * `notify`'s notifications, sent at the statement's commit (none from a statement that fails). A
 * transaction that notifies commits alone (a cluster-wide lock until its flush), so only a lone
 * publish's wake goes here (`DueWakes.claimInline`). Kept out of the statement's text before the
 * head: pg_stat_activity shows a statement's first 1 KiB, and tests find the head's waits there.
 */
const NOTIFY_AT_COMMIT = `, (SELECT count(pg_notify($23, p)) FROM unnest($24::text[]) AS p) AS notified`;

/**
 * appendEvents and their pending deliveries in ONE autocommitted statement: the head (created
 * on first use), the events and the deliveries commit together or not at all, in one round trip
 * instead of a transaction's six. When a key was taken meanwhile (a twin committed by another
 * process) the statement fails as a whole with division_by_zero, so no cursor is lost: the caller
 * looks again and redoes the batch. Returns the inserted rows, in array order (a stored payload
 * reads back equal, its keys in jsonb's order).
 */
export async function appendEventsWithDeliveries(
  db: Queryable,
  events: (NewEvent & { id: string })[],
  deliveries: RoutedDelivery[],
  /** Notifications sent with the commit: a lone publish's wake of its endpoints. */
  notify: { channel: string; payloads: string[] } | null = null,
): Promise<EventRow[]> {
  if (events.length === 0) return [];
  const position = new Map(events.map((e, i) => [e.id, i + 1]));
  const { rows } = await db.query<Pick<EventRow, 'id' | 'cursor' | 'created_at'>>({
    // Prepared once per connection: planning this statement cost about as much as running it. With
    // notifications it is a statement of its own, so a publish under load runs the one without.
    name: notify ? 'append_events_with_deliveries_notify' : 'append_events_with_deliveries',
    text: `WITH dl AS (
       INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, next_attempt_at)
       SELECT $1, d.endpoint_id, ev.id, ev.type, ev.idempotency_key, $2, 'pending',
              -- A held delivery gets no due time; its hold is started by the endpoint's workflow, on its clock.
              CASE WHEN NOT d.held THEN now() END
       -- The event's id, type and key travel once per event (in the events' arrays) and are joined by the event's position (n).
       FROM unnest($20::int[], $21::uuid[], $22::boolean[]) AS d(n, endpoint_id, held)
       JOIN unnest($17::uuid[], $4::text[], $5::text[]) WITH ORDINALITY AS ev(id, type, idempotency_key, n) ON ev.n = d.n
       RETURNING 1
     ), -- The head's row needs every delivery written first, so the stream's lock is taken after them (most
       -- of a batch's work): other processes writing this stream write theirs meanwhile.
     ${appendWholeSql('dl', notify ? NOTIFY_AT_COMMIT : '')}`,
    values: [
      ...eventParams(events),
      deliveries.map((d) => position.get(d.eventId)!),
      deliveries.map((d) => d.endpointId),
      deliveries.map((d) => d.held),
      ...(notify ? [notify.channel, notify.payloads] : []),
    ],
  });
  return withChosen(events, rows);
}

/**
 * appendEventsWithDeliveries without the deliveries, for a transaction that wrote them before
 * (a batch that wrote its deliveries while the previous batch of its stream held the head): every
 * event or none, the statement failing with division_by_zero when a key was taken meanwhile.
 * Takes the head's row lock, held until the transaction ends.
 */
export async function appendWholeEvents(tx: Queryable, events: (NewEvent & { id: string })[]): Promise<EventRow[]> {
  if (events.length === 0) return [];
  const { rows } = await tx.query<Pick<EventRow, 'id' | 'cursor' | 'created_at'>>({
    name: 'append_whole_events',
    text: `WITH ${appendWholeSql()}`,
    values: eventParams(events),
  });
  return withChosen(events, rows);
}

/** True for the error appendEventsWithDeliveries fails with when a key was taken meanwhile. */
export const isTakenKey = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === '22012';

/** appendEvents for one event: the row, or undefined (no head yet, or the key is taken). */
export async function appendEvent(tx: Queryable, e: NewEvent): Promise<EventRow | undefined> {
  return (await appendEvents(tx, [e]))[0];
}

/** A stream page's item: what the API presents of an event, its times and data as text (SPEC 4.8). */
export type StreamItem = Pick<EventRow, 'id' | 'cursor' | 'type' | 'environment' | 'message_id' | 'external_id' | 'message_resource_id'> & {
  /** `toISOString()` of the event's times, written by Postgres. */
  occurred_at: string;
  created_at: string;
  /** The item's `data` as UTF-8 JSON, byte for byte `JSON.stringify` of `stream_data` as `fromTable` derives it. */
  dataJson: Buffer;
};

/** What a stream item is made of: not the contact references, the customer or the channel account, which every page would read and parse for nothing. */
const STREAM_ITEM_COLUMNS = [
  'id',
  'cursor',
  'type',
  'environment',
  'message_id',
  'external_id',
  'message_resource_id',
  'occurred_at',
  'created_at',
  'payload',
  'stream_data',
  'contact_id',
  'conversation_id',
] as const satisfies readonly (keyof TableRow)[];
type StreamItemRow = Omit<Pick<TableRow, (typeof STREAM_ITEM_COLUMNS)[number]>, 'occurred_at' | 'created_at'> & {
  occurred_at: string;
  created_at: string;
};

/**
 * A timestamp as `Date.prototype.toISOString` writes it (milliseconds truncated, as a parsed Date
 * keeps them), made by Postgres: parsing 200 dates of a page only to write them again cost about a
 * tenth of the page's CPU.
 */
const isoText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`;
const STREAM_ITEM_SELECT = STREAM_ITEM_COLUMNS.map((c) => (c === 'occurred_at' || c === 'created_at' ? isoText(c) : c)).join(', ');

/**
 * The items' data as UTF-8 JSON. For most types it is the payload unchanged, and a compressed
 * payload's text is already what `JSON.stringify` would write of it (its keys in jsonb's order):
 * it is sent as the bytes it inflates to (the page's together, encodedPayloadsJson), without
 * parsing 100 payloads to write them out again (about a third of the read's CPU, measured in one
 * process) or decoding them to a string the response encodes back. Any other row goes the way
 * `fromTable` goes.
 */
function streamItemsDataJson(rows: StreamItemRow[]): Buffer[] {
  const asStored = (row: StreamItemRow) => {
    const def = getEventDefinition(row.type);
    return row.stream_data === null && (!def || streamDataIsPayload(def));
  };
  const stored = encodedPayloadsJson(rows.map((row) => (asStored(row) ? row.payload : undefined)));
  return rows.map((row, i) => {
    if (row.stream_data !== null) return Buffer.from(JSON.stringify(row.stream_data), 'utf8');
    return stored[i] ?? Buffer.from(JSON.stringify(derivedStreamData(row, decodePayload(row.payload))), 'utf8');
  });
}

/** One page of the stream: an index seek on (account, environment, cursor), whatever the position. */
export async function readStream(
  db: Queryable,
  accountId: string,
  environment: Environment,
  after: string,
  limit: number,
): Promise<{ rows: StreamItem[]; hasMore: boolean }> {
  const { rows } = await db.query<StreamItemRow>({
    name: 'read_stream',
    text: `SELECT ${STREAM_ITEM_SELECT} FROM events
     WHERE account_id = $1 AND environment = $2 AND cursor > $3 ORDER BY cursor LIMIT $4`,
    values: [accountId, environment, after, limit + 1],
  });
  const page = rows.slice(0, limit);
  const data = streamItemsDataJson(page);
  // Field by field, not `{ ...rest, dataJson }`: see src/core/merged.ts.
  const items: StreamItem[] = page.map((row, i) => ({
    id: row.id,
    cursor: row.cursor,
    type: row.type,
    environment: row.environment,
    message_id: row.message_id,
    external_id: row.external_id,
    message_resource_id: row.message_resource_id,
    occurred_at: row.occurred_at,
    created_at: row.created_at,
    dataJson: data[i]!,
  }));
  return { rows: items, hasMore: rows.length > limit };
}

/** One event of the Account, in `environment` when given; undefined otherwise (another tenant's id included). */
export async function getEvent(db: Queryable, accountId: string, id: string, environment?: Environment): Promise<EventRow | undefined> {
  const { rows } = await db.query<TableRow>(
    `SELECT * FROM events WHERE id = $1 AND account_id = $2 AND ($3::text IS NULL OR environment = $3)`,
    [id, accountId, environment ?? null],
  );
  return rows[0] && fromTable(rows[0]);
}

/**
 * Removes events in one statement and ends their undelivered deliveries as `event_deleted`.
 * The cursors of other events do not move. A contact's events are those carrying it anywhere
 * (contact_refs), in one environment when given: a key acts in its own environment only.
 */
export async function deleteEventsWhere(
  tx: Queryable,
  where: { accountId: string; environment?: Environment; contactRef?: string; channelAccountId?: string },
): Promise<number> {
  const params: unknown[] = [where.accountId];
  let filter: string;
  if (where.contactRef !== undefined) {
    params.push(where.contactRef);
    filter = 'contact_refs @> ARRAY[$2::text]';
  } else if (where.channelAccountId !== undefined) {
    params.push(where.channelAccountId);
    filter = 'channel_account_id = $2';
  } else throw new Error('deleteEventsWhere needs a filter');
  if (where.environment !== undefined) {
    params.push(where.environment);
    filter += ` AND environment = $${params.length}`;
  }
  const { rows } = await tx.query<{ n: number }>(
    `WITH gone AS (DELETE FROM events WHERE account_id = $1 AND ${filter} RETURNING id),
          -- Runs to completion whether or not the outer query reads it (Postgres runs every data-modifying CTE).
          closed AS (
            UPDATE deliveries SET status = 'exhausted', terminal_reason = 'event_deleted', next_attempt_at = NULL, updated_at = now()
            WHERE event_id IN (SELECT id FROM gone) AND status IN ('pending', 'failed') RETURNING account_id, endpoint_id
          ), ${countEndedSql('closed', 'exhausted')}
     SELECT (SELECT count(*) FROM gone)::int AS n`,
    params,
  );
  return rows[0]!.n;
}
