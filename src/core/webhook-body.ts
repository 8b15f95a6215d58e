/** The JSON body of a webhook delivery: the common envelope (SPEC 2.3) plus the payload. */
import type { EventDefinition } from './catalog/index.js';
import { merged } from './merged.js';

export interface EnvelopeFacts {
  type: string;
  customer_id: string | null;
  environment: 'live' | 'sandbox';
  channel: string | null;
  channel_account: { id: string; channel: string; display: string } | null;
  external_id: string | null;
  data: Record<string, unknown>;
}

export function webhookBody(def: EventDefinition, e: EnvelopeFacts): Record<string, unknown> {
  const body: Record<string, unknown> = { event: e.type, customer_id: e.customer_id, environment: e.environment };
  // Account-health events carry no channel stamp; the others carry it when their origin channel account is known.
  if (def.channelStamped && e.channel && e.channel_account) {
    body.channel = e.channel;
    body.channel_account = e.channel_account;
  }
  if (def.hasExternalId && e.external_id) body.external_id = e.external_id;
  return merged(e.data, body);
}
