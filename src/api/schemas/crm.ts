import { z } from 'zod';
import { ListQuery, Timestamp, Uuid } from './common.js';

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
