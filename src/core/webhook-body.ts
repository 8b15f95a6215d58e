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
  return merged(e.data, envelopeOf(def, e));
}

function envelopeOf(def: EventDefinition, e: Omit<EnvelopeFacts, 'data'>): Record<string, unknown> {
  const body: Record<string, unknown> = { event: e.type, customer_id: e.customer_id, environment: e.environment };
  // Account-health events carry no channel stamp; the others carry it when their origin channel account is known.
  if (def.channelStamped && e.channel && e.channel_account) {
    body.channel = e.channel;
    body.channel_account = e.channel_account;
  }
  if (def.hasExternalId && e.external_id) body.external_id = e.external_id;
  return body;
}

/**
 * The envelope's keys as they appear in JSON text; a payload holding any of them, at any depth, is
 * merged the slow way. Matched on the bytes read as Latin-1: the keys are ASCII, and no byte of a
 * UTF-8 sequence of another character is a quote (one regular expression: a seventh of the time of
 * seven `Buffer.includes`).
 */
const ENVELOPE_KEY = /"(?:event|customer_id|environment|channel|channel_account|external_id|__proto__)"/;
const COMMA = Buffer.from(',');

/**
 * `JSON.stringify(webhookBody(def, e))` as UTF-8, from the payload's JSON text `dataJson` (an
 * object as `JSON.stringify` wrote it) without parsing it: the payload's members, then the
 * envelope's. Undefined when the payload might hold an envelope key, which takes the payload's
 * place in the merge: then the body is built from the parsed payload (webhookBody).
 */
export function webhookBodyJson(def: EventDefinition, e: Omit<EnvelopeFacts, 'data'>, dataJson: Buffer): Buffer | undefined {
  if (ENVELOPE_KEY.test(dataJson.toString('latin1'))) return undefined;
  const envelope = Buffer.from(JSON.stringify(envelopeOf(def, e)), 'utf8');
  // `{}`: no member, so no comma before the envelope's.
  if (dataJson.length === 2) return envelope;
  return Buffer.concat([dataJson.subarray(0, dataJson.length - 1), COMMA, envelope.subarray(1)]);
}
