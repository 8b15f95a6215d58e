/** What the endpoint workflow knows of an endpoint row: the state it decides on, and its label for the Web UI. */
import { endpointLabel } from '../core/endpoint-story.js';
import type { EndpointRow } from '../db/endpoints.js';
import type { EndpointSnapshot } from '../workflows/endpoint-contract.js';

export function endpointSnapshot(
  row: Pick<EndpointRow, 'health_status' | 'failure_streak' | 'active' | 'url' | 'verified_at'>,
): EndpointSnapshot {
  return {
    health_status: row.health_status,
    failure_streak: row.failure_streak,
    active: row.active,
    url_label: endpointLabel(row.url),
    verified_at_ms: row.verified_at?.getTime() ?? null,
  };
}
