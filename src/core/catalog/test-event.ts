import { z } from 'zod';
import { define, id, isoTimestamp, keyPart, type EventDefinition } from './types.js';

/** Goes only to the tested endpoint; never routed, streamed or published. Same key in every test: tests are not deduplicated by it. */
export const webhookTest = define({
  type: 'webhook.test',
  category: null,
  inStream: false,
  publishable: false,
  channel: null,
  channelStamped: false,
  hasExternalId: false,
  description: 'A signed test delivery sent on request to one endpoint.',
  data: z.object({ message: z.string(), sent_at: isoTimestamp }),
  refs: z.object({ endpoint_id: id }),
  idempotencyKey: (_data, refs) => `test:${keyPart(refs, 'endpoint_id')}`,
});

export const testEvents: readonly EventDefinition[] = [webhookTest];
