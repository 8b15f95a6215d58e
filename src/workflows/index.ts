export { endpointWorkflow } from './endpoint-workflow.js';
