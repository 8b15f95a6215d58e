/**
 * Stores one catalog event exactly once and routes it, in a single transaction: the stream
 * append, the Free-plan count and every endpoint's delivery commit together or not at all.
 */
import { admit } from '../core/admission.js';
import { streamData, type EventDefinition, type StreamContext } from '../core/catalog/index.js';
import { capApplies, FREE_PLAN_MONTHLY_LIMIT, judgeCount, usageMonth } from '../core/free-plan.js';
import { insertEventDeliveries, type NewEventDelivery } from '../db/deliveries.js';
import { getAccount, type ChannelAccount } from '../db/directory.js';
import { listRoutableEndpoints } from '../db/endpoints.js';
import { appendEvent, ensureStreamHead, findEventByKey, type Environment, type EventRow } from '../db/events.js';
import { countReceived, enqueueNotification } from '../db/plan-usage.js';
import { inTransaction, type Db } from '../db/pool.js';

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
  contactRef: string | null;
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
}

/** Thrown inside the transaction when a concurrent twin won the idempotency key. */
class DuplicateEvent extends Error {}

export async function storeEvent(db: Db, e: IngestEvent, now: Date = new Date()): Promise<StoredEvent> {
  const key = e.def.idempotencyKey(e.data, e.refs);
  // Provider redeliveries are common: answer them without taking the stream's lock.
  const known = await findEventByKey(db, e.accountId, e.environment, key);
  if (known) return { created: false, event: known, deliveries: [] };
  try {
    return await inTransaction(db, async (tx) => {
      // Read before the append so the stream's lock is held for as few round trips as possible.
      const endpoints = await listRoutableEndpoints(tx, e.accountId);
      const row = {
        account_id: e.accountId,
        environment: e.environment,
        type: e.def.type,
        idempotency_key: key,
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
        data: e.data,
        stream_data: streamData(e.def, e.data, e.streamContext),
        occurred_at: e.occurredAt,
      };
      let event = await appendEvent(tx, row);
      if (!event) {
        // Either the stream's first event (no head yet) or a twin committed first: a second try tells them apart.
        await ensureStreamHead(tx, e.accountId, e.environment);
        event = await appendEvent(tx, row);
        if (!event) throw new DuplicateEvent();
      }

      const admissions = admit(e.def, e.customerId, endpoints);
      let limited = false;
      if (e.def.countsTowardFreePlan && e.environment === 'live' && admissions.length > 0) {
        limited = await countTowardFreePlan(tx, e.accountId, now);
      }
      const deliveries: NewEventDelivery[] = admissions.map((a) => ({
        endpointId: a.endpointId,
        held: limited ? false : a.held,
        status: limited ? 'limited' : 'pending',
      }));
      await insertEventDeliveries(
        tx,
        { accountId: e.accountId, eventId: event.id, eventType: e.def.type, idempotencyKey: key, environment: e.environment },
        deliveries,
      );
      return { created: true, event, deliveries };
    });
  } catch (err) {
    if (!(err instanceof DuplicateEvent)) throw err;
    const twin = await findEventByKey(db, e.accountId, e.environment, key);
    if (!twin) throw new Error(`event ${key} conflicted but cannot be found`, { cause: err });
    return { created: false, event: twin, deliveries: [] };
  }
}

/** Counts a forwarded received message; true when it is past the month's cap. */
async function countTowardFreePlan(tx: Parameters<Parameters<typeof inTransaction>[1]>[0], accountId: string, now: Date): Promise<boolean> {
  const account = await getAccount(tx, accountId);
  if (!account || !capApplies(account.plan, account.created_at, now)) return false;
  const month = usageMonth(now);
  const count = await countReceived(tx, accountId, month);
  const { limited, warning } = judgeCount(count);
  if (warning) {
    await enqueueNotification(tx, {
      accountId,
      kind: 'free_plan_warning',
      dedupeKey: `free_plan_warning:${accountId}:${month}:${warning}`,
      payload: { to: account.owner_email, month, count: warning, limit: FREE_PLAN_MONTHLY_LIMIT },
    });
  }
  return limited;
}
