/**
 * The examples of the reference at /docs: a request body for every route that takes one and an
 * answer for every route that answers with one, as Swagger UI shows them and as "Try it out"
 * fills them in. Most come from the schemas' own examples (`.openapi({ example })`), assembled
 * into the route's whole answer (`{ data: …, paging: … }`); the ones a schema cannot give (a
 * message send needs one type's fields, not all of them) are written here. test/unit/openapi-docs.test.ts
 * parses each against the route's own zod schema.
 */
import { isRecord } from '../../core/is-record.js';
import { setupLinkExample } from '../schemas/account.js';

const CHANNEL_ACCOUNT_ID = '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918';
const BROADCAST_ID = 'b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e';
const SETUP_LINK_ID = '7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d';

/** A named example of a body: Swagger UI offers them in a list, the first one filled in. */
export interface NamedExample {
  summary: string;
  value: unknown;
}

/** Request bodies, by `METHOD path`: one example, or named ones (`examples`). */
export const REQUEST_EXAMPLES: Record<string, { example: unknown } | { examples: Record<string, NamedExample> }> = {
  'POST /api/v1/messages': {
    examples: {
      text: {
        summary: 'A text message (inside the 24-hour window)',
        value: { channel_account_id: CHANNEL_ACCOUNT_ID, to: '15550001111', type: 'text', text: { body: 'Your order has shipped' } },
      },
      template: {
        summary: 'A template message (chatapp; any time)',
        value: {
          channel_account_id: CHANNEL_ACCOUNT_ID,
          to: '15550001111',
          type: 'template',
          template: {
            name: 'order_update',
            language: 'en_US',
            components: [{ type: 'body', parameters: [{ type: 'text', text: 'A-1042' }] }],
          },
        },
      },
      image: {
        summary: 'An image by link, with a caption (chatapp)',
        value: {
          channel_account_id: CHANNEL_ACCOUNT_ID,
          to: '15550001111',
          type: 'image',
          media: { link: 'https://example.com/parcel.jpg', caption: 'Your parcel' },
        },
      },
    },
  },
  'POST /api/v1/templates/sync': { example: { channel_account_id: CHANNEL_ACCOUNT_ID } },
  'POST /api/v1/customers/{id}/setup_links': { example: { channel: 'chatapp', connection_mode: 'dedicated', expires_in: 604800 } },
  'POST /setup/{token}/complete': { example: { code: 'AQBx3EXAMPLEcode', waba_id: '102290129340398' } },
  'POST /provider/chatapp/webhook': {
    example: {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: '102290129340398',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '15550100', phone_number_id: '106540352242922' },
                statuses: [
                  { id: 'wamid.HBgLMTU1NTAwMDExMTEVAgARGBI', status: 'delivered', timestamp: '1795428000', recipient_id: '15550001111' },
                ],
              },
            },
          ],
        },
      ],
    },
  },
  'POST /provider/photoapp/webhook': {
    example: {
      object: 'instagram',
      entry: [
        {
          id: '17841400000000000',
          time: 1795428000,
          messaging: [
            {
              sender: { id: '2468013579' },
              recipient: { id: '17841400000000000' },
              timestamp: 1795428000,
              message: { mid: 'aWdfZAG1EXAMPLE', text: 'Hi' },
            },
          ],
        },
      ],
    },
  },
};

const broadcast = {
  id: BROADCAST_ID,
  channel_account_id: CHANNEL_ACCOUNT_ID,
  environment: 'live',
  name: 'November shipping notice',
  template: { name: 'order_update', language: 'en_US' },
  reply_stage: null,
  status: 'draft',
  counts: { total: 2, pending: 2, sending: 0, sent: 0, failed: 0 },
  sent_at: null,
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:00:00.000Z',
};
const recipient = {
  id: '4d5e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f7a',
  to_recipient: '5511987654321',
  components: null,
  status: 'sent',
  message_id: '3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f',
  failure_reason: null,
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:01:00.000Z',
};
const noMorePages = { cursors: { before: null, after: null }, next: null, previous: null };

/** Answers a schema cannot give, by `METHOD path` and status. */
export const RESPONSE_EXAMPLES: Record<string, Record<number, unknown>> = {
  'POST /api/v1/templates/sync': {
    200: {
      data: {
        channel_account_id: CHANNEL_ACCOUNT_ID,
        waba_id: '102290129340398',
        templates: 3,
        updated: 1,
        removed: 0,
        synced_at: '2026-11-22T10:00:00.000Z',
      },
    },
  },
  'POST /setup/{token}/complete': {
    200: {
      data: {
        setup_link_id: SETUP_LINK_ID,
        waba_id: '102290129340398',
        connected: [
          {
            channel_account_id: CHANNEL_ACCOUNT_ID,
            phone_number_id: '106540352242922',
            display_phone_number: '+1 555 0100',
            connection_mode: 'dedicated',
          },
        ],
        skipped: [],
      },
    },
  },
  'POST /api/v1/broadcasts': { 201: { data: broadcast } },
  'GET /api/v1/broadcasts': { 200: { data: [broadcast], paging: noMorePages } },
  'GET /api/v1/broadcasts/{id}': { 200: { data: broadcast } },
  'POST /api/v1/broadcasts/{id}/send': {
    200: {
      data: {
        ...broadcast,
        status: 'sent',
        counts: { total: 2, pending: 0, sending: 0, sent: 2, failed: 0 },
        sent_at: '2026-11-22T10:01:00.000Z',
      },
    },
  },
  'GET /api/v1/broadcasts/{id}/recipients': { 200: { data: [recipient], paging: noMorePages } },
  'GET /api/v1/customers/{id}/setup_links': {
    200: {
      data: [setupLinkExample],
      paging: noMorePages,
    },
  },
  'POST /provider/chatapp/webhook': { 200: { received: true, events: 1 } },
  'POST /provider/photoapp/webhook': { 200: { received: true, events: 1 } },
};

const SAMPLE_UUID = '00000000-0000-4000-8000-000000000000';

/**
 * An example of a JSON Schema of the document: its own example where it has one, else one built
 * from its parts (references followed, the first alternative of a union, every property).
 */
export function sampleOf(schema: unknown, components: Record<string, unknown>, depth = 0): unknown {
  if (!isRecord(schema) || depth > 16) return null;
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (typeof schema.$ref === 'string') return sampleOf(components[schema.$ref.split('/').pop()!], components, depth + 1);
  for (const union of [schema.anyOf, schema.oneOf])
    if (Array.isArray(union)) {
      const alternative = union.find((s) => !(isRecord(s) && s.type === 'null')) ?? union[0];
      return sampleOf(alternative, components, depth + 1);
    }
  if (Array.isArray(schema.allOf))
    return Object.assign({}, ...schema.allOf.map((s) => sampleOf(s, components, depth + 1)).filter(isRecord));
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  // A nullable value without an example of its own: null (a paging cursor at the last page, a time not yet come).
  if (types.includes('null')) return null;
  if (types.includes('object') || isRecord(schema.properties)) {
    const properties = isRecord(schema.properties) ? schema.properties : {};
    return Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, sampleOf(s, components, depth + 1)]));
  }
  if (types.includes('array')) return [sampleOf(schema.items, components, depth + 1)];
  if (types.includes('string'))
    return schema.format === 'date-time' ? '2026-11-22T10:00:00.000Z' : schema.format === 'uuid' ? SAMPLE_UUID : 'string';
  if (types.includes('integer') || types.includes('number')) return typeof schema.minimum === 'number' ? schema.minimum : 0;
  if (types.includes('boolean')) return true;
  return null;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Puts an example on every JSON request body and every JSON success answer of the document. */
export function addExamples(document: { paths?: unknown; components?: unknown }): void {
  const components = isRecord(document.components) && isRecord(document.components.schemas) ? document.components.schemas : {};
  for (const [path, item] of Object.entries(isRecord(document.paths) ? document.paths : {})) {
    if (!isRecord(item)) continue;
    for (const method of METHODS) {
      const operation = item[method];
      if (!isRecord(operation)) continue;
      const key = `${method.toUpperCase()} ${path}`;
      const body = jsonMedia(operation.requestBody);
      if (body && body.example === undefined && body.examples === undefined)
        Object.assign(body, REQUEST_EXAMPLES[key] ?? { example: sampleOf(body.schema, components) });
      for (const [status, response] of Object.entries(isRecord(operation.responses) ? operation.responses : {})) {
        const media = jsonMedia(response);
        if (!media || !status.startsWith('2') || media.example !== undefined) continue;
        media.example = RESPONSE_EXAMPLES[key]?.[Number(status)] ?? sampleOf(media.schema, components);
      }
    }
  }
}

function jsonMedia(holder: unknown): Record<string, unknown> | undefined {
  if (!isRecord(holder) || !isRecord(holder.content)) return undefined;
  const media = holder.content['application/json'];
  return isRecord(media) ? media : undefined;
}
