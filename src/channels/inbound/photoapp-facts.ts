/**
 * Maps the provider's direct-message webhook (Instagram Messaging shape) to photoapp facts
 * (DECISIONS "Channel events beyond the catalog table"). Pure: the caller verifies the signature,
 * resolves the directory and stores events.
 *
 * Each `entry[].messaging[]` item carrying a `message` from a contact becomes one `message` fact,
 * with the message already in the catalog's raw-message shape (shared with chatapp, so stream
 * normalization is the same): `{ id, external_id, from, timestamp, type, [type]: content,
 * context?, referral? }`. The type is `quick_reply` when a quick reply is present, else the first
 * attachment's type (content = its payload), else `text` (content `{ body }`).
 *
 * No fact, counted in `ignored`: echoes (what the business itself sent), deleted and unsupported
 * messages, messages sent by the business account itself, messages with no readable content,
 * items without `message` (reactions, reads, postbacks, referrals...), `standby` items and
 * `changes` of other fields, and an entry that carries none of these.
 *
 * A malformed envelope, or a contact's message missing `mid` / `sender.id`, throws
 * ProviderPayloadError naming the field.
 */
import { z } from 'zod';
import { ProviderPayloadError, parseProviderPart } from '../../core/catalog/issues.js';
import { unixSecondsToIso } from '../../core/catalog/time.js';
import { providerTime } from '../../core/catalog/types.js';

// ---- envelope and item schemas (lenient on unknown fields) ----

const nonEmpty = z.string().min(1);

export const photoappEntrySchema = z.looseObject({
  id: nonEmpty,
  time: providerTime.optional(),
  messaging: z.array(z.unknown()).optional(),
  standby: z.array(z.unknown()).optional(),
  changes: z.array(z.unknown()).optional(),
});
export const photoappEnvelopeSchema = z.looseObject({
  object: z.literal('instagram'),
  entry: z.array(photoappEntrySchema),
});
export type PhotoappEnvelope = z.infer<typeof photoappEnvelopeSchema>;

/** Only the presence of `message` decides whether an item is read further. */
const itemSchema = z.looseObject({ message: z.unknown().optional() });

/** Flags are read before anything is required: an echo or a deletion is ignored, not validated. */
const flagsSchema = z.looseObject({
  is_echo: z.unknown().optional(),
  is_deleted: z.unknown().optional(),
  is_unsupported: z.unknown().optional(),
});

const senderSchema = z.looseObject({ sender: z.looseObject({ id: nonEmpty }), timestamp: z.unknown().optional() });

const attachmentSchema = z.looseObject({ type: nonEmpty, payload: z.looseObject({}).nullish() });

const messageInSchema = z.looseObject({
  mid: nonEmpty,
  text: z.string().optional(),
  attachments: z.array(attachmentSchema).optional(),
  quick_reply: z.looseObject({ payload: z.string() }).optional(),
  reply_to: z.looseObject({ mid: z.string().optional(), story: z.looseObject({}).optional() }).optional(),
  referral: z.looseObject({}).optional(),
});

/** Keys of the raw-message shape an attachment type must not overwrite. */
const RESERVED_TYPES: ReadonlySet<string> = new Set([
  'id',
  'external_id',
  'from',
  'timestamp',
  'type',
  'context',
  'referral',
  'attachments',
]);

// ---- facts ----

export interface PhotoappContact {
  /** the provider's scoped id of the sender (IGSID) */
  user_id: string;
  /** not in this webhook */
  username: string | null;
  /** not in this webhook */
  profile_name: string | null;
}

export type PhotoappFact = {
  kind: 'message';
  /** entry.id: the receiving business account */
  accountId: string;
  /** already in the catalog's raw-message shape */
  message: Record<string, unknown>;
  contact: PhotoappContact;
  occurredAt: string | null;
};

/** Provider times here are unix milliseconds (number or numeric string); null when unreadable. */
function millis(value: unknown): number | null {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
  return Number.isFinite(n) && n > 0 && unixSecondsToIso(n / 1000) !== null ? n : null;
}

export function mapPhotoappWebhook(body: unknown): { facts: PhotoappFact[]; ignored: number } {
  const envelope = parseProviderPart(photoappEnvelopeSchema, body, '');
  const facts: PhotoappFact[] = [];
  let ignored = 0;

  envelope.entry.forEach((entry, ei) => {
    const messaging = entry.messaging ?? [];
    // standby: messages while another app holds the thread; changes: other subscribed fields.
    const others = (entry.standby?.length ?? 0) + (entry.changes?.length ?? 0);
    ignored += others;
    if (messaging.length === 0 && others === 0) ignored++;
    messaging.forEach((raw, mi) => {
      const fact = messagingFact(raw, `entry[${ei}].messaging[${mi}]`, entry.id);
      if (fact) facts.push(fact);
      else ignored++;
    });
  });

  return { facts, ignored };
}

function messagingFact(raw: unknown, at: string, accountId: string): PhotoappFact | null {
  const item = parseProviderPart(itemSchema, raw, at);
  if (item.message === undefined) return null; // reaction, read, postback, referral...
  const flags = parseProviderPart(flagsSchema, item.message, `${at}.message`);
  if (flags.is_echo === true || flags.is_deleted === true || flags.is_unsupported === true) return null;

  const m = parseProviderPart(messageInSchema, item.message, `${at}.message`);
  const { sender, timestamp } = parseProviderPart(senderSchema, raw, at);
  if (sender.id === accountId) return null; // the business account itself

  const rawMessage = item.message as Record<string, unknown>;
  const content = messageContent(m, at);
  if (content === null) return null; // nothing readable (e.g. an empty message object)

  const ms = millis(timestamp);
  const message: Record<string, unknown> = {
    id: m.mid,
    external_id: m.mid,
    from: sender.id,
    ...(ms !== null ? { timestamp: String(Math.floor(ms / 1000)) } : {}),
    type: content.type,
    [content.type]: content.value,
  };
  if (content.attachments !== undefined) message['attachments'] = content.attachments;
  if (m.reply_to !== undefined) {
    const context: Record<string, unknown> = {};
    if (typeof m.reply_to.mid === 'string' && m.reply_to.mid.length > 0) context['id'] = m.reply_to.mid;
    if (m.reply_to.story !== undefined) context['story'] = (rawMessage['reply_to'] as Record<string, unknown>)['story'];
    if (Object.keys(context).length > 0) message['context'] = context;
  }
  if (m.referral !== undefined) message['referral'] = rawMessage['referral']; // untouched

  return {
    kind: 'message',
    accountId,
    message,
    contact: { user_id: sender.id, username: null, profile_name: null },
    occurredAt: ms !== null ? unixSecondsToIso(ms / 1000) : null,
  };
}

function messageContent(
  m: z.output<typeof messageInSchema>,
  at: string,
): { type: string; value: Record<string, unknown>; attachments?: unknown[] } | null {
  if (m.quick_reply !== undefined) return { type: 'quick_reply', value: { payload: m.quick_reply.payload, text: m.text ?? null } };
  const first = m.attachments?.[0];
  if (first !== undefined) {
    if (RESERVED_TYPES.has(first.type))
      throw new ProviderPayloadError(`${at}.message.attachments[0].type`, `reserved type "${first.type}"`);
    const value: Record<string, unknown> = { ...(first.payload ?? {}) };
    // A caption sent with media stays with it, as in chatapp's media content.
    if (typeof m.text === 'string' && m.text.length > 0 && value['caption'] === undefined) value['caption'] = m.text;
    const attachments = m.attachments!;
    return { type: first.type, value, ...(attachments.length > 1 ? { attachments } : {}) };
  }
  if (typeof m.text === 'string') return { type: 'text', value: { body: m.text } };
  return null;
}

// ---- payload builder (output validates against the catalog schema) ----

/** `data` of photoapp.message.received; its idempotency key is the message id (mid). */
export function photoappReceivedPayload(fact: PhotoappFact): Record<string, unknown> {
  return { account_id: fact.accountId, message: { ...fact.message }, contact: { ...fact.contact } };
}
