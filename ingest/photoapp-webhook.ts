/**
 * The second channel's direct-message webhook (DECISIONS). Like the primary channel's, a
 * notification is validated as a whole before anything is stored, and stored idempotently.
 */
import { mapPhotoappWebhook, photoappReceivedPayload, type PhotoappFact } from './photoapp-provider.js';
import { formatIssue, getEventDefinition } from '../core/catalog/index.js';
import { findChannelAccountByProviderId, type ChannelAccount } from '../db/directory.js';
import { recordIncomingMessage } from '../db/messaging.js';
import { logger } from '../runtime/logger.js';
import { RejectedNotification, wakeFor, type IngestDeps } from './deps.js';
import { storeEvent } from './store-event.js';

const def = getEventDefinition('photoapp.message.received')!;

/** Ingests a verified notification body. Returns how many events it stored, new or repeated: every planned one. */
export async function ingestPhotoappNotification(deps: IngestDeps, body: unknown): Promise<number> {
  let facts: PhotoappFact[];
  try {
    facts = mapPhotoappWebhook(body).facts;
  } catch (err) {
    throw new RejectedNotification((err as Error).message);
  }
  const planned: Array<{ fact: PhotoappFact; ca: ChannelAccount; data: Record<string, unknown> }> = [];
  for (const fact of facts) {
    const ca = await findChannelAccountByProviderId(deps.db, 'photoapp', fact.accountId);
    if (!ca) {
      logger.info({ accountId: fact.accountId }, 'photoapp notification for an account not on this platform');
      continue;
    }
    const parsed = def.data.safeParse(photoappReceivedPayload(fact));
    if (!parsed.success) throw new RejectedNotification(`${def.type}: ${formatIssue(parsed.error, 'data')}`);
    planned.push({ fact, ca, data: parsed.data });
  }

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
  return planned.length;
}
