/** Publishing events, the durable stream (SPEC 4.8) and the event catalog. */
import { z } from 'zod';
import { EVENT_ID, Timestamp, Uuid } from './common.js';

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
