import type { AccountId } from '../core/ids.js';
/** The platform's publish API (DECISIONS "Platform publish API"): validate, resolve the origin, store. */
import { z } from 'zod';
import { formatIssue, getEventDefinition, type EventDefinition } from '../core/catalog/index.js';
import { invalidEvent } from '../core/domain-error.js';
import { isRecord } from '../core/is-record.js';
import { findCustomerOfWaba, getChannelAccountOfAccount, type ChannelAccount } from '../db/directory.js';
import type { Environment } from '../db/events.js';
import { findMessage, findRegisteredMessage, type MessageRow } from '../db/messaging.js';
import { hopNow, traceHop, tracing } from '../runtime/hop-trace.js';
import { customerCheck } from './customer-check.js';
import { wakeFor, type IngestDeps } from './deps.js';
import { storeMessageStatus } from './message-statuses.js';
import { storeEvent, type IngestEvent, type StoredEvent } from './store-event.js';

export const PublishBody = z
  .object({
    type: z.string(),
    data: z.record(z.string(), z.unknown()),
    environment: z.enum(['live', 'sandbox']).optional(),
    customer_id: z.uuid().nullable().optional(),
    channel_account_id: z.uuid().nullable().optional(),
    occurred_at: z.iso.datetime({ offset: true }).optional(),
    refs: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
type PublishBody = z.infer<typeof PublishBody>;

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const obj = (v: unknown): Record<string, unknown> | null => (isRecord(v) ? v : null);

/** A publish body as checked before anything is read or stored: no I/O. */
export interface CheckedPublish {
  body: PublishBody;
  def: EventDefinition;
  data: Record<string, unknown>;
  refs: Record<string, unknown>;
}

/** Checks a publish body against the catalog and the key's environment; 422 `invalid_event` on the first problem. */
export function checkPublish(environment: Environment, raw: unknown): CheckedPublish {
  const parsed = PublishBody.safeParse(raw);
  if (!parsed.success) throw invalidEvent(formatIssue(parsed.error));
  const body = parsed.data;
  const def = getEventDefinition(body.type);
  if (!def) throw invalidEvent(`type: unknown event type "${body.type}" (see GET /api/v1/event_types)`);
  if (!def.publishable) throw invalidEvent(`type: ${def.type} cannot be published`);

  // The key's environment decides where the event goes; a body naming the other one is refused, never obeyed.
  if (body.environment !== undefined && body.environment !== environment) {
    throw invalidEvent(`environment: a ${environment} API key publishes ${environment} events only, not ${body.environment}`);
  }
  const accountHealth = def.category === 'account' && !def.channelStamped;
  if (accountHealth && environment !== 'live')
    throw invalidEvent('environment: account-health events are always live; publish them with a live API key');

  const data = def.data.safeParse(body.data);
  if (!data.success) throw invalidEvent(formatIssue(data.error, 'data'));
  const refs = def.refs.safeParse(body.refs ?? {});
  if (!refs.success) throw invalidEvent(formatIssue(refs.error, 'refs'));
  try {
    def.idempotencyKey(data.data, refs.data);
  } catch (err) {
    throw invalidEvent(`data: ${(err as Error).message}`);
  }
  return { body, def, data: data.data, refs: refs.data };
}

export async function publishEvent(
  deps: IngestDeps,
  principal: { accountId: AccountId; environment: Environment },
  raw: unknown,
): Promise<StoredEvent> {
  const receivedAt = tracing ? hopNow() : 0;
  const { environment } = principal;
  const { body, def, data, refs } = checkPublish(environment, raw);
  const { channelAccount, customerId } = await resolveOrigin(deps, principal, def, body, data);

  const message = obj(data.message);
  const externalId = def.hasExternalId ? (str(message?.id) ?? str(data.message_id)) : null;
  const registered =
    channelAccount && externalId
      ? await (def.needsRegisteredMessage ? findRegisteredMessage : findMessage)(deps.db, channelAccount.id, externalId)
      : undefined;
  // Statuses of messages the platform never registered produce no event (SPEC 6.4), whichever way they arrive.
  if (def.needsRegisteredMessage && !registered) {
    throw invalidEvent(
      `data.message_id: message "${externalId}" is not registered on this channel account (statuses are published only for messages the platform sent)`,
    );
  }
  const contactRefs = contactsCarried(data, registered?.contact_id ?? null);
  const occurredAt = body.occurred_at ?? str(data.occurred_at);

  const event: IngestEvent = {
    accountId: principal.accountId,
    environment,
    def,
    data,
    refs,
    customerId,
    channelAccount: def.channelStamped ? (channelAccount ?? null) : null,
    externalId,
    messageResourceId: registered?.id ?? null,
    contactRef: contactRefs[0] ?? null,
    contactRefs,
    streamContext: {
      contactId: registered?.contact_id ?? null,
      conversationId: registered?.conversation_id ?? null,
    },
    occurredAt: occurredAt ? new Date(occurredAt) : new Date(),
  };
  const stored =
    registered && def.needsRegisteredMessage
      ? await storeStatus(deps, registered, event)
      : await storeEvent(deps.db, event, deps.now?.(), { wakes: deps.wakes });
  if (tracing && stored.created)
    for (const d of stored.deliveries) {
      traceHop('received', stored.event.idempotency_key, d.endpointId, receivedAt);
      traceHop('committed', stored.event.idempotency_key, d.endpointId);
    }
  if (stored.created) wakeFor(deps, principal.accountId, stored);
  return stored;
}

/** A status goes the provider's way (forward only, the window's end recorded); a late one is refused, as it emits nothing. */
async function storeStatus(deps: IngestDeps, message: MessageRow, event: IngestEvent): Promise<StoredEvent> {
  const outcome = await storeMessageStatus(deps, message, str(event.data.recipient_id), event);
  if ('stored' in outcome) return outcome.stored;
  if ('gone' in outcome)
    throw invalidEvent(`data.message_id: message "${message.external_id}" is no longer registered on this channel account`);
  throw invalidEvent(
    `data.status: message "${message.external_id}" is already ${outcome.behind}; statuses move forward only, so a late ${String(event.data.status)} emits nothing`,
  );
}

/**
 * The origin chain of a published event: its channel account (this Account's, of the key's
 * environment, of the event's channel and of the payload's channel) and its Customer.
 */
async function resolveOrigin(
  deps: IngestDeps,
  principal: { accountId: AccountId; environment: Environment },
  def: EventDefinition,
  body: PublishBody,
  data: Record<string, unknown>,
): Promise<{ channelAccount: ChannelAccount | undefined; customerId: string | null }> {
  const channelAccount = body.channel_account_id
    ? await getChannelAccountOfAccount(deps.db, principal.accountId, body.channel_account_id)
    : undefined;
  if (body.channel_account_id && !channelAccount) throw invalidEvent('channel_account_id: not a channel account of this Account');
  if (channelAccount && def.channel && channelAccount.channel !== def.channel) {
    throw invalidEvent(`channel_account_id: ${def.type} comes from a ${def.channel} channel account, not ${channelAccount.channel}`);
  }
  if (def.hasExternalId && !channelAccount) throw invalidEvent(`channel_account_id: required for ${def.type}`);
  if (channelAccount && channelAccount.environment !== principal.environment) {
    throw invalidEvent(
      `channel_account_id: a ${channelAccount.environment} channel account, and this API key publishes ${principal.environment} events`,
    );
  }
  // The envelope's channel is the channel account's: a consent for another channel would be delivered as this one's.
  const payloadChannel = str(data.channel);
  if (channelAccount && payloadChannel && payloadChannel !== channelAccount.channel) {
    throw invalidEvent(
      `data.channel: a ${payloadChannel} ${def.type} cannot come from channel account ${channelAccount.id}, a ${channelAccount.channel} channel account`,
    );
  }
  if (body.customer_id && !(await customerCheck(deps.db)(principal.accountId, body.customer_id))) {
    throw invalidEvent('customer_id: not a Customer of this Account');
  }
  // Account-health events name a business account, not a number: its owner is found through waba_id (SPEC 6.3),
  // among this Account's channel accounts only.
  const wabaId = def.category === 'account' ? str(data.waba_id) : null;
  const customerId =
    body.customer_id ??
    channelAccount?.customer_id ??
    (wabaId ? await findCustomerOfWaba(deps.db, principal.accountId, principal.environment, wabaId) : undefined) ??
    null;

  return { channelAccount, customerId };
}

/**
 * Every contact an event carries in its payload, wherever its type puts it (an opportunity that
 * changed hands names two): deleting any of them removes the event (SPEC 6.5 rule 6).
 */
function contactsCarried(data: Record<string, unknown>, messageContactId: string | null): string[] {
  return [
    str(obj(data.contact)?.id),
    str(obj(data.appointment)?.contact_id),
    str(obj(data.after_data)?.contact_id),
    str(obj(data.before_data)?.contact_id),
    messageContactId,
  ].filter((c): c is string => c !== null);
}
