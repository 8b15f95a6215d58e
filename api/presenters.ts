/** Database rows to API objects. Ciphertexts never leave through here. */
import type { z } from 'zod';
import { nextAttemptOf } from '../core/delivery-timing.js';
import type { DeliveryRow, AttemptRow, EndpointPacingRow } from '../db/deliveries.js';
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
