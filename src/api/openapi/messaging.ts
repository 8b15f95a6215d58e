/** OpenAPI paths: Sending messages and channel accounts. */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { SendMessageRequest } from '../../core/outbound-message.js';
import { ErrorEnvelope, Paging } from '../schemas/common.js';
import { ChannelAccountListQuery, ChannelAccountResource, OutboundMessage } from '../schemas/messaging.js';
import { auth, errors, json, idParam } from './common.js';

export const messagingPaths: RouteConfig[] = [
  // ---- Sending messages and channel accounts (provider branch) ----
  {
    method: 'post',
    path: '/api/v1/messages',
    summary: 'Send a message through a channel account (scope messages:write)',
    description:
      "Sent through the channel account's provider and registered with the provider's id before the answer. 202 with `{ data: message }` (status `queued`); 202 `media_not_ready` with Retry-After and the error envelope when the media is still processing (nothing registered).",
    security: auth('messages:write'),
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
      ...errors(404, 409, 502, 503, 504),
    },
  },
  {
    method: 'get',
    path: '/api/v1/channel_accounts',
    summary: 'List channel accounts of the key’s environment (scope account:read)',
    security: auth('account:read'),
    request: { query: ChannelAccountListQuery },
    responses: { 200: json(z.object({ data: z.array(ChannelAccountResource), paging: Paging })), ...errors() },
  },
  {
    method: 'get',
    path: '/api/v1/channel_accounts/{id}',
    summary: 'Read a channel account (scope account:read)',
    security: auth('account:read'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: ChannelAccountResource })), ...errors(404) },
  },
];
