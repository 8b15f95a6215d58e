/**
 * The request and response shapes of the API, in zod. The same schemas validate requests
 * and generate the OpenAPI document, so the two cannot disagree.
 */
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { CATEGORIES } from '../core/categories.js';
import { NEXT_ATTEMPT_REASONS } from '../core/delivery-timing.js';
import { HEALTH_STATUSES } from '../core/health.js';
import { DELIVERY_STATUSES, RECOVERABLE_STATUSES } from '../db/deliveries.js';

extendZodWithOpenApi(z);

export const Uuid = z.uuid();
const Timestamp = z.string().openapi({ format: 'date-time', example: '2026-11-22T10:00:00.000Z' });

export const ErrorEnvelope = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .openapi('Error', { example: { error: { code: 'invalid_url', message: 'url must use https://' } } });

/** Example objects of the reference at /docs: one endpoint, one delivery, one stream item, consistent with each other. */
const ENDPOINT_ID = '0b9a4a4e-3f4e-4c57-9d0e-6c1f7f1d2a10';
const EVENT_ID = '5f7c2d1e-8a3b-4c6d-9e0f-1a2b3c4d5e6f';
const endpointExample = {
  id: ENDPOINT_ID,
  customer_id: null,
  url: 'https://example.com/webhooks',
  events: ['messages', 'statuses'],
  active: true,
  has_authorization: false,
  health_status: 'healthy',
  failure_streak: 0,
  verified_at: '2026-11-22T10:01:00.000Z',
  last_success_at: '2026-11-22T10:05:12.345Z',
  last_failure_at: null,
  last_response_code: 200,
  next_attempt_at: null,
  paused_at: null,
  rate_limit: null,
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:05:12.345Z',
};
const deliveryExample = {
  id: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a',
  endpoint_id: ENDPOINT_ID,
  event_id: EVENT_ID,
  event_type: 'crm.demand.created',
  idempotency_key: 'crm:demand:dem_01:1',
  environment: 'live',
  status: 'failed',
  attempts: 1,
  response_code: 503,
  last_attempt_at: '2026-11-22T10:05:00.000Z',
  next_attempt_at: '2026-11-22T10:06:00.000Z',
  next_attempt_reason: null,
  terminal_reason: null,
  created_at: '2026-11-22T10:05:00.000Z',
  updated_at: '2026-11-22T10:05:00.120Z',
};
const attemptExample = {
  number: 1,
  started_at: '2026-11-22T10:05:00.000Z',
  duration_ms: 120,
  response_code: 503,
  error: 'non_2xx',
  response_excerpt: 'Service Unavailable',
};
const demandRow = { id: 'dem_01', version: 1, status: 'open', contact_id: 'c_1', title: 'Quote' };
const streamItemExample = {
  id: EVENT_ID,
  cursor: '42',
  type: 'crm.demand.created',
  environment: 'live',
  message_id: null,
  external_id: null,
  occurred_at: '2026-11-22T10:05:00.000Z',
  created_at: '2026-11-22T10:05:00.010Z',
  data: { entity_type: 'demand', entity_id: 'dem_01', before_data: null, after_data: demandRow, actor_user_id: null },
};
/** The body of POST /api/v1/events that stores the stream item above. */
export const publishExample = { type: 'crm.demand.created', data: streamItemExample.data };

/** Secret rules of SPEC 4.1: 16 to 256 characters, no line breaks. */
export const Secret = z
  .string()
  .min(16, 'secret must be at least 16 characters')
  .max(256, 'secret must be at most 256 characters')
  .refine((s) => !/[\r\n]/.test(s), 'secret must not contain line breaks');

/** Per-endpoint throttle: POSTs per second, or null for none. */
export const MAX_RATE_LIMIT = 10_000;
const RateLimit = z
  .number()
  .int('rate_limit must be an integer')
  .min(1, 'rate_limit must be at least 1')
  .max(MAX_RATE_LIMIT, `rate_limit must be at most ${MAX_RATE_LIMIT}`)
  .nullable()
  .openapi({
    description: `At most this many POSTs per second to the endpoint (1 to ${MAX_RATE_LIMIT}); null or absent: unlimited. Waiting for it is not a failure.`,
    example: 5,
  });

/**
 * Categories as sent. Any value outside the categories, of any type (a number, null, an object),
 * is discarded later (SPEC 4.1), so every array passes here; only a non-array is refused now.
 * Documented as strings: that is what a client should send.
 */
const EventsInput = z.array(z.unknown()).openapi({
  type: 'array',
  items: { type: 'string' },
  example: ['messages', 'statuses'],
  description: `Subscription categories: ${CATEGORIES.join(', ')}. Unknown values are discarded.`,
});

export const CreateEndpointBody = z
  .object({
    url: z.string().openapi({ example: 'https://example.com/webhooks' }),
    events: EventsInput,
    customer_id: Uuid.nullable().optional(),
    secret: Secret.optional(),
    active: z.boolean().optional(),
    rate_limit: RateLimit.optional(),
  })
  .strict()
  .openapi('CreateEndpoint', { example: { url: 'https://example.com/webhooks', events: ['messages', 'statuses'] } });

export const UpdateEndpointBody = z
  .object({
    url: z.string().optional(),
    events: EventsInput.optional(),
    active: z.boolean().optional(),
    secret: Secret.optional(),
    customer_id: Uuid.nullable().optional(),
    rate_limit: RateLimit.optional(),
    headers: z
      .object({
        Authorization: z
          .string()
          .max(4096)
          .nullable()
          .optional()
          .openapi({ description: 'Sent as the Authorization header of every delivery and test; null or "" removes it. Never returned.' }),
      })
      .strict()
      .optional(),
  })
  .strict()
  .openapi('UpdateEndpoint', { example: { events: ['crm'], headers: { Authorization: 'Bearer receiver-token' } } });

export const Endpoint = z
  .object({
    id: Uuid,
    customer_id: Uuid.nullable(),
    url: z.string(),
    events: z.array(z.enum(CATEGORIES)),
    active: z.boolean(),
    has_authorization: z.boolean(),
    health_status: z.enum(HEALTH_STATUSES),
    failure_streak: z.number().int(),
    verified_at: Timestamp.nullable(),
    last_success_at: Timestamp.nullable(),
    last_failure_at: Timestamp.nullable(),
    last_response_code: z.number().int().nullable(),
    next_attempt_at: Timestamp.nullable(),
    paused_at: Timestamp.nullable(),
    rate_limit: z.number().int().nullable().openapi({ description: 'POSTs per second at most; null: unlimited.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Endpoint', { example: endpointExample });

export const EndpointWithSecret = Endpoint.extend({ secret: z.string().openapi({ description: 'Shown in this answer only.' }) }).openapi(
  'EndpointWithSecret',
  {
    example: {
      ...endpointExample,
      health_status: 'unverified',
      verified_at: null,
      last_success_at: null,
      last_response_code: null,
      updated_at: endpointExample.created_at,
      secret: 'whsec_3q2-7wEXAMPLEv5dH0hZ1lS8nQkQm9YV0cXo1pA2bC3dE4',
    },
  },
);

export const Paging = z
  .object({
    cursors: z.object({ before: z.string().nullable(), after: z.string().nullable() }),
    next: z.string().nullable(),
    previous: z.string().nullable(),
  })
  .openapi('Paging');

export const EndpointStats = z
  .object({
    since: Timestamp.openapi({ description: 'Start of the first hour.' }),
    hours: z
      .array(z.object({ hour: Timestamp, successes: z.number().int(), failures: z.number().int() }))
      .openapi({ description: 'One entry per hour, oldest first, the current hour last; attempts of deliveries and tests.' }),
  })
  .openapi('EndpointStats', {
    example: { since: '2026-11-21T11:00:00.000Z', hours: [{ hour: '2026-11-21T11:00:00.000Z', successes: 12, failures: 1 }] },
  });

export const TestResult = z
  .object({ success: z.boolean(), response_code: z.number().int(), health_status: z.string(), active: z.boolean() })
  .openapi('TestResult', { example: { success: true, response_code: 200, health_status: 'healthy', active: true } });

export const DeliveryStatus = z.enum(DELIVERY_STATUSES);

export const Delivery = z
  .object({
    id: Uuid,
    endpoint_id: Uuid,
    event_id: Uuid.nullable(),
    event_type: z.string(),
    idempotency_key: z.string(),
    environment: z.enum(['live', 'sandbox']).nullable(),
    status: DeliveryStatus,
    attempts: z.number().int(),
    response_code: z.number().int().nullable(),
    last_attempt_at: Timestamp.nullable(),
    next_attempt_at: Timestamp.nullable().openapi({
      description:
        "When the delivery will be attempted: its own retry time, held back by its endpoint's pacing while the endpoint fails (one POST at a time on the curve); null when there is none (terminal, or the endpoint does not send: see next_attempt_reason).",
    }),
    next_attempt_reason: z.enum(NEXT_ATTEMPT_REASONS).nullable().openapi({
      description:
        "Why next_attempt_at is not simply the delivery's own retry time. endpoint_paused, endpoint_inactive, endpoint_unverified: the endpoint does not send, next_attempt_at is null. endpoint_pacing: first in line on a failing endpoint, next_attempt_at is its next POST (exact). endpoint_queue: behind others on a failing endpoint, next_attempt_at is the earliest it can go. Null: its own retry time stands.",
    }),
    terminal_reason: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Delivery', { example: deliveryExample });

export const Attempt = z
  .object({
    number: z.number().int(),
    started_at: Timestamp,
    duration_ms: z.number().int(),
    response_code: z.number().int().nullable(),
    error: z.enum(['timeout', 'connection_error', 'tls_error', 'blocked_destination', 'non_2xx']).nullable(),
    response_excerpt: z.string().nullable().openapi({ description: 'The first 4 KiB of the answer, as UTF-8 text.' }),
  })
  .openapi('Attempt', { example: attemptExample });

export const DeliveryDetail = Delivery.extend({ attempts_log: z.array(Attempt) }).openapi('DeliveryDetail', {
  example: { ...deliveryExample, attempts_log: [attemptExample] },
});

export const ListQuery = z.object({
  limit: z.string().optional().openapi({ description: 'Page size, default 20, at most 100.' }),
  after: z.string().optional().openapi({ description: 'Pass paging.next to get the next page.' }),
  before: z.string().optional().openapi({ description: 'Pass paging.previous to get the previous page.' }),
});

export const DeliveryListQuery = ListQuery.extend({
  endpoint_id: Uuid.optional(),
  webhook_id: Uuid.optional().openapi({ description: 'Alias of endpoint_id.' }),
  status: z
    .string()
    .optional()
    .openapi({ description: `One of ${DELIVERY_STATUSES.join(', ')}.` }),
  event_type: z.string().optional(),
});

export const StreamItem = z
  .object({
    id: Uuid,
    cursor: z.string().openapi({ description: 'Integer position, as a string.' }),
    type: z.string(),
    environment: z.enum(['live', 'sandbox']),
    message_id: z.string().nullable(),
    external_id: z.string().nullable(),
    message_resource_id: Uuid.optional().openapi({ description: 'Present when the platform has the message.' }),
    occurred_at: Timestamp,
    created_at: Timestamp,
    data: z.record(z.string(), z.unknown()),
  })
  .openapi('StreamItem', { example: streamItemExample });

export const StreamPaging = z
  .object({ cursor: z.string(), next: z.string().nullable(), has_more: z.boolean() })
  .openapi('StreamPaging', { example: { cursor: '42', next: null, has_more: false } });

export const StreamQuery = z.object({
  after: z
    .string()
    .optional()
    .openapi({ description: 'Exclusive cursor, a non-negative integer (default 0); anything else is 422 invalid_cursor.' }),
  limit: z.string().optional().openapi({ description: 'Default 20, at most 100; an invalid value falls back to 20.' }),
});

export const EventType = z
  .object({
    name: z.string(),
    category: z.string().nullable(),
    description: z.string(),
    in_stream: z.boolean(),
    schema: z.record(z.string(), z.unknown()),
  })
  .openapi('EventType', {
    example: {
      name: 'crm.demand.created',
      category: 'crm',
      description: 'A demand was created; each write increments its version.',
      in_stream: true,
      schema: { type: 'object', properties: { entity_type: { type: 'string', const: 'demand' } } },
    },
  });

// ---- Contacts, funnel stages, consents, conversations and messages (CRM family) ----

const CONTACT_ID = '7a1c9e2b-4d3f-4b8a-9c6d-2e5f8a1b3c4d';
const CHANNEL_ACCOUNT_ID = '3e8d1f2a-6b4c-4a9e-8d7f-1c2b3a4d5e6f';
const CONVERSATION_ID = '2b4d6f8a-1c3e-4a5b-9d7f-0e2c4a6b8d1f';
const stageExample = { id: '6c5b4a39-2817-4f6e-9d5c-4b3a29180f7e', key: 'qualified', label: 'Qualified', position: 2 };

/** Stage keys name stages in PATCH bodies and events: short, stable, URL-safe. */
export const StageKey = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'key must be 1 to 64 of a-z, 0-9, _ and -, starting with a letter or digit')
  .openapi({ example: 'qualified' });

export const CreateStageBody = z
  .object({ key: StageKey, label: z.string().trim().min(1).max(100).openapi({ example: 'Qualified' }) })
  .strict()
  .openapi('CreateStage', { example: { key: 'qualified', label: 'Qualified' } });

export const Stage = z
  .object({
    id: Uuid,
    key: z.string(),
    label: z.string(),
    position: z.number().int().openapi({ description: 'Place in the funnel, 1 first; stages are listed in this order.' }),
    created_at: Timestamp,
  })
  .openapi('Stage', { example: { ...stageExample, created_at: '2026-11-22T09:00:00.000Z' } });

export const StageRefSchema = z.object({ id: Uuid, key: z.string(), label: z.string() }).openapi('StageRef');

const MAX_METADATA_BYTES = 8192;

export const UpdateContactBody = z
  .object({
    // Any text: a key that names no stage of the Account is 422 invalid_stage, whatever its shape.
    stage: z
      .string()
      .min(1)
      .max(64)
      .nullable()
      .optional()
      .openapi({ description: 'A stage key (GET /api/v1/stages); null takes the contact out of the funnel.' }),
    profile_name: z.string().max(256).nullable().optional(),
    metadata: z
      .record(z.string().min(1).max(40), z.unknown())
      .refine((m) => Object.keys(m).length <= 50, 'metadata has at most 50 keys')
      .refine(
        (m) => Buffer.byteLength(JSON.stringify(m), 'utf8') <= MAX_METADATA_BYTES,
        `metadata is at most ${MAX_METADATA_BYTES} bytes of JSON`,
      )
      .optional()
      .openapi({ description: 'Merged into the stored metadata; a key set to null is removed.' }),
  })
  .strict()
  .openapi('UpdateContact', { example: { stage: 'qualified', metadata: { plan: 'gold' } } });

const contactExample = {
  id: CONTACT_ID,
  channel_account_id: CHANNEL_ACCOUNT_ID,
  channel: 'chatapp',
  wa_id: '5511987654321',
  user_id: null,
  username: null,
  phone: '+5511987654321',
  profile_name: 'Maria',
  metadata: { plan: 'gold' },
  stage: { id: stageExample.id, key: stageExample.key, label: stageExample.label },
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:07:00.000Z',
};

export const Contact = z
  .object({
    id: Uuid,
    channel_account_id: Uuid,
    channel: z.enum(['chatapp', 'photoapp']),
    wa_id: z.string().openapi({ description: 'Phone, or the BSUID when there is no phone; the photoapp user id on photoapp.' }),
    user_id: z.string().nullable(),
    username: z.string().nullable(),
    phone: z.string().nullable(),
    profile_name: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    stage: StageRefSchema.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Contact', { example: contactExample });

export const ContactListQuery = ListQuery.extend({
  channel_account_id: Uuid.optional(),
  stage: z.string().optional().openapi({ description: 'A stage key: contacts on that stage.' }),
  wa_id: z.string().optional(),
});

export const CreateConsentBody = z
  .object({
    channel: z.enum(['chatapp', 'photoapp']).openapi({ description: "The contact's channel." }),
    state: z.enum(['granted', 'revoked']),
    // Optional in the document (defaults applied by the route): a default here would read as required to generators.
    purpose: z.enum(['utility', 'marketing']).optional().openapi({ description: 'Default marketing.' }),
    origin: z.enum(['manual', 'import', 'api', 'keyword', 'conversation_button']).optional().openapi({ description: 'Default api.' }),
    evidence: z.string().max(500, 'evidence is at most 500 characters').optional().openapi({ description: 'Default empty.' }),
  })
  .strict()
  .openapi('CreateConsent', { example: { channel: 'chatapp', state: 'granted', evidence: 'Replied YES to the opt-in message' } });

export const ConsentRecord = z
  .object({
    id: Uuid.openapi({ description: 'The consent_record_id of the event.' }),
    contact_id: Uuid,
    channel: z.enum(['chatapp', 'photoapp']),
    purpose: z.enum(['utility', 'marketing']),
    state: z.enum(['granted', 'revoked']),
    origin: z.enum(['manual', 'import', 'api', 'keyword', 'conversation_button']),
    evidence: z.string(),
    changed: z.boolean().openapi({ description: 'Whether it changed the current state (and emitted crm.contact.consent_changed).' }),
    created_at: Timestamp,
  })
  .openapi('ConsentRecord', {
    example: {
      id: '1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b',
      contact_id: CONTACT_ID,
      channel: 'chatapp',
      purpose: 'marketing',
      state: 'granted',
      origin: 'api',
      evidence: 'Replied YES to the opt-in message',
      changed: true,
      created_at: '2026-11-22T10:08:00.000Z',
    },
  });

export const Conversation = z
  .object({
    id: Uuid,
    channel_account_id: Uuid,
    contact_id: Uuid,
    fep_expires_at: Timestamp.nullable().openapi({ description: 'End of the free-entry-point window of a click-to-chat ad, if any.' }),
    last_message_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('Conversation', {
    example: {
      id: CONVERSATION_ID,
      channel_account_id: CHANNEL_ACCOUNT_ID,
      contact_id: CONTACT_ID,
      fep_expires_at: null,
      last_message_at: '2026-11-22T10:06:00.000Z',
      created_at: '2026-11-22T10:00:00.000Z',
    },
  });

export const ConversationListQuery = ListQuery.extend({ contact_id: Uuid.optional(), channel_account_id: Uuid.optional() });

export const Message = z
  .object({
    id: Uuid.openapi({ description: 'The message_resource_id of stream items.' }),
    external_id: z.string().openapi({ description: "The channel's message id (the wamid on chatapp)." }),
    channel_account_id: Uuid,
    contact_id: Uuid.nullable(),
    conversation_id: Uuid.nullable(),
    direction: z.enum(['inbound', 'outbound']),
    type: z.string().nullable(),
    status: z.string().nullable(),
    created_at: Timestamp,
  })
  .openapi('Message', {
    example: {
      id: '8e7d6c5b-4a39-4281-9f0e-1d2c3b4a5968',
      external_id: 'wamid.HBgMNTUxMTk4NzY1NDMyMRUCABIYFjNFQjA=',
      channel_account_id: CHANNEL_ACCOUNT_ID,
      contact_id: CONTACT_ID,
      conversation_id: CONVERSATION_ID,
      direction: 'inbound',
      type: 'text',
      status: 'received',
      created_at: '2026-11-22T10:06:00.000Z',
    },
  });

export const MessageListQuery = ListQuery.extend({
  conversation_id: Uuid.optional(),
  contact_id: Uuid.optional(),
  channel_account_id: Uuid.optional(),
  direction: z.enum(['inbound', 'outbound']).optional(),
});

// ---- Templates, setup links and broadcasts ----

export const TEMPLATE_STATUSES = [
  'APPROVED',
  'PENDING',
  'REJECTED',
  'PAUSED',
  'DISABLED',
  'IN_APPEAL',
  'PENDING_DELETION',
  'DELETED',
  'LIMIT_EXCEEDED',
  'ARCHIVED',
] as const;

export const Template = z
  .object({
    id: Uuid,
    waba_id: z.string(),
    provider_template_id: z.string(),
    name: z.string(),
    language: z.string(),
    category: z.string().nullable(),
    status: z.string().openapi({ description: `As the provider reports it: ${TEMPLATE_STATUSES.join(', ')}.` }),
    status_reason: z.string().nullable().openapi({ description: 'Why the provider rejected or paused it, when it said.' }),
    components: z.array(z.unknown()),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Template', {
    example: {
      id: '3e1d2c4b-5a6f-4e7d-8c9b-0a1b2c3d4e5f',
      waba_id: '102290129340398',
      provider_template_id: '1049912345678901',
      name: 'order_update',
      language: 'en_US',
      category: 'UTILITY',
      status: 'APPROVED',
      status_reason: null,
      components: [{ type: 'BODY', text: 'Your order {{1}} has shipped.' }],
      created_at: '2026-11-22T10:00:00.000Z',
      updated_at: '2026-11-22T10:00:00.000Z',
    },
  });

export const TemplateListQuery = ListQuery.extend({
  channel_account_id: Uuid.optional().openapi({ description: "Templates of this channel account's business account." }),
  status: z
    .string()
    .optional()
    .openapi({ description: `One of ${TEMPLATE_STATUSES.join(', ')} (any case).` }),
  name: z.string().optional(),
});

export const SyncTemplatesBody = z.object({ channel_account_id: Uuid }).strict().openapi('SyncTemplates');

export const TemplateSyncResult = z
  .object({
    channel_account_id: Uuid,
    waba_id: z.string(),
    templates: z.number().int().openapi({ description: 'How many templates the provider listed.' }),
    updated: z.number().int().openapi({ description: 'Templates added or changed by this sync.' }),
    removed: z.number().int().openapi({ description: 'Templates the provider no longer lists.' }),
    synced_at: Timestamp,
  })
  .openapi('TemplateSyncResult');

export const CONNECTION_MODES = ['dedicated', 'coexistence'] as const;
/** Setup links live 7 days unless asked otherwise, at most 30. */
export const SETUP_LINK_DEFAULT_TTL_S = 7 * 24 * 3600;
export const SETUP_LINK_MAX_TTL_S = 30 * 24 * 3600;

export const CreateSetupLinkBody = z
  .object({
    connection_mode: z
      .enum(CONNECTION_MODES)
      .optional()
      .openapi({ description: '`dedicated` (number only on the API, the default) or `coexistence` (number stays in the business app).' }),
    expires_in: z
      .number()
      .int()
      .min(300)
      .max(SETUP_LINK_MAX_TTL_S)
      .optional()
      .openapi({ description: `Seconds until the link expires: 300 to ${SETUP_LINK_MAX_TTL_S}, default ${SETUP_LINK_DEFAULT_TTL_S}.` }),
  })
  .strict()
  .openapi('CreateSetupLink');

const setupLinkExample = {
  id: '7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d',
  customer_id: '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f',
  environment: 'live',
  connection_mode: 'dedicated',
  status: 'open',
  expires_at: '2026-11-29T10:00:00.000Z',
  completed_at: null,
  created_at: '2026-11-22T10:00:00.000Z',
};

export const SetupLink = z
  .object({
    id: Uuid,
    customer_id: Uuid,
    environment: z.enum(['live', 'sandbox']),
    connection_mode: z.enum(CONNECTION_MODES),
    status: z
      .enum(['open', 'completed', 'expired'])
      .openapi({ description: '`completed` once a signup finished through it (it can still be repeated until it expires).' }),
    expires_at: Timestamp,
    completed_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('SetupLink', { example: setupLinkExample });

export const SetupLinkWithUrl = SetupLink.extend({
  url: z.string().openapi({ description: 'The page the Customer opens. Shown in this answer only: it carries the secret token.' }),
}).openapi('SetupLinkWithUrl', { example: { ...setupLinkExample, url: 'https://api.example.com/setup/setup_Xq3EXAMPLE' } });

export const CompleteSignupBody = z
  .object({
    code: z.string().min(1).max(2048).openapi({ description: "The code the provider's embedded signup gave the browser." }),
    waba_id: z.string().min(1).max(64).optional().openapi({
      description:
        'The business account the Customer chose (from the signup session); must be one the code grants. Default: the first granted.',
    }),
    phone_number_id: z.string().min(1).max(64).optional().openapi({ description: 'Connect only this number of the business account.' }),
  })
  .strict()
  .openapi('CompleteSignup');

export const SignupResult = z
  .object({
    setup_link_id: Uuid,
    waba_id: z.string(),
    connected: z.array(
      z.object({
        channel_account_id: Uuid,
        phone_number_id: z.string(),
        display_phone_number: z.string(),
        connection_mode: z.enum(CONNECTION_MODES),
      }),
    ),
    skipped: z.array(z.object({ phone_number_id: z.string(), reason: z.string() })),
  })
  .openapi('SignupResult');

export const BROADCAST_STATUSES = ['draft', 'sending', 'sent'] as const;
export const RECIPIENT_STATUSES = ['pending', 'sending', 'sent', 'failed'] as const;

export const CreateBroadcastBody = z
  .object({
    channel_account_id: Uuid,
    template: z.object({ name: z.string().min(1).max(512), language: z.string().min(1).max(32) }).strict(),
    name: z.string().max(200).optional().openapi({ description: 'A label for people; not sent.' }),
    reply_stage: z.string().min(1).max(64).optional().openapi({
      description:
        'A stage key (GET /api/v1/stages): a contact who replies to this broadcast moves to it, if it lies further down the funnel than their stage (crm.contact.stage_changed, changed_by auto).',
    }),
  })
  .strict()
  .openapi('CreateBroadcast', {
    example: { channel_account_id: '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e', template: { name: 'order_update', language: 'en_US' } },
  });

export const Broadcast = z
  .object({
    id: Uuid,
    channel_account_id: Uuid,
    environment: z.enum(['live', 'sandbox']),
    name: z.string().nullable(),
    template: z.object({ name: z.string(), language: z.string() }),
    reply_stage: z.string().nullable().openapi({ description: 'The stage a reply promotes its contact to; null: replies promote nobody.' }),
    status: z.enum(BROADCAST_STATUSES),
    counts: z
      .object({
        total: z.number().int(),
        pending: z.number().int(),
        sending: z.number().int(),
        sent: z.number().int(),
        failed: z.number().int(),
      })
      .openapi({ description: 'Recipients by status: `sending` are being sent right now.' }),
    sent_at: Timestamp.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Broadcast');

export const BroadcastListQuery = ListQuery.extend({
  channel_account_id: Uuid.optional(),
  status: z
    .string()
    .optional()
    .openapi({ description: `One of ${BROADCAST_STATUSES.join(', ')}.` }),
});

export const AddRecipientsBody = z
  .object({
    recipients: z.array(z.object({ to_recipient: z.string(), components: z.array(z.record(z.string(), z.unknown())).optional() })).openapi({
      description: 'At most 1000 per call (more is 422 too_many_recipients). Invalid items come back in errors; the valid ones are added.',
    }),
  })
  .openapi('AddRecipients', { example: { recipients: [{ to_recipient: '+55 11 98765-4321' }] } });

export const AddRecipientsResult = z
  .object({
    added: z.number().int(),
    duplicates: z.number().int(),
    errors: z.array(z.object({ index: z.number().int(), to_recipient: z.string().optional(), reason: z.string(), message: z.string() })),
  })
  .openapi('AddRecipientsResult', {
    example: {
      added: 1,
      duplicates: 0,
      errors: [
        { index: 1, to_recipient: 'abc', reason: 'invalid_to_recipient', message: 'to_recipient is not an international phone number' },
      ],
    },
  });

export const BroadcastRecipient = z
  .object({
    id: Uuid,
    to_recipient: z.string().openapi({ description: 'Normalized: digits only, country code first.' }),
    components: z.array(z.record(z.string(), z.unknown())).nullable(),
    status: z.enum(RECIPIENT_STATUSES),
    message_id: Uuid.nullable().openapi({ description: 'The platform message sent to this recipient.' }),
    failure_reason: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('BroadcastRecipient');

export const RecipientListQuery = ListQuery.extend({
  status: z
    .string()
    .optional()
    .openapi({ description: `One of ${RECIPIENT_STATUSES.join(', ')}.` }),
});

// ---- Sending messages and channel accounts (provider branch) ----

export const OutboundMessage = z
  .object({
    id: Uuid,
    channel_account_id: Uuid,
    channel: z.enum(['chatapp', 'photoapp']),
    contact_id: Uuid.nullable(),
    conversation_id: Uuid.nullable(),
    external_id: z.string().openapi({ description: "The provider's message id (the wamid on chatapp)." }),
    direction: z.literal('outbound'),
    type: z.string(),
    status: z.string().openapi({ description: '`queued` when accepted; then sent, delivered, read (forward only) or failed.' }),
    to: z.string(),
    created_at: Timestamp,
  })
  .openapi('OutboundMessage', {
    example: {
      id: '3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f',
      channel_account_id: '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918',
      channel: 'chatapp',
      contact_id: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
      conversation_id: '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e',
      external_id: 'wamid.HBgLMTU1NTAwMDExMTEVAgARGBI',
      direction: 'outbound',
      type: 'text',
      status: 'queued',
      to: '15550001111',
      created_at: '2026-11-22T10:00:00.000Z',
    },
  });

export const ChannelAccountResource = z
  .object({
    id: Uuid,
    channel: z.enum(['chatapp', 'photoapp']),
    display: z.string(),
    customer_id: Uuid.nullable(),
    environment: z.enum(['live', 'sandbox']),
    phone_number_id: z.string().nullable(),
    waba_id: z.string().nullable(),
    provider_account_id: z.string().nullable(),
    quality_rating: z.string().nullable().openapi({ description: 'chatapp: quality of the number when known (GREEN, YELLOW, RED).' }),
    messaging_limit_tier: z.string().nullable(),
    number_status: z.string().nullable().openapi({ description: "chatapp: the number's status at the provider when known." }),
    numbers_read_at: Timestamp.nullable(),
    token_status: z
      .enum(['ok', 'expiring', 'expired', 'invalid', 'revoked', 'unknown'])
      .nullable()
      .openapi({ description: 'photoapp only (null on chatapp). `expiring`: ends within 7 days.' }),
    token_expires_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('ChannelAccount', {
    example: {
      id: '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918',
      channel: 'chatapp',
      display: '+1 555 0100',
      customer_id: null,
      environment: 'live',
      phone_number_id: '106540352242922',
      waba_id: '102290129340398',
      provider_account_id: null,
      quality_rating: 'GREEN',
      messaging_limit_tier: 'TIER_1K',
      number_status: 'CONNECTED',
      numbers_read_at: '2026-11-22T10:00:00.000Z',
      token_status: null,
      token_expires_at: null,
      created_at: '2026-11-22T09:00:00.000Z',
    },
  });

export const ChannelAccountListQuery = ListQuery.extend({
  channel: z.enum(['chatapp', 'photoapp']).optional(),
  customer_id: Uuid.optional(),
});

/** ISO 8601 with a zone (Z or an offset), as every timestamp the API answers. */
const InstantInput = z.iso.datetime({ offset: true }).openapi({ format: 'date-time', example: '2026-11-22T10:00:00Z' });

export const RecoverBody = z
  .object({
    since: InstantInput.openapi({ description: 'Deliveries created at or after this instant.' }),
    until: InstantInput.optional().openapi({ description: 'Deliveries created at or before this instant; default now.' }),
    statuses: z
      .array(z.enum(RECOVERABLE_STATUSES))
      .min(1, 'statuses must name at least one status')
      .optional()
      .openapi({ description: `A subset of ${RECOVERABLE_STATUSES.join(', ')}; default all three.` }),
  })
  .strict()
  .openapi('RecoverDeliveries', { example: { since: '2026-11-22T09:00:00Z', statuses: ['failed', 'exhausted'] } });

export const RecoveryResult = z
  .object({
    recovered: z.number().int(),
    since: Timestamp,
    until: Timestamp,
    statuses: z.array(z.enum(RECOVERABLE_STATUSES)),
  })
  .openapi('RecoveryResult', {
    example: { recovered: 12, since: '2026-11-22T09:00:00.000Z', until: '2026-11-22T10:00:00.000Z', statuses: ['failed', 'exhausted'] },
  });
