/**
 * Every /api/v1 operation the SDK calls, with the shape of its success answer. Paths are keys
 * of the generated `paths`, so a route the server does not document fails type checking, and
 * test/kit/sdk-contract.test.ts checks this table covers the server's OpenAPI document exactly.
 */
import type { paths } from './openapi.js';

export type Method = 'get' | 'post' | 'patch' | 'delete';
/** `item`: `{ data: {...} }`; `page`: `{ data: [...], paging: {...} }`; `array`: `{ data: [...] }`; `empty`: 204, no body. */
export type Shape = 'item' | 'page' | 'array' | 'empty';

export interface Route {
  readonly method: Method;
  readonly path: keyof paths;
  readonly shape: Shape;
}

export const ROUTES = {
  createWebhook: { method: 'post', path: '/webhooks', shape: 'item' },
  listWebhooks: { method: 'get', path: '/webhooks', shape: 'page' },
  getWebhook: { method: 'get', path: '/webhooks/{id}', shape: 'item' },
  updateWebhook: { method: 'patch', path: '/webhooks/{id}', shape: 'item' },
  deleteWebhook: { method: 'delete', path: '/webhooks/{id}', shape: 'empty' },
  testWebhook: { method: 'post', path: '/webhooks/{id}/test', shape: 'item' },
  listDeliveries: { method: 'get', path: '/webhook_deliveries', shape: 'page' },
  getDelivery: { method: 'get', path: '/webhook_deliveries/{id}', shape: 'item' },
  resendDelivery: { method: 'post', path: '/webhook_deliveries/{id}/resend', shape: 'item' },
  listEvents: { method: 'get', path: '/events', shape: 'page' },
  getEvent: { method: 'get', path: '/events/{id}', shape: 'item' },
  publishEvent: { method: 'post', path: '/events', shape: 'item' },
  listEventTypes: { method: 'get', path: '/event_types', shape: 'array' },
  deleteContact: { method: 'delete', path: '/contacts/{id}', shape: 'empty' },
  // Contacts, funnel stages, consents, conversations and messages (CRM family)
  createStage: { method: 'post', path: '/stages', shape: 'item' },
  listStages: { method: 'get', path: '/stages', shape: 'page' },
  deleteStage: { method: 'delete', path: '/stages/{id}', shape: 'empty' },
  listContacts: { method: 'get', path: '/contacts', shape: 'page' },
  getContact: { method: 'get', path: '/contacts/{id}', shape: 'item' },
  updateContact: { method: 'patch', path: '/contacts/{id}', shape: 'item' },
  createConsent: { method: 'post', path: '/contacts/{id}/consents', shape: 'item' },
  listConsents: { method: 'get', path: '/contacts/{id}/consents', shape: 'page' },
  listConversations: { method: 'get', path: '/conversations', shape: 'page' },
  listMessages: { method: 'get', path: '/messages', shape: 'page' },
  // Sending messages and channel accounts (provider branch)
  sendMessage: { method: 'post', path: '/messages', shape: 'item' },
  listChannelAccounts: { method: 'get', path: '/channel_accounts', shape: 'page' },
  getChannelAccount: { method: 'get', path: '/channel_accounts/{id}', shape: 'item' },
  // Templates, setup links and broadcasts
  listTemplates: { method: 'get', path: '/templates', shape: 'page' },
  syncTemplates: { method: 'post', path: '/templates/sync', shape: 'item' },
  createSetupLink: { method: 'post', path: '/customers/{id}/setup_links', shape: 'item' },
  listSetupLinks: { method: 'get', path: '/customers/{id}/setup_links', shape: 'page' },
  createBroadcast: { method: 'post', path: '/broadcasts', shape: 'item' },
  listBroadcasts: { method: 'get', path: '/broadcasts', shape: 'page' },
  getBroadcast: { method: 'get', path: '/broadcasts/{id}', shape: 'item' },
  addBroadcastRecipients: { method: 'post', path: '/broadcasts/{id}/recipients', shape: 'item' },
  listBroadcastRecipients: { method: 'get', path: '/broadcasts/{id}/recipients', shape: 'page' },
  sendBroadcast: { method: 'post', path: '/broadcasts/{id}/send', shape: 'item' },
  // Console
  getWebhookStats: { method: 'get', path: '/webhooks/{id}/stats', shape: 'item' },
  // Delivery controls.
  recoverWebhook: { method: 'post', path: '/webhooks/{id}/recover', shape: 'item' },
} as const satisfies Record<string, Route>;

export type RouteName = keyof typeof ROUTES;
