/** OpenAPI paths: Contacts, funnel stages, consents, conversations and messages (read), and deleting a contact. */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ListQuery, Paging } from '../schemas/common.js';
import {
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
} from '../schemas/crm.js';
import { auth, errors, json, idParam } from './common.js';

export const crmPaths: RouteConfig[] = [
  {
    method: 'delete',
    path: '/api/v1/contacts/{id}',
    summary: 'Delete a contact and its events from the stream',
    security: auth('contacts:write'),
    request: { params: z.object({ id: z.string() }) },
    responses: { 204: { description: 'Deleted' }, ...errors(404, 422) },
  },
  // ---- Contacts, funnel stages, consents, conversations and messages (CRM family) ----
  {
    method: 'post',
    path: '/api/v1/stages',
    summary: 'Add a funnel stage at the end of the funnel (emits no event)',
    security: auth('contacts:write'),
    request: { body: { content: { 'application/json': { schema: CreateStageBody } } } },
    responses: { 201: json(z.object({ data: Stage }), 'Created'), ...errors(409) },
  },
  {
    method: 'get',
    path: '/api/v1/stages',
    summary: 'List the funnel stages in funnel order',
    security: auth('contacts:read'),
    request: { query: ListQuery },
    responses: { 200: json(z.object({ data: z.array(Stage), paging: Paging })) },
  },
  {
    method: 'delete',
    path: '/api/v1/stages/{id}',
    summary: 'Delete a stage; its contacts leave the funnel (crm.contact.stage_changed, changed_by system)',
    security: auth('contacts:write'),
    request: { params: idParam },
    responses: { 204: { description: 'Deleted' }, ...errors(404) },
  },
  {
    method: 'get',
    path: '/api/v1/contacts',
    summary: "List the contacts of the key's environment, newest first",
    security: auth('contacts:read'),
    request: { query: ContactListQuery },
    responses: { 200: json(z.object({ data: z.array(Contact), paging: Paging })) },
  },
  {
    method: 'get',
    path: '/api/v1/contacts/{id}',
    summary: 'Read a contact',
    security: auth('contacts:read'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Contact })), ...errors(404) },
  },
  {
    method: 'patch',
    path: '/api/v1/contacts/{id}',
    summary: 'Edit a contact; a stage change emits crm.contact.stage_changed',
    security: auth('contacts:write'),
    request: { params: idParam, body: { content: { 'application/json': { schema: UpdateContactBody } } } },
    responses: { 200: json(z.object({ data: Contact })), ...errors(404) },
  },
  {
    method: 'post',
    path: '/api/v1/contacts/{id}/consents',
    summary: 'Record a consent; a change of state emits crm.contact.consent_changed',
    security: auth('contacts:write'),
    request: { params: idParam, body: { content: { 'application/json': { schema: CreateConsentBody } } } },
    responses: { 201: json(z.object({ data: ConsentRecord }), 'Recorded'), ...errors(404) },
  },
  {
    method: 'get',
    path: '/api/v1/contacts/{id}/consents',
    summary: "A contact's consent history, newest first",
    security: auth('contacts:read'),
    request: { params: idParam, query: ListQuery },
    responses: { 200: json(z.object({ data: z.array(ConsentRecord), paging: Paging })), ...errors(404) },
  },
  {
    method: 'get',
    path: '/api/v1/conversations',
    summary: "List the conversations of the key's environment, newest first",
    security: auth('messages:read'),
    request: { query: ConversationListQuery },
    responses: { 200: json(z.object({ data: z.array(Conversation), paging: Paging })) },
  },
  {
    method: 'get',
    path: '/api/v1/messages',
    summary: "List the messages of the key's environment, newest first",
    security: auth('messages:read'),
    request: { query: MessageListQuery },
    responses: { 200: json(z.object({ data: z.array(Message), paging: Paging })) },
  },
];
