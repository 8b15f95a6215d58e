/**
 * OpenAPI 3.1 document built from the zod schemas that validate the requests. Each route family
 * lists its paths in api/openapi/<family>.ts; test/integration/route-contract.test.ts checks
 * that they are exactly the routes Koa serves under /api/v1, with the same scopes.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { accountPaths } from './openapi/account.js';
import { crmPaths } from './openapi/crm.js';
import { deliveryPaths } from './openapi/deliveries.js';
import { eventPaths } from './openapi/events.js';
import { messagingPaths } from './openapi/messaging.js';
import { providerPaths } from './openapi/provider.js';
import { webhookPaths } from './openapi/webhooks.js';

/** Every documented route, family by family (the order of the document's paths). */
export const DOCUMENTED_ROUTES: readonly RouteConfig[] = [
  ...webhookPaths,
  ...deliveryPaths,
  ...eventPaths,
  ...providerPaths,
  ...crmPaths,
  ...messagingPaths,
  ...accountPaths,
];

export function buildOpenApiDocument() {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'ApiKey', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  for (const route of DOCUMENTED_ROUTES) registry.registerPath(route);
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Webhook platform API',
      version: '1.0.0',
      description:
        'Signed webhook endpoints, delivery audit and the durable event stream. Authenticate with the `X-API-Key` header (Authorize, then Try it out). Every error answers `{ "error": { "code", "message" } }`. The rules behind each route are in the repository\'s docs/api.md.',
    },
    servers: [{ url: '/' }],
  });
}
