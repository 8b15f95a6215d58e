import { z } from 'zod';
import type { Category } from '../categories.js';

export type Channel = 'chatapp' | 'photoapp';
export const CHANNELS = ['chatapp', 'photoapp'] as const satisfies readonly Channel[];

export interface EventDefinition {
  type: string;
  /** null only for webhook.test */
  category: Category | null;
  /** false only for webhook.test */
  inStream: boolean;
  /** One sentence, for GET /api/v1/event_types. */
  description: string;
  /** Channel the event always comes from; null when it depends on the origin (crm, automation) or there is none. */
  channel: Channel | null;
  /** Envelope carries channel + channel_account (+ external_id for message events). */
  channelStamped: boolean;
  /** Message events carry external_id (the wamid / message id). */
  hasExternalId: boolean;
  /** Payload fields beyond the common envelope (SPEC 6.3): `data` of POST /api/v1/events. Store the parse output. */
  data: z.ZodType<Record<string, unknown>>;
  /** Identifiers the key needs but the payload does not show; z.object({}) when none. */
  refs: z.ZodType<Record<string, unknown>>;
  /** Expects the parsed `data` and `refs`; throws when a part of the key is missing. */
  idempotencyKey(data: Record<string, unknown>, refs: Record<string, unknown>): string;
  /** Accepted by POST /api/v1/events. */
  publishable: boolean;
  countsTowardFreePlan: boolean;
  /** A status of a message the platform sent: emitted only when that message is registered (SPEC 6.3, 6.4). */
  needsRegisteredMessage: boolean;
}

type DefinitionInput = Pick<
  EventDefinition,
  'type' | 'category' | 'description' | 'channel' | 'channelStamped' | 'hasExternalId' | 'data' | 'idempotencyKey'
> &
  Partial<Pick<EventDefinition, 'inStream' | 'refs' | 'publishable' | 'countsTowardFreePlan' | 'needsRegisteredMessage'>>;

export function define(input: DefinitionInput): EventDefinition {
  return Object.freeze({
    inStream: true,
    publishable: true,
    countsTowardFreePlan: false,
    needsRegisteredMessage: false,
    refs: z.object({}),
    ...input,
  });
}

/** A part of an idempotency key read from a nested path; missing parts are a programming error, not a default. */
export function keyPart(source: Record<string, unknown>, ...path: string[]): string {
  let cur: unknown = source;
  for (const p of path) cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[p] : undefined;
  if (typeof cur === 'string' && cur.length > 0) return cur;
  if (typeof cur === 'number' && Number.isFinite(cur)) return String(cur);
  throw new Error(`idempotency key needs ${path.join('.')}`);
}

// ---- shared payload pieces ----

export const id = z.string().min(1);
/** ISO 8601 with Z or an offset. */
export const isoTimestamp = z.iso.datetime({ offset: true });
/** Provider unix time as sent (seconds, usually a string). */
export const providerTime = z.union([z.string(), z.number()]);
export const nullableString = z.string().nullable().default(null);

/** Drops null members so that "null fields omitted" payloads also accept explicit nulls from publishers. */
export function withoutNulls<T extends z.ZodType>(schema: T) {
  return z.preprocess(
    (v) =>
      v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null)) : v,
    schema,
  );
}

/** Ad referral of click-to-chat messages, untouched; ctwa_clid is absent for ads shown in Status. */
export const referralSchema = z.looseObject({
  source_url: z.string().optional(),
  source_id: z.string().optional(),
  source_type: z.string().optional(),
  headline: z.string().optional(),
  body: z.string().optional(),
  ctwa_clid: z.string().optional(),
});

/** The provider's raw inbound message object plus external_id. */
export const rawMessageSchema = z.looseObject({
  id,
  external_id: id,
  from: z.string().optional(),
  timestamp: providerTime.optional(),
  type: id,
  context: z.looseObject({ id: z.string().optional(), from: z.string().optional() }).optional(),
  referral: referralSchema.optional(),
});

/** Contact of a message event. wa_id is the phone, or the BSUID when there is no phone. */
export const messageContactSchema = z.object({
  id: z.string().optional(),
  wa_id: id,
  user_id: nullableString,
  username: nullableString,
  phone: nullableString,
  profile_name: nullableString,
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export const pricingSchema = z.looseObject({
  billable: z.boolean().optional(),
  pricing_model: z.string().optional(),
  category: z.string().optional(),
  type: z.string().optional(),
});

export const conversationSchema = z.looseObject({
  id,
  expiration_timestamp: providerTime.optional(),
  origin: z.looseObject({ type: z.string().optional() }).optional(),
});

export const providerErrorSchema = z.looseObject({
  code: z.number(),
  title: z.string().optional(),
  message: z.string().optional(),
  error_data: z.looseObject({ details: z.string().optional() }).optional(),
});

export const entityRef = z.object({ id });
