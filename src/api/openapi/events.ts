/** OpenAPI paths: Publishing, the durable stream and the event catalog. */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { PublishBody } from '../../events/publish.js';
import { EventType, StreamItem, StreamPaging, StreamQuery, publishExample } from '../schemas/events.js';
import { auth, errors, idParam, json } from './common.js';

export const eventPaths: RouteConfig[] = [
  {
    method: 'post',
    path: '/api/v1/events',
    summary: 'Publish a catalog event (201 stored, 200 already known)',
    security: auth('events:write'),
    request: { body: { content: { 'application/json': { schema: PublishBody.openapi('PublishEvent', { example: publishExample }) } } } },
    responses: {
      201: json(z.object({ data: StreamItem }), 'Stored'),
      200: json(z.object({ data: StreamItem }), 'Already stored: the first event'),
      ...errors(422),
    },
  },
  {
    method: 'get',
    path: '/api/v1/events',
    summary: "Read the durable stream of the key's Account and environment",
    security: auth('events:read'),
    request: { query: StreamQuery },
    responses: { 200: json(z.object({ data: z.array(StreamItem), paging: StreamPaging })), ...errors(422) },
  },
  {
    method: 'get',
    path: '/api/v1/events/{id}',
    summary: "One event of the key's Account and environment, as a stream item",
    security: auth('events:read'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: StreamItem })), ...errors(404) },
  },
  {
    method: 'get',
    path: '/api/v1/event_types',
    summary: 'The event catalog with the JSON Schema of each payload',
    security: auth(),
    responses: { 200: json(z.object({ data: z.array(EventType) })) },
  },
];
