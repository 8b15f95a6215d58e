/**
 * The I/O the endpoint workflow asks for. Activities return small records, never event
 * payloads or secrets, so workflow histories stay small and secret-free.
 */
import { exhaustOpenDeliveries } from '../db/deliveries.js';
import { getEndpointById, type HealthStatus } from '../db/endpoints.js';
import type { Db } from '../db/pool.js';

export interface EndpointSnapshot {
  health_status: HealthStatus;
  failure_streak: number;
  active: boolean;
}

export interface ActivityDeps {
  db: Db;
}

export function createActivities(deps: ActivityDeps) {
  return {
    async loadEndpointSnapshot(endpointId: string): Promise<EndpointSnapshot | null> {
      const row = await getEndpointById(deps.db, endpointId);
      if (!row || row.deleted_at) return null;
      return { health_status: row.health_status, failure_streak: row.failure_streak, active: row.active };
    },

    /** After deletion: what was never delivered ends `exhausted` / `endpoint_deleted`, and stays in the audit list. */
    async closeEndpoint(endpointId: string): Promise<number> {
      return exhaustOpenDeliveries(deps.db, endpointId, 'endpoint_deleted');
    },
  };
}

export type EndpointActivities = ReturnType<typeof createActivities>;
