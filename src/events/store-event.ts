/**
 * Stores catalog events exactly once and routes them. Concurrent calls for one stream commit
 * together (group commit: src/events/stream-batcher.ts), one commit per batch: the stream append,
 * the Free-plan count and every endpoint's delivery commit together or not at all. A batch is
 * two round trips (known keys and endpoints; events and deliveries in one statement) unless
 * the Free-plan count applies, which takes a transaction. Under load a stream has two batches in
 * flight: the second writes its deliveries (most of a batch's work) while the first holds the
 * stream's head, and takes the head only once the first has it, so cursors keep the calls' order.
 */
import { admit, type Admission, type RoutableEndpoint } from '../core/admission.js';
import { isNormalizedInStream, type EventDefinition, type StreamContext } from '../core/catalog/index.js';
import { capApplies, FREE_PLAN_MONTHLY_LIMIT, judgeCount, usageMonth } from '../core/free-plan.js';
import { insertBatchDeliveries, type NewEventDelivery } from '../db/deliveries.js';
import { getAccount, type Account, type ChannelAccount } from '../db/directory.js';
import {
  appendEvents,
  appendEventsWithDeliveries,
  appendWholeEvents,
  ensureStreamHead,
  findEventsByKeys,
  findKnownKeysAndEndpoints,
  isTakenKey,
  type Environment,
  type EventRow,
  type NewEvent,
} from '../db/events.js';
import { countReceived, enqueueNotification } from '../db/plan-usage.js';
import {
  decidedTransactionOn,
  isDatabaseUnavailable,
  withClient,
  type Db,
  type DbClient,
  type Decided,
  type Queryable,
} from '../db/pool.js';
import { newRowId } from '../db/row-id.js';
import { StreamBatcher, type Turn } from './stream-batcher.js';
import type { DueWakes } from './due-wakes.js';
import { duePayloads } from '../db/due-notifications.js';
import type { AccountId, EndpointId } from '../core/ids.js';

export interface IngestEvent {
  accountId: string;
  environment: Environment;
  def: EventDefinition;
  /** Parsed by def.data: the payload beyond the envelope. */
  data: Record<string, unknown>;
  refs: Record<string, unknown>;
  customerId: string | null;
  channelAccount: Pick<ChannelAccount, 'id' | 'channel' | 'display'> | null;
  externalId: string | null;
  messageResourceId: string | null;
  /** The contact the event is about, when there is one. */
  contactRef: string | null;
  /** Other contacts the event carries (e.g. both owners of an opportunity that changed hands): deleting any removes it. */
  contactRefs?: string[];
  /** The ids a received message's stream item names (with messageResourceId); stored with the event only for those. */
  streamContext: StreamContext;
  occurredAt: Date;
}

/**
 * An event to store, with no origin chain (customer, channel account, message, contact) unless
 * given: a platform event whose payload is all there is, as benchmarks and tests store them.
 */
export function ingestEvent(e: Pick<IngestEvent, 'accountId' | 'environment' | 'def' | 'data'> & Partial<IngestEvent>): IngestEvent {
  return {
    refs: {},
    customerId: null,
    channelAccount: null,
    externalId: null,
    messageResourceId: null,
    contactRef: null,
    streamContext: {},
    occurredAt: new Date(),
    ...e,
  };
}

export interface StoredEvent {
  created: boolean;
  event: EventRow;
  deliveries: NewEventDelivery[];
  /** Its endpoints were woken with its commit (its statement notified them): no wake to add. */
  woken?: boolean;
}

/** Most events in one transaction: bounds a statement's size and how long the stream's lock is held. */
const MAX_BATCH = 500;
/** Tries of a batch whose keys other processes (or the batch in flight before it) keep committing first; each try knows those keys. */
const MAX_TRIES = 5;
/** A batch met keys another process committed first: it is redone. */
const TWINS = 'twins' as const;
/**
 * Batches of one stream in flight at once (per pool). Two: while one holds the stream's head (its
 * events and its commit, in series), the next writes its deliveries; a third would mostly wait
 * for the head (not measured apart: this machine's load drowned it).
 */
const MAX_IN_FLIGHT = 2;
/**
 * Fewest calls waiting that start a second batch of a stream beside a running one (and fewest in
 * each half of a queue split between two): fewer wait for it, as one batch costs less per event.
 */
const MIN_SHARE = 16;
/**
 * Longest a batch waits for its turn while holding what its deliveries locked (their rows, the
 * key of their endpoints): past it, it rolls them back and waits holding nothing. A wait in this
 * process is one Postgres's deadlock detection cannot see (an Account's deletion, or a migration,
 * waiting for those locks while the batch before waits for it); this bounds it, as Postgres's
 * deadlock_timeout (1 s) bounds its own.
 */
const TURN_WAIT_MS = 1_000;

interface Pending {
  e: IngestEvent;
  /** With its id chosen here, so its deliveries can be written before the event itself. */
  row: NewEvent & { id: string };
  now: Date;
  /** The caller's wakes, when it may wake its endpoints in the batch's own statement. */
  wakes?: Pick<DueWakes, 'claimInline'>;
}

/** Queues belong to a pool: calls through different pools (another server, or a test standing in for another process) never share a transaction. */
const batchers = new WeakMap<Db, StreamBatcher<Pending, StoredEvent>>();

/**
 * Stores `e` unless its idempotency key is known, with its deliveries. `created: false` with no
 * deliveries when the key was stored before (or by an earlier call of the same batch). With
 * `wakes`, a batch that commits in one statement while no wake is due to go out names its
 * endpoints to the workers in that statement (`woken`): a lone publish saves a statement, and its
 * workers hear of it at the commit instead of a round trip later.
 */
export async function storeEvent(
  db: Db,
  e: IngestEvent,
  now: Date = new Date(),
  o: { wakes?: Pick<DueWakes, 'claimInline'> } = {},
): Promise<StoredEvent> {
  let batcher = batchers.get(db);
  if (!batcher) {
    batcher = new StreamBatcher((items, turn) => storeBatch(db, items, turn), {
      maxBatch: MAX_BATCH,
      maxInFlight: MAX_IN_FLIGHT,
      minShare: MIN_SHARE,
      failsAll: isDatabaseUnavailable,
    });
    batchers.set(db, batcher);
  }
  // Built before joining the queue: an event that cannot be built fails its own caller only.
  const row = eventRow(e);
  return batcher.submit(`${e.accountId}:${e.environment}`, { e, row, now, wakes: o.wakes });
}

function eventRow(e: IngestEvent): NewEvent & { id: string } {
  return {
    id: newRowId(),
    account_id: e.accountId,
    environment: e.environment,
    type: e.def.type,
    idempotency_key: e.def.idempotencyKey(e.data, e.refs),
    customer_id: e.customerId,
    channel: e.channelAccount?.channel ?? null,
    channel_account_id: e.channelAccount?.id ?? null,
    channel_account: e.channelAccount
      ? { id: e.channelAccount.id, channel: e.channelAccount.channel, display: e.channelAccount.display }
      : null,
    external_id: e.externalId,
    message_id: e.def.hasExternalId && e.channelAccount?.channel === 'chatapp' ? e.externalId : null,
    message_resource_id: e.messageResourceId,
    contact_ref: e.contactRef,
    contact_refs: [...new Set([e.contactRef, ...(e.contactRefs ?? [])].filter((c): c is string => c !== null))],
    data: e.data,
    contact_id: isNormalizedInStream(e.def) ? (e.streamContext.contactId ?? null) : null,
    conversation_id: isNormalizedInStream(e.def) ? (e.streamContext.conversationId ?? null) : null,
    occurred_at: e.occurredAt,
  };
}

/**
 * One batch of one stream, in order: known keys answered without the stream's lock, the rest
 * stored at once. On one connection throughout, taken in the order batches start (the pool
 * serves its waiters in order): a batch waiting for its turn holds one, and the batch it waits
 * for already has its own, so a drained pool cannot leave it waiting for itself.
 */
function storeBatch(db: Db, items: Pending[], turn: Turn): Promise<StoredEvent[]> {
  return withClient(db, (client) => storeBatchOn(client, items, turn));
}

async function storeBatchOn(db: DbClient, items: Pending[], turn: Turn): Promise<StoredEvent[]> {
  const { accountId, environment } = items[0]!.e;
  const keys = items.map((i) => i.row.idempotency_key);
  for (let attempt = 1; ; attempt++) {
    // Provider redeliveries are common: answer them without taking the stream's lock. One round
    // trip also reads the endpoints to route to (as a statement of a transaction would: read committed).
    const facts = await findKnownKeysAndEndpoints(
      db,
      accountId,
      environment,
      [...new Set(keys)],
      items.map((i) => i.e.customerId),
    );
    const known =
      facts.knownKeys.length > 0 ? await findEventsByKeys(db, accountId, environment, facts.knownKeys) : new Map<string, EventRow>();
    // The first call of each new key stores it; its twins later in the batch answer with that event.
    const firsts = new Map<string, number>();
    keys.forEach((k, i) => {
      if (!known.has(k) && !firsts.has(k)) firsts.set(k, i);
    });
    const fresh = [...firsts.values()].map((i) => items[i]!);
    let stored = new Map<string, StoredEvent>();
    if (fresh.length > 0) {
      const last = attempt === MAX_TRIES;
      const appended = await appendBatch(db, fresh, facts.endpoints, turn).catch((err: unknown) => {
        if (isTakenKey(err) && !last) return TWINS;
        throw err;
      });
      // Another process committed one of the keys first: the next try's look-up finds the twins that won.
      if (appended === TWINS && !last) continue;
      if (appended === TWINS) throw new Error(`keys of a batch were taken by other processes ${MAX_TRIES} times in a row`);
      stored = appended;
    }
    return keys.map((key, i) => {
      const earlier = known.get(key);
      if (earlier) return { created: false, event: earlier, deliveries: [] };
      const s = stored.get(key)!;
      return firsts.get(key) === i ? s : { created: false, event: s.event, deliveries: [] };
    });
  }
}

/**
 * Appends events with distinct new keys and routes them; by key. Unless the Free-plan count
 * decides their deliveries' status (which needs a transaction: the count, in cursor order, after
 * the append), the events and their deliveries go in one autocommitted statement, or, while the
 * previous batch of the stream has not taken the head yet, in a transaction that writes the
 * deliveries at once and appends the events after that batch has (appendOverlapped).
 */
async function appendBatch(
  db: DbClient,
  items: Pending[],
  endpoints: RoutableEndpoint[],
  turn: Turn,
): Promise<Map<string, StoredEvent> | typeof TWINS> {
  const { accountId, environment } = items[0]!.e;
  const admissions = items.map((i) => admit(i.e.def, i.e.customerId, endpoints));
  const counted = items.flatMap((i, index) =>
    i.e.def.countsTowardFreePlan && environment === 'live' && admissions[index]!.length > 0 ? [{ index, now: i.now }] : [],
  );
  const account = counted.length > 0 ? await getAccount(db, accountId) : undefined;
  const counting = account ? counted.filter((c) => capApplies(account.plan, account.created_at, c.now)) : [];
  const stored = (events: EventRow[], deliveries: NewEventDelivery[][], woken = false) => {
    const byKey = new Map(events.map((ev) => [ev.idempotency_key, ev]));
    return new Map(
      items.map((item, index) => [
        item.row.idempotency_key,
        { created: true, event: byKey.get(item.row.idempotency_key)!, deliveries: deliveries[index]!, woken },
      ]),
    );
  };
  if (counting.length > 0) {
    await turn.ready;
    const counted = await decidedTransactionOn(db, (tx) => appendCounted(tx, items, admissions, account!, counting, turn));
    return 'commit' in counted ? stored(counted.commit.events, counted.commit.deliveries) : counted.rollback;
  }
  const deliveries = admissions.map((admitted) =>
    admitted.map((a): NewEventDelivery => ({ endpointId: a.endpointId, held: a.held, status: 'pending' })),
  );
  const routed = items.flatMap((i, index) =>
    deliveries[index]!.map((d) => ({
      eventId: i.row.id,
      eventType: i.row.type,
      idempotencyKey: i.row.idempotency_key,
      endpointId: d.endpointId,
      held: d.held,
    })),
  );
  const rows = items.map((i) => i.row);
  if (!turn.isReady()) {
    const overlapped = await decidedTransactionOn(db, (tx) => writeThenAppend(tx, items, deliveries, turn));
    if ('commit' in overlapped) return stored(overlapped.commit, deliveries);
    // Rolled back after waiting TURN_WAIT_MS: wait for the turn holding nothing, then go in one statement.
    await turn.ready;
  }
  const notify = inlineWake(items, routed);
  const events = await appendEventsWithDeliveries(db, rows, routed, notify);
  turn.placed();
  return stored(events, deliveries, notify !== null);
}

/** The batch's wake of its endpoints, to send with its statement when no other wake is due to go out (`DueWakes.claimInline`). */
function inlineWake(items: Pending[], routed: { endpointId: string }[]): { channel: string; payloads: string[] } | null {
  if (routed.length === 0) return null;
  const channel = items.find((i) => i.wakes)?.wakes!.claimInline() ?? null;
  if (!channel) return null;
  const accountId = items[0]!.e.accountId as AccountId;
  const endpoints = [...new Set(routed.map((d) => d.endpointId))];
  return { channel, payloads: duePayloads(endpoints.map((id) => ({ endpointId: id as EndpointId, accountId }))) };
}

/** The batch's deliveries by event, as insertBatchDeliveries takes them. */
function eventDeliveries(items: Pending[], deliveries: NewEventDelivery[][]) {
  return items.map((i, index) => ({
    eventId: i.row.id,
    eventType: i.row.type,
    idempotencyKey: i.row.idempotency_key,
    deliveries: deliveries[index]!,
  }));
}

/**
 * In a transaction: the batch's deliveries written while the previous batch of the stream is still
 * on its way to the head; its events appended once that batch holds the head, so they queue behind
 * its commit and take the cursors after its own. Rolled back (`late`) when that takes TURN_WAIT_MS.
 */
async function writeThenAppend(
  tx: Queryable,
  items: Pending[],
  deliveries: NewEventDelivery[][],
  turn: Turn,
): Promise<Decided<EventRow[], 'late'>> {
  const { accountId, environment } = items[0]!.e;
  await insertBatchDeliveries(tx, { accountId, environment }, eventDeliveries(items, deliveries));
  if (!(await within(turn.ready, TURN_WAIT_MS))) return { rollback: 'late' };
  const events = await appendWholeEvents(
    tx,
    items.map((i) => i.row),
  );
  turn.placed();
  return { commit: events };
}

/** Whether `p` settles within `ms`. */
function within(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  return Promise.race([p.then(() => true), late]).finally(() => clearTimeout(timer));
}

/** The batch in a transaction, with the Free-plan count deciding which deliveries are `limited`. */
async function appendCounted(
  tx: Queryable,
  items: Pending[],
  admissions: Admission[][],
  account: Account,
  counting: { index: number; now: Date }[],
  turn: Turn,
): Promise<Decided<{ events: EventRow[]; deliveries: NewEventDelivery[][] }, typeof TWINS>> {
  const { accountId, environment } = items[0]!.e;
  const rows = items.map((i) => i.row);
  let events = await appendEvents(tx, rows);
  if (events.length === 0) {
    // Either the stream's first events (no head yet) or every key taken meanwhile: a second try tells them apart.
    await ensureStreamHead(tx, accountId, environment);
    events = await appendEvents(tx, rows);
  }
  // A key another process committed meanwhile left a hole in the cursors: roll back (which returns them) and redo.
  if (events.length < rows.length) return { rollback: TWINS };
  // The head is ours until commit: the next batch may queue behind it.
  turn.placed();
  const limited = await countTowardFreePlan(tx, account, counting);
  const deliveries = admissions.map((admitted, index) => {
    const past = limited.has(index);
    return admitted.map((a): NewEventDelivery => ({
      endpointId: a.endpointId,
      held: past ? false : a.held,
      status: past ? 'limited' : 'pending',
    }));
  });
  await insertBatchDeliveries(tx, { accountId, environment }, eventDeliveries(items, deliveries));
  return { commit: { events, deliveries } };
}

/**
 * Counts the batch's forwarded received messages the cap applies to, each once and in cursor
 * order, one statement per month; returns the indexes of those past the month's cap.
 */
async function countTowardFreePlan(tx: Queryable, account: Account, counted: { index: number; now: Date }[]): Promise<Set<number>> {
  const byMonth = new Map<string, number[]>();
  for (const { index, now } of counted) {
    const month = usageMonth(now);
    byMonth.set(month, [...(byMonth.get(month) ?? []), index]);
  }
  const limited = new Set<number>();
  for (const [month, indexes] of byMonth) {
    const total = await countReceived(tx, account.id, month, indexes.length);
    // The n-th counted event of the batch is the month's (total - k + n)-th, as if counted one by one.
    for (const [n, index] of indexes.entries()) {
      const { limited: past, warning } = judgeCount(total - indexes.length + n + 1);
      if (past) limited.add(index);
      if (warning) {
        await enqueueNotification(tx, {
          accountId: account.id,
          kind: 'free_plan_warning',
          dedupeKey: `free_plan_warning:${account.id}:${month}:${warning}`,
          payload: { to: account.owner_email, month, count: warning, limit: FREE_PLAN_MONTHLY_LIMIT },
        });
      }
    }
  }
  return limited;
}
