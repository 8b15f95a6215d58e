/** OpenAPI paths: Templates, setup links (and the signup completion) and broadcasts. */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
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
  PhotoappLoginResult,
  SignupResult,
  SyncTemplatesBody,
  Template,
  TemplateListQuery,
  TemplateSyncResult,
} from '../schemas/account.js';
import { ErrorEnvelope, ListQuery, Paging } from '../schemas/common.js';
import { auth, errors, json, idParam } from './common.js';

export const accountPaths: RouteConfig[] = [
  // ---- Templates, setup links and broadcasts ----
  {
    method: 'get',
    path: '/api/v1/templates',
    summary: "List message templates (scope account:read): the stored copy of the provider's, newest status included",
    security: auth('account:read'),
    request: { query: TemplateListQuery },
    responses: { 200: json(z.object({ data: z.array(Template), paging: Paging })), ...errors(404) },
  },
  {
    method: 'post',
    path: '/api/v1/templates/sync',
    summary: "Read a channel account's templates from the provider again (scope account:write)",
    security: auth('account:write'),
    request: { body: { content: { 'application/json': { schema: SyncTemplatesBody } } } },
    responses: { 200: json(z.object({ data: TemplateSyncResult })), ...errors(404, 502, 503) },
  },
  {
    method: 'post',
    path: '/api/v1/customers/{id}/setup_links',
    summary: 'Create a setup link for a Customer (scope account:write); the url is shown only here',
    security: auth('account:write'),
    request: { params: idParam, body: { content: { 'application/json': { schema: CreateSetupLinkBody } } } },
    responses: { 201: json(z.object({ data: SetupLinkWithUrl }), 'Created'), ...errors(404) },
  },
  {
    method: 'get',
    path: '/api/v1/customers/{id}/setup_links',
    summary: "List a Customer's setup links of the key's environment (scope account:read)",
    security: auth('account:read'),
    request: { params: idParam, query: ListQuery },
    responses: { 200: json(z.object({ data: z.array(SetupLink), paging: Paging })), ...errors(404) },
  },
  {
    method: 'post',
    path: '/setup/{token}/complete',
    summary:
      "End of the provider's embedded signup (chatapp link) or login (photoapp link), called by the Customer's browser with the link's token (no API key)",
    request: {
      params: z.object({ token: z.string() }),
      body: { content: { 'application/json': { schema: CompleteSignupBody } } },
    },
    responses: {
      200: json(z.object({ data: z.union([SignupResult, PhotoappLoginResult]) })),
      ...Object.fromEntries(
        [404, 409, 410, 422, 502, 503].map((code) => [
          code,
          { description: 'Error envelope', content: { 'application/json': { schema: ErrorEnvelope } } },
        ]),
      ),
    },
  },
  {
    method: 'post',
    path: '/api/v1/broadcasts',
    summary: 'Create a draft broadcast of a template on a chatapp channel account (scope messages:write)',
    security: auth('messages:write'),
    request: { body: { content: { 'application/json': { schema: CreateBroadcastBody } } } },
    responses: { 201: json(z.object({ data: Broadcast }), 'Created'), ...errors(404) },
  },
  {
    method: 'get',
    path: '/api/v1/broadcasts',
    summary: 'List broadcasts with their recipient counts (scope messages:read)',
    security: auth('messages:read'),
    request: { query: BroadcastListQuery },
    responses: { 200: json(z.object({ data: z.array(Broadcast), paging: Paging })), ...errors() },
  },
  {
    method: 'get',
    path: '/api/v1/broadcasts/{id}',
    summary: 'Read a broadcast with its recipient counts (scope messages:read)',
    security: auth('messages:read'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Broadcast })), ...errors(404) },
  },
  {
    method: 'post',
    path: '/api/v1/broadcasts/{id}/recipients',
    summary: 'Add up to 1000 recipients to a draft broadcast (scope messages:write)',
    security: auth('messages:write'),
    request: { params: idParam, body: { content: { 'application/json': { schema: AddRecipientsBody } } } },
    responses: { 200: json(z.object({ data: AddRecipientsResult })), ...errors(404, 409) },
  },
  {
    method: 'get',
    path: '/api/v1/broadcasts/{id}/recipients',
    summary: "A broadcast's recipients with their status, message and failure reason (scope messages:read)",
    security: auth('messages:read'),
    request: { params: idParam, query: RecipientListQuery },
    responses: { 200: json(z.object({ data: z.array(BroadcastRecipient), paging: Paging })), ...errors(404) },
  },
  {
    method: 'post',
    path: '/api/v1/broadcasts/{id}/send',
    summary: 'Send the template to every pending recipient (scope messages:write); answers when each was attempted',
    security: auth('messages:write'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Broadcast })), ...errors(404, 409, 503, 504) },
  },
];
