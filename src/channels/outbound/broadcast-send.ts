/**
 * Sending a broadcast (DECISIONS "Broadcasts"): the template goes to each recipient through
 * `sendMessage` (src/channels/outbound/send-message.ts), which registers each message, so their statuses flow
 * as status events; the message is tagged with the broadcast so a reply can be traced back to it.
 * A refusal for one recipient is recorded on that recipient (failed, with the reason) and the
 * others go on. A provider that cannot be reached stops the send: the recipient goes back to
 * pending and the caller answers 503; sending again resumes with the recipients left. One that
 * took a recipient's send without answering (504 provider_outcome_unknown) stops it too, and that
 * recipient is failed with the reason, never sent twice.
 */
import { DomainError } from '../../core/domain-error.js';
import {
  claimNextRecipient,
  finishSendingIfDone,
  recordRecipientOutcome,
  tagMessageWithBroadcast,
  type BroadcastRow,
  type RecipientRow,
} from '../../db/broadcasts.js';
import { logger } from '../../runtime/logger.js';
import { OUTCOME_UNKNOWN, sendMessage, type Principal, type SendDeps } from './send-message.js';

/** Recipients sent at once: the provider's pace, not the platform's, bounds a broadcast. */
const CONCURRENCY = 4;

/**
 * Errors that say "not now" rather than "not this recipient": the provider is out of reach, or
 * the recipient's send is still in flight elsewhere.
 */
const isOutage = (err: unknown) => err instanceof DomainError && (err.status === 503 || err.code === 'idempotency_key_in_use');

async function sendOne(deps: SendDeps, principal: Principal, b: BroadcastRow, r: RecipientRow): Promise<void> {
  try {
    const message = await sendMessage(
      deps,
      principal,
      {
        channel_account_id: b.channel_account_id,
        to: r.to_recipient,
        type: 'template',
        template: { name: b.template_name, language: b.template_language, ...(r.components ? { components: r.components } : {}) },
      },
      // One key per recipient: a recipient taken again after a crash finds its message instead of a second send.
      { idempotencyKey: `broadcast:${b.id}:${r.id}` },
    );
    await tagMessageWithBroadcast(deps.db, message.id, b.id);
    await recordRecipientOutcome(deps.db, r.id, { status: 'sent', messageId: message.id });
  } catch (err) {
    // The provider may have sent it: the recipient is not sent again (its key would refuse anyway),
    // and a provider that stops answering stops the broadcast as an outage does.
    if (err instanceof DomainError && err.code === OUTCOME_UNKNOWN) {
      await recordRecipientOutcome(deps.db, r.id, { status: 'failed', reason: `${err.code}: ${err.message}` });
      throw err;
    }
    if (isOutage(err) || !(err instanceof DomainError)) {
      await recordRecipientOutcome(deps.db, r.id, { status: 'pending' });
      throw err;
    }
    await recordRecipientOutcome(deps.db, r.id, { status: 'failed', reason: `${err.code}: ${err.message}` });
  }
}

/** Sends to every pending recipient; resolves when none is left, rejects at the first outage. */
export async function sendBroadcast(deps: SendDeps, principal: Principal, b: BroadcastRow): Promise<void> {
  let stop: unknown;
  const lane = async () => {
    while (stop === undefined) {
      const r = await claimNextRecipient(deps.db, b.id);
      if (!r) return;
      try {
        await sendOne(deps, principal, b, r);
      } catch (err) {
        stop ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  if (stop !== undefined) {
    logger.warn({ broadcastId: b.id, err: (stop as Error).message }, 'broadcast send stopped');
    throw stop;
  }
  await finishSendingIfDone(deps.db, b.id);
}
