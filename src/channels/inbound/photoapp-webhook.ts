/**
 * The second channel's direct-message webhook (DECISIONS). Like the primary channel's, each
 * item of a notification stands alone: the valid ones are stored (idempotently), each invalid one
 * is kept in provider_rejections naming it.
 */
import { mapPhotoappWebhook, photoappReceivedPayload, type PhotoappFact } from './photoapp-facts.js';
import { formatIssue, getEventDefinition } from '../../core/catalog/index.js';
import { findChannelAccountByProviderId, type ChannelAccount } from '../../db/directory.js';
import { recordIncomingMessage } from '../../db/messaging.js';
import { logger } from '../../runtime/logger.js';
import { wakeFor, type IngestDeps } from '../../events/deps.js';
import { RejectedNotification } from './inbound-deps.js';
import { planEachItem, recordRejectedItems, splitPhotoappNotification, type NotificationItem } from './notification-items.js';
import { storeEvent } from '../../events/store-event.js';

const def = getEventDefinition('photoapp.message.received')!;

type Planned = { fact: PhotoappFact; ca: ChannelAccount; data: Record<string, unknown> };

/** The events of one item; throws RejectedNotification naming the problem. */
async function planItem(deps: IngestDeps, item: NotificationItem): Promise<Planned[]> {
  let facts: PhotoappFact[];
  try {
    facts = mapPhotoappWebhook(item.body).facts;
  } catch (err) {
    throw new RejectedNotification(item.relocate((err as Error).message));
  }
  const planned: Planned[] = [];
  for (const fact of facts) {
    const ca = await findChannelAccountByProviderId(deps.db, 'photoapp', fact.accountId);
    if (!ca) {
      logger.info({ accountId: fact.accountId }, 'photoapp notification for an account not on this platform');
      continue;
    }
    const parsed = def.data.safeParse(photoappReceivedPayload(fact));
    if (!parsed.success) throw new RejectedNotification(`${item.at}: ${def.type}: ${formatIssue(parsed.error, 'data')}`);
    planned.push({ fact, ca, data: parsed.data });
  }
  return planned;
}

/** Ingests a verified notification body. Returns how many events it stored, new or repeated: every planned one. */
export async function ingestPhotoappNotification(deps: IngestDeps, body: unknown): Promise<number> {
  const { planned, rejected } = await planEachItem(body, splitPhotoappNotification, (item) => planItem(deps, item));

  for (const { fact, ca, data } of planned) {
    // The provider's scoped sender id is the contact's identity on this channel.
    const externalId = String(fact.message.id);
    const rows = await recordIncomingMessage(
      deps.db,
      ca,
      // The provider's scoped sender id is the contact's identity on this channel.
      {
        wa_id: fact.contact.user_id,
        user_id: fact.contact.user_id,
        username: fact.contact.username,
        phone: null,
        profile_name: fact.contact.profile_name,
      },
      { externalId, type: String(fact.message.type), inbound: true },
    );
    const stored = await storeEvent(
      deps.db,
      {
        accountId: ca.account_id,
        environment: ca.environment,
        def,
        data: { ...data, contact: { ...(data.contact as object), metadata: rows.contactMetadata } },
        refs: {},
        customerId: ca.customer_id,
        channelAccount: ca,
        externalId,
        messageResourceId: rows.messageId,
        contactRef: rows.contactId,
        streamContext: { messageResourceId: rows.messageId, contactId: rows.contactId, conversationId: rows.conversationId },
        occurredAt: fact.occurredAt ? new Date(fact.occurredAt) : new Date(),
      },
      deps.now?.(),
    );
    if (stored.created) wakeFor(deps, ca.account_id, stored);
  }
  // After the stores: a failed store answers 500 and the provider retries, which would record them twice.
  await recordRejectedItems(deps.db, 'photoapp', rejected);
  return planned.length;
}
