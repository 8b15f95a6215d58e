/**
 * The second channel's direct-message webhook (DECISIONS). Like the primary channel's, a
 * notification is validated as a whole before anything is stored, and stored idempotently.
 */
import { mapPhotoappWebhook, photoappReceivedPayload, type PhotoappFact } from '../core/catalog/photoapp-provider.js';
import { formatIssue, getEventDefinition } from '../core/catalog/index.js';
import { findChannelAccountByProviderId, type ChannelAccount } from '../db/directory.js';
import { upsertContact, upsertConversation, upsertInboundMessage } from '../db/messaging.js';
import { logger } from '../runtime/logger.js';
import { RejectedNotification, wakeFor, type IngestDeps } from './deps.js';
import { storeEvent } from './store-event.js';

const def = getEventDefinition('photoapp.message.received')!;

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
    const contact = await upsertContact(deps.db, ca.account_id, ca.id, { wa_id: fact.contact.user_id, user_id: fact.contact.user_id, username: fact.contact.username, phone: null, profile_name: fact.contact.profile_name });
    const conversationId = await upsertConversation(deps.db, ca.account_id, ca.id, contact.id);
    const externalId = String(fact.message.id);
    const message = await upsertInboundMessage(deps.db, { accountId: ca.account_id, channelAccountId: ca.id, contactId: contact.id, conversationId, externalId, type: String(fact.message.type) });
    const stored = await storeEvent(deps.db, {
      accountId: ca.account_id,
      environment: ca.environment,
      def,
      data: { ...data, contact: { ...(data.contact as object), metadata: contact.metadata } },
      refs: {},
      customerId: ca.customer_id,
      channelAccount: ca,
      externalId,
      messageResourceId: message.id,
      contactRef: contact.id,
      streamContext: { messageResourceId: message.id, contactId: contact.id, conversationId },
      occurredAt: fact.occurredAt ? new Date(fact.occurredAt) : new Date(),
    });
    if (stored.created) wakeFor(deps, ca.account_id, stored);
  }
  return planned.length;
}
