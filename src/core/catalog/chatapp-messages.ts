import { z } from 'zod';
import {
  conversationSchema,
  define,
  id,
  isoTimestamp,
  keyPart,
  messageContactSchema,
  nullableString,
  pricingSchema,
  providerErrorSchema,
  rawMessageSchema,
  type EventDefinition,
} from './types.js';

const messageEvent = { channel: 'chatapp', channelStamped: true, hasExternalId: true } as const;

export const chatappMessageReceived = define({
  ...messageEvent,
  type: 'chatapp.message.received',
  category: 'messages',
  description: 'A contact sent a message (including button and list replies) to a connected number.',
  data: z.object({ phone_number_id: id, message: rawMessageSchema, contact: messageContactSchema }),
  idempotencyKey: (data) => keyPart(data, 'message', 'id'),
  countsTowardFreePlan: true,
});

export const STATUS_VALUES = ['sent', 'delivered', 'read', 'failed'] as const;
export type MessageStatus = (typeof STATUS_VALUES)[number];

const statusDescriptions: Record<MessageStatus, string> = {
  sent: 'A message sent by the platform was accepted by the provider and sent.',
  delivered: "A message sent by the platform reached the contact's device.",
  read: 'A message sent by the platform was read by the contact.',
  failed: 'A message sent by the platform could not be delivered; errors says why.',
};

/** Status payload; `status` must repeat the event name's suffix. */
export function statusDataSchema<S extends MessageStatus>(status: S) {
  return z.object({
    phone_number_id: id,
    status: z.literal(status),
    message_id: id,
    recipient_id: nullableString,
    pricing: pricingSchema.nullable().default(null),
    // Absent unless inside a free-entry-point window (graph API >= 24), so no null default.
    conversation: conversationSchema.optional(),
    errors: z.array(providerErrorSchema).nullable().default(null),
  });
}

function statusEvent(status: MessageStatus): EventDefinition {
  return define({
    ...messageEvent,
    type: `chatapp.message.${status}`,
    category: 'statuses',
    description: statusDescriptions[status],
    data: statusDataSchema(status),
    idempotencyKey: (data) => `${keyPart(data, 'message_id')}:${status}`,
    needsRegisteredMessage: true,
  });
}

export const chatappMessageSent = statusEvent('sent');
export const chatappMessageDelivered = statusEvent('delivered');
export const chatappMessageRead = statusEvent('read');
export const chatappMessageFailed = statusEvent('failed');

/** Who made an edit or removal: staff in the business app (the catalog's meaning) or the contact (coexistence notifications of the contact's own edits). */
const actor = z.enum(['business', 'contact']).default('business');

export const chatappMessageEcho = define({
  ...messageEvent,
  type: 'chatapp.message.echo',
  category: 'app_messages',
  description: 'Staff sent a message from the business app on a number in coexistence.',
  data: z.object({
    phone_number_id: id,
    message: rawMessageSchema.extend({ to: z.string().optional() }),
    contact: messageContactSchema,
    source_app: z.string().min(1).default('business_app'),
  }),
  idempotencyKey: (data) => `${keyPart(data, 'message', 'id')}:echo`,
});

export const chatappMessageEdited = define({
  ...messageEvent,
  type: 'chatapp.message.edited',
  category: 'app_messages',
  description: 'A message was edited in the business app on a number in coexistence.',
  data: z.object({
    phone_number_id: id,
    /** wamid of the message that was edited */
    message_id: id,
    edited_at: isoTimestamp,
    /** the new content, a provider message object without id */
    message: z.looseObject({ type: z.string().optional(), context: z.looseObject({}).optional() }),
    contact: messageContactSchema.optional(),
    actor,
  }),
  idempotencyKey: (data) => `${keyPart(data, 'message_id')}:edited:${keyPart(data, 'edited_at')}`,
});

export const chatappMessageRevoked = define({
  ...messageEvent,
  type: 'chatapp.message.revoked',
  category: 'app_messages',
  description: 'A message was deleted for everyone in the business app on a number in coexistence.',
  data: z.object({
    phone_number_id: id,
    message_id: id,
    revoked_at: isoTimestamp,
    contact: messageContactSchema.optional(),
    actor,
  }),
  idempotencyKey: (data) => `${keyPart(data, 'message_id')}:revoked`,
});

export const chatappMessageEvents: readonly EventDefinition[] = [
  chatappMessageReceived,
  chatappMessageSent,
  chatappMessageDelivered,
  chatappMessageRead,
  chatappMessageFailed,
  chatappMessageEcho,
  chatappMessageEdited,
  chatappMessageRevoked,
];
