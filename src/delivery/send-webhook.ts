/**
 * One signed webhook POST: the exact bytes are signed and sent, and the outcome is
 * judged by the delivery protocol (2xx acknowledges; the hosted-script 302 counts as 200).
 */
import type { EventDefinition } from '../core/catalog/index.js';
import { merged } from '../core/merged.js';
import { webhookBody, webhookBodyJson, type EnvelopeFacts } from '../core/webhook-body.js';
import type { ClaimedEvent } from '../db/deliveries.js';
import { decodePayload } from '../db/payload-bytes.js';
import type { SecretBox } from '../security/secret-box.js';
import { signBody, standardWebhookKey, standardWebhookSignature } from '../security/signature.js';
import type { HttpClient, PostResult, Slot } from './http-client.js';

export interface WebhookMessage {
  /** The endpoint the POST is for: it shares the URL's origin with others' endpoints by this id. */
  endpointId: string;
  url: string;
  /** A slot of the URL's origin the caller already holds (see HttpClient.slot). */
  slot?: Slot;
  secret: string;
  authorization: string | null;
  eventType: string;
  idempotencyKey: string;
  /** Standard Webhooks `webhook-id`: the delivery's id, the same on every attempt of it. */
  webhookId: string;
  body: Buffer;
  /** `webhook-timestamp` in seconds; the moment the headers are built when unset. */
  timestampSeconds?: number;
}

export interface SendOutcome extends PostResult {
  /** The code recorded for the attempt (302 acknowledgements are recorded as 200). */
  recordedStatus: number | null;
  acknowledged: boolean;
}

/** Our headers (SPEC 6.1), and beside them the Standard Webhooks ones (docs/delivery.md#standard-webhooks). */
export function webhookHeaders(m: Omit<WebhookMessage, 'endpointId' | 'slot'>): Record<string, string> {
  const timestamp = m.timestampSeconds ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'webhook-platform/1',
    'x-webhook-event': m.eventType,
    'x-idempotency-key': m.idempotencyKey,
    'x-webhook-signature': signBody(m.secret, m.body),
    'webhook-id': m.webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardWebhookSignature(standardWebhookKey(m.secret), m.webhookId, timestamp, m.body),
  };
  if (m.authorization) headers.authorization = m.authorization;
  return headers;
}

/** `webhook-timestamp` of an attempt: the second its recorded `started_at` falls in. */
export const webhookTimestampOf = (startedAt: Date | number): number =>
  Math.floor((typeof startedAt === 'number' ? startedAt : startedAt.getTime()) / 1000);

/** The bytes a delivery of `event` sends: its envelope (SPEC 2.3) and payload, as JSON. */
export function eventBody(def: EventDefinition, event: EnvelopeFacts): Buffer {
  return Buffer.from(JSON.stringify(webhookBody(def, event)), 'utf8');
}

/**
 * The bytes a delivery of a claimed event sends, the same as eventBody's: built around the
 * payload's JSON as stored when the claim has it, without parsing and writing it again.
 */
export function claimedEventBody(def: EventDefinition, event: ClaimedEvent): Buffer {
  return (
    (event.dataJson && webhookBodyJson(def, event, event.dataJson)) ?? eventBody(def, merged(event, { data: decodePayload(event.payload) }))
  );
}

export const TEST_MESSAGE = 'This is a test event sent to verify your webhook endpoint.';

/** The bytes of a `webhook.test` send started at `sentAt` (its attempt's `started_at`). */
export function testBody(sentAt: Date): Buffer {
  return Buffer.from(
    JSON.stringify({ event: 'webhook.test', customer_id: null, environment: null, message: TEST_MESSAGE, sent_at: sentAt.toISOString() }),
    'utf8',
  );
}

/** A hosted script web app answers 302 to its content host after running its handler. */
export function isScriptHostAcknowledgement(url: string, status: number | null, location: string | string[] | undefined): boolean {
  if (status !== 302 || typeof location !== 'string') return false;
  try {
    return new URL(url).hostname === 'script.google.com' && new URL(location, url).hostname === 'script.googleusercontent.com';
  } catch {
    return false;
  }
}

export async function sendWebhook(client: HttpClient, m: WebhookMessage): Promise<SendOutcome> {
  const result = await client.post({ endpointId: m.endpointId, url: m.url, slot: m.slot }, webhookHeaders(m), m.body);
  if (isScriptHostAcknowledgement(m.url, result.status, result.headers.location)) {
    return merged(result, { error: null, errorMessage: null, recordedStatus: 200, acknowledged: true });
  }
  return merged(result, { recordedStatus: result.status, acknowledged: result.error === null });
}

/** The stored parts of an endpoint a send needs; secrets are ciphertexts until this moment. */
export interface SendTarget {
  id: string;
  url: string;
  secret_ciphertext: Buffer;
  authorization_ciphertext: Buffer | null;
}

/**
 * Sends to an endpoint as it is stored now: its secret and Authorization value are decrypted
 * at attempt time, so a rotation applies to every later attempt, retries included.
 */
export function sendToEndpoint(
  client: HttpClient,
  box: Pick<SecretBox, 'open'>,
  target: SendTarget,
  m: { eventType: string; idempotencyKey: string; webhookId: string; body: Buffer; timestampSeconds: number; slot?: Slot },
): Promise<SendOutcome> {
  return sendWebhook(client, {
    endpointId: target.id,
    url: target.url,
    secret: box.open(target.secret_ciphertext),
    authorization: target.authorization_ciphertext ? box.open(target.authorization_ciphertext) : null,
    ...m,
  });
}

/** What a shown request puts where a stored Authorization value would be. */
export const AUTHORIZATION_SHOWN = '<set>';

export interface ShownRequest {
  /** The body exactly as signed and sent, as a UTF-8 string. */
  body: string;
  headers: Record<string, string>;
}

/**
 * A request as `sendToEndpoint` builds it, for showing: the same `webhookHeaders`, signed with
 * the endpoint's current secret, its Authorization value replaced by `<set>`. No secret leaves.
 */
export function shownRequest(
  box: Pick<SecretBox, 'open'>,
  target: SendTarget,
  m: { eventType: string; idempotencyKey: string; webhookId: string; body: Buffer; timestampSeconds: number },
): ShownRequest {
  const headers = webhookHeaders({
    url: target.url,
    secret: box.open(target.secret_ciphertext),
    authorization: target.authorization_ciphertext ? AUTHORIZATION_SHOWN : null,
    ...m,
  });
  return { body: m.body.toString('utf8'), headers };
}
