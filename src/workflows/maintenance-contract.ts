/**
 * The maintenance workflow's contract: its type name (the Schedule starts it by name) and the
 * activities it asks for, which the worker implements (src/worker/maintenance-activities.ts).
 */
import type { TokenMaintenanceReport } from '../core/maintenance.js';

export const MAINTENANCE_WORKFLOW_TYPE = 'maintenanceWorkflow';

export interface MaintenanceActivities {
  /** Renews photoapp tokens near expiry and refreshes stale token statuses (src/channels/outbound/token-maintenance.ts). */
  maintainPhotoappTokens(): Promise<TokenMaintenanceReport>;
}
