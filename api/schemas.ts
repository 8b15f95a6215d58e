/**
 * The request and response shapes of the API, in zod. The same schemas validate requests
 * and generate the OpenAPI document, so the two cannot disagree.
 */
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { CATEGORIES } from '../core/categories.js';
import { NEXT_ATTEMPT_REASONS } from '../core/delivery-timing.js';
import { HEALTH_STATUSES } from '../core/health.js';
import { DELIVERY_STATUSES } from '../db/deliveries.js';

extendZodWithOpenApi(z);

export const Uuid = z.uuid();
const Timestamp = z.string().openapi({ format: 'date-time', example: '2026-11-22T10:00:00.000Z' });

export const ErrorEnvelope = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .openapi('Error', { example: { error: { code: 'invalid_url', message: 'url must use https://' } } });

/** Example objects of the reference at /docs: one endpoint, one delivery, one stream item, consistent with each other. */
const ENDPOINT_ID = '0b9a4a4e-3f4e-4c57-9d0e-6c1f7f1d2a10';
const EVENT_ID = '5f7c2d1e-8a3b-4c6d-9e0f-1a2b3c4d5e6f';
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
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:05:12.345Z',
};
const deliveryExample = {
  id: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a',
  endpoint_id: ENDPOINT_ID,
  event_id: EVENT_ID,
  event_type: 'crm.demand.created',
  idempotency_key: 'crm:demand:dem_01:1',
  environment: 'live',
  status: 'failed',
  attempts: 1,
  response_code: 503,
  last_attempt_at: '2026-11-22T10:05:00.000Z',
  next_attempt_at: '2026-11-22T10:06:00.000Z',
  next_attempt_reason: null,
  terminal_reason: null,
  created_at: '2026-11-22T10:05:00.000Z',
  updated_at: '2026-11-22T10:05:00.120Z',
};
const attemptExample = {
  number: 1,
  started_at: '2026-11-22T10:05:00.000Z',
  duration_ms: 120,
  response_code: 503,
  error: 'non_2xx',
  response_excerpt: 'Service Unavailable',
};
const demandRow = { id: 'dem_01', version: 1, status: 'open', contact_id: 'c_1', title: 'Quote' };
const streamItemExample = {
  id: EVENT_ID,
  cursor: '42',
  type: 'crm.demand.created',
  environment: 'live',
  message_id: null,
  external_id: null,
  occurred_at: '2026-11-22T10:05:00.000Z',
  created_at: '2026-11-22T10:05:00.010Z',
  data: { entity_type: 'demand', entity_id: 'dem_01', before_data: null, after_data: demandRow, actor_user_id: null },
};
/** The body of POST /api/v1/events that stores the stream item above. */
export const publishExample = { type: 'crm.demand.created', data: streamItemExample.data };

/** Secret rules of SPEC 4.1: 16 to 256 characters, no line breaks. */
export const Secret = z
  .string()
  .min(16, 'secret must be at least 16 characters')
  .max(256, 'secret must be at most 256 characters')
  .refine((s) => !/[\r\n]/.test(s), 'secret must not contain line breaks');

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
      secret: 'whsec_3q2-7wEXAMPLEv5dH0hZ1lS8nQkQm9YV0cXo1pA2bC3dE4',
    },
  },
);

export const Paging = z
  .object({
    cursors: z.object({ before: z.string().nullable(), after: z.string().nullable() }),
    next: z.string().nullable(),
    previous: z.string().nullable(),
  })
  .openapi('Paging');

export const TestResult = z
  .object({ success: z.boolean(), response_code: z.number().int(), health_status: z.string(), active: z.boolean() })
  .openapi('TestResult', { example: { success: true, response_code: 200, health_status: 'healthy', active: true } });

export const DeliveryStatus = z.enum(DELIVERY_STATUSES);

export const Delivery = z
  .object({
    id: Uuid,
    endpoint_id: Uuid,
    event_id: Uuid.nullable(),
    event_type: z.string(),
    idempotency_key: z.string(),
    environment: z.enum(['live', 'sandbox']).nullable(),
    status: DeliveryStatus,
    attempts: z.number().int(),
    response_code: z.number().int().nullable(),
    last_attempt_at: Timestamp.nullable(),
    next_attempt_at: Timestamp.nullable().openapi({
      description:
        "When the delivery will be attempted: its own retry time, held back by its endpoint's pacing while the endpoint fails (one POST at a time on the curve); null when there is none (terminal, or the endpoint does not send: see next_attempt_reason).",
    }),
    next_attempt_reason: z.enum(NEXT_ATTEMPT_REASONS).nullable().openapi({
      description:
        "Why next_attempt_at is not simply the delivery's own retry time. endpoint_paused, endpoint_inactive, endpoint_unverified: the endpoint does not send, next_attempt_at is null. endpoint_pacing: first in line on a failing endpoint, next_attempt_at is its next POST (exact). endpoint_queue: behind others on a failing endpoint, next_attempt_at is the earliest it can go. Null: its own retry time stands.",
    }),
    terminal_reason: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Delivery', { example: deliveryExample });

export const Attempt = z
  .object({
    number: z.number().int(),
    started_at: Timestamp,
    duration_ms: z.number().int(),
    response_code: z.number().int().nullable(),
    error: z.enum(['timeout', 'connection_error', 'tls_error', 'blocked_destination', 'non_2xx']).nullable(),
    response_excerpt: z.string().nullable().openapi({ description: 'The first 4 KiB of the answer, as UTF-8 text.' }),
  })
  .openapi('Attempt', { example: attemptExample });

export const DeliveryDetail = Delivery.extend({ attempts_log: z.array(Attempt) }).openapi('DeliveryDetail', {
  example: { ...deliveryExample, attempts_log: [attemptExample] },
});

export const ListQuery = z.object({
  limit: z.string().optional().openapi({ description: 'Page size, default 20, at most 100.' }),
  after: z.string().optional().openapi({ description: 'Pass paging.next to get the next page.' }),
  before: z.string().optional().openapi({ description: 'Pass paging.previous to get the previous page.' }),
});

export const DeliveryListQuery = ListQuery.extend({
  endpoint_id: Uuid.optional(),
  webhook_id: Uuid.optional().openapi({ description: 'Alias of endpoint_id.' }),
  status: z
    .string()
    .optional()
    .openapi({ description: `One of ${DELIVERY_STATUSES.join(', ')}.` }),
  event_type: z.string().optional(),
});

export const StreamItem = z
  .object({
    id: Uuid,
    cursor: z.string().openapi({ description: 'Integer position, as a string.' }),
    type: z.string(),
    environment: z.enum(['live', 'sandbox']),
    message_id: z.string().nullable(),
    external_id: z.string().nullable(),
    message_resource_id: Uuid.optional().openapi({ description: 'Present when the platform has the message.' }),
    occurred_at: Timestamp,
    created_at: Timestamp,
    data: z.record(z.string(), z.unknown()),
  })
  .openapi('StreamItem', { example: streamItemExample });

export const StreamPaging = z
  .object({ cursor: z.string(), next: z.string().nullable(), has_more: z.boolean() })
  .openapi('StreamPaging', { example: { cursor: '42', next: null, has_more: false } });

export const StreamQuery = z.object({
  after: z
    .string()
    .optional()
    .openapi({ description: 'Exclusive cursor, a non-negative integer (default 0); anything else is 422 invalid_cursor.' }),
  limit: z.string().optional().openapi({ description: 'Default 20, at most 100; an invalid value falls back to 20.' }),
});

export const EventType = z
  .object({
    name: z.string(),
    category: z.string().nullable(),
    description: z.string(),
    in_stream: z.boolean(),
    schema: z.record(z.string(), z.unknown()),
  })
  .openapi('EventType', {
    example: {
      name: 'crm.demand.created',
      category: 'crm',
      description: 'A demand was created; each write increments its version.',
      in_stream: true,
      schema: { type: 'object', properties: { entity_type: { type: 'string', const: 'demand' } } },
    },
  });
