/**
 * The request and response shapes of the API, in zod. The same schemas validate requests
 * and generate the OpenAPI document, so the two cannot disagree.
 */
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { CATEGORIES } from '../core/categories.js';
import { HEALTH_STATUSES } from '../core/health.js';
import { DELIVERY_STATUSES } from '../db/deliveries.js';

extendZodWithOpenApi(z);

export const Uuid = z.uuid();
const Timestamp = z.string().openapi({ format: 'date-time', example: '2026-11-22T10:00:00.000Z' });

export const ErrorEnvelope = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .openapi('Error');

/** Secret rules of SPEC 4.1: 16 to 256 characters, no line breaks. */
export const Secret = z
  .string()
  .min(16, 'secret must be at least 16 characters')
  .max(256, 'secret must be at most 256 characters')
  .refine((s) => !/[\r\n]/.test(s), 'secret must not contain line breaks');

/** Categories as sent; unknown values are dropped later, so any strings pass here. */
const EventsInput = z.array(z.string()).openapi({ example: ['messages', 'statuses'], description: `Subscription categories: ${CATEGORIES.join(', ')}. Unknown values are discarded.` });

export const CreateEndpointBody = z
  .object({
    url: z.string().openapi({ example: 'https://example.com/webhooks' }),
    events: EventsInput,
    customer_id: Uuid.nullable().optional(),
    secret: Secret.optional(),
    active: z.boolean().optional(),
  })
  .strict()
  .openapi('CreateEndpoint');

export const UpdateEndpointBody = z
  .object({
    url: z.string().optional(),
    events: EventsInput.optional(),
    active: z.boolean().optional(),
    secret: Secret.optional(),
    customer_id: Uuid.nullable().optional(),
    headers: z.object({ Authorization: z.string().max(4096).nullable().optional() }).strict().optional(),
  })
  .strict()
  .openapi('UpdateEndpoint');

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
  .openapi('Endpoint');

export const EndpointWithSecret = Endpoint.extend({ secret: z.string() }).openapi('EndpointWithSecret');

export const Paging = z
  .object({
    cursors: z.object({ before: z.string().nullable(), after: z.string().nullable() }),
    next: z.string().nullable(),
    previous: z.string().nullable(),
  })
  .openapi('Paging');

export const TestResult = z
  .object({ success: z.boolean(), response_code: z.number().int(), health_status: z.string(), active: z.boolean() })
  .openapi('TestResult');

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
    next_attempt_at: Timestamp.nullable(),
    terminal_reason: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Delivery');

export const Attempt = z
  .object({
    number: z.number().int(),
    started_at: Timestamp,
    duration_ms: z.number().int(),
    response_code: z.number().int().nullable(),
    error: z.enum(['timeout', 'connection_error', 'tls_error', 'blocked_destination', 'non_2xx']).nullable(),
    response_excerpt: z.string().nullable(),
  })
  .openapi('Attempt');

export const DeliveryDetail = Delivery.extend({ attempts_log: z.array(Attempt) }).openapi('DeliveryDetail');

export const ListQuery = z.object({
  limit: z.string().optional().openapi({ description: 'Page size, default 20, at most 100.' }),
  after: z.string().optional().openapi({ description: 'Pass paging.next to get the next page.' }),
  before: z.string().optional().openapi({ description: 'Pass paging.previous to get the previous page.' }),
});

export const DeliveryListQuery = ListQuery.extend({
  endpoint_id: Uuid.optional(),
  webhook_id: Uuid.optional().openapi({ description: 'Alias of endpoint_id.' }),
  status: z.string().optional().openapi({ description: `One of ${DELIVERY_STATUSES.join(', ')}.` }),
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
  .openapi('StreamItem');

export const StreamPaging = z
  .object({ cursor: z.string(), next: z.string().nullable(), has_more: z.boolean() })
  .openapi('StreamPaging');

export const StreamQuery = z.object({
  after: z.string().optional().openapi({ description: 'Exclusive cursor, a non-negative integer (default 0); anything else is 422 invalid_cursor.' }),
  limit: z.string().optional().openapi({ description: 'Default 20, at most 100; an invalid value falls back to 20.' }),
});

export const EventType = z
  .object({ name: z.string(), category: z.string().nullable(), description: z.string(), in_stream: z.boolean(), schema: z.record(z.string(), z.unknown()) })
  .openapi('EventType');
