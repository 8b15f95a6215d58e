import type { EndpointId } from './ids.js';
/**
 * Which endpoints get a delivery for an event, and in which state (SPEC 2.2, 3.1, DECISIONS).
 * Pure: the caller supplies the endpoints and the event's routing facts.
 */
import { routesTo, type EventDefinition } from './catalog/index.js';
import type { Health } from './health.js';

export interface RoutableEndpoint {
  id: EndpointId;
  customer_id: string | null;
  events: string[];
  active: boolean;
  health_status: Health;
}

export interface Admission {
  endpointId: EndpointId;
  /** Held deliveries wait (paused endpoint) and expire 14 days after they became held. */
  held: boolean;
}

export function admit(def: EventDefinition, eventCustomerId: string | null, endpoints: readonly RoutableEndpoint[]): Admission[] {
  const out: Admission[] = [];
  for (const e of endpoints) {
    if (!routesTo(def, e.events)) continue;
    // A Customer filter lets through only that Customer's events; unresolved events (no customer) do not match it.
    if (e.customer_id !== null && e.customer_id !== eventCustomerId) continue;
    // Inactive and unverified endpoints are not admitted; the stream keeps the event.
    if (!e.active || e.health_status === 'unverified') continue;
    out.push({ endpointId: e.id, held: e.health_status === 'paused' });
  }
  return out;
}
