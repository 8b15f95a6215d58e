/** The activities of the maintenance workflow (src/workflows/maintenance-contract.ts), on the worker's database and provider client. */
import { Context } from '@temporalio/activity';
import { maintainPhotoappTokens, type TokenMaintenanceDeps } from '../channels/outbound/token-maintenance.js';
import type { MaintenanceActivities } from '../workflows/maintenance-contract.js';

export function createMaintenanceActivities(deps: Omit<TokenMaintenanceDeps, 'progress'>): MaintenanceActivities {
  return {
    maintainPhotoappTokens: () => maintainPhotoappTokens({ ...deps, progress: () => Context.current().heartbeat() }),
  };
}
