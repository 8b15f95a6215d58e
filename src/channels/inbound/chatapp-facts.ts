/**
 * Maps the provider's webhook (WhatsApp Cloud API shape) to provider facts (DECISIONS "Provider ingress").
 * Pure: the caller verifies the signature, resolves the directory and stores events.
 *
 * Handled fields:
 * - `messages`: value.messages[] become `message` facts, value.statuses[] become `status` facts
 *   (only sent/delivered/read/failed; deleted, warning and anything else produce nothing).
 *   Messages of type `edit` / `revoke` are the Cloud API's coexistence notifications of the
 *   contact's own edits and deletions; they become `edited` / `revoked` with actor `contact`,
 *   never a received message.
 * - `smb_message_echoes`: value.message_echoes[] are what staff did in the business app. The Cloud
 *   API reports staff edits and deletions there too, as echoes of type `edit` / `revoke`; those
 *   become `edited` / `revoked` with actor `business`, every other echo becomes `echo`.
 * - `account_update`, `phone_number_quality_update`.
 * Every other field is acknowledged and counted in `ignored`, as is each item that yields no fact.
 *
 * A malformed envelope, or a handled item missing an identifier it needs (metadata.phone_number_id,
 * message id/type, status id/status...), throws ProviderPayloadError naming the field.
 */
import { z } from 'zod';
import { isUsableTier } from '../../core/catalog/chatapp-account.js';
import type { MessageStatus } from '../../core/catalog/chatapp-messages.js';
import { ProviderPayloadError, parseProviderPart } from '../../core/catalog/issues.js';

export { ProviderPayloadError };
import { unixSecondsToIso } from '../../core/catalog/time.js';
import { conversationSchema, pricingSchema, providerErrorSchema, providerTime, referralSchema } from '../../core/catalog/types.js';

// ---- envelope and value schemas (lenient on unknown fields) ----

const nonEmpty = z.string().min(1);

export const providerChangeSchema = z.looseObject({ field: nonEmpty, value: z.unknown() });
export const providerEntrySchema = z.looseObject({
  id: nonEmpty,
  time: providerTime.optional(),
  changes: z.array(providerChangeSchema),
});
export const providerEnvelopeSchema = z.looseObject({
  object: z.literal('whatsapp_business_account'),
  entry: z.array(providerEntrySchema),
});
export type ProviderEnvelope = z.infer<typeof providerEnvelopeSchema>;

const metadataSchema = z.looseObject({ phone_number_id: nonEmpty, display_phone_number: z.string().optional() });

const contactInSchema = z.looseObject({
  wa_id: z.string().optional(),
  user_id: z.string().optional(),
  username: z.string().optional(),
  profile: z.looseObject({ name: z.string().optional(), username: z.string().optional() }).optional(),
});
type ContactIn = z.infer<typeof contactInSchema>;

const messageInSchema = z.looseObject({
  id: nonEmpty,
  type: nonEmpty,
  from: z.string().optional(),
  from_user_id: z.string().optional(),
  timestamp: providerTime.optional(),
  context: z.looseObject({ id: z.string().optional(), from: z.string().optional() }).optional(),
  referral: referralSchema.optional(),
});

const echoInSchema = messageInSchema.extend({ to: z.string().optional(), to_user_id: z.string().optional() });

const editInSchema = z.looseObject({ original_message_id: nonEmpty, message: z.looseObject({}) });
const revokeInSchema = z.looseObject({ original_message_id: nonEmpty });

const statusInSchema = z.looseObject({
  id: nonEmpty,
  status: nonEmpty,
  timestamp: providerTime.optional(),
  recipient_id: z.string().optional(),
  recipient_user_id: z.string().optional(),
  pricing: pricingSchema.optional(),
  conversation: conversationSchema.optional(),
  errors: z.array(providerErrorSchema).optional(),
});

const messagesValueSchema = z.looseObject({
  metadata: metadataSchema,
  contacts: z.array(contactInSchema).optional(),
  messages: z.array(z.unknown()).optional(),
  statuses: z.array(z.unknown()).optional(),
});

const echoesValueSchema = z.looseObject({
  metadata: metadataSchema,
  contacts: z.array(contactInSchema).optional(),
  message_echoes: z.array(z.unknown()).optional(),
});

const restrictionListSchema = z.array(z.looseObject({ restriction_type: nonEmpty, expiration: providerTime.optional() }));

const accountUpdateValueSchema = z.looseObject({
  event: nonEmpty,
  ban_info: z.looseObject({ waba_ban_state: z.string().optional() }).optional(),
  restriction_info: restrictionListSchema.optional(),
  // Some API versions and SDKs name the list `restrictions`.
  restrictions: restrictionListSchema.optional(),
  violation_info: z.looseObject({ violation_type: z.string().optional() }).optional(),
  waba_info: z.looseObject({ waba_id: z.string().optional() }).optional(),
});

const qualityValueSchema = z.looseObject({
  phone_number_id: z.string().optional(),
  display_phone_number: z.string().optional(),
  event: z.string().optional(),
  messaging_limit_tier: z.unknown().optional(),
  max_daily_conversations_per_business: z.unknown().optional(),
  current_limit: z.unknown().optional(),
});

// ---- facts ----

export interface ProviderContact {
  wa_id: string;
  user_id: string | null;
  username: string | null;
  phone: string | null;
  profile_name: string | null;
}

export type EditActor = 'business' | 'contact';

export type ProviderFact =
  | {
      kind: 'message';
      wabaId: string;
      phoneNumberId: string;
      displayPhoneNumber: string | null;
      /** raw, as sent */
      message: Record<string, unknown>;
      contact: ProviderContact;
      occurredAt: string | null;
    }
  | {
      kind: 'status';
      wabaId: string;
      phoneNumberId: string;
      status: MessageStatus;
      messageId: string;
      recipientId: string | null;
      pricing: Record<string, unknown> | null;
      conversation: Record<string, unknown> | null;
      errors: unknown[] | null;
      occurredAt: string | null;
    }
  | {
      kind: 'echo';
      wabaId: string;
      phoneNumberId: string;
      displayPhoneNumber: string | null;
      /** raw echo as sent (from = business number, to = contact) */
      message: Record<string, unknown>;
      contact: ProviderContact;
      occurredAt: string | null;
    }
  | {
      kind: 'edited';
      wabaId: string;
      phoneNumberId: string;
      actor: EditActor;
      /** wamid of the edited message */
      messageId: string;
      /** wamid of the edit notification itself */
      notificationId: string;
      /** new content: a provider message object (type + content, context) */
      message: Record<string, unknown>;
      contact: ProviderContact | null;
      /** also the occurrence time; edits with an unreadable time produce no fact (the key needs it) */
      editedAt: string;
    }
  | {
      kind: 'revoked';
      wabaId: string;
      phoneNumberId: string;
      actor: EditActor;
      messageId: string;
      notificationId: string;
      contact: ProviderContact | null;
      revokedAt: string;
    }
  | { kind: 'account_update'; wabaId: string; data: AccountUpdateData }
  | { kind: 'quality_update'; wabaId: string; data: QualityUpdateData };

export interface AccountUpdateData {
  waba_id: string;
  account_event: string;
  ban_state: string | null;
  restrictions: { restriction_type: string; expiration: string | null }[] | null;
  violation_type?: string;
  occurred_at: string | null;
}

export interface QualityUpdateData {
  waba_id: string;
  phone_number_id: string | null;
  display_phone_number: string | null;
  messaging_limit_tier: string;
  occurred_at: string | null;
}

const DELIVERABLE_STATUSES: ReadonlySet<string> = new Set<MessageStatus>(['sent', 'delivered', 'read', 'failed']);

const present = (v: string | undefined | null): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const isPhone = (v: string | null): v is string => v !== null && /^\+?\d{5,15}$/.test(v);

/**
 * Contact of an item: value.contacts[] matched by wa_id (or user_id for BSUID-only senders);
 * a lone contact is used only when the item names no sender. Null when no identity is known.
 */
function contactFor(contacts: ContactIn[], waId: string | null, userId: string | null): ProviderContact | null {
  const match =
    contacts.find((c) => (waId !== null && c.wa_id === waId) || (userId !== null && c.user_id === userId)) ??
    (waId === null && userId === null && contacts.length === 1 ? contacts[0] : undefined);
  const wa = present(match?.wa_id) ?? waId ?? present(match?.user_id) ?? userId;
  if (wa === null) return null;
  const phoneCandidate = [present(match?.wa_id), waId].find(isPhone) ?? null;
  return {
    wa_id: wa,
    user_id: present(match?.user_id) ?? userId,
    username: present(match?.profile?.username) ?? present(match?.username),
    phone: phoneCandidate,
    profile_name: present(match?.profile?.name),
  };
}

export function mapChatappWebhook(body: unknown): { facts: ProviderFact[]; ignored: number } {
  const envelope = parseProviderPart(providerEnvelopeSchema, body, '');
  const facts: ProviderFact[] = [];
  let ignored = 0;
  envelope.entry.forEach((entry, ei) => {
    entry.changes.forEach((change, ci) => {
      const handler = Object.hasOwn(FIELD_HANDLERS, change.field) ? FIELD_HANDLERS[change.field] : undefined;
      if (!handler) {
        ignored++;
        return;
      }
      const out = handler(entry, change.value, `entry[${ei}].changes[${ci}].value`);
      facts.push(...out.facts);
      // A field without items (account_update...) that yields nothing counts once; else each item that yields nothing.
      ignored += out.items === 0 ? (out.facts.length === 0 ? 1 : 0) : out.items - out.facts.length;
    });
  });
  return { facts, ignored };
}

type Entry = ProviderEnvelope['entry'][number];
/** What one change yields: its facts, and how many items it carried (0 for a field that is one item). */
type FieldHandler = (entry: Entry, value: unknown, at: string) => { facts: ProviderFact[]; items: number };

/** The handled fields of a change; any other field is acknowledged and ignored. */
const FIELD_HANDLERS: Readonly<Record<string, FieldHandler>> = {
  messages: (entry, raw, at) => {
    const value = parseProviderPart(messagesValueSchema, raw, at);
    const messages = messageListFacts(CONTACT_MESSAGES, entry, value, value.messages ?? [], at);
    const statuses = statusFacts(entry, value, value.statuses ?? [], at);
    return { facts: [...messages, ...statuses], items: (value.messages ?? []).length + (value.statuses ?? []).length };
  },
  smb_message_echoes: (entry, raw, at) => {
    const value = parseProviderPart(echoesValueSchema, raw, at);
    const list = value.message_echoes ?? [];
    return { facts: messageListFacts(BUSINESS_ECHOES, entry, value, list, at), items: list.length };
  },
  account_update: (entry, raw, at) => ({
    facts: [accountUpdateFact(entry, parseProviderPart(accountUpdateValueSchema, raw, at))],
    items: 0,
  }),
  phone_number_quality_update: (entry, raw, at) => {
    const fact = qualityFact(entry, parseProviderPart(qualityValueSchema, raw, at));
    return { facts: fact ? [fact] : [], items: 0 };
  },
};

const QUALITY_FIELD = 'phone_number_quality_update';
const loneEnvelope = z.looseObject({
  entry: z.array(z.looseObject({ id: z.string(), changes: z.array(z.looseObject({ field: z.string() })) })),
});

/**
 * The business accounts whose numbers a notification asks to re-read (SPEC 6.3): every
 * `phone_number_quality_update`, also one that makes no event (no usable tier, no number).
 */
export function qualityUpdateWabas(body: unknown): string[] {
  const parsed = loneEnvelope.safeParse(body);
  if (!parsed.success) return [];
  const wabas = parsed.data.entry.filter((e) => e.changes.some((c) => c.field === QUALITY_FIELD)).map((e) => e.id);
  return [...new Set(wabas)];
}

/** How the items of a message list are read: messages come from the contact, echoes go to them. */
interface MessageListKind {
  kind: 'message' | 'echo';
  actor: EditActor;
  list: string;
  schema: typeof messageInSchema;
  /** The contact the item is about: [wa_id, user_id] of the sender of a message, the recipient of an echo. */
  person: (m: z.infer<typeof echoInSchema>) => [string | null, string | null];
}

const CONTACT_MESSAGES: MessageListKind = {
  kind: 'message',
  actor: 'contact',
  list: 'messages',
  schema: messageInSchema,
  person: (m) => [present(m.from), present(m.from_user_id)],
};
const BUSINESS_ECHOES: MessageListKind = {
  kind: 'echo',
  actor: 'business',
  list: 'message_echoes',
  schema: echoInSchema,
  person: (m) => [present(m.to), present(m.to_user_id)],
};

type MessagesValue = { metadata: z.infer<typeof metadataSchema>; contacts?: ContactIn[] };

function messageListFacts(spec: MessageListKind, entry: Entry, value: MessagesValue, list: unknown[], at: string): ProviderFact[] {
  const base = { wabaId: entry.id, phoneNumberId: value.metadata.phone_number_id };
  const display = present(value.metadata.display_phone_number);
  const facts: ProviderFact[] = [];
  list.forEach((raw, i) => {
    const path = `${at}.${spec.list}[${i}]`;
    const m = parseProviderPart(spec.schema, raw, path) as z.infer<typeof echoInSchema>;
    const person = contactFor(value.contacts ?? [], ...spec.person(m));
    const fact = messageLikeFact(spec.kind, spec.actor, raw as Record<string, unknown>, path, base, display, m, person);
    if (fact) facts.push(fact);
  });
  return facts;
}

function statusFacts(entry: Entry, value: MessagesValue, list: unknown[], at: string): ProviderFact[] {
  const base = { wabaId: entry.id, phoneNumberId: value.metadata.phone_number_id };
  const facts: ProviderFact[] = [];
  list.forEach((raw, i) => {
    const s = parseProviderPart(statusInSchema, raw, `${at}.statuses[${i}]`);
    if (!DELIVERABLE_STATUSES.has(s.status)) return; // deleted, warning: no event (SPEC 6.3)
    facts.push({
      kind: 'status',
      ...base,
      status: s.status as MessageStatus,
      messageId: s.id,
      recipientId: present(s.recipient_id) ?? present(s.recipient_user_id),
      pricing: s.pricing ?? null,
      conversation: s.conversation ?? null,
      errors: s.errors ?? null,
      occurredAt: unixSecondsToIso(s.timestamp),
    });
  });
  return facts;
}

function accountUpdateFact(entry: Entry, value: z.infer<typeof accountUpdateValueSchema>): ProviderFact {
  // Partner events name the customer's WABA in waba_info; entry.id is then the partner's.
  const wabaId = present(value.waba_info?.waba_id) ?? entry.id;
  const restrictionList = value.restriction_info ?? value.restrictions;
  const data: AccountUpdateData = {
    waba_id: wabaId,
    account_event: value.event,
    ban_state: present(value.ban_info?.waba_ban_state),
    restrictions: restrictionList
      ? restrictionList.map((r) => ({ restriction_type: r.restriction_type, expiration: unixSecondsToIso(r.expiration) }))
      : null,
    occurred_at: unixSecondsToIso(entry.time),
  };
  const violation = present(value.violation_info?.violation_type);
  if (violation !== null) data.violation_type = violation;
  return { kind: 'account_update', wabaId, data };
}

function qualityFact(entry: Entry, value: z.infer<typeof qualityValueSchema>): ProviderFact | null {
  const tier = [value.messaging_limit_tier, value.max_daily_conversations_per_business, value.current_limit].find(isUsableTier);
  const phoneNumberId = present(value.phone_number_id);
  const display = present(value.display_phone_number);
  if (tier === undefined || (phoneNumberId === null && display === null)) return null; // SPEC 6.3: no event
  return {
    kind: 'quality_update',
    wabaId: entry.id,
    data: {
      waba_id: entry.id,
      phone_number_id: phoneNumberId,
      display_phone_number: display,
      messaging_limit_tier: tier,
      occurred_at: unixSecondsToIso(entry.time),
    },
  };
}

/**
 * A message of the `messages` field (from the contact) or an echo (what staff sent): edits and
 * revocations become their own facts; anything else needs a known person to be attributed.
 */
function messageLikeFact(
  kind: 'message' | 'echo',
  actor: EditActor,
  raw: Record<string, unknown>,
  path: string,
  base: { wabaId: string; phoneNumberId: string },
  displayPhoneNumber: string | null,
  m: { id: string; type: string; timestamp?: string | number },
  person: ProviderContact | null,
): ProviderFact | null {
  if (m.type === 'edit' || m.type === 'revoke') return editOrRevoke(m.type, raw, path, base, actor, m.id, m.timestamp, person);
  if (person === null) return null;
  return { kind, ...base, displayPhoneNumber, message: raw, contact: person, occurredAt: unixSecondsToIso(m.timestamp) };
}

function editOrRevoke(
  type: 'edit' | 'revoke',
  raw: Record<string, unknown>,
  at: string,
  base: { wabaId: string; phoneNumberId: string },
  actor: EditActor,
  notificationId: string,
  timestamp: string | number | undefined,
  contact: ProviderContact | null,
): ProviderFact | null {
  const when = unixSecondsToIso(timestamp);
  if (type === 'edit') {
    const edit = parseProviderPart(editInSchema, raw['edit'], `${at}.edit`);
    if (when === null) return null; // the key `<wamid>:edited:<edit time>` needs the time
    return {
      kind: 'edited',
      ...base,
      actor,
      messageId: edit.original_message_id,
      notificationId,
      message: edit.message,
      contact,
      editedAt: when,
    };
  }
  const revoke = parseProviderPart(revokeInSchema, raw['revoke'], `${at}.revoke`);
  if (when === null) return null;
  return { kind: 'revoked', ...base, actor, messageId: revoke.original_message_id, notificationId, contact, revokedAt: when };
}

// ---- payload builders (outputs validate against the catalog schemas) ----

type Fact<K extends ProviderFact['kind']> = Extract<ProviderFact, { kind: K }>;

/** Catalog event type of a fact. */
export function factEventType(fact: ProviderFact): string {
  switch (fact.kind) {
    case 'message':
      return 'chatapp.message.received';
    case 'status':
      return `chatapp.message.${fact.status}`;
    case 'echo':
      return 'chatapp.message.echo';
    case 'edited':
      return 'chatapp.message.edited';
    case 'revoked':
      return 'chatapp.message.revoked';
    case 'account_update':
      return 'chatapp.account.updated';
    case 'quality_update':
      return 'chatapp.phone_number.quality_updated';
  }
}

/** `data` of chatapp.message.received. */
export function receivedPayload(fact: Fact<'message'>, extras: { externalId: string }): Record<string, unknown> {
  return {
    phone_number_id: fact.phoneNumberId,
    message: { ...fact.message, external_id: extras.externalId },
    contact: { ...fact.contact },
  };
}

/** `data` of chatapp.message.<status>; `conversation` only when the provider sent one. */
export function statusPayload(fact: Fact<'status'>): Record<string, unknown> {
  return {
    phone_number_id: fact.phoneNumberId,
    status: fact.status,
    message_id: fact.messageId,
    recipient_id: fact.recipientId,
    pricing: fact.pricing,
    ...(fact.conversation !== null ? { conversation: fact.conversation } : {}),
    errors: fact.errors,
  };
}

/** `data` of chatapp.message.echo: received's shape plus the source app. */
export function echoPayload(fact: Fact<'echo'>, extras: { externalId: string }): Record<string, unknown> {
  return {
    phone_number_id: fact.phoneNumberId,
    message: { ...fact.message, external_id: extras.externalId },
    contact: { ...fact.contact },
    source_app: 'business_app',
  };
}

/** `data` of chatapp.message.edited. */
export function editedPayload(fact: Fact<'edited'>): Record<string, unknown> {
  return {
    phone_number_id: fact.phoneNumberId,
    message_id: fact.messageId,
    edited_at: fact.editedAt,
    message: fact.message,
    ...(fact.contact !== null ? { contact: { ...fact.contact } } : {}),
    actor: fact.actor,
  };
}

/** `data` of chatapp.message.revoked. */
export function revokedPayload(fact: Fact<'revoked'>): Record<string, unknown> {
  return {
    phone_number_id: fact.phoneNumberId,
    message_id: fact.messageId,
    revoked_at: fact.revokedAt,
    ...(fact.contact !== null ? { contact: { ...fact.contact } } : {}),
    actor: fact.actor,
  };
}
