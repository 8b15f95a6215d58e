/** Attempt results as a session records them (src/db/deliveries.ts, recordDeliveryAttempts). */
import type { AttemptResult } from '../../src/db/deliveries.js';

/** A 200 answered to attempt `number` of the delivery, as its claim read it (its id and week). */
export function successOf(delivery: { id: string; created_at: Date }, number = 1): AttemptResult {
  return {
    id: delivery.id,
    createdAt: delivery.created_at,
    number,
    success: true,
    nextAttemptAt: null,
    attempt: { startedAt: new Date(), durationMs: 5, responseCode: 200, error: null, responseExcerpt: null },
  };
}
