/**
 * A send registers its message right after the provider's answer (src/channels/outbound/send-message.ts),
 * but the provider's first status can outrun that registration by milliseconds. A fresh status
 * of a message not registered (yet) waits briefly for it before it is judged a status of an
 * unknown message (no event, SPEC 6.4). Old statuses, and statuses of messages never sent by
 * the platform once the wait is over, are not held up further.
 */
import { findRegisteredMessage, type MessageRow } from '../../db/messaging.js';
import type { Queryable } from '../../db/pool.js';

/** A status whose provider time is within this of now may belong to a send still registering. */
export const FRESH_STATUS_MS = 30_000;
const WAITS_MS = [100, 250, 500];

export async function awaitRegisteredMessage(
  db: Queryable,
  channelAccountId: string,
  externalId: string,
  occurredAt: string | null,
): Promise<MessageRow | undefined> {
  const found = await findRegisteredMessage(db, channelAccountId, externalId);
  // The system clock, not an injected one: this is about real time passing between two requests.
  if (found || !occurredAt || Math.abs(Date.now() - Date.parse(occurredAt)) > FRESH_STATUS_MS) return found;
  for (const wait of WAITS_MS) {
    await new Promise((r) => setTimeout(r, wait));
    const message = await findRegisteredMessage(db, channelAccountId, externalId);
    if (message) return message;
  }
  return undefined;
}
