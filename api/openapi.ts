/** OpenAPI 3.1 document built from the zod schemas that validate the requests. */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import {
  CreateEndpointBody,
  Delivery,
  DeliveryDetail,
  DeliveryListQuery,
  Endpoint,
  EndpointStats,
  EndpointWithSecret,
  ErrorEnvelope,
  EventType,
  ListQuery,
  Paging,
  StreamItem,
  StreamPaging,
  StreamQuery,
  TestResult,
  UpdateEndpointBody,
  publishExample,
  RecoverBody,
  RecoveryResult,
} from './schemas.js';
import { PublishBody } from '../ingest/publish.js';

/** 401, 403 and 429 can answer any authenticated route, and 422 too: text Postgres cannot store (NUL, unpaired surrogates) in the path or query. */
function errors(...codes: number[]) {
  const out: Record<number, { description: string; content: { 'application/json': { schema: typeof ErrorEnvelope } } }> = {};
  for (const code of [401, 403, 422, 429, ...codes])
    out[code] = { description: 'Error envelope', content: { 'application/json': { schema: ErrorEnvelope } } };
  return out;
}

const json = <T extends z.ZodType>(schema: T, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const idParam = z.object({ id: z.uuid() });

export function buildOpenApiDocument() {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'ApiKey', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  const security = [{ ApiKey: [] }];

  registry.registerPath({
    method: 'post',
    path: '/api/v1/webhooks',
    summary: 'Create a webhook endpoint (the secret is shown only here)',
    security,
    request: { body: { content: { 'application/json': { schema: CreateEndpointBody } } } },
    responses: { 201: json(z.object({ data: EndpointWithSecret }), 'Created'), ...errors(422) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/webhooks',
    summary: 'List webhook endpoints',
    security,
    request: { query: ListQuery },
    responses: { 200: json(z.object({ data: z.array(Endpoint), paging: Paging })), ...errors(422) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/webhooks/{id}',
    summary: 'Read a webhook endpoint',
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Endpoint })), ...errors(404) },
  });
  registry.registerPath({
    method: 'patch',
    path: '/api/v1/webhooks/{id}',
    summary: 'Update a webhook endpoint',
    security,
    request: { params: idParam, body: { content: { 'application/json': { schema: UpdateEndpointBody } } } },
    responses: { 200: json(z.object({ data: Endpoint })), ...errors(404, 409, 422) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/v1/webhooks/{id}',
    summary: 'Delete a webhook endpoint',
    security,
    request: { params: idParam },
    responses: { 204: { description: 'Deleted' }, ...errors(404) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/v1/webhooks/{id}/test',
    summary: 'Send a signed webhook.test and verify the endpoint on 2xx',
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: TestResult })), ...errors(404, 502) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/webhook_deliveries',
    summary: 'Delivery audit list, newest first',
    security,
    request: { query: DeliveryListQuery },
    responses: { 200: json(z.object({ data: z.array(Delivery), paging: Paging })), ...errors(422) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/webhook_deliveries/{id}',
    summary: 'One delivery with its attempts',
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: DeliveryDetail })), ...errors(404) },
  });

  registry.registerPath({
    method: 'post',
    path: '/api/v1/webhook_deliveries/{id}/resend',
    summary: 'Resend a limited, exhausted or failed delivery',
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Delivery })), ...errors(404, 409) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/v1/events',
    summary: 'Publish a catalog event (201 stored, 200 already known)',
    security,
    request: { body: { content: { 'application/json': { schema: PublishBody.openapi('PublishEvent', { example: publishExample }) } } } },
    responses: {
      201: json(z.object({ data: StreamItem }), 'Stored'),
      200: json(z.object({ data: StreamItem }), 'Already stored: the first event'),
      ...errors(422),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/events',
    summary: "Read the durable stream of the key's Account and environment",
    security,
    request: { query: StreamQuery },
    responses: { 200: json(z.object({ data: z.array(StreamItem), paging: StreamPaging })), ...errors(422) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/event_types',
    summary: 'The event catalog with the JSON Schema of each payload',
    security,
    responses: { 200: json(z.object({ data: z.array(EventType) })) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/v1/contacts/{id}',
    summary: 'Delete a contact and its events from the stream',
    security,
    request: { params: z.object({ id: z.string() }) },
    responses: { 204: { description: 'Deleted' }, ...errors(404, 422) },
  });
  for (const channel of ['chatapp', 'photoapp']) {
    registry.registerPath({
      method: 'post',
      path: `/provider/${channel}/webhook`,
      summary: `Messaging provider webhook of the ${channel} channel (X-Hub-Signature-256), not for API clients`,
      request: { body: { content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } } },
      responses: {
        200: json(z.object({ received: z.boolean(), events: z.number().int().optional() })),
        401: { description: 'Bad signature', content: { 'application/json': { schema: ErrorEnvelope } } },
      },
    });
  }

  // Console
  registry.registerPath({
    method: 'get',
    path: '/api/v1/webhooks/{id}/stats',
    summary: "An endpoint's attempts per hour over the last 24 hours (successes and failures)",
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: EndpointStats })), ...errors(404) },
  });

  // Delivery controls: bulk recovery of an endpoint's deliveries.
  registry.registerPath({
    method: 'post',
    path: '/api/v1/webhooks/{id}/recover',
    summary: "Put an endpoint's failed, exhausted and limited deliveries of a time window back to pending",
    description:
      "Scope webhooks:write. Only deliveries of the key's environment; never test sends, nor deliveries ended by a deleted endpoint or event. The endpoint sends them at the pace its health allows. Idempotent: a repeat recovers 0 more.",
    security,
    request: { params: idParam, body: { content: { 'application/json': { schema: RecoverBody } } } },
    responses: { 200: json(z.object({ data: RecoveryResult })), ...errors(404) },
  });

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
