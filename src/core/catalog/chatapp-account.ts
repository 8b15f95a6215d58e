import { z } from 'zod';
import { canonicalJson, sha256Hex } from './canonical-json.js';
import { define, id, isoTimestamp, keyPart, nullableString, type EventDefinition } from './types.js';

/** Provider tiers look like TIER_250, TIER_2K, TIER_UNLIMITED; TIER_NOT_SET says nothing about a limit. */
export function isUsableTier(value: unknown): value is string {
  return typeof value === 'string' && /^TIER_[0-9A-Z]+$/.test(value) && value !== 'TIER_NOT_SET';
}

/** The provider sends no id for these notifications, so the normalized payload (provider time included) is the identity. */
const payloadHashKey = (prefix: string) => (data: Record<string, unknown>) => `${prefix}:${sha256Hex(canonicalJson(data))}`;

export const chatappAccountUpdated = define({
  type: 'chatapp.account.updated',
  category: 'account',
  channel: 'chatapp',
  // Account-health events carry no channel stamp (SPEC 2.3).
  channelStamped: false,
  hasExternalId: false,
  description: 'The business account changed health: ban, restriction, violation, or loss of access (provider field account_update).',
  data: z.object({
    waba_id: id,
    account_event: id,
    ban_state: nullableString,
    /** empty list = no restrictions; null = not informed */
    restrictions: z
      .array(z.object({ restriction_type: id, expiration: isoTimestamp.nullable().default(null) }))
      .nullable()
      .default(null),
    /** only with ACCOUNT_VIOLATION */
    violation_type: z.string().min(1).optional(),
    /** provider time; null when unreadable */
    occurred_at: isoTimestamp.nullable().default(null),
  }),
  idempotencyKey: payloadHashKey('chatapp.account.updated'),
});

export const chatappPhoneNumberQualityUpdated = define({
  type: 'chatapp.phone_number.quality_updated',
  category: 'account',
  channel: 'chatapp',
  channelStamped: false,
  hasExternalId: false,
  description: "A number's messaging-limit tier changed (provider field phone_number_quality_update).",
  data: z
    .object({
      waba_id: id,
      phone_number_id: z.string().min(1).nullable().default(null),
      display_phone_number: z.string().min(1).nullable().default(null),
      messaging_limit_tier: z.string().refine(isUsableTier, { message: 'expected a messaging-limit tier such as TIER_2K' }),
      occurred_at: isoTimestamp.nullable().default(null),
    })
    .refine((d) => d.phone_number_id !== null || d.display_phone_number !== null, {
      message: 'phone_number_id or display_phone_number is required',
      path: ['phone_number_id'],
    }),
  idempotencyKey: payloadHashKey('chatapp.phone_number.quality_updated'),
});

export const chatappPhoneNumberConnected = define({
  type: 'chatapp.phone_number.connected',
  category: 'account',
  channel: 'chatapp',
  channelStamped: true,
  hasExternalId: false,
  description: 'The embedded signup finished and a number was connected, dedicated or in coexistence.',
  data: z.object({
    waba_id: id,
    phone_number_id: id,
    display_phone_number: id,
    connection_mode: z.enum(['dedicated', 'coexistence']),
    /** connection link used; null when connected from the panel without a link (key part `none`) */
    setup_link_id: z.string().min(1).nullable(),
    occurred_at: isoTimestamp,
  }),
  idempotencyKey: (data) =>
    `chatapp.phone_number.connected:${data['setup_link_id'] == null ? 'none' : keyPart(data, 'setup_link_id')}:${keyPart(data, 'phone_number_id')}`,
});

export const chatappAccountEvents: readonly EventDefinition[] = [
  chatappAccountUpdated,
  chatappPhoneNumberQualityUpdated,
  chatappPhoneNumberConnected,
];
