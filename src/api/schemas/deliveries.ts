/** The audit list of deliveries and their attempts (SPEC 4.7). */
import { z } from 'zod';
import { NEXT_ATTEMPT_REASONS } from '../../core/delivery-timing.js';
import { DELIVERY_STATUSES } from '../../db/deliveries.js';
import { ENDPOINT_ID, EVENT_ID, ListQuery, Timestamp, Uuid } from './common.js';

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

const requestExample = {
  attempt: 1,
  body: '{"entity_type":"demand","entity_id":"dem_01","event":"crm.demand.created","customer_id":null,"environment":"live"}',
  headers: {
    'content-type': 'application/json',
    'user-agent': 'webhook-platform/1',
    'x-webhook-event': 'crm.demand.created',
    'x-idempotency-key': 'crm:demand:dem_01:1',
    'x-webhook-signature': '5f0c3a9d1e7b2c4a6f8e0d2b4c6a8e0f1a3c5e7b9d1f3a5c7e9b1d3f5a7c9e1b',
    'webhook-id': deliveryExample.id,
    'webhook-timestamp': '1795168800',
    'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
    authorization: '<set>',
  },
};

export const SignedRequest = z
  .object({
    attempt: z.number().int().nullable().openapi({
      description:
        'The attempt whose headers these are (its started_at gives webhook-timestamp); null before the first attempt: the headers as built now.',
    }),
    body: z.string().openapi({ description: 'The body exactly as signed and sent (UTF-8).' }),
    headers: z.record(z.string(), z.string()).openapi({
      description:
        "The headers sent, names in lowercase, built by the same code as the POST and signed with the endpoint's current secret. A stored Authorization value shows as <set>.",
    }),
  })
  .openapi('SignedRequest', { example: requestExample });

export const DeliveryDetail = Delivery.extend({
  attempts_log: z.array(Attempt),
  request: SignedRequest.nullable().openapi({
    description: 'The request as signed; null when it cannot be rebuilt (its event or its endpoint was deleted).',
  }),
}).openapi('DeliveryDetail', {
  example: { ...deliveryExample, attempts_log: [attemptExample], request: requestExample },
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
