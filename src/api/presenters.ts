/** Database rows to API objects. Ciphertexts never leave through here. */
import type { z } from 'zod';
import { nextAttemptOf } from '../core/delivery-timing.js';
import type { DeliveryRow, AttemptRow, EndpointPacingRow } from '../db/deliveries.js';
import type { EndpointRow } from '../db/endpoints.js';
import type { EventRow, StreamItem } from '../db/events.js';
import type { Attempt, Delivery } from './schemas/deliveries.js';
import type { Endpoint } from './schemas/webhooks.js';
import type { ConsentRow } from '../db/consents.js';
import type { ContactRow } from '../db/contacts.js';
import type { ConversationListRow, MessageListRow } from '../db/messaging-reads.js';
import type { StageRow } from '../db/stages.js';
import type { ConsentRecord, Contact, Conversation, Message, Stage } from './schemas/crm.js';
import type { BroadcastRow, RecipientRow } from '../db/broadcasts.js';
import type { SetupLinkRow } from '../db/setup-links.js';
import { tokenStatusAt } from '../core/token-status.js';
import type { TemplateRow } from '../db/templates.js';
import type { ChannelAccountRow } from '../db/channel-accounts.js';
import type { Broadcast, BroadcastRecipient, SetupLink, Template } from './schemas/account.js';
import type { ChannelAccountResource } from './schemas/messaging.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function presentEndpoint(row: EndpointRow): z.infer<typeof Endpoint> {
  return {
    id: row.id,
    customer_id: row.customer_id,
    url: row.url,
    events: row.events as z.infer<typeof Endpoint>['events'],
    active: row.active,
    has_authorization: row.authorization_ciphertext !== null,
    health_status: row.health_status,
    failure_streak: row.failure_streak,
    verified_at: iso(row.verified_at),
    last_success_at: iso(row.last_success_at),
    last_failure_at: iso(row.last_failure_at),
    last_response_code: row.last_response_code,
    next_attempt_at: iso(row.next_attempt_at),
    paused_at: iso(row.paused_at),
    rate_limit: row.rate_limit,
    description: row.description,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * `next_attempt_at` is when the delivery will really be attempted: its own retry time held back
 * by its endpoint's pacing, or null with `next_attempt_reason` while the endpoint does not send.
 */
export function presentDelivery(row: DeliveryRow, endpoint: EndpointPacingRow | undefined): z.infer<typeof Delivery> {
  const next = nextAttemptOf(
    { id: row.id, status: row.status, hasEvent: row.event_id !== null, nextAttemptAtMs: row.next_attempt_at?.getTime() ?? null },
    endpoint && {
      active: endpoint.active,
      health: endpoint.health_status,
      failureStreak: endpoint.failure_streak,
      lastFailureAtMs: endpoint.last_failure_at?.getTime() ?? null,
      deleted: endpoint.deleted_at !== null,
      firstInLineId: endpoint.first_in_line,
    },
  );
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    idempotency_key: row.idempotency_key,
    environment: row.environment,
    status: row.status,
    attempts: row.attempts,
    response_code: row.response_code,
    last_attempt_at: iso(row.last_attempt_at),
    next_attempt_at: next.nextAttemptAtMs === null ? null : new Date(next.nextAttemptAtMs).toISOString(),
    next_attempt_reason: next.reason,
    terminal_reason: row.terminal_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentAttempt(row: AttemptRow): z.infer<typeof Attempt> {
  return { ...row, started_at: row.started_at.toISOString() };
}

/** A stream item's fields before its data, in the order the API writes them: `message_resource_id` only when the platform has the message (SPEC 2.4). */
function streamItemHead(row: EventRow): Record<string, unknown> {
  const head: Record<string, unknown> = {
    id: row.id,
    cursor: String(row.cursor),
    type: row.type,
    environment: row.environment,
    message_id: row.message_id,
    external_id: row.external_id,
  };
  if (row.message_resource_id) head.message_resource_id = row.message_resource_id;
  head.occurred_at = row.occurred_at.toISOString();
  head.created_at = row.created_at.toISOString();
  return head;
}

/** A stream item (SPEC 2.4). */
export function presentStreamItem(row: EventRow): Record<string, unknown> {
  const item = streamItemHead(row);
  item.data = row.stream_data;
  return item;
}

const jsonOrNull = (s: string | null) => (s === null ? 'null' : JSON.stringify(s));

/**
 * A stream page as the UTF-8 JSON the API sends, byte for byte
 * `JSON.stringify({ data: items.map(presentStreamItem), paging })` of the same events. Each item's
 * data goes in as the bytes the read made of it (src/db/events.ts readStream), its head from a
 * template rather than an object stringified, and the page is written into one buffer: no string
 * of 100 KB for the socket to encode again (together about a third of a 100-item page's CPU).
 * Ids, cursors, the environment and ISO times need no escaping; the other strings are quoted.
 */
export function streamPageBytes(items: StreamItem[], paging: Record<string, unknown>): Buffer {
  const parts: (string | Buffer)[] = [];
  let text = '{"data":[';
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    const resource = it.message_resource_id ? `,"message_resource_id":${JSON.stringify(it.message_resource_id)}` : '';
    text +=
      `${i ? ',' : ''}{"id":"${it.id}","cursor":"${it.cursor}","type":${JSON.stringify(it.type)},"environment":"${it.environment}",` +
      `"message_id":${jsonOrNull(it.message_id)},"external_id":${jsonOrNull(it.external_id)}${resource},` +
      `"occurred_at":"${it.occurred_at}","created_at":"${it.created_at}","data":`;
    parts.push(text, it.dataJson);
    text = '}';
  }
  parts.push(`${text}],"paging":${JSON.stringify(paging)}}`);
  let size = 0;
  for (const p of parts) size += typeof p === 'string' ? Buffer.byteLength(p, 'utf8') : p.length;
  const page = Buffer.allocUnsafe(size);
  let at = 0;
  for (const p of parts) at += typeof p === 'string' ? page.write(p, at, 'utf8') : p.copy(page, at);
  return page;
}

// ---- Contacts, funnel stages, consents, conversations and messages (CRM family) ----

export function presentStage(row: StageRow): z.infer<typeof Stage> {
  return { id: row.id, key: row.key, label: row.label, position: row.position, created_at: row.created_at.toISOString() };
}

export function presentContact(row: ContactRow): z.infer<typeof Contact> {
  return {
    id: row.id,
    channel_account_id: row.channel_account_id,
    channel: row.channel,
    wa_id: row.wa_id,
    user_id: row.user_id,
    username: row.username,
    phone: row.phone,
    profile_name: row.profile_name,
    metadata: row.metadata,
    stage: row.stage_id ? { id: row.stage_id, key: row.stage_key!, label: row.stage_label! } : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentConsent(row: ConsentRow): z.infer<typeof ConsentRecord> {
  return {
    id: row.id,
    contact_id: row.contact_id,
    channel: row.channel,
    purpose: row.purpose,
    state: row.state,
    origin: row.origin,
    evidence: row.evidence,
    changed: row.changed,
    created_at: row.created_at.toISOString(),
  };
}

export function presentConversation(row: ConversationListRow): z.infer<typeof Conversation> {
  return {
    id: row.id,
    channel_account_id: row.channel_account_id,
    contact_id: row.contact_id,
    fep_expires_at: iso(row.fep_expires_at),
    last_message_at: iso(row.last_message_at),
    created_at: row.created_at.toISOString(),
  };
}

export function presentMessage(row: MessageListRow): z.infer<typeof Message> {
  return {
    id: row.id,
    external_id: row.external_id,
    channel_account_id: row.channel_account_id,
    contact_id: row.contact_id,
    conversation_id: row.conversation_id,
    direction: row.direction,
    type: row.type,
    status: row.status,
    created_at: row.created_at.toISOString(),
  };
}

// ---- Templates, setup links and broadcasts ----

export function presentTemplate(row: TemplateRow): z.infer<typeof Template> {
  return {
    id: row.id,
    waba_id: row.waba_id,
    provider_template_id: row.provider_template_id,
    name: row.name,
    language: row.language,
    category: row.category,
    status: row.status,
    status_reason: row.status_reason,
    components: row.components,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentSetupLink(row: SetupLinkRow, now: Date): z.infer<typeof SetupLink> {
  return {
    id: row.id,
    customer_id: row.customer_id,
    environment: row.environment,
    channel: row.channel,
    connection_mode: row.connection_mode,
    status: row.completed_at ? 'completed' : row.expires_at <= now ? 'expired' : 'open',
    expires_at: row.expires_at.toISOString(),
    completed_at: iso(row.completed_at),
    created_at: row.created_at.toISOString(),
  };
}

export function presentBroadcast(row: BroadcastRow): z.infer<typeof Broadcast> {
  return {
    id: row.id,
    channel_account_id: row.channel_account_id,
    environment: row.environment,
    name: row.name,
    template: { name: row.template_name, language: row.template_language },
    reply_stage: row.reply_stage,
    status: row.status,
    counts: row.counts,
    sent_at: iso(row.sent_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentRecipient(row: RecipientRow): z.infer<typeof BroadcastRecipient> {
  return {
    id: row.id,
    to_recipient: row.to_recipient,
    components: row.components,
    status: row.status,
    message_id: row.message_id,
    failure_reason: row.failure_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
export function presentChannelAccount(row: ChannelAccountRow, now = new Date()): z.infer<typeof ChannelAccountResource> {
  const photoapp = row.channel === 'photoapp';
  return {
    id: row.id,
    channel: row.channel,
    display: row.display,
    customer_id: row.customer_id,
    environment: row.environment,
    phone_number_id: row.phone_number_id,
    waba_id: row.waba_id,
    provider_account_id: row.provider_account_id,
    quality_rating: row.quality_rating,
    messaging_limit_tier: row.messaging_limit_tier,
    number_status: row.number_status,
    numbers_read_at: iso(row.numbers_read_at),
    // A photoapp account never read yet is `unknown`; chatapp accounts have no token of their own.
    // As it stands now: a date that came since the last read already counts (SPEC 3.4 `expiring`).
    token_status: photoapp ? tokenStatusAt(row.token_status ?? 'unknown', row.token_expires_at, now) : null,
    token_expires_at: photoapp ? iso(row.token_expires_at) : null,
    created_at: row.created_at.toISOString(),
  };
}
