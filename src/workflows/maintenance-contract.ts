/**
 * The maintenance workflow's contract: its type name (the Schedule starts it by name) and the
 * activities it asks for, which the worker implements (src/worker/maintenance-activities.ts).
 */
import type { PartitionsAheadReport, RetentionReport, TokenMaintenanceReport } from '../core/maintenance.js';

export const MAINTENANCE_WORKFLOW_TYPE = 'maintenanceWorkflow';

export interface MaintenanceActivities {
  /** Renews photoapp tokens near expiry and refreshes stale token statuses (src/channels/outbound/token-maintenance.ts). */
  maintainPhotoappTokens(): Promise<TokenMaintenanceReport>;
  /** Creates the weekly delivery partitions missing ahead (src/db/delivery-partitions.ts). */
  ensureDeliveryPartitions(): Promise<PartitionsAheadReport>;
  /** Closes open deliveries past DELIVERY_RETENTION_DAYS, then drops the partitions past it (src/worker/delivery-retention.ts). */
  applyDeliveryRetention(): Promise<RetentionReport>;
}
