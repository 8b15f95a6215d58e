/**
 * A reply to a broadcast may promote the contact's stage (SPEC 6.3, `changed_by: auto`): when
 * the broadcast names a reply stage further down the funnel than the contact's, the contact
 * moves there, through the same path as a PATCH, so the event and its outbox are the same.
 */
import { replyPromotion } from '../db/broadcasts.js';
import type { IngestDeps } from '../events/deps.js';
import { changeContactStage } from './contact-stage.js';

export async function promoteOnBroadcastReply(
  deps: IngestDeps,
  channelAccount: { id: string; account_id: string; environment: 'live' | 'sandbox' },
  reply: { contactId: string; repliedToExternalId: string },
): Promise<void> {
  const stageKey = await replyPromotion(deps.db, {
    channelAccountId: channelAccount.id,
    repliedToExternalId: reply.repliedToExternalId,
    contactId: reply.contactId,
  });
  if (stageKey === undefined) return;
  await changeContactStage(
    deps,
    { accountId: channelAccount.account_id, environment: channelAccount.environment },
    { contactId: reply.contactId, stageKey, changedBy: 'auto' },
  );
}
