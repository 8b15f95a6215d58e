/**
 * A reply to a broadcast may promote the contact's stage (SPEC 6.3, `changed_by: auto`): when
 * the broadcast names a reply stage further down the funnel than the contact's, the contact
 * moves there, through the same path as a PATCH, so the event and its outbox are the same.
 *
 * Exactly once per reply: the reply's message claims the promotion in the transaction that
 * moves the contact, and "further down" is decided under the contact's row lock, so a
 * redelivered reply, or concurrent replies and edits, never promote twice nor move a contact back.
 */
import { claimReplyPromotion, replyStageOf } from '../db/broadcasts.js';
import { inTransaction } from '../db/pool.js';
import type { IngestDeps } from '../events/deps.js';
import { applyContactEdit } from './contact-stage.js';
import { emitContactCrmEvents } from './outbox.js';

export async function promoteOnBroadcastReply(
  deps: IngestDeps,
  channelAccount: { id: string; account_id: string; environment: 'live' | 'sandbox' },
  reply: { messageId: string; contactId: string; repliedToExternalId: string },
): Promise<void> {
  const stageKey = await replyStageOf(deps.db, {
    channelAccountId: channelAccount.id,
    repliedToExternalId: reply.repliedToExternalId,
  });
  if (stageKey === undefined) return;
  const principal = { accountId: channelAccount.account_id, environment: channelAccount.environment };
  const promoted = await inTransaction(deps.db, async (tx) => {
    if (!(await claimReplyPromotion(tx, reply.messageId))) return false;
    return applyContactEdit(tx, principal, { contactId: reply.contactId, stageKey, changedBy: 'auto', onlyForward: true });
  });
  if (promoted) await emitContactCrmEvents(deps, reply.contactId);
}
