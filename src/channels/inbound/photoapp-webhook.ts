/**
 * The second channel's direct-message webhook (DECISIONS). Like the primary channel's, each
 * item of a notification stands alone: the valid ones are stored (idempotently), each invalid one
 * is kept in provider_rejections naming it.
 *
 * The answer comes promptly whatever the notification holds: at most MAX_ITEMS items are read, and
 * their writes go together (one statement for the channel accounts, one for contacts,
 * conversations and messages, the events through the stream's group commit, a few hundred per
 * transaction, and one for the rejections) instead of a few round trips per item.
 */
import { mapPhotoappWebhook, photoappReceivedPayload, type PhotoappFact } from './photoapp-facts.js';
import { formatIssue, getEventDefinition } from '../../core/catalog/index.js';
import { toStorableText } from '../../core/storable-text.js';
import { findChannelAccountsByProviderIds, type ChannelAccount } from '../../db/directory.js';
import { recordIncomingMessages, recordProviderRejections } from '../../db/messaging.js';
import { logger } from '../../runtime/logger.js';
import { wakeFor, type IngestDeps } from '../../events/deps.js';
import { RejectedNotification } from './inbound-deps.js';
import { recordRejectedItems, splitPhotoappNotification, type NotificationItem, type RejectedItem } from './notification-items.js';
import { storeEvent } from '../../events/store-event.js';

const def = getEventDefinition('photoapp.message.received')!;

/**
 * Most `messaging` items of one notification that are read. The provider batches far fewer into one
 * notification; a bigger one (a fuzzer's, a misbehaving proxy's) must still get its answer well
 * within the provider's timeout. Items beyond it are not stored: they are kept together in
 * provider_rejections (one row, a notification of them in the provider's shape, which an operator
 * can post again) and the notification is answered 200 for what was stored. Why not a non-2xx: the
 * provider retries a refused notification as it was, just as big, so it would be refused on every
 * retry and even its first items would never be stored.
 */
export const MAX_ITEMS = 1000;

export interface PhotoappIngest {
  /** Events stored, new or repeated: every planned one. */
  events: number;
  /** Items beyond MAX_ITEMS, not read (kept in provider_rejections); 0 for a notification within it. */
  beyondLimit: number;
}

type Planned = { fact: PhotoappFact; ca: ChannelAccount; data: Record<string, unknown> };

/** The facts of one item (pure); throws RejectedNotification naming the problem. */
function factsOf(item: NotificationItem): PhotoappFact[] {
  try {
    return mapPhotoappWebhook(item.body).facts;
  } catch (err) {
    throw new RejectedNotification(item.relocate((err as Error).message));
  }
}

/** What each item makes, with the channel accounts of all of them read in one statement; invalid items apart. */
async function planItems(deps: IngestDeps, items: NotificationItem[]): Promise<{ planned: Planned[]; rejected: RejectedItem[] }> {
  const rejected: RejectedItem[] = [];
  const mapped: { item: NotificationItem; facts: PhotoappFact[] }[] = [];
  for (const item of items) {
    try {
      mapped.push({ item, facts: factsOf(item) });
    } catch (err) {
      if (!(err instanceof RejectedNotification)) throw err;
      rejected.push({ item, reason: err.message });
    }
  }
  const accounts = await findChannelAccountsByProviderIds(
    deps.db,
    'photoapp',
    mapped.flatMap((m) => m.facts.map((f) => f.accountId)),
  );
  const planned: Planned[] = [];
  for (const { item, facts } of mapped) {
    const ofItem: Planned[] = [];
    let reason: string | undefined;
    for (const fact of facts) {
      const ca = accounts.get(fact.accountId);
      if (!ca) {
        logger.info({ accountId: fact.accountId }, 'photoapp notification for an account not on this platform');
        continue;
      }
      const parsed = def.data.safeParse(photoappReceivedPayload(fact));
      if (!parsed.success) {
        reason = `${item.at}: ${def.type}: ${formatIssue(parsed.error, 'data')}`;
        break;
      }
      ofItem.push({ fact, ca, data: parsed.data });
    }
    // An item stands or falls whole.
    if (reason !== undefined) rejected.push({ item, reason });
    else planned.push(...ofItem);
  }
  return { planned, rejected };
}

/** Keeps the items beyond MAX_ITEMS for the operator: one row, a notification of them in the provider's shape. */
async function recordBeyondLimit(deps: IngestDeps, body: Record<string, unknown>, beyond: NotificationItem[]): Promise<void> {
  if (beyond.length === 0) return;
  const reason = `${beyond.length} messaging items from ${beyond[0]!.at} on are beyond the ${MAX_ITEMS} read from one notification: not stored`;
  const rest = { ...body, entry: beyond.map((i) => (i.body as { entry: unknown[] }).entry[0]) };
  await recordProviderRejections(deps.db, [
    { provider: 'photoapp', reason: toStorableText(reason), body: toStorableText(JSON.stringify(rest)) },
  ]);
  logger.warn({ channel: 'photoapp', beyond: beyond.length }, 'photoapp notification over its item limit: the rest kept, not stored');
}

/** Ingests a verified notification body: what it stored, and how many items were beyond MAX_ITEMS. */
export async function ingestPhotoappNotification(deps: IngestDeps, body: unknown): Promise<PhotoappIngest> {
  let items: NotificationItem[];
  try {
    items = splitPhotoappNotification(body);
  } catch (err) {
    throw new RejectedNotification((err as Error).message);
  }
  const beyond = items.slice(MAX_ITEMS);
  const { planned, rejected } = await planItems(deps, items.slice(0, MAX_ITEMS));

  // The provider's scoped sender id is the contact's identity on this channel.
  const rows = await recordIncomingMessages(
    deps.db,
    planned.map(({ fact, ca }) => ({
      ca,
      contact: {
        wa_id: fact.contact.user_id,
        user_id: fact.contact.user_id,
        username: fact.contact.username,
        phone: null,
        profile_name: fact.contact.profile_name,
      },
      externalId: String(fact.message.id),
      type: String(fact.message.type),
    })),
  );
  // Submitted together, in the items' order: the stream's group commit stores them a batch per
  // transaction, with cursors in this order.
  const stored = await Promise.all(
    planned.map(({ fact, ca, data }, i) => {
      const r = rows[i]!;
      return storeEvent(
        deps.db,
        {
          accountId: ca.account_id,
          environment: ca.environment,
          def,
          data: { ...data, contact: { ...(data.contact as object), metadata: r.contactMetadata } },
          refs: {},
          customerId: ca.customer_id,
          channelAccount: ca,
          externalId: String(fact.message.id),
          messageResourceId: r.messageId,
          contactRef: r.contactId,
          streamContext: { contactId: r.contactId, conversationId: r.conversationId },
          occurredAt: fact.occurredAt ? new Date(fact.occurredAt) : new Date(),
        },
        deps.now?.(),
      );
    }),
  );
  stored.forEach((s, i) => {
    if (s.created) wakeFor(deps, planned[i]!.ca.account_id, s);
  });
  // After the stores: a failed store answers 500 and the provider retries, which would record them twice.
  await recordRejectedItems(deps.db, 'photoapp', rejected);
  await recordBeyondLimit(deps, body as Record<string, unknown>, beyond);
  return { events: planned.length, beyondLimit: beyond.length };
}
