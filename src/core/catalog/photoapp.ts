import { z } from 'zod';
import { define, id, keyPart, nullableString, rawMessageSchema, type EventDefinition } from './types.js';

/**
 * Second channel's inbound direct message. The photoapp ingress maps the provider's
 * direct-message webhook to the same raw-message shape as chatapp (id, from, timestamp,
 * type, content under message[type]), so stream normalization is shared.
 */
export const photoappMessageReceived = define({
  type: 'photoapp.message.received',
  category: 'messages',
  channel: 'photoapp',
  channelStamped: true,
  hasExternalId: true,
  description: 'A contact sent a direct message to a connected photoapp account.',
  data: z.object({
    /** the provider's id of the receiving business account */
    account_id: id,
    message: rawMessageSchema,
    contact: z.object({
      id: z.string().optional(),
      /** the provider's scoped id of the sender */
      user_id: id,
      username: nullableString,
      profile_name: nullableString,
      metadata: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
  idempotencyKey: (data) => keyPart(data, 'message', 'id'),
  countsTowardFreePlan: true,
});

export const photoappEvents: readonly EventDefinition[] = [photoappMessageReceived];
