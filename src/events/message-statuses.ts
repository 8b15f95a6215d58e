/**
 * The one path of a message's status events, whichever way they arrive (the provider's webhook,
 * POST /api/v1/events): statuses move forward only (DECISIONS "Outbound messages"), the message's
 * status follows the emitted ones, and a free-entry-point window's end is recorded (SPEC 6.3).
 */
import { freeEntryPointEndOf, movesForward } from '../core/message-status.js';
import { recordFepExpiry, withMessageStatusLock, type MessageRow } from '../db/messaging.js';
import type { IngestDeps } from './deps.js';
import { storeEvent, type IngestEvent, type StoredEvent } from './store-event.js';

/** What a status came to: its event (new, or the stored one of a repeat), or nothing: behind the message's status, or the message is gone. */
export type StatusOutcome = { stored: StoredEvent } | { behind: string } | { gone: true };

export async function storeMessageStatus(
  deps: IngestDeps,
  message: MessageRow,
  recipientId: string | null,
  event: IngestEvent,
): Promise<StatusOutcome> {
  // Whatever the status's fate: statuses arrive out of order (SPEC 6.1.6), and a `sent` that
  // comes after `delivered` still carries the window's end. greatest() makes the order moot.
  const fepEnd = freeEntryPointEndOf(event.data);
  if (fepEnd) await recordFepExpiry(deps.db, message, recipientId, fepEnd);
  const status = String(event.data.status);
  const outcome = await withMessageStatusLock(deps.db, message.id, async (current, advance): Promise<StatusOutcome> => {
    // A repeat goes on to find its stored event (the idempotency key): it emits nothing new.
    if (current !== status && !movesForward(current, status)) return { behind: current ?? 'queued' };
    // Stored before the advance commits: a crash in between leaves the status behind, and a retry finishes it.
    const stored = await storeEvent(deps.db, event, deps.now?.());
    if (current !== status) await advance(status);
    return { stored };
  });
  // Deleted (with its contact) since it was found: its statuses emit nothing, as an unknown message's.
  return outcome ?? { gone: true };
}
