export { endpointWorkflow } from './endpoint-workflow.js';
export { maintenanceWorkflow } from './maintenance.js';
