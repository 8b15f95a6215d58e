/** Database rows to API objects. Ciphertexts never leave through here. */
import type { z } from 'zod';
import type { DeliveryRow, AttemptRow } from '../db/deliveries.js';
import type { EndpointRow } from '../db/endpoints.js';
import type { EventRow } from '../db/events.js';
import type { Attempt, Delivery, Endpoint } from './schemas.js';

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
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentDelivery(row: DeliveryRow): z.infer<typeof Delivery> {
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
    next_attempt_at: iso(row.next_attempt_at),
    terminal_reason: row.terminal_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentAttempt(row: AttemptRow): z.infer<typeof Attempt> {
  return { ...row, started_at: row.started_at.toISOString() };
}

/** A stream item (SPEC 2.4): `message_resource_id` only when the platform has the message. */
export function presentStreamItem(row: EventRow): Record<string, unknown> {
  return {
    id: row.id,
    cursor: String(row.cursor),
    type: row.type,
    environment: row.environment,
    message_id: row.message_id,
    external_id: row.external_id,
    ...(row.message_resource_id ? { message_resource_id: row.message_resource_id } : {}),
    occurred_at: row.occurred_at.toISOString(),
    created_at: row.created_at.toISOString(),
    data: row.stream_data,
  };
}
