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

export const DeliveryDetail = Delivery.extend({ attempts_log: z.array(Attempt) }).openapi('DeliveryDetail', {
  example: { ...deliveryExample, attempts_log: [attemptExample] },
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
