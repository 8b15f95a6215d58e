import { z } from 'zod';
import { automationEvents } from './automation.js';
import { chatappAccountEvents } from './chatapp-account.js';
import { chatappMessageEvents } from './chatapp-messages.js';
import { crmEvents } from './crm.js';
import { photoappEvents } from './photoapp.js';
import { testEvents } from './test-event.js';
import { isRecord } from '../is-record.js';
import { unixSecondsToIso } from './time.js';
import type { EventDefinition } from './types.js';

export type { Channel, EventDefinition } from './types.js';
export { CHANNELS } from './types.js';
export { canonicalJson, sha256Hex } from './canonical-json.js';
export { formatIssue, formatPath } from './issues.js';
export { unixSecondsToIso } from './time.js';
export { STATUS_VALUES, type MessageStatus } from './chatapp-messages.js';
export { isUsableTier } from './chatapp-account.js';
export { CONSENT_EVIDENCE_MAX } from './crm.js';

/** Catalog order: SPEC 6.2 table, then the channel events of DECISIONS, then webhook.test. */
export const EVENT_TYPES: readonly EventDefinition[] = Object.freeze([
  ...chatappMessageEvents,
  ...chatappAccountEvents,
  ...crmEvents,
  ...automationEvents,
  ...photoappEvents,
  ...testEvents,
]);

const byType = new Map(EVENT_TYPES.map((d) => [d.type, d]));

export function getEventDefinition(type: string): EventDefinition | undefined {
  return byType.get(type);
}

/** JSON Schema of the payload as receivers see it (defaults applied). */
export function eventJsonSchema(def: EventDefinition): unknown {
  return z.toJSONSchema(def.data);
}

/**
 * Does an endpoint subscribed to `subscribed` categories get events of `def`? (SPEC 2.2)
 * Plain category match: webhook.test has no category and never routes; app_messages and
 * account are opt-in, so an empty list gets neither.
 */
export function routesTo(def: EventDefinition, subscribed: readonly string[]): boolean {
  return def.category !== null && subscribed.includes(def.category);
}

/** The platform's ids a received message's stream item names (SPEC 2.4); other items name none. */
export interface StreamContext {
  contactId?: string | null;
  conversationId?: string | null;
}

/** Whether the stream item of `def` is normalised with a StreamContext (and the message resource's id). */
export const isNormalizedInStream = (def: Pick<EventDefinition, 'type'>): boolean => def.type.endsWith('.message.received');

/**
 * The stream item's `data` for a stored event (SPEC 2.4, 6.3): derived from the payload each time
 * it is read, so the payload is stored once. Keys of objects it builds come in this code's order:
 * src/db/events.ts puts what it reads back in jsonb's.
 */
export function streamData(
  def: Pick<EventDefinition, 'type' | 'category'>,
  data: Record<string, unknown>,
  ctx: StreamContext & { messageResourceId?: string | null },
): Record<string, unknown> {
  if (isNormalizedInStream(def)) return normalizeReceived(data, ctx);
  if (omitsNullsInStream(def)) return Object.fromEntries(Object.entries(data).filter(([, v]) => v !== null && v !== undefined));
  return { ...data };
}

/** In the stream, null fields of status events are omitted. */
const omitsNullsInStream = (def: Pick<EventDefinition, 'type' | 'category'>): boolean =>
  def.category === 'statuses' && def.type.startsWith('chatapp.message.');

/** Whether `streamData` of `def` is its payload unchanged (every type but the normalised and the status ones). */
export const streamDataIsPayload = (def: Pick<EventDefinition, 'type' | 'category'>): boolean =>
  !isNormalizedInStream(def) && !omitsNullsInStream(def);

function normalizeReceived(
  data: Record<string, unknown>,
  ctx: StreamContext & { messageResourceId?: string | null },
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...data };
  const message = data['message'];
  if (isRecord(message)) {
    const type = typeof message['type'] === 'string' ? message['type'] : null;
    const normalized: Record<string, unknown> = {
      id: message['id'] ?? null,
      external_id: message['external_id'] ?? message['id'] ?? null,
      resource_id: ctx.messageResourceId ?? null,
      conversation_id: ctx.conversationId ?? null,
      contact_id: ctx.contactId ?? null,
      direction: 'inbound',
      type,
      status: 'received',
      content: type !== null ? (message[type] ?? null) : null,
      context: message['context'] ?? null,
      // Provider unix seconds become ISO like every other stream time; an unreadable value stays null.
      timestamp: normalizeTime(message['timestamp']),
    };
    // Keeps click-to-chat ad attribution, which the stream is the recovery path for.
    if (message['referral'] !== undefined) normalized['referral'] = message['referral'];
    out['message'] = normalized;
  }
  const contact = data['contact'];
  if (isRecord(contact)) {
    const { id: ownId, ...rest } = contact;
    out['contact'] = { id: ctx.contactId ?? ownId ?? null, ...rest };
  }
  return out;
}

const isoTime = z.iso.datetime({ offset: true });

function normalizeTime(value: unknown): string | null {
  if (typeof value === 'string' && isoTime.safeParse(value).success) return value;
  return unixSecondsToIso(value);
}
