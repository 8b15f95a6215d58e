/**
 * OpenAPI 3.1 document built from the zod schemas that validate the requests. Each route family
 * lists its paths in api/openapi/<family>.ts; test/integration/route-contract.test.ts checks
 * that they are exactly the routes Koa serves under /api/v1, with the same scopes.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { accountPaths } from './openapi/account.js';
import { addExamples } from './openapi/examples.js';
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

/** The reference's groups, in the order /docs shows them; every operation is in one (`tagOf`). */
export const TAGS = [
  {
    name: 'endpoints',
    description:
      'Webhook endpoints: create with a signing secret, verify by a signed test, pause, throttle, recover failed deliveries, hourly stats.',
  },
  { name: 'deliveries', description: 'The delivery audit list: every delivery and attempt with its answer; resend.' },
  {
    name: 'events',
    description:
      "Publish catalog events, read the durable stream of the key's Account and environment, and the event catalog with its JSON Schemas.",
  },
  {
    name: 'messaging',
    description:
      "Send messages through channel accounts, read conversations and messages, message templates, broadcasts, and the messaging provider's own webhooks.",
  },
  { name: 'contacts', description: 'Contacts, funnel stages and consents; deleting a contact removes its events.' },
  {
    name: 'account',
    description: 'Channel accounts (chatapp numbers, photoapp accounts) and the setup links that connect them for a Customer.',
  },
] as const;
export type Tag = (typeof TAGS)[number]['name'];

/** The group of a path, by its first segment under /api/v1 (or its root for the routes outside it). */
const TAG_OF_SEGMENT: Record<string, Tag> = {
  webhooks: 'endpoints',
  webhook_deliveries: 'deliveries',
  events: 'events',
  event_types: 'events',
  contacts: 'contacts',
  stages: 'contacts',
  messages: 'messaging',
  conversations: 'messaging',
  templates: 'messaging',
  broadcasts: 'messaging',
  provider: 'messaging',
  channel_accounts: 'account',
  customers: 'account',
  setup: 'account',
};

export function tagOf(path: string): Tag {
  const segment = path.replace(/^\/api\/v1/, '').split('/')[1] ?? '';
  const tag = TAG_OF_SEGMENT[segment];
  if (!tag) throw new Error(`no tag for ${path}: add its first segment to TAG_OF_SEGMENT`);
  return tag;
}

export function buildOpenApiDocument() {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'ApiKey', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  for (const route of DOCUMENTED_ROUTES) registry.registerPath({ ...route, tags: [tagOf(route.path)] });
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Webhook platform API',
      version: '1.0.0',
      description: [
        "One API for a multi-tenant platform of webhooks and messaging. **Webhooks**: register HTTPS endpoints by category; every event is signed (`X-Webhook-Signature`, and the Standard Webhooks headers) and delivered with health-aware retries, and every delivery and attempt is in the audit list. **Events**: publish catalog events and read them back, in order, from the durable stream of the key's Account and environment (`GET /api/v1/events?after=…`).",
        '**Messaging**: send text, template and media messages through a channel account (a chatapp number or a photoapp account; `POST /api/v1/messages`, with an `Idempotency-Key` for retries), whose statuses come back as `chatapp.message.*` events; read conversations and messages; sync and list message templates; send a template to many recipients as a broadcast. **Contacts**: contacts, funnel stages and consents, whose changes are events too. **Account**: channel accounts, and the setup links a Customer opens to connect a number or a photoapp account.',
        'Authenticate with the `X-API-Key` header (Authorize, then Try it out); each route names the scope it needs. Every error answers `{ "error": { "code", "message" } }`. The rules behind each route are in the repository\'s docs/api.md.',
      ].join('\n\n'),
    },
    tags: TAGS.map((t) => ({ ...t })),
    servers: [{ url: '/' }],
  });
  addExamples(document);
  return document;
}
