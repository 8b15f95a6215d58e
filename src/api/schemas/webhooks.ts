/** Endpoints (SPEC 4.1-4.6) and the bulk recovery of their deliveries. */
import { z } from 'zod';
import { CATEGORIES } from '../../core/categories.js';
import { HEALTH_STATUSES } from '../../core/health.js';
import { RECOVERABLE_STATUSES } from '../../db/deliveries.js';
import { ENDPOINT_ID, InstantInput, Timestamp, Uuid } from './common.js';

const endpointExample = {
  id: ENDPOINT_ID,
  customer_id: null,
  url: 'https://example.com/webhooks',
  events: ['messages', 'statuses'],
  active: true,
  has_authorization: false,
  health_status: 'healthy',
  failure_streak: 0,
  verified_at: '2026-11-22T10:01:00.000Z',
  last_success_at: '2026-11-22T10:05:12.345Z',
  last_failure_at: null,
  last_response_code: 200,
  next_attempt_at: null,
  paused_at: null,
  rate_limit: null,
  description: 'Orders service, production',
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:05:12.345Z',
};

/** Secret rules of SPEC 4.1: 16 to 256 characters, no line breaks. */
export const Secret = z
  .string()
  .min(16, 'secret must be at least 16 characters')
  .max(256, 'secret must be at most 256 characters')
  .refine((s) => !/[\r\n]/.test(s), 'secret must not contain line breaks');

/** The endpoint's free-text label. */
export const MAX_DESCRIPTION_LENGTH = 512;
const Description = z
  .string()
  .max(MAX_DESCRIPTION_LENGTH, `description must be at most ${MAX_DESCRIPTION_LENGTH} characters`)
  .nullable()
  .openapi({
    description: `What the endpoint is for, in your words (at most ${MAX_DESCRIPTION_LENGTH} characters); null or "" removes it.`,
    example: 'Orders service, production',
  });

/** Per-endpoint throttle: POSTs per second, or null for none. */
export const MAX_RATE_LIMIT = 10_000;
const RateLimit = z
  .number()
  .int('rate_limit must be an integer')
  .min(1, 'rate_limit must be at least 1')
  .max(MAX_RATE_LIMIT, `rate_limit must be at most ${MAX_RATE_LIMIT}`)
  .nullable()
  .openapi({
    description: `At most this many POSTs per second to the endpoint (1 to ${MAX_RATE_LIMIT}); null or absent: unlimited. Waiting for it is not a failure.`,
    example: 5,
  });

/**
 * Categories as sent. Any value outside the categories, of any type (a number, null, an object),
 * is discarded later (SPEC 4.1), so every array passes here; only a non-array is refused now.
 * Documented as strings: that is what a client should send.
 */
const EventsInput = z.array(z.unknown()).openapi({
  type: 'array',
  items: { type: 'string' },
  example: ['messages', 'statuses'],
  description: `Subscription categories: ${CATEGORIES.join(', ')}. Unknown values are discarded.`,
});

export const CreateEndpointBody = z
  .object({
    url: z.string().openapi({ example: 'https://example.com/webhooks' }),
    events: EventsInput,
    customer_id: Uuid.nullable().optional(),
    secret: Secret.optional(),
    active: z.boolean().optional(),
    rate_limit: RateLimit.optional(),
    description: Description.optional(),
  })
  .strict()
  .openapi('CreateEndpoint', { example: { url: 'https://example.com/webhooks', events: ['messages', 'statuses'] } });

export const UpdateEndpointBody = z
  .object({
    url: z.string().optional(),
    events: EventsInput.optional(),
    active: z.boolean().optional(),
    secret: Secret.optional(),
    customer_id: Uuid.nullable().optional(),
    rate_limit: RateLimit.optional(),
    description: Description.optional(),
    headers: z
      .object({
        Authorization: z
          .string()
          .max(4096)
          .nullable()
          .optional()
          .openapi({ description: 'Sent as the Authorization header of every delivery and test; null or "" removes it. Never returned.' }),
      })
      .strict()
      .optional(),
  })
  .strict()
  .openapi('UpdateEndpoint', { example: { events: ['crm'], headers: { Authorization: 'Bearer receiver-token' } } });

export const Endpoint = z
  .object({
    id: Uuid,
    customer_id: Uuid.nullable(),
    url: z.string(),
    events: z.array(z.enum(CATEGORIES)),
    active: z.boolean(),
    has_authorization: z.boolean(),
    health_status: z.enum(HEALTH_STATUSES),
    failure_streak: z.number().int(),
    verified_at: Timestamp.nullable(),
    last_success_at: Timestamp.nullable(),
    last_failure_at: Timestamp.nullable(),
    last_response_code: z.number().int().nullable(),
    next_attempt_at: Timestamp.nullable(),
    paused_at: Timestamp.nullable(),
    rate_limit: z.number().int().nullable().openapi({ description: 'POSTs per second at most; null: unlimited.' }),
    description: z.string().nullable().openapi({ description: 'What the endpoint is for, as the tenant wrote it; null when none.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Endpoint', { example: endpointExample });

export const EndpointWithSecret = Endpoint.extend({ secret: z.string().openapi({ description: 'Shown in this answer only.' }) }).openapi(
  'EndpointWithSecret',
  {
    example: {
      ...endpointExample,
      health_status: 'unverified',
      verified_at: null,
      last_success_at: null,
      last_response_code: null,
      updated_at: endpointExample.created_at,
      secret: 'whsec_3q2+7wEXAMPLEv5dH0hZ1lS8nQkQm9YV0cXo1pA2bC0=',
    },
  },
);

export const EndpointStats = z
  .object({
    since: Timestamp.openapi({ description: 'Start of the first hour.' }),
    hours: z
      .array(
        z.object({
          hour: Timestamp,
          successes: z.number().int().openapi({ description: 'Attempts (of deliveries and tests) started in the hour without an error.' }),
          failures: z.number().int().openapi({ description: 'Attempts started in the hour with an error.' }),
          exhausted: z.number().int().openapi({ description: 'Deliveries that ended `exhausted` in the hour.' }),
          limited: z.number().int().openapi({ description: 'Deliveries created `limited` (Free plan) in the hour.' }),
          mean_duration_ms: z
            .number()
            .int()
            .nullable()
            .openapi({ description: "The mean duration of the hour's attempts; null without attempts." }),
        }),
      )
      .openapi({ description: 'One entry per hour, oldest first, the current hour last.' }),
  })
  .openapi('EndpointStats', {
    example: {
      since: '2026-11-21T11:00:00.000Z',
      hours: [{ hour: '2026-11-21T11:00:00.000Z', successes: 12, failures: 1, exhausted: 0, limited: 0, mean_duration_ms: 84 }],
    },
  });

export const TestResult = z
  .object({ success: z.boolean(), response_code: z.number().int(), health_status: z.string(), active: z.boolean() })
  .openapi('TestResult', { example: { success: true, response_code: 200, health_status: 'healthy', active: true } });

export const RecoverBody = z
  .object({
    since: InstantInput.openapi({ description: 'Deliveries created at or after this instant.' }),
    until: InstantInput.optional().openapi({ description: 'Deliveries created at or before this instant; default now.' }),
    statuses: z
      .array(z.enum(RECOVERABLE_STATUSES))
      .min(1, 'statuses must name at least one status')
      .optional()
      .openapi({ description: `A subset of ${RECOVERABLE_STATUSES.join(', ')}; default all three.` }),
  })
  .strict()
  .openapi('RecoverDeliveries', { example: { since: '2026-11-22T09:00:00Z', statuses: ['failed', 'exhausted'] } });

export const RecoveryResult = z
  .object({
    recovered: z.number().int(),
    since: Timestamp,
    until: Timestamp,
    statuses: z.array(z.enum(RECOVERABLE_STATUSES)),
  })
  .openapi('RecoveryResult', {
    example: { recovered: 12, since: '2026-11-22T09:00:00.000Z', until: '2026-11-22T10:00:00.000Z', statuses: ['failed', 'exhausted'] },
  });
