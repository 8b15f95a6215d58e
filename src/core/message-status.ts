import { unixSecondsToIso } from './catalog/time.js';
import { isRecord } from './is-record.js';
/**
 * Statuses of an outbound message move forward only (DECISIONS "Outbound messages"):
 * queued → sent → delivered → read, and failed at any point. A late or repeated status
 * (delivered after read, anything after failed) changes nothing and emits nothing.
 */
const RANK: Record<string, number> = { accepted: 0, queued: 0, sent: 1, delivered: 2, read: 3 };

/** True when `next` moves a message in status `current` forward (null: not sent yet). */
export function movesForward(current: string | null | undefined, next: string): boolean {
  if (current === 'failed') return false;
  if (next === 'failed') return true;
  const to = RANK[next];
  return to !== undefined && to > (RANK[current ?? 'queued'] ?? 0);
}

/**
 * The end of the free-entry-point window a status payload reports (SPEC 6.3): in `sent`, the
 * conversation's expiration_timestamp when pricing.type says free_entry_point (before graph API
 * 24 every conversation carried an expiration, so the conversation alone does not prove a
 * window). ISO time, or null. Read from the payload so both ingresses (provider, publish) agree.
 */
export function freeEntryPointEndOf(data: Record<string, unknown>): string | null {
  const pricing = isRecord(data.pricing) ? data.pricing : undefined;
  if (data.status !== 'sent' || pricing?.type !== 'free_entry_point') return null;
  return unixSecondsToIso(isRecord(data.conversation) ? data.conversation.expiration_timestamp : undefined);
}
