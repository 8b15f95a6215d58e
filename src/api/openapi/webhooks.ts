/** OpenAPI paths: Webhook endpoints: CRUD, the test send, hourly stats and bulk recovery. */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ListQuery, Paging } from '../schemas/common.js';
import {
  CreateEndpointBody,
  Endpoint,
  EndpointStats,
  EndpointWithSecret,
  RecoverBody,
  RecoveryResult,
  TestResult,
  UpdateEndpointBody,
} from '../schemas/webhooks.js';
import { auth, errors, json, idParam } from './common.js';

export const webhookPaths: RouteConfig[] = [
  {
    method: 'post',
    path: '/api/v1/webhooks',
    summary: 'Create a webhook endpoint (the secret is shown only here)',
    security: auth('webhooks:write'),
    request: { body: { content: { 'application/json': { schema: CreateEndpointBody } } } },
    responses: { 201: json(z.object({ data: EndpointWithSecret }), 'Created'), ...errors(422) },
  },
  {
    method: 'get',
    path: '/api/v1/webhooks',
    summary: 'List webhook endpoints',
    security: auth('webhooks:read'),
    request: { query: ListQuery },
    responses: { 200: json(z.object({ data: z.array(Endpoint), paging: Paging })), ...errors(422) },
  },
  {
    method: 'get',
    path: '/api/v1/webhooks/{id}',
    summary: 'Read a webhook endpoint',
    security: auth('webhooks:read'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Endpoint })), ...errors(404) },
  },
  {
    method: 'patch',
    path: '/api/v1/webhooks/{id}',
    summary: 'Update a webhook endpoint',
    security: auth('webhooks:write'),
    request: { params: idParam, body: { content: { 'application/json': { schema: UpdateEndpointBody } } } },
    responses: { 200: json(z.object({ data: Endpoint })), ...errors(404, 409, 422) },
  },
  {
    method: 'delete',
    path: '/api/v1/webhooks/{id}',
    summary: 'Delete a webhook endpoint',
    security: auth('webhooks:write'),
    request: { params: idParam },
    responses: { 204: { description: 'Deleted' }, ...errors(404) },
  },
  {
    method: 'post',
    path: '/api/v1/webhooks/{id}/test',
    summary: 'Send a signed webhook.test and verify the endpoint on 2xx',
    security: auth('webhooks:write'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: TestResult })), ...errors(404, 502) },
  },
  // Console
  {
    method: 'get',
    path: '/api/v1/webhooks/{id}/stats',
    summary: "An endpoint's attempts per hour over the last 24 hours (successes and failures)",
    security: auth('webhooks:read'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: EndpointStats })), ...errors(404) },
  },

  // Delivery controls: bulk recovery of an endpoint's deliveries.
  {
    method: 'post',
    path: '/api/v1/webhooks/{id}/recover',
    summary: "Put an endpoint's failed, exhausted and limited deliveries of a time window back to pending",
    description:
      "Scope webhooks:write. Only deliveries of the key's environment; never test sends, nor deliveries ended by a deleted endpoint or event. The endpoint sends them at the pace its health allows. Idempotent: a repeat recovers 0 more.",
    security: auth('webhooks:write'),
    request: { params: idParam, body: { content: { 'application/json': { schema: RecoverBody } } } },
    responses: { 200: json(z.object({ data: RecoveryResult })), ...errors(404) },
  },
];
