/** The activities of the maintenance workflow (src/workflows/maintenance-contract.ts), on the worker's database and provider client. */
import { Context } from '@temporalio/activity';
import { maintainPhotoappTokens, type TokenMaintenanceDeps } from '../channels/outbound/token-maintenance.js';
import { DEFAULT_RETENTION_DAYS } from '../core/delivery-partitions.js';
import type { MaintenanceActivities } from '../workflows/maintenance-contract.js';
import { applyDeliveryRetention, ensureDeliveryPartitions } from './delivery-retention.js';

export function createMaintenanceActivities(
  deps: Omit<TokenMaintenanceDeps, 'progress'> & { retentionDays?: number },
): MaintenanceActivities {
  const retentionDays = deps.retentionDays ?? DEFAULT_RETENTION_DAYS;
  return {
    maintainPhotoappTokens: () => maintainPhotoappTokens({ ...deps, progress: () => Context.current().heartbeat() }),
    ensureDeliveryPartitions: () => ensureDeliveryPartitions(deps),
    applyDeliveryRetention: () => applyDeliveryRetention({ db: deps.db, retentionDays, now: deps.now }),
  };
}
