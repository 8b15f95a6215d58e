/**
 * The messaging provider's webhook (DECISIONS "Provider ingress"). Each item of a notification
 * (a message, a status, an echo, an account change) is mapped and validated on its own: the
 * valid ones are stored, each invalid one is kept in provider_rejections naming it, so one bad
 * item never costs the others. Each event is stored idempotently: provider retries of the same
 * notification store nothing new.
 */
import {
  echoPayload,
  editedPayload,
  factEventType,
  mapChatappWebhook,
  qualityUpdateWabas,
  receivedPayload,
  revokedPayload,
  statusPayload,
  type ProviderFact,
} from './chatapp-facts.js';
import { formatIssue, getEventDefinition, type EventDefinition } from '../../core/catalog/index.js';
import {
  findChannelAccountByDisplay,
  findChannelAccountByPhoneNumber,
  findCustomerOfWaba,
  findWabaOwners,
  type ChannelAccount,
} from '../../db/directory.js';
import { findMessage, recordIncomingMessage } from '../../db/messaging.js';
import { logger } from '../../runtime/logger.js';
import { applyTemplateStatusUpdates } from './chatapp-template-status.js';
import { wakeFor } from '../../events/deps.js';
import { RejectedNotification, type InboundDeps } from './inbound-deps.js';
import { planEachItem, recordRejectedItems, splitChatappNotification, type NotificationItem } from './notification-items.js';
import { rereadNumbers } from './number-health.js';
import { promoteOnBroadcastReply } from '../../crm/broadcast-reply.js';
import { awaitRegisteredMessage } from './pending-registration.js';
import { storeEvent, type IngestEvent, type StoredEvent } from '../../events/store-event.js';
import { storeMessageStatus } from '../../events/message-statuses.js';

interface PlannedEvent {
  fact: ProviderFact;
  def: EventDefinition;
  channelAccount: ChannelAccount;
  customerId: string | null;
  data: Record<string, unknown>;
}

const timeOf = (iso: string | null | undefined) => (iso ? new Date(iso) : new Date());

/** Where a fact's event goes: the channel account it belongs to and its Customer. */
interface Origin {
  channelAccount: ChannelAccount;
  customerId: string | null;
}

/**
 * The origins of a fact; none means the number or business account is not on this platform. An
 * account change goes to every Account holding the waba, each with its own Customer, resolved
 * as the publish API resolves it (findWabaOwners); account-health events are always live.
 */
async function resolveOrigins(deps: InboundDeps, fact: ProviderFact): Promise<Origin[]> {
  let ca: ChannelAccount | undefined;
  switch (fact.kind) {
    case 'account_update':
      return findWabaOwners(deps.db, fact.wabaId, 'live');
    case 'quality_update':
      ca = fact.data.phone_number_id
        ? await findChannelAccountByPhoneNumber(deps.db, 'chatapp', fact.data.phone_number_id)
        : fact.data.display_phone_number
          ? await findChannelAccountByDisplay(deps.db, fact.wabaId, fact.data.display_phone_number)
          : undefined;
      if (!ca) return [];
      return [
        {
          channelAccount: ca,
          customerId: ca.customer_id ?? (await findCustomerOfWaba(deps.db, ca.account_id, 'live', fact.wabaId)) ?? null,
        },
      ];
    default:
      ca = await findChannelAccountByPhoneNumber(deps.db, 'chatapp', fact.phoneNumberId);
      return ca ? [{ channelAccount: ca, customerId: ca.customer_id }] : [];
  }
}

function payloadOf(fact: ProviderFact, channelAccount: ChannelAccount): Record<string, unknown> {
  switch (fact.kind) {
    case 'message':
      return receivedPayload(fact, { externalId: String(fact.message.id) });
    case 'status':
      return statusPayload(fact);
    case 'echo':
      return echoPayload(fact, { externalId: String(fact.message.id) });
    case 'edited':
      return editedPayload(fact);
    case 'revoked':
      return revokedPayload(fact);
    case 'account_update':
      return { ...fact.data };
    case 'quality_update':
      return { ...fact.data, phone_number_id: fact.data.phone_number_id ?? channelAccount.phone_number_id };
  }
}

/** Maps and validates every event of one item; throws RejectedNotification naming the problem. */
async function planItem(deps: InboundDeps, item: NotificationItem): Promise<PlannedEvent[]> {
  let facts: ProviderFact[];
  try {
    facts = mapChatappWebhook(item.body).facts;
  } catch (err) {
    throw new RejectedNotification(item.relocate((err as Error).message));
  }
  const planned: PlannedEvent[] = [];
  for (const fact of facts) {
    const origins = await resolveOrigins(deps, fact);
    if (origins.length === 0) {
      logger.info({ kind: fact.kind }, 'provider notification for a number or business account not on this platform');
      continue;
    }
    const def = getEventDefinition(factEventType(fact))!;
    for (const { channelAccount, customerId } of origins) {
      const parsed = def.data.safeParse(payloadOf(fact, channelAccount));
      if (!parsed.success) throw new RejectedNotification(`${item.at}: ${def.type}: ${formatIssue(parsed.error, 'data')}`);
      planned.push({ fact, def, channelAccount, customerId, data: parsed.data });
    }
  }
  return planned;
}

/** The wamid a contact's message replies to (`context.id`), when it is a reply. */
function repliedToId(message: Record<string, unknown>): string | undefined {
  const context = message.context as { id?: unknown } | undefined;
  return typeof context?.id === 'string' && context.id !== '' ? context.id : undefined;
}

/**
 * Stores a status of a message the platform sent and registered, through the path the publish
 * API shares (forward only, window's end); null when it stores nothing.
 */
async function storeStatus(
  deps: InboundDeps,
  p: PlannedEvent,
  base: Omit<IngestEvent, 'externalId' | 'messageResourceId' | 'contactRef' | 'streamContext' | 'occurredAt'>,
): Promise<StoredEvent | null> {
  const { channelAccount: ca } = p;
  const fact = p.fact as Extract<PlannedEvent['fact'], { kind: 'status' }>;
  // Statuses of messages the platform did not send produce no event.
  const message = await awaitRegisteredMessage(deps.db, ca.id, fact.messageId, fact.occurredAt);
  if (!message) return null;
  const outcome = await storeMessageStatus(deps, message, fact.recipientId, {
    ...base,
    externalId: fact.messageId,
    messageResourceId: message.id,
    contactRef: message.contact_id,
    streamContext: { contactId: message.contact_id, conversationId: message.conversation_id },
    occurredAt: timeOf(fact.occurredAt),
  });
  return 'stored' in outcome ? outcome.stored : null;
}

/** Stores one planned event, creating the directory rows an incoming message implies; false when it produces no event. */
async function store(deps: InboundDeps, p: PlannedEvent): Promise<boolean> {
  const { fact, def, channelAccount: ca } = p;
  const base = {
    accountId: ca.account_id,
    def,
    data: p.data,
    refs: {},
    customerId: p.customerId,
    // Account-health events carry no channel stamp and are always live.
    environment: def.channelStamped ? ca.environment : ('live' as const),
    channelAccount: def.channelStamped ? ca : null,
  };
  if (fact.kind === 'status') {
    const stored = await storeStatus(deps, p, base);
    if (stored?.created) wakeFor(deps, ca.account_id, stored);
    return stored !== null;
  }
  let event: IngestEvent;
  switch (fact.kind) {
    case 'message':
    case 'echo': {
      const externalId = String(fact.message.id);
      const rows = await recordIncomingMessage(deps.db, ca, fact.contact, {
        externalId,
        type: String(fact.message.type),
        inbound: fact.kind === 'message',
      });
      event = {
        ...base,
        data: { ...p.data, contact: { ...(p.data.contact as object), metadata: rows.contactMetadata } },
        externalId,
        messageResourceId: rows.messageId,
        contactRef: rows.contactId,
        streamContext: { contactId: rows.contactId, conversationId: rows.conversationId },
        occurredAt: timeOf(fact.occurredAt),
      };
      break;
    }
    case 'edited':
    case 'revoked': {
      const message = await findMessage(deps.db, ca.id, fact.messageId);
      event = {
        ...base,
        externalId: fact.messageId,
        messageResourceId: message?.id ?? null,
        contactRef: message?.contact_id ?? null,
        streamContext: {},
        occurredAt: timeOf(fact.kind === 'edited' ? fact.editedAt : fact.revokedAt),
      };
      break;
    }
    case 'account_update':
    case 'quality_update':
      event = {
        ...base,
        externalId: null,
        messageResourceId: null,
        contactRef: null,
        streamContext: {},
        occurredAt: timeOf(fact.data.occurred_at),
      };
      break;
  }
  const stored = await storeEvent(deps.db, event, deps.now?.());
  if (stored.created) wakeFor(deps, ca.account_id, stored);
  // Also on a redelivery: a promotion is claimed by its reply once, and a retry finishes one a crash cut short.
  const repliedTo = fact.kind === 'message' ? repliedToId(fact.message) : undefined;
  if (repliedTo && event.contactRef && event.messageResourceId)
    await promoteOnBroadcastReply(deps, ca, {
      messageId: event.messageResourceId,
      contactId: event.contactRef,
      repliedToExternalId: repliedTo,
    });
  return true;
}

/** Ingests a verified notification body. Returns how many events it stored, new or repeated. */
export async function ingestChatappNotification(deps: InboundDeps, body: unknown): Promise<number> {
  const { planned, rejected } = await planEachItem(body, splitChatappNotification, (item) => planItem(deps, item));
  // Template status changes update the template and emit nothing (SPEC 6.4).
  await applyTemplateStatusUpdates(deps.db, body);
  // SPEC 6.3: the field makes the platform re-read the numbers (best effort) before any event, also when it makes none.
  for (const wabaId of qualityUpdateWabas(body)) await rereadNumbers(deps, wabaId);
  let stored = 0;
  for (const p of planned) if (await store(deps, p)) stored++;
  // After the stores: a failed store answers 500 and the provider retries, which would record them twice.
  await recordRejectedItems(deps.db, 'chatapp', rejected);
  return stored;
}
