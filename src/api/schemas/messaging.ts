import { z } from 'zod';
import { ListQuery, Timestamp, Uuid } from './common.js';

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
