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
  ConsentRecord,
  Contact,
  ContactListQuery,
  Conversation,
  ConversationListQuery,
  CreateConsentBody,
  CreateStageBody,
  Message,
  MessageListQuery,
  Stage,
  UpdateContactBody,
  OutboundMessage,
  ChannelAccountResource,
  ChannelAccountListQuery,
  RecoverBody,
  RecoveryResult,
} from './schemas.js';
import { SendMessageRequest } from '../core/outbound-message.js';
import { PublishBody } from '../ingest/publish.js';
import {
  AddRecipientsBody,
  AddRecipientsResult,
  Broadcast,
  BroadcastListQuery,
  BroadcastRecipient,
  CompleteSignupBody,
  CreateBroadcastBody,
  CreateSetupLinkBody,
  RecipientListQuery,
  SetupLink,
  SetupLinkWithUrl,
  SignupResult,
  SyncTemplatesBody,
  Template,
  TemplateListQuery,
  TemplateSyncResult,
} from './schemas.js';

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

  // ---- Contacts, funnel stages, consents, conversations and messages (CRM family) ----
  registry.registerPath({
    method: 'post',
    path: '/api/v1/stages',
    summary: 'Add a funnel stage at the end of the funnel (emits no event)',
    security,
    request: { body: { content: { 'application/json': { schema: CreateStageBody } } } },
    responses: { 201: json(z.object({ data: Stage }), 'Created'), ...errors(409) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/stages',
    summary: 'List the funnel stages in funnel order',
    security,
    request: { query: ListQuery },
    responses: { 200: json(z.object({ data: z.array(Stage), paging: Paging })) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/v1/stages/{id}',
    summary: 'Delete a stage; its contacts leave the funnel (crm.contact.stage_changed, changed_by system)',
    security,
    request: { params: idParam },
    responses: { 204: { description: 'Deleted' }, ...errors(404) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/contacts',
    summary: "List the contacts of the key's environment, newest first",
    security,
    request: { query: ContactListQuery },
    responses: { 200: json(z.object({ data: z.array(Contact), paging: Paging })) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/contacts/{id}',
    summary: 'Read a contact',
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Contact })), ...errors(404) },
  });
  registry.registerPath({
    method: 'patch',
    path: '/api/v1/contacts/{id}',
    summary: 'Edit a contact; a stage change emits crm.contact.stage_changed',
    security,
    request: { params: idParam, body: { content: { 'application/json': { schema: UpdateContactBody } } } },
    responses: { 200: json(z.object({ data: Contact })), ...errors(404) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/v1/contacts/{id}/consents',
    summary: 'Record a consent; a change of state emits crm.contact.consent_changed',
    security,
    request: { params: idParam, body: { content: { 'application/json': { schema: CreateConsentBody } } } },
    responses: { 201: json(z.object({ data: ConsentRecord }), 'Recorded'), ...errors(404) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/contacts/{id}/consents',
    summary: "A contact's consent history, newest first",
    security,
    request: { params: idParam, query: ListQuery },
    responses: { 200: json(z.object({ data: z.array(ConsentRecord), paging: Paging })), ...errors(404) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/conversations',
    summary: "List the conversations of the key's environment, newest first",
    security,
    request: { query: ConversationListQuery },
    responses: { 200: json(z.object({ data: z.array(Conversation), paging: Paging })) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/messages',
    summary: "List the messages of the key's environment, newest first",
    security,
    request: { query: MessageListQuery },
    responses: { 200: json(z.object({ data: z.array(Message), paging: Paging })) },
  });
  // ---- Sending messages and channel accounts (provider branch) ----
  registry.registerPath({
    method: 'post',
    path: '/api/v1/messages',
    summary: 'Send a message through a channel account (scope messages:write)',
    description:
      "Sent through the channel account's provider and registered with the provider's id before the answer. 202 with `{ data: message }` (status `queued`); 202 `media_not_ready` with Retry-After and the error envelope when the media is still processing (nothing registered).",
    security,
    request: {
      headers: z.object({
        'Idempotency-Key': z.string().max(255).optional().openapi({
          description: 'A retry with the same key and body answers the first message (header Idempotent-Replayed: true) and sends nothing.',
        }),
      }),
      body: { content: { 'application/json': { schema: SendMessageRequest } } },
    },
    responses: {
      202: json(
        z.union([z.object({ data: OutboundMessage }), ErrorEnvelope]),
        'Accepted: the message, or media_not_ready (error envelope, Retry-After)',
      ),
      ...errors(404, 409, 502, 503),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/channel_accounts',
    summary: 'List channel accounts of the key’s environment (scope account:read)',
    security,
    request: { query: ChannelAccountListQuery },
    responses: { 200: json(z.object({ data: z.array(ChannelAccountResource), paging: Paging })), ...errors() },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/channel_accounts/{id}',
    summary: 'Read a channel account (scope account:read)',
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: ChannelAccountResource })), ...errors(404) },
  });

  // ---- Templates, setup links and broadcasts ----
  registry.registerPath({
    method: 'get',
    path: '/api/v1/templates',
    summary: "List message templates (scope account:read): the stored copy of the provider's, newest status included",
    security,
    request: { query: TemplateListQuery },
    responses: { 200: json(z.object({ data: z.array(Template), paging: Paging })), ...errors(404) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/v1/templates/sync',
    summary: "Read a channel account's templates from the provider again (scope account:write)",
    security,
    request: { body: { content: { 'application/json': { schema: SyncTemplatesBody } } } },
    responses: { 200: json(z.object({ data: TemplateSyncResult })), ...errors(404, 502, 503) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/v1/customers/{id}/setup_links',
    summary: 'Create a setup link for a Customer (scope account:write); the url is shown only here',
    security,
    request: { params: idParam, body: { content: { 'application/json': { schema: CreateSetupLinkBody } } } },
    responses: { 201: json(z.object({ data: SetupLinkWithUrl }), 'Created'), ...errors(404) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/customers/{id}/setup_links',
    summary: "List a Customer's setup links of the key's environment (scope account:read)",
    security,
    request: { params: idParam, query: ListQuery },
    responses: { 200: json(z.object({ data: z.array(SetupLink), paging: Paging })), ...errors(404) },
  });
  registry.registerPath({
    method: 'post',
    path: '/setup/{token}/complete',
    summary: "End of the provider's embedded signup, called by the Customer's browser with the link's token (no API key)",
    request: {
      params: z.object({ token: z.string() }),
      body: { content: { 'application/json': { schema: CompleteSignupBody } } },
    },
    responses: {
      200: json(z.object({ data: SignupResult })),
      ...Object.fromEntries(
        [404, 410, 422, 502, 503].map((code) => [
          code,
          { description: 'Error envelope', content: { 'application/json': { schema: ErrorEnvelope } } },
        ]),
      ),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/v1/broadcasts',
    summary: 'Create a draft broadcast of a template on a chatapp channel account (scope messages:write)',
    security,
    request: { body: { content: { 'application/json': { schema: CreateBroadcastBody } } } },
    responses: { 201: json(z.object({ data: Broadcast }), 'Created'), ...errors(404) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/broadcasts',
    summary: 'List broadcasts with their recipient counts (scope messages:read)',
    security,
    request: { query: BroadcastListQuery },
    responses: { 200: json(z.object({ data: z.array(Broadcast), paging: Paging })), ...errors() },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/broadcasts/{id}',
    summary: 'Read a broadcast with its recipient counts (scope messages:read)',
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Broadcast })), ...errors(404) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/v1/broadcasts/{id}/recipients',
    summary: 'Add up to 1000 recipients to a draft broadcast (scope messages:write)',
    security,
    request: { params: idParam, body: { content: { 'application/json': { schema: AddRecipientsBody } } } },
    responses: { 200: json(z.object({ data: AddRecipientsResult })), ...errors(404, 409) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/v1/broadcasts/{id}/recipients',
    summary: "A broadcast's recipients with their status, message and failure reason (scope messages:read)",
    security,
    request: { params: idParam, query: RecipientListQuery },
    responses: { 200: json(z.object({ data: z.array(BroadcastRecipient), paging: Paging })), ...errors(404) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/v1/broadcasts/{id}/send',
    summary: 'Send the template to every pending recipient (scope messages:write); answers when each was attempted',
    security,
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Broadcast })), ...errors(404, 409, 503) },
  });

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
