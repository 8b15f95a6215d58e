import { z } from 'zod';
import {
  MAX_COMPONENTS_BYTES,
  MAX_RECIPIENTS_BODY_BYTES,
  MAX_RECIPIENTS_PER_CALL,
  MAX_TO_RECIPIENT_CHARS,
} from '../../core/broadcast-recipients.js';
import { ListQuery, Timestamp, Uuid } from './common.js';

// ---- Templates, setup links and broadcasts ----

export const TEMPLATE_STATUSES = [
  'APPROVED',
  'PENDING',
  'REJECTED',
  'PAUSED',
  'DISABLED',
  'IN_APPEAL',
  'PENDING_DELETION',
  'DELETED',
  'LIMIT_EXCEEDED',
  'ARCHIVED',
] as const;

export const Template = z
  .object({
    id: Uuid,
    waba_id: z.string(),
    provider_template_id: z.string(),
    name: z.string(),
    language: z.string(),
    category: z.string().nullable(),
    status: z.string().openapi({ description: `As the provider reports it: ${TEMPLATE_STATUSES.join(', ')}.` }),
    status_reason: z.string().nullable().openapi({ description: 'Why the provider rejected or paused it, when it said.' }),
    components: z.array(z.unknown()),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Template', {
    example: {
      id: '3e1d2c4b-5a6f-4e7d-8c9b-0a1b2c3d4e5f',
      waba_id: '102290129340398',
      provider_template_id: '1049912345678901',
      name: 'order_update',
      language: 'en_US',
      category: 'UTILITY',
      status: 'APPROVED',
      status_reason: null,
      components: [{ type: 'BODY', text: 'Your order {{1}} has shipped.' }],
      created_at: '2026-11-22T10:00:00.000Z',
      updated_at: '2026-11-22T10:00:00.000Z',
    },
  });

export const TemplateListQuery = ListQuery.extend({
  channel_account_id: Uuid.optional().openapi({ description: "Templates of this channel account's business account." }),
  status: z
    .string()
    .optional()
    .openapi({ description: `One of ${TEMPLATE_STATUSES.join(', ')} (any case).` }),
  name: z.string().optional(),
});

export const SyncTemplatesBody = z.object({ channel_account_id: Uuid }).strict().openapi('SyncTemplates');

export const TemplateSyncResult = z
  .object({
    channel_account_id: Uuid,
    waba_id: z.string(),
    templates: z.number().int().openapi({ description: 'How many templates the provider listed.' }),
    updated: z.number().int().openapi({ description: 'Templates added or changed by this sync.' }),
    removed: z.number().int().openapi({ description: 'Templates the provider no longer lists.' }),
    synced_at: Timestamp,
  })
  .openapi('TemplateSyncResult');

export const CONNECTION_MODES = ['dedicated', 'coexistence'] as const;
/** Setup links live 7 days unless asked otherwise, at most 30. */
export const SETUP_LINK_DEFAULT_TTL_S = 7 * 24 * 3600;
export const SETUP_LINK_MAX_TTL_S = 30 * 24 * 3600;

export const SETUP_LINK_CHANNELS = ['chatapp', 'photoapp'] as const;

export const CreateSetupLinkBody = z
  .object({
    channel: z.enum(SETUP_LINK_CHANNELS).optional().openapi({
      description:
        "`chatapp` (the default): the provider's embedded signup connects a business account's numbers. `photoapp`: the provider's login connects a photoapp account with its own token, or reconnects one already connected (its token replaced).",
    }),
    connection_mode: z.enum(CONNECTION_MODES).optional().openapi({
      description: 'chatapp only: `dedicated` (number only on the API, the default) or `coexistence` (number stays in the business app).',
    }),
    expires_in: z
      .number()
      .int()
      .min(300)
      .max(SETUP_LINK_MAX_TTL_S)
      .optional()
      .openapi({ description: `Seconds until the link expires: 300 to ${SETUP_LINK_MAX_TTL_S}, default ${SETUP_LINK_DEFAULT_TTL_S}.` }),
  })
  .strict()
  .refine((b) => b.channel !== 'photoapp' || b.connection_mode === undefined, {
    message: 'connection_mode is for chatapp links only',
    path: ['connection_mode'],
  })
  .openapi('CreateSetupLink');

export const setupLinkExample = {
  id: '7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d',
  customer_id: '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f',
  environment: 'live',
  channel: 'chatapp',
  connection_mode: 'dedicated',
  status: 'open',
  expires_at: '2026-11-29T10:00:00.000Z',
  completed_at: null,
  created_at: '2026-11-22T10:00:00.000Z',
};

export const SetupLink = z
  .object({
    id: Uuid,
    customer_id: Uuid,
    environment: z.enum(['live', 'sandbox']),
    channel: z.enum(SETUP_LINK_CHANNELS),
    connection_mode: z.enum(CONNECTION_MODES).openapi({ description: 'Meaningful for chatapp links only.' }),
    status: z
      .enum(['open', 'completed', 'expired'])
      .openapi({ description: '`completed` once a signup finished through it (it can still be repeated until it expires).' }),
    expires_at: Timestamp,
    completed_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('SetupLink', { example: setupLinkExample });

export const SetupLinkWithUrl = SetupLink.extend({
  url: z.string().openapi({ description: 'The page the Customer opens. Shown in this answer only: it carries the secret token.' }),
}).openapi('SetupLinkWithUrl', { example: { ...setupLinkExample, url: 'https://api.example.com/setup/setup_Xq3EXAMPLE' } });

export const CompleteSignupBody = z
  .object({
    code: z.string().min(1).max(2048).openapi({ description: "The code the provider's embedded signup gave the browser." }),
    waba_id: z.string().min(1).max(64).optional().openapi({
      description:
        'The business account the Customer chose (from the signup session); must be one the code grants. Default: the first granted.',
    }),
    phone_number_id: z.string().min(1).max(64).optional().openapi({ description: 'Connect only this number of the business account.' }),
  })
  .strict()
  .openapi('CompleteSignup');

export const SignupResult = z
  .object({
    setup_link_id: Uuid,
    waba_id: z.string(),
    connected: z.array(
      z.object({
        channel_account_id: Uuid,
        phone_number_id: z.string(),
        display_phone_number: z.string(),
        connection_mode: z.enum(CONNECTION_MODES),
      }),
    ),
    skipped: z.array(z.object({ phone_number_id: z.string(), reason: z.string() })),
  })
  .openapi('SignupResult');

export const PhotoappLoginResult = z
  .object({
    setup_link_id: Uuid,
    channel: z.literal('photoapp'),
    channel_account_id: Uuid,
    provider_account_id: z.string(),
    username: z.string().nullable(),
    reconnected: z.boolean().openapi({ description: 'True when the account was already connected: its token was replaced.' }),
  })
  .openapi('PhotoappLoginResult', { description: 'The answer for a photoapp link. The token itself is never shown.' });

export const BROADCAST_STATUSES = ['draft', 'sending', 'sent'] as const;
export const RECIPIENT_STATUSES = ['pending', 'sending', 'sent', 'failed'] as const;

export const CreateBroadcastBody = z
  .object({
    channel_account_id: Uuid,
    template: z.object({ name: z.string().min(1).max(512), language: z.string().min(1).max(32) }).strict(),
    name: z.string().max(200).optional().openapi({ description: 'A label for people; not sent.' }),
    reply_stage: z.string().min(1).max(64).optional().openapi({
      description:
        'A stage key (GET /api/v1/stages): a contact who replies to this broadcast moves to it, if it lies further down the funnel than their stage (crm.contact.stage_changed, changed_by auto).',
    }),
  })
  .strict()
  .openapi('CreateBroadcast', {
    example: { channel_account_id: '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e', template: { name: 'order_update', language: 'en_US' } },
  });

export const Broadcast = z
  .object({
    id: Uuid,
    channel_account_id: Uuid,
    environment: z.enum(['live', 'sandbox']),
    name: z.string().nullable(),
    template: z.object({ name: z.string(), language: z.string() }),
    reply_stage: z.string().nullable().openapi({ description: 'The stage a reply promotes its contact to; null: replies promote nobody.' }),
    status: z.enum(BROADCAST_STATUSES),
    counts: z
      .object({
        total: z.number().int(),
        pending: z.number().int(),
        sending: z.number().int(),
        sent: z.number().int(),
        failed: z.number().int(),
      })
      .openapi({ description: 'Recipients by status: `sending` are being sent right now.' }),
    sent_at: Timestamp.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Broadcast');

export const BroadcastListQuery = ListQuery.extend({
  channel_account_id: Uuid.optional(),
  status: z
    .string()
    .optional()
    .openapi({ description: `One of ${BROADCAST_STATUSES.join(', ')}.` }),
});

export const AddRecipientsBody = z
  .object({
    recipients: z
      .array(
        z.object({
          to_recipient: z.string().max(MAX_TO_RECIPIENT_CHARS),
          components: z
            .array(z.record(z.string(), z.unknown()))
            .optional()
            .openapi({ description: `At most ${MAX_COMPONENTS_BYTES} bytes as compact JSON.` }),
        }),
      )
      .openapi({
        description: `At most ${MAX_RECIPIENTS_PER_CALL} per call (more is 422 too_many_recipients); the body at most ${MAX_RECIPIENTS_BODY_BYTES} bytes (413 payload_too_large). Invalid items come back in errors; the valid ones are added.`,
      }),
  })
  .openapi('AddRecipients', { example: { recipients: [{ to_recipient: '+55 11 98765-4321' }] } });

export const AddRecipientsResult = z
  .object({
    added: z.number().int(),
    duplicates: z.number().int(),
    errors: z.array(z.object({ index: z.number().int(), to_recipient: z.string().optional(), reason: z.string(), message: z.string() })),
  })
  .openapi('AddRecipientsResult', {
    example: {
      added: 1,
      duplicates: 0,
      errors: [
        { index: 1, to_recipient: 'abc', reason: 'invalid_to_recipient', message: 'to_recipient is not an international phone number' },
      ],
    },
  });

export const BroadcastRecipient = z
  .object({
    id: Uuid,
    to_recipient: z.string().openapi({ description: 'Normalized: digits only, country code first.' }),
    components: z.array(z.record(z.string(), z.unknown())).nullable(),
    status: z.enum(RECIPIENT_STATUSES),
    message_id: Uuid.nullable().openapi({ description: 'The platform message sent to this recipient.' }),
    failure_reason: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('BroadcastRecipient');

export const RecipientListQuery = ListQuery.extend({
  status: z
    .string()
    .optional()
    .openapi({ description: `One of ${RECIPIENT_STATUSES.join(', ')}.` }),
});
